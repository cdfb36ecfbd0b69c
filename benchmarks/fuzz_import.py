"""The import shapes of issue 22 as fuzz targets, run through the import entry point of
``llm-dyno profile import`` (the file read with the same bound, then ``import_text`` with the file's
folder as the project), and a sample of each through the CLI in a subprocess.

- ``env_files``: compose projects whose ``.env`` and ``env_file:`` files hold ``${VAR}`` expansion bombs,
  huge values, sparse 1 GiB files, FIFOs, ``/proc`` paths, symlinks out of the project, byte-order
  marks, multi-line and unclosed quotes, ``456 = ABC`` lines, bare keys taken from the environment
- ``docker_run``: pasted ``docker run`` lines: huge lines, hundreds of flags, odd quoting (``$'…'``,
  unclosed quotes, backslash-newlines), ``-e`` with secrets, ``-H`` engines, unknown flags
- ``secrets``: tokens (``hf_…``, ``sk-…``, ``ghp_…``, ``AKIA…``, ``user:pass@`` proxy URLs) under any
  variable name, in labels, in ``bash -c`` scripts, in command arguments, in the model's place; and
  literal values under secret names (``*_TOKEN``, ``--api-key``)

Each case must end in an imported profile or a :class:`DynoError` (any other exception is a failure)
within :data:`MAX_CASE_S`, and no secret value of the case (nor of this process's environment, which
``/proc/self/environ`` would copy) may appear in the stored profile, its exports, its launch plan, a
warning or an error message. An imported profile must load again from its stored text.

``python benchmarks/fuzz_import.py [CASES]`` runs each shape for CASES (default 10,000) cases, seed
fixed, and with the full count writes benchmarks/results/fuzz_import.txt.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "app")]

from benchmarks.fuzz_import_cases import ENV_SECRETS, SHAPES, Case  # noqa: E402

from llm_dyno.core.bounded_read import MAX_IMPORT_BYTES, read_text_capped  # noqa: E402
from llm_dyno.core.errors import DynoError  # noqa: E402
from llm_dyno.core.profiles import exporters  # noqa: E402
from llm_dyno.core.profiles.importers import ImportFailed, import_text  # noqa: E402
from llm_dyno.core.profiles.model import Profile, profile_from_yaml  # noqa: E402
from llm_dyno.core.runtime.manager import ServerManager  # noqa: E402

SEED = 22
MAX_CASE_S = 5.0
MAX_RSS_MB = 1024
CLI_SAMPLE = 17  # cases of each shape also run through `llm-dyno profile import` in a subprocess (51 in all)
# ---- running a case -------------------------------------------------------------------------------


def _materialise(case: Case, root: Path) -> Path:
    """Write the case under root/project (and root/outside.env); the project folder."""
    if root.exists():
        shutil.rmtree(root)
    project = root / "project"
    project.mkdir(parents=True)
    for name, text in case.outside.items():
        (root / name).write_text(text)
    for name, data in case.files.items():
        path = project / name
        if isinstance(data, str):
            path.write_bytes(data.encode("utf-8", errors="surrogatepass"))
        else:
            path.write_bytes(data)
    for name, size in case.sparse.items():
        with open(project / name, "ab") as f:
            f.truncate(size)
    for name in case.fifos:
        os.mkfifo(project / name)
    for name, target in case.links.items():
        os.symlink(target, project / name)
    return project


def _leaks(texts: list[str], needles: list[str]) -> str | None:
    for text in texts:
        for needle in needles:
            if needle and needle in text:
                return f"secret {needle[:6]}… in output {text[:120]!r}"
    return None


def _outputs(profile: Profile) -> list[str]:
    """What the user sees and stores of an imported profile: the file, each export, the launch plan."""
    texts = [profile.to_yaml()]
    for export in (exporters.to_compose, exporters.to_docker_run, exporters.to_vllm_serve):
        try:
            texts.append(export(profile))
        except DynoError as exc:  # a process profile has no container to export
            texts.append(str(exc))
    try:
        plan = ServerManager().runtime_for(profile).plan(profile)
        texts += [plan.describe(), plan.report()]
    except DynoError as exc:
        texts.append(str(exc))
    return texts


def run_case(case: Case, root: Path) -> tuple[str, str | None]:
    """('accepted' | 'refused', failure or None) for one case through the import entry point."""
    project = _materialise(case, root)
    needles = case.secrets + list(ENV_SECRETS.values())
    main = project / case.main
    try:
        text = read_text_capped(main, MAX_IMPORT_BYTES, "the file to import")
        result = import_text(text, source=str(main), base_dir=project)
    except ImportFailed as exc:
        return "refused", _leaks([str(exc), exc.hint or "", *exc.warnings], needles)
    except DynoError as exc:
        return "refused", _leaks([str(exc), exc.hint or ""], needles)
    except Exception as exc:  # every other exception is what the fuzzer looks for
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return (
            "crash",
            f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}: {str(exc)[:200]}",
        )
    try:
        again = profile_from_yaml(result.profile.to_yaml(), "stored profile")
    except DynoError as exc:
        return "accepted", f"the imported profile does not load again: {exc}"
    if again != result.profile:
        return "accepted", "the imported profile loads as another profile"
    return "accepted", _leaks([*_outputs(result.profile), *result.warnings], needles)


def run_cli_case(case: Case, root: Path) -> str | None:
    """The case through ``llm-dyno profile import`` in a subprocess: a failure, or None."""
    project = _materialise(case, root)
    home = root / "home"
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "app"), str(REPO)])
    argv = [sys.executable, "-m", "llm_dyno", "profile", "import", str(project / case.main), "--name", "fz"]
    try:
        ran = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, errors="replace")
    except subprocess.TimeoutExpired:
        return "the CLI import ran past 60 s"
    if ran.returncode not in (0, 2) or "Traceback" in ran.stderr:
        return f"exit {ran.returncode}: {ran.stderr[-300:]}"
    stored = [p.read_text(errors="replace") for p in home.rglob("*") if p.is_file()] if home.exists() else []
    return _leaks([ran.stdout, ran.stderr, *stored], case.secrets + list(ENV_SECRETS.values()))


@dataclass
class Outcome:
    """What one shape's run found."""

    cases: int = 0
    tally: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    cli_cases: int = 0


def fuzz(shape: str, cases: int, root: Path) -> Outcome:
    """Run ``cases`` generated cases of ``shape`` (seeded), every ``cases // CLI_SAMPLE``-th also
    through the CLI."""
    generate = SHAPES[shape]
    out = Outcome()
    every = max(1, cases // CLI_SAMPLE)
    for i in range(cases):
        case = generate(random.Random(f"{SEED}-{shape}-{i}"))
        start, cpu = time.perf_counter(), time.process_time()
        kind, failure = run_case(case, root / "case")
        took = time.perf_counter() - start
        cpu = time.process_time() - cpu  # the bound: wall time also counts the other users of the CPU
        out.cases += 1
        out.tally[kind] += 1
        out.seconds.append(took)
        if cpu > MAX_CASE_S:
            failure = failure or f"took {cpu:.1f} s of CPU"
        if kind == "crash" or failure:
            out.failures.append(f"case {i}: {failure}")
        if i % every == 0:
            out.cli_cases += 1
            cli_failure = run_cli_case(case, root / "cli")
            if cli_failure:
                out.failures.append(f"case {i} (CLI): {cli_failure}")
    return out


def main() -> int:
    """Each shape for 10,000 cases (or argv[1]); the table goes to stdout and, for the full count,
    to benchmarks/results/fuzz_import.txt."""
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    shapes = sys.argv[2].split(",") if len(sys.argv) > 2 else list(SHAPES)
    os.environ.update(ENV_SECRETS)
    root = Path(tempfile.mkdtemp(prefix="llm-dyno-fuzz-import-"))
    os.environ["LLM_DYNO_HOME"] = str(root / "home")  # the plan reads settings: never the user's
    head = f"{'shape':<11} {'cases':>6} {'accepted':>8} {'refused':>7} {'CLI':>4} {'failures':>8}"
    rows = [head + f" {'median ms':>9} {'max ms':>8} {'peak RSS':>9}"]
    failed = False
    try:
        for shape in shapes:
            o = fuzz(shape, cases, root)
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            if peak_mb > MAX_RSS_MB:
                o.failures.append(f"peak RSS {peak_mb:.0f} MB over {MAX_RSS_MB} MB")
            rows.append(
                f"{shape:<11} {o.cases:>6} {o.tally['accepted']:>8} {o.tally['refused']:>7} {o.cli_cases:>4} "
                f"{len(o.failures):>8} {statistics.median(o.seconds) * 1000:>9.2f} "
                f"{max(o.seconds) * 1000:>8.1f} {peak_mb:>6.0f} MB"
            )
            rows += [f"  {f}" for f in o.failures[:20]]
            failed = failed or bool(o.failures)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = "\n".join(rows) + "\n"
    print(text, end="")
    if cases >= 10_000 and len(shapes) == len(SHAPES):
        (REPO / "benchmarks" / "results" / "fuzz_import.txt").write_text(
            "# python benchmarks/fuzz_import.py (issue 22): each case through import_text (what "
            "`llm-dyno profile import` calls), 18 a shape through the CLI in a subprocess; seed "
            f"{SEED}; peak RSS is the process's so far\n" + text
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
