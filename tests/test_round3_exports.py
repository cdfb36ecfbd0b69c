"""Issue 29, class 4: exports that are safe to paste, and environment names that are not options.

Each shell export (``profile export NAME --format docker-run|vllm-serve``) is RUN in ``bash`` with a
fake ``docker`` and ``vllm`` first on PATH that record the arguments and environment they get (the real
``env`` is used: it is what a name like ``-S`` attacked); the recorded command must be the profile's
own and no marker file may appear. The compose and YAML exports are read back the way their readers
read them. The hostile values (leading dashes, ``$(…)``, backquotes, newlines, quotes, ``;``) are made
here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import cli

MODEL = "org/m$(touch pwned_model)`touch pwned_bt`;touch pwned_semi"
ARGS = [
    "--served-model-name=-S",
    "--chat-template",
    "x\n'; touch pwned_q; '\"",
    "--tokenizer=--split-string=sh -c 'touch pwned_tok'",
]
ENV = {
    "A.B": "$(touch pwned_env)",  # a name a shell cannot assign: the export goes through env(1)
    "PLAIN": "`touch pwned_env2`; touch pwned_env3\n\"'",
    "DASHV": "-S",
}
LABELS = {"a": "$(touch pwned_label)", "b;touch pwned_b": "`touch pwned_c`\nnext", "-l": "-v"}

_RECORDED = sorted([*ENV, "AB"])
_RECORDER = """\
#!{python}
import json, os, sys
names = {names!r}
with open(os.path.join(os.environ["RECORD_DIR"], os.path.basename(sys.argv[0]) + ".json"), "w") as f:
    json.dump({{"argv": sys.argv[1:], "env": {{k: os.environ.get(k) for k in names}}}}, f)
"""


def _profile_yaml(runtime: str = "docker", executable: str | None = None) -> str:
    data: dict[str, Any] = {"schema": 1, "name": "hostile", "runtime": runtime, "model": MODEL}
    if runtime == "docker":
        data["docker"] = {
            "image": "vllm/vllm-openai:v0.11.0",
            "container_name": "-n",
            "labels": LABELS,
            "volumes": ["/data/$(touch pwned_vol):/data"],
            "user": "-u",
        }
    else:
        data["process"] = {"executable": executable or "vllm"}
    data["args"] = ARGS
    data["env"] = ENV
    return yaml.safe_dump(data, sort_keys=False)


def _stored(tmp_path: Path, text: str) -> Path:
    home = tmp_path / "home"
    source = tmp_path / "hostile.yaml"
    source.write_text(text, encoding="utf-8")
    out = cli(home, "profile", "import", str(source))
    assert out.returncode == 0, out.stdout + out.stderr
    return home


def _export(home: Path, fmt: str) -> str:
    out = cli(home, "profile", "export", "hostile", "--format", fmt)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _run_pasted(tmp_path: Path, script: str, programs: list[str]) -> dict[str, Any]:
    """Run ``script`` in bash with recording fakes of ``programs`` first on PATH; what each got."""
    fakes, record, work = tmp_path / "bin", tmp_path / "record", tmp_path / "work"
    for folder in (fakes, record, work):
        folder.mkdir(exist_ok=True)
    for name in programs:
        fake = fakes / name
        fake.write_text(_RECORDER.format(python=sys.executable, names=_RECORDED), encoding="utf-8")
        fake.chmod(0o755)
    (work / "pasted.sh").write_text(script, encoding="utf-8")
    bash = shutil.which("bash")
    assert bash is not None
    env = {"PATH": f"{fakes}:/usr/bin:/bin", "RECORD_DIR": str(record), "HOME": str(tmp_path)}
    done = subprocess.run(
        [bash, "pasted.sh"], cwd=work, env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pwned = sorted(p.name for p in work.iterdir() if p.name != "pasted.sh")
    pwned += sorted(p.name for p in tmp_path.glob("pwned*"))
    assert pwned == [], f"the pasted export ran the author's commands: {pwned}\n{script}"
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in record.glob("*.json")}


def _docker_options(argv: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """``run`` then options, as Docker's CLI (pflag) reads them; the option pairs and the positional
    words from the image on. A value given as its own word must not start with ``-``."""
    assert argv[0] == "run", argv
    pairs: list[tuple[str, str]] = []
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if "=" in argv[i] and argv[i].startswith("--"):
            flag, _, value = argv[i].partition("=")
            i += 1
        else:
            flag, value = argv[i], argv[i + 1]
            assert not value.startswith("-"), f"{flag} {value}: a value another reader takes for an option"
            i += 2
        pairs.append((flag, value))
    return pairs, argv[i:]


def test_docker_run_export_runs_the_profiles_command_and_nothing_else(tmp_path: Path) -> None:
    home = _stored(tmp_path, _profile_yaml())
    got = _run_pasted(tmp_path, _export(home, "docker-run"), ["docker", "vllm"])
    assert set(got) == {"docker"}
    pairs, positional = _docker_options(got["docker"]["argv"])
    assert positional == ["vllm/vllm-openai:v0.11.0", MODEL, *ARGS]
    named = {"--env": "-e", "--volume": "-v", "--publish": "-p"}
    found = [(named.get(flag, flag), value) for flag, value in pairs]
    assert sorted(v for f, v in found if f == "-e") == sorted(f"{k}={v}" for k, v in ENV.items())
    assert sorted(v for f, v in found if f == "--label") == sorted(f"{k}={v}" for k, v in LABELS.items())
    assert ("--name", "-n") in found and ("--user", "-u") in found
    assert ("-v", "/data/$(touch pwned_vol):/data") in found


def test_vllm_serve_export_runs_vllm_with_the_profiles_argv_and_env(tmp_path: Path) -> None:
    home = _stored(tmp_path, _profile_yaml(runtime="process"))
    script = _export(home, "vllm-serve")
    assert "env -- " in script  # "A.B" needs env(1), whose options end before the first assignment
    got = _run_pasted(tmp_path, script, ["docker", "vllm"])
    assert got == {"vllm": {"argv": ["serve", MODEL, *ARGS], "env": {**ENV, "AB": None}}}


def test_vllm_serve_export_with_shell_assignable_names_and_an_odd_executable(tmp_path: Path) -> None:
    text = _profile_yaml(runtime="process", executable="X=1").replace("A.B", "AB")
    home = _stored(tmp_path, text)
    script = _export(home, "vllm-serve")
    assert not script.splitlines()[1].startswith("env")  # plain shell assignments
    got = _run_pasted(tmp_path, script, ["X=1", "vllm"])
    env = {**{("AB" if k == "A.B" else k): v for k, v in ENV.items()}, "A.B": None}
    # the executable ran, not read as one more assignment (which would have run "serve")
    assert got == {"X=1": {"argv": ["serve", MODEL, *ARGS], "env": env}}


def test_compose_export_holds_the_profiles_command_as_compose_reads_it(tmp_path: Path) -> None:
    home = _stored(tmp_path, _profile_yaml())
    text = _export(home, "compose")
    service = next(iter(yaml.safe_load(text)["services"].values()))

    def unescape(value: str) -> str:  # Compose's interpolation: $$ is a literal $
        return value.replace("$$", "$")

    assert [unescape(w) for w in service["command"]] == [MODEL, *ARGS]
    env = dict(unescape(e).split("=", 1) for e in service["environment"])
    assert env == ENV
    assert {k: unescape(v) for k, v in service["labels"].items()} == LABELS
    path = tmp_path / "compose.yml"
    path.write_text(text, encoding="utf-8")
    back = cli(tmp_path / "other", "profile", "import", str(path), "--dry-run")
    assert back.returncode == 0, back.stdout + back.stderr
    again = yaml.safe_load(back.stdout)
    assert (again["model"], again["args"], again["env"]) == (MODEL, ARGS, ENV)
    assert again["docker"]["labels"] == LABELS


def test_yaml_export_validates_and_reads_back_the_same(tmp_path: Path) -> None:
    home = _stored(tmp_path, _profile_yaml())
    path = tmp_path / "export.yaml"
    path.write_text(_export(home, "yaml"), encoding="utf-8")
    valid = cli(tmp_path / "other", "profile", "validate", str(path))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert (data["model"], data["args"], data["env"]) == (MODEL, ARGS, ENV)


def _refused(out: subprocess.CompletedProcess[str], *needles: str) -> str:
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


@pytest.mark.parametrize("name", ["-S", "--split-string=sh -c 'touch /tmp/pwned'"])
def test_compose_environment_name_with_a_leading_dash_is_refused_at_its_line(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "compose.yml"
    body = {
        "services": {
            "vllm": {
                "image": "vllm/vllm-openai:v0.11.0",
                "command": ["--model", "facebook/opt-125m"],
                "environment": {"OK": "1", name: "x"},
            }
        }
    }
    path.write_text(yaml.safe_dump(body, sort_keys=False, width=1000), encoding="utf-8")
    line = next(
        n for n, text in enumerate(path.read_text().splitlines(), 1) if "touch" in text or "-S" in text
    )
    _refused(cli(tmp_path / "home", "profile", "import", str(path), "--dry-run"), f"{path}:{line}", "'-")
    assert not (tmp_path / "home" / "config" / "profiles").exists() or not any(
        (tmp_path / "home" / "config" / "profiles").iterdir()
    )


@pytest.mark.parametrize("option", [["-e", "-S=x"], ["--env=-S=x"], ["-e-S=x"], ["-e", "=x"]])
def test_docker_run_env_option_with_a_bad_name_is_refused_at_its_line(
    tmp_path: Path, option: list[str]
) -> None:
    path = tmp_path / "run.sh"
    words = " ".join(f"'{w}'" for w in option)
    path.write_text(f"docker run --gpus all \\\n  {words} \\\n  vllm/vllm-openai:v0.11.0 --model m\n")
    _refused(cli(tmp_path / "home", "profile", "import", str(path), "--dry-run"), f"{path}:2")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"env": {"-S": "x"}}, "env"),
        ({"env": {"a=b": "x"}}, "env"),
        ({"model": "-S"}, "model"),
        ({"docker": {"image": "--privileged"}}, "image"),
    ],
)
def test_hand_written_profile_with_an_option_for_a_name_is_not_valid(
    tmp_path: Path, change: dict[str, Any], needle: str
) -> None:
    data = yaml.safe_load(_profile_yaml())
    data.update(change)
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    _refused(cli(tmp_path / "home", "profile", "validate", str(path)), str(path), needle)
    _refused(cli(tmp_path / "home", "profile", "import", str(path), "--dry-run"), str(path))


def test_hook_environment_name_with_a_leading_dash_is_not_valid(tmp_path: Path) -> None:
    path = tmp_path / "hook.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            schema: 1
            name: hooked
            runtime: docker
            docker:
              image: vllm/vllm-openai:v0.11.0
              post_start:
              - command: [echo, hi]
                environment: {"-S": x}
            model: facebook/opt-125m
            """
        ),
        encoding="utf-8",
    )
    _refused(cli(tmp_path / "home", "profile", "validate", str(path)), "'-S'")


def test_the_fakes_record_what_they_get(tmp_path: Path) -> None:
    """The harness itself: a pasted line that does run a command is caught."""
    with pytest.raises(AssertionError, match="pwned_x"):
        _run_pasted(tmp_path, "touch pwned_x; vllm serve m\n", ["vllm"])
    assert os.path.exists(tmp_path / "record" / "vllm.json")


def test_env_file_name_with_a_leading_dash_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "compose.yml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
        '    command: ["--model", "facebook/opt-125m"]\n    env_file: vars.env\n',
        encoding="utf-8",
    )
    (tmp_path / "vars.env").write_text("OK=1\n--split-string=sh -c 'touch pwned'\n", encoding="utf-8")
    out = cli(tmp_path / "home", "profile", "import", str(tmp_path / "compose.yml"), "--dry-run")
    _refused(out, f"{tmp_path / 'vars.env'}:2", "'-")
    (tmp_path / "vars.env").write_text("OK=1\nA.B=-S\n", encoding="utf-8")
    out = cli(tmp_path / "home", "profile", "import", str(tmp_path / "compose.yml"), "--dry-run")
    assert out.returncode == 0, out.stdout + out.stderr
    assert yaml.safe_load(out.stdout)["env"] == {"OK": "1", "A.B": "-S"}
