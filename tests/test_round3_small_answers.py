"""Issue 29, classes 1 and 3, through the real CLI in a subprocess: answers far inside every size bound
that used to take the app down (JSON nested 20,000 and 50,000 deep), a stream that sends ``[DONE]``
and holds the body open, and lone surrogates in streamed text. Each ends with a clear message or a
stored run, never a traceback, a hang or a 0-byte export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.small_answers_server import SmallAnswersServer
from tests.test_hostile_servers import llm_dyno

DEEP = "a stream event: the JSON is nested more than 100 levels deep; refused"


def _bench(server: SmallAnswersServer, home: Path, *extra: str) -> tuple[int, str, str, float]:
    args = ["bench", "--url", server.url, "--model", "tiny", "--runs", "1", "--warmups", "0"]
    ran = llm_dyno([*args, "--suite", "quick", *extra], home, timeout_s=60)
    return ran.code, ran.out, ran.err, ran.seconds


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("deep_event", DEEP),
        ("deep_error", "server answered HTTP 500: the error answer: the JSON is nested more than 100 levels"),
    ],
)
def test_bench_refuses_deeply_nested_json_with_a_message(shape: str, message: str, tmp_path: Path) -> None:
    with SmallAnswersServer(shape, lifetime_s=40) as server:
        code, out, err, seconds = _bench(server, tmp_path)
    assert code == 1, err
    assert f"error: run 1 of narrative failed: {message}" in err
    assert "Traceback" not in err and "RecursionError" not in err + out
    assert seconds < 30


def test_done_ends_the_run_though_the_server_holds_the_body_open(tmp_path: Path) -> None:
    with SmallAnswersServer("done_then_hold", lifetime_s=60) as server:
        code, out, err, seconds = _bench(server, tmp_path)
    assert code == 0, err
    assert "saved as #1" in out
    assert seconds < 15, seconds  # was: each run waited for the body to end (the suite's deadline)
    shown = llm_dyno(["history", "show", "1", "--json"], tmp_path)
    prompts = json.loads(shown.out)["prompts"]
    assert shown.code == 0 and all(len(p["runs"]) == 1 for p in prompts)
    assert {run["completion_tokens"] for p in prompts for run in p["runs"]} == {24}


def test_lone_surrogates_in_the_stream_store_and_export_as_valid_utf8(tmp_path: Path) -> None:
    csv_file, json_file = tmp_path / "runs.csv", tmp_path / "runs.json"
    with SmallAnswersServer("surrogate", lifetime_s=40) as server:
        code, out, err, _ = _bench(server, tmp_path, "--csv", str(csv_file), "--json", str(json_file))
    assert code == 0, err
    assert "Traceback" not in err and "saved as #1" in out
    text = csv_file.read_bytes().decode("utf-8")  # strict: a surrogate could not have been encoded
    assert "len\ufffdgth" in text and text.count("\n") == 3  # the header and a row per prompt
    written = json.loads(json_file.read_bytes().decode("utf-8"))
    finishes = {run["finish_reason"] for p in written["prompts"] for run in p["runs"]}
    assert finishes == {"len\ufffdgth"}
    shown = llm_dyno(["history", "show", "1", "--json"], tmp_path)
    assert shown.code == 0, shown.err
    stored = json.loads(shown.out)
    assert {run["finish_reason"] for p in stored["prompts"] for run in p["runs"]} == {"len\ufffdgth"}


def test_a_failed_export_leaves_the_previous_file_whole(tmp_path: Path) -> None:
    """The export is written atomically: a bench whose --csv cannot be written keeps the old file."""
    csv_file = tmp_path / "runs.csv"
    csv_file.write_text("previous export\n")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    with SmallAnswersServer("surrogate", lifetime_s=40) as server:
        code, _, err, _ = _bench(server, tmp_path, "--csv", str(blocked / "runs.csv"))
        assert code != 0 and "Traceback" not in err, err
        code, _, err, _ = _bench(server, tmp_path, "--csv", str(csv_file))
    assert code == 0, err
    assert csv_file.read_text(encoding="utf-8").startswith("prompt,")


@pytest.mark.parametrize("shape", ["deep_models", "deep_version"])
@pytest.mark.parametrize("command", [["diagnose"], ["watch", "--count", "1"]])
def test_diagnose_and_watch_read_a_server_whose_json_is_nested_20000_deep(
    shape: str, command: list[str], tmp_path: Path
) -> None:
    with SmallAnswersServer(shape, lifetime_s=40) as server:
        ran = llm_dyno([command[0], "--url", server.url, *command[1:]], tmp_path, timeout_s=40)
    assert "Traceback" not in ran.err and "RecursionError" not in ran.err + ran.out
    if command[0] == "diagnose" and shape == "deep_version":  # a /version no vLLM answers: not fine
        assert ran.code != 0, ran.out
        assert f"GET {server.url}/version: the JSON is nested more than 100 levels deep" in ran.err
        return
    assert ran.code == 0, ran.err  # nothing the command reads is nested (watch reads only /metrics)
    assert ("read: live /metrics" if command[0] == "diagnose" else "run 0") in ran.out


DEEP_MODELS_SERVER = f"""#!{sys.executable}
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
print("INFO:     Application startup complete.", flush=True)
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"" if self.path == "/health" else b"[" * 20000 + b"]" * 20000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def test_launch_ends_when_v1_models_is_nested_20000_deep(tmp_path: Path) -> None:
    from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
    from tests.conftest_docker import free_port

    exe = tmp_path / "deep-server"
    exe.write_text(DEEP_MODELS_SERVER)
    exe.chmod(0o755)
    profile = Profile(
        name="deep",
        runtime=Runtime.PROCESS,
        model="m",
        process=ProcessSettings(executable=str(exe)),
        args=("--port", str(free_port())),
    )
    folder = tmp_path / "config" / "profiles"
    folder.mkdir(parents=True)
    (folder / "deep.yaml").write_text(profile.to_yaml())
    ran = llm_dyno(["launch", "deep", "--wait", "--timeout", "120"], tmp_path, timeout_s=150)
    assert ran.code == 1, ran.out + ran.err
    assert "the server answers, but not as vLLM does: /v1/models: the JSON is nested more than 100" in ran.err
    assert "Traceback" not in ran.err and ran.seconds < 40
    status = llm_dyno(["status", "--json"], tmp_path)
    assert status.code == 0 and "starting" not in status.out


def test_import_ignores_a_meta_comment_nested_20000_deep(tmp_path: Path) -> None:
    line = tmp_path / "run.sh"
    deep = "[" * 20_000 + "]" * 20_000
    line.write_text(f"# llm-dyno: {deep}\ndocker run vllm/vllm-openai:latest --model m\n")
    ran = llm_dyno(["profile", "import", str(line)], tmp_path)
    assert ran.code == 0, ran.err
    assert "ignored a damaged '# llm-dyno:' comment line" in ran.out + ran.err
    assert "Traceback" not in ran.err


def test_import_refuses_a_json_flag_nested_20000_deep(tmp_path: Path) -> None:
    line = tmp_path / "run.sh"
    deep = "[" * 20_000 + "]" * 20_000
    line.write_text(f"vllm serve m --speculative-config '{deep}'\n")
    ran = llm_dyno(["profile", "import", str(line)], tmp_path)
    assert ran.code != 0
    # the message names the flag (its 40,000-character value is shown cut, so the reason may be too)
    assert "Traceback" not in ran.err and "fix the value of --speculative-config" in ran.err, ran.err
    assert not (tmp_path / "config" / "profiles").exists()


def test_diagnose_refuses_a_bench_result_file_nested_20000_deep(tmp_path: Path) -> None:
    result = tmp_path / "result.json"
    result.write_text("[" * 20_000 + "]" * 20_000)
    with SmallAnswersServer("deep_version", lifetime_s=40) as server:
        ran = llm_dyno(["diagnose", "--url", server.url, "--bench", str(result)], tmp_path, timeout_s=40)
    assert ran.code != 0 and "Traceback" not in ran.err, ran.err
    assert "the file: the JSON is nested more than 100 levels deep; refused" in ran.err


def test_a_model_name_that_is_not_utf8_ends_the_run_with_a_message(tmp_path: Path) -> None:
    model = b"ti\xffny".decode("utf-8", "surrogateescape")  # as Python reads such an argument
    env = {**os.environ, "LLM_DYNO_HOME": str(tmp_path), "NO_COLOR": "1"}
    with SmallAnswersServer("surrogate", lifetime_s=40) as server:
        args = ["bench", "--url", server.url, "--model", model, "--runs", "1", "--warmups", "0"]
        ran = subprocess.run(
            [sys.executable, "-m", "llm_dyno", *args, "--suite", "quick"],
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
    err = ran.stderr.decode("utf-8", "replace")  # the name is echoed as given: not UTF-8 either
    assert ran.returncode == 1 and "Traceback" not in err, err
    assert "the request cannot be sent: its text is not valid UTF-8 near" in err


@pytest.mark.parametrize("path", ["/containers/json", "/info"])
def test_status_names_an_engine_answer_nested_20000_deep(path: str, tmp_path: Path) -> None:
    from tests.support.deep_engine import DeepEngine

    with DeepEngine(path) as engine:
        env = {**os.environ, "LLM_DYNO_HOME": str(tmp_path), "NO_COLOR": "1", "DOCKER_HOST": engine.url}
        env.pop("DOCKER_CONTEXT", None)
        env.pop("DOCKER_TLS_VERIFY", None)
        ran = subprocess.run(
            [sys.executable, "-m", "llm_dyno", "status"], env=env, capture_output=True, text=True, timeout=90
        )
    assert "Traceback" not in ran.stderr and "RecursionError" not in ran.stderr, ran.stderr
    assert f"the Docker engine's /v1.43{path}: the JSON is nested more than 100 levels deep" in ran.stderr
