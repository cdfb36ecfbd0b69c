"""Security: no shell / eval / exec in the source, servers bind 127.0.0.1, secrets never written,
and a fast version of the parser fuzz (benchmarks/fuzz_parsers.py runs 10,000 cases per parser)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from benchmarks import fuzz_parsers

from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import DockerSettings, ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.docker_spec import plan_container
from llm_dyno.core.runtime.process_backend import ProcessRuntime

REPO = Path(__file__).resolve().parents[1]
SECRET = "hf_secretvalue123"
API_SECRET = "sk-secretkey456"
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 (what a profile may ask for)

# bare builtins only: Qt's `dialog.exec()` is a method, not the builtin
FORBIDDEN = {
    "shell=True": re.compile(r"shell\s*=\s*True"),
    "eval(": re.compile(r"(?<![\w.])eval\("),
    "exec(": re.compile(r"(?<![\w.])exec\("),
    "os.system": re.compile(r"\bos\.system\b"),
}


def test_no_shell_eval_exec_or_os_system_in_app() -> None:
    hits = []
    files = sorted((REPO / "app").rglob("*.py"))
    assert len(files) > 50
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            for what, pattern in FORBIDDEN.items():
                if pattern.search(code):
                    hits.append(f"{path.relative_to(REPO)}:{number}: {what}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_forbidden_patterns_do_catch_them() -> None:
    assert FORBIDDEN["exec("].search("exec(code)") and not FORBIDDEN["exec("].search("dialog.exec()")
    assert FORBIDDEN["eval("].search("x = eval(s)") and not FORBIDDEN["eval("].search("self.eval(s)")
    assert FORBIDDEN["shell=True"].search("run(cmd, shell = True)")


# ---- servers listen on 127.0.0.1 unless the profile says otherwise ---------------------------------


def test_docker_plan_binds_localhost_by_default() -> None:
    profile = Profile(
        name="d", model="m", docker=DockerSettings(image="vllm/vllm-openai:latest", ports=("8000:8000",))
    )
    plan = plan_container(profile)
    assert plan.spec.create["ports"] == {"8000/tcp": ("127.0.0.1", 8000)}
    assert "-p 127.0.0.1:8000:8000" in plan.describe()
    assert plan.base_url == "http://127.0.0.1:8000"
    # said otherwise: kept as written
    open_ = profile.with_changes(
        docker=DockerSettings(image="vllm/vllm-openai:latest", ports=(f"{ALL_INTERFACES}:8000:8000",))
    )
    assert plan_container(open_).spec.create["ports"] == {"8000/tcp": (ALL_INTERFACES, 8000)}


def test_process_plan_binds_localhost_by_default() -> None:
    profile = Profile(
        name="p", model="m", runtime=Runtime.PROCESS, process=ProcessSettings(), args=("--port", "8123")
    )
    plan = ProcessRuntime().plan(profile)
    assert plan.spec.bind_host == "127.0.0.1"
    argv = list(plan.spec.argv)
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert plan.base_url == "http://127.0.0.1:8123"
    open_ = profile.with_changes(args=("--port", "8123", "--host", ALL_INTERFACES))
    assert ProcessRuntime().plan(open_).spec.bind_host == ALL_INTERFACES


# ---- secrets are never written ---------------------------------------------------------------------


def _all_written_bytes(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_secrets_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("VLLM_API_KEY", API_SECRET)
    store = ProfileStore()
    texts = {
        "docker-run": (
            f"docker run --gpus all -p 8000:8000 -e HF_TOKEN={SECRET} vllm/vllm-openai:latest "
            f"--model Qwen/Qwen3-8B --hf-token {SECRET} --api-key {API_SECRET}"
        ),
        "compose": (
            "services:\n  vllm:\n    image: vllm/vllm-openai:latest\n    ports: ['8001:8000']\n"
            f"    environment:\n      HF_TOKEN: {SECRET}\n      HUGGING_FACE_HUB_TOKEN: ${{HF_TOKEN}}\n"
            f"    command: --model Qwen/Qwen3-8B --api-key {API_SECRET}\n"
        ),
        "vllm-serve": f"vllm serve Qwen/Qwen3-8B --port 8002 --hf-token {SECRET} --api-key={API_SECRET}",
    }
    descriptions = []
    with HistoryStore() as history:
        for kind, text in texts.items():
            result = import_text(text, name=f"secret-{kind}")
            assert any("literal secret" in w for w in result.warnings), (kind, result.warnings)
            profile = result.profile
            store.save(profile)
            saved = store.get(profile.name)
            plan = plan_container(saved) if saved.runtime is Runtime.DOCKER else ProcessRuntime().plan(saved)
            descriptions.append(plan.describe())
            descriptions.append(repr(plan.spec))
            runs = [BenchRun("narrative", 0, False, 0.1, 10.0, 500, 50.0, 51.0, "length")]
            ctx = RunContext(
                started="2026-01-01T00:00:00+00:00",
                model=saved.model,
                profile=saved.to_dict(),
                profile_name=saved.name,
                extra={"env": {"HF_TOKEN": "${HF_TOKEN}"}},
            )
            history.add(BenchResult("community", ctx, [PromptResult("narrative", runs)]), note=kind)
        assert len(history.list()) == 3
    written = _all_written_bytes(home)
    assert any(p.suffix == ".yaml" for p in written) and any("history" in p.name for p in written)
    for path, data in written.items():
        for secret in (SECRET, API_SECRET):
            assert secret.encode() not in data, f"{secret} written to {path}"
    for text in descriptions:
        assert SECRET not in text and API_SECRET not in text, text


# ---- the parser fuzz, small (CI catches regressions; the 10,000-case run is benchmarks/fuzz_parsers.py) --


# Inputs on which the 10,000-case fuzz once crashed a parser; each now gives a clear answer.


def test_yaml_control_character_is_a_clear_error() -> None:
    with pytest.raises(DynoError, match="not valid YAML"):
        import_text("services:\n  vllm:\n    image: x\x11\n", source="fuzz.yml")


def test_numeric_compose_service_name_imports() -> None:
    text = "services:\n  1175872:\n    image: vllm/vllm-openai:latest\n    command: --model m\n"
    result = import_text(text, source="fuzz.yml")
    assert result.service == "1175872" and result.profile.model == "m"


def test_deploy_that_is_not_a_mapping_is_a_clear_error() -> None:
    text = "services:\n  v:\n    image: vllm/vllm-openai:latest\n    command: --model m\n    deploy: [1]\n"
    with pytest.raises(DynoError, match="'deploy' must be a mapping") as info:
        import_text(text, source="fuzz.yml")
    assert "fuzz.yml:5" in str(info.value)


def test_malformed_number_in_gpu_busy_line_is_not_a_crash() -> None:
    from llm_dyno.core.runtime.base import FailureKind
    from llm_dyno.core.runtime.logformats import classify_failure

    line = (
        "ERROR 02-28 16:12:13 [core.py:866] ValueError: Free memory on device (4.04/119.61.03 GiB) "
        "on startup is less than desired GPU memory utilization (0.15, 17.94 GiB)."
    )
    reason = classify_failure([line], exit_code=1)
    assert reason.kind is not FailureKind.GPU_BUSY and "119.61.03" in " ".join(reason.excerpt)


@pytest.mark.parametrize("target", sorted(fuzz_parsers.TARGETS))
def test_fuzz_smoke(target: str) -> None:
    outcome = fuzz_parsers.fuzz(target, 300, seed=0)
    assert outcome.tally.cases == 300
    unexpected = outcome.tally.crashes
    details = "\n\n".join(
        f"{c.signature}: {c.smallest_input[:300]}\n{c.traceback}" for c in unexpected.values()
    )
    assert not unexpected, details


def test_malformed_number_in_a_phase_line_is_not_a_crash() -> None:
    """Found by the 10,000-case fuzz: a duration with two decimal points used to reach a float format."""
    from llm_dyno.core.runtime.logformats import PhaseTracker, parse_event

    bad = (
        "(EngineCore pid=167) INFO 05-03 18:38:59 [default_loader.py:384] "
        "Loading weights took 0.0001.70 seconds"
    )
    assert PhaseTracker().feed(bad) is None and parse_event(bad) is None
    good = bad.replace("0.0001.70", "15.12")
    event = parse_event(good)
    assert event is not None and event.values == {"seconds": 15.12}
