"""Exact names and prompt verdicts, through the real CLI in a subprocess: ``logs fake-a`` never shows
profile "Fake A"'s log, a 200,000-character env value is refused at import (the profile would not
load again), and a server that answers but not as vLLM does ends ``launch --wait`` at once with a
clear failure (not a traceback, not the wait's timeout), its process stopped."""

from __future__ import annotations

import sys
from pathlib import Path

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.test_hostile_servers import llm_dyno


def _profile(home: Path, name: str, stem: str, script: str, *args: str) -> None:
    exe = home / f"{stem}-server"
    exe.write_text(script)
    exe.chmod(0o755)
    process = ProcessSettings(executable=str(exe))
    profile = Profile(name=name, runtime=Runtime.PROCESS, model="m", process=process, args=args)
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.yaml").write_text(profile.to_yaml())


def test_logs_of_fake_a_are_not_those_of_profile_fake_a_spelled_otherwise(tmp_path: Path) -> None:
    _profile(tmp_path, "Fake A", "fake-a-spaced", "#!/bin/sh\necho 'log line of Fake A'\nexit 3\n")
    _profile(tmp_path, "fake-a", "fake-a", "#!/bin/sh\necho 'log line of fake-a'\nexit 3\n")
    ran = llm_dyno(["launch", "Fake A", "--wait", "--timeout", "30"], tmp_path)
    assert ran.code == 1, ran.err
    ran = llm_dyno(["logs", "fake-a"], tmp_path)
    assert "log line of Fake A" not in ran.out + ran.err
    ran = llm_dyno(["logs", "Fake A"], tmp_path)
    assert ran.code == 0 and "log line of Fake A" in ran.out
    ran = llm_dyno(["launch", "fake-a", "--wait", "--timeout", "30"], tmp_path)
    ran = llm_dyno(["logs", "fake-a"], tmp_path)
    assert "log line of fake-a" in ran.out and "log line of Fake A" not in ran.out


def test_a_200k_env_value_is_refused_at_import(tmp_path: Path) -> None:
    line = tmp_path / "run.sh"
    line.write_text(f"docker run -e BIG={'a' * 200_000} vllm/vllm-openai:latest --model m\n")
    ran = llm_dyno(["profile", "import", str(line)], tmp_path)
    assert ran.code != 0
    assert f"{line}:1" in ran.err and "BIG: a value of 200,000 characters (at most 65,536)" in ran.err
    assert not (tmp_path / "config" / "profiles").exists()
    listed = llm_dyno(["profile", "list"], tmp_path)
    assert listed.code == 0 and "refused" not in listed.err


MALFORMED = f"""#!{sys.executable}
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
print("INFO:     Application startup complete.", flush=True)
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"" if self.path == "/health" else json.dumps([{{"id": "m"}}]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def test_launch_of_a_server_answering_malformed_fails_at_once(tmp_path: Path) -> None:
    from tests.conftest_docker import free_port

    _profile(tmp_path, "odd", "odd", MALFORMED, "--port", str(free_port()))
    ran = llm_dyno(["launch", "odd", "--wait", "--timeout", "120"], tmp_path, timeout_s=150)
    assert ran.code == 1, ran.out + ran.err
    assert (
        "error: 'odd' failed: the server answers, but not as vLLM does: /v1/models answered a list" in ran.err
    )
    assert "it was stopped [malformed_answer]" in ran.err
    assert "Traceback" not in ran.err and ran.seconds < 40
    status = llm_dyno(["status", "--json"], tmp_path)
    assert '"odd"' not in status.out  # no server left running, no record left behind
    assert not list((tmp_path / "data" / "servers").glob("*.json"))
