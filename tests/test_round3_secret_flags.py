"""Issue 29, class 5: a secret reference in an ordinary flag, through the real CLI.

Only ``--api-key`` and ``--hf-token`` are moved into the server's environment; a secret reference in
any other argument (``--served-model-name ${HF_TOKEN}``, ``--tokenizer=${AWS_SECRET_ACCESS_KEY}``,
``--x=a${HF_TOKEN}b``, ``$HF_TOKEN``, the model itself) would put the secret's value in
/proc/PID/cmdline, the registry record, the container's command and vLLM's log. ``plan``, ``launch``
and ``profile validate`` refuse such a profile for both runtimes, naming the flag; the value is in no
output, no file under LLM_DYNO_HOME and no process's command line, and nothing is started. A
reference to a variable that is not a secret (``${MODEL_DIR}``) keeps working, as does
``--api-key ${VLLM_API_KEY}``.

The profiles are YAML the test writes itself (the attacker's file); the server is a fake ``vllm``
script that records its arguments, so a launch that should not start anything is seen not to.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.cli import cli

HF_SECRET = "hf_r3flagsecretQv8ZpL2mWx9"
AWS_SECRET = "aws-r3-flag-secret-Jd7Kq0Xz"
API_SECRET = "sk-r3-flag-api-secret-4Nf8Tb"
MODEL_DIR = "/srv/r3-models/tokenizer-dir"
SECRETS = (HF_SECRET, AWS_SECRET, API_SECRET)
ENV = {
    **os.environ,
    "HF_TOKEN": HF_SECRET,
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    "VLLM_API_KEY": API_SECRET,
    "MODEL_DIR": MODEL_DIR,
}

# (model, args, the flag the refusal names): every spelling of a secret reference outside the secret flags
LEAKS = [
    ("org/m", ["--served-model-name", "${HF_TOKEN}"], "--served-model-name"),
    ("org/m", ["--tokenizer=${AWS_SECRET_ACCESS_KEY}"], "--tokenizer"),
    ("org/m", ["--x-extra=a${HF_TOKEN}b"], "--x-extra"),
    ("org/m", ["--served-model-name", "$HF_TOKEN"], "--served-model-name"),
    ("org/m", ["--revision", "${HF_TOKEN:-main}"], "--revision"),
    ("org/m", ["--api-key", "${VLLM_API_KEY}", "--tokenizer", "pre-${VLLM_API_KEY}"], "--tokenizer"),
    ("${HF_TOKEN}", [], "the model"),
]


def _fake_vllm(folder: Path) -> tuple[Path, Path]:
    """A ``vllm`` that writes its arguments and whether it saw VLLM_API_KEY to a file, then exits."""
    record = folder / "argv.json"
    script = folder / "fake-vllm"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {record}.tmp\n'
        f'[ -n "$VLLM_API_KEY" ] && echo KEY-IN-ENV >> {record}.tmp\n'
        f"mv {record}.tmp {record}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, record


def _profile_yaml(name: str, model: str, args: list[str], *, runtime: str, executable: Path | None) -> str:
    lines = ["schema: 1", f"name: {name}", f"runtime: {runtime}"]
    if runtime == "process":
        lines += ["process:", f"  executable: {executable}"]
    else:
        lines += [
            "docker:",
            "  image: vllm/vllm-openai:v0.11.0",
            "  ports:",
            "  - 127.0.0.1:8000:8000",
            "  labels:",
            "    team.owner: r3",
        ]
    lines.append(f"model: {json.dumps(model)}")
    lines += ["args:", *(f"- {json.dumps(a)}" for a in args)] if args else []
    lines += ["env:", "  HF_TOKEN: ${HF_TOKEN}", "  MODEL_DIR_COPY: ${MODEL_DIR}"]
    return "\n".join(lines) + "\n"


def _save(home: Path, name: str, text: str) -> Path:
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def _cmdlines_with(secret: str) -> list[str]:
    hits = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if secret.encode() in (proc / "cmdline").read_bytes():
                    hits.append(proc.name)
            except OSError:
                continue
    return hits


def _files_with(home: Path, secret: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def _assert_refused(done: subprocess.CompletedProcess[str], flag: str, home: Path) -> None:
    rc, out, err = done.returncode, done.stdout, done.stderr
    assert rc != 0, out + err
    assert f"{flag} refers to the secret" in err, err
    assert "refused" in err
    for secret in SECRETS:
        assert secret not in out and secret not in err
        assert _files_with(home, secret) == []
        assert _cmdlines_with(secret) == []


@pytest.mark.parametrize(("model", "args", "flag"), LEAKS, ids=[a[2] + ":" + " ".join(a[1]) for a in LEAKS])
def test_a_secret_in_an_ordinary_flag_is_refused_by_plan_launch_and_validate(
    tmp_path: Path, model: str, args: list[str], flag: str
) -> None:
    home = tmp_path / "home"
    exe, record = _fake_vllm(tmp_path)
    path = _save(home, "leak", _profile_yaml("leak", model, args, runtime="process", executable=exe))
    for command in (
        ["plan", "leak"],
        ["plan", "leak", "--json"],
        ["launch", "leak"],
        ["profile", "validate", str(path)],
    ):
        _assert_refused(cli(home, *command, env=ENV), flag, home)
    time.sleep(0.3)
    assert not record.exists(), "the refused launch started the server"
    assert not (tmp_path / "argv.json.tmp").exists()


@pytest.mark.parametrize(("model", "args", "flag"), LEAKS[:3], ids=[a[2] for a in LEAKS[:3]])
def test_a_docker_profile_with_a_secret_in_an_ordinary_flag_is_refused_by_plan(
    tmp_path: Path, model: str, args: list[str], flag: str
) -> None:
    home = tmp_path / "home"
    path = _save(
        home, "leak-docker", _profile_yaml("leak-docker", model, args, runtime="docker", executable=None)
    )
    for command in (
        ["plan", "leak-docker"],
        ["plan", "leak-docker", "--json"],
        ["profile", "validate", str(path)],
    ):
        _assert_refused(cli(home, *command, env=ENV), flag, home)


def test_a_secret_in_an_ordinary_flag_is_refused_at_import_naming_the_flag(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pasted = tmp_path / "serve.sh"
    pasted.write_text("vllm serve org/m --max-model-len 4096 --served-model-name $HF_TOKEN\n")
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
        '    command: ["org/m", "--tokenizer=${AWS_SECRET_ACCESS_KEY}"]\n    ports: ["127.0.0.1:8000:8000"]\n'
    )
    for source, flag in ((pasted, "--served-model-name"), (compose, "--tokenizer")):
        _assert_refused(cli(home, "profile", "import", str(source), env=ENV), flag, home)
    assert not list(home.rglob("*.yaml")), "a refused import stored a profile"


def test_a_plain_reference_in_a_flag_and_the_api_key_keep_working(tmp_path: Path) -> None:
    home = tmp_path / "home"
    exe, record = _fake_vllm(tmp_path)
    args = ["--api-key", "${VLLM_API_KEY}", "--tokenizer", "${MODEL_DIR}", "--port", "18641"]
    path = _save(home, "plain", _profile_yaml("plain", "org/m", args, runtime="process", executable=exe))
    validated = cli(home, "profile", "validate", str(path), env=ENV)
    assert validated.returncode == 0, validated.stderr
    planned = cli(home, "plan", "plain", env=ENV)
    assert planned.returncode == 0, planned.stderr
    assert "--tokenizer" in planned.stdout
    # the environment, its names and its references, as before
    assert "HF_TOKEN='${HF_TOKEN}'" in planned.stdout and "MODEL_DIR_COPY='${MODEL_DIR}'" in planned.stdout
    launched = cli(home, "launch", "plain", env=ENV)
    assert launched.returncode == 0, launched.stderr
    deadline = time.monotonic() + 20
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    words = record.read_text().splitlines()
    assert words[words.index("--tokenizer") + 1] == MODEL_DIR  # resolved, as before
    assert "--api-key" not in words and API_SECRET not in words and words[-1] == "KEY-IN-ENV"
    for secret in SECRETS:
        assert secret not in planned.stdout + planned.stderr + launched.stdout + launched.stderr
        assert _files_with(home, secret) == []


def test_a_docker_plan_keeps_labels_plain_env_and_plain_references(tmp_path: Path) -> None:
    home = tmp_path / "home"
    args = ["--api-key", "${VLLM_API_KEY}", "--tokenizer=${MODEL_DIR}"]
    _save(
        home, "plain-docker", _profile_yaml("plain-docker", "org/m", args, runtime="docker", executable=None)
    )
    planned = cli(home, "plan", "plain-docker", "--json", env=ENV)
    assert planned.returncode == 0, planned.stderr
    container = json.loads(planned.stdout)["container"]
    assert f"--tokenizer={MODEL_DIR}" in container["command"]
    assert not any("api-key" in a for a in container["command"])
    assert container["labels"]["team.owner"] == "r3"
    env = container["environment"]
    assert env["VLLM_API_KEY"] == "${VLLM_API_KEY}" and env["HF_TOKEN"] == "${HF_TOKEN}"
    assert env["MODEL_DIR_COPY"] == MODEL_DIR
    for secret in SECRETS:
        assert secret not in planned.stdout + planned.stderr


def test_profile_set_refuses_a_secret_reference_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    exe, _ = _fake_vllm(tmp_path)
    path = _save(home, "edit", _profile_yaml("edit", "org/m", [], runtime="process", executable=exe))
    before = path.read_text()
    for item in ("served-model-name=${HF_TOKEN}", "tokenizer=x$AWS_SECRET_ACCESS_KEY"):
        flag = "--" + item.partition("=")[0]
        _assert_refused(cli(home, "profile", "set", "edit", item, env=ENV), flag, home)
    assert path.read_text() == before
    kept = cli(home, "profile", "set", "edit", "tokenizer=${MODEL_DIR}", env=ENV)
    assert kept.returncode == 0, kept.stderr
    assert "${MODEL_DIR}" in path.read_text()


def test_a_docker_plan_names_each_script_of_the_profile_that_refers_to_a_secret(tmp_path: Path) -> None:
    home = tmp_path / "home"
    text = _profile_yaml("scripts", "org/m", [], runtime="docker", executable=None).replace(
        "docker:\n",
        "docker:\n"
        '  entrypoint: [/bin/sh, -c, \'exec vllm serve "$@" --served-model-name "$HF_TOKEN"\', --]\n'
        "  post_start:\n"
        "  - command: [sh, -c, 'curl -H \"Authorization: Bearer ${VLLM_API_KEY}\" localhost:8000']\n"
        "  pre_stop:\n"
        "  - command: [sh, -c, 'echo $MODEL_DIR stopping']\n",
    )
    _save(home, "scripts", text)
    planned = cli(home, "plan", "scripts", "--json", env=ENV)
    assert planned.returncode == 0, planned.stderr
    notes = [w["text"] for w in json.loads(planned.stdout)["warnings"] if w["kind"] == "secret"]
    assert any(n.startswith("docker.entrypoint refers to the secret ${HF_TOKEN}") for n in notes), notes
    assert any(n.startswith("docker.post_start[0] refers to the secret ${VLLM_API_KEY}") for n in notes)
    assert not any("pre_stop" in n for n in notes)  # $MODEL_DIR is no secret
    for secret in SECRETS:
        assert secret not in planned.stdout + planned.stderr
