"""Issue 29, classes 4 and 6, as fuzz runs: exports safe to paste, and YAML mappings read as Compose.

``exports``: profiles made of hostile words (leading dashes, ``$(…)``, backquotes, newlines, quotes,
``;``, ``=``) in the model, flags, environment names and values, labels and volumes. Each is either
refused by profile validation or exported as ``docker run`` and ``vllm serve``, and each export is RUN
in bash with recording fakes of ``docker`` and ``vllm`` on PATH: the recorded argv and environment must
be the profile's, and no file may appear in the folder it ran in.

``yaml``: mappings with keys written twice, ``<<`` merges of one or several anchors and keys of their
own, checked against the YAML merge-key spec (own keys win, the earlier merged mapping wins) or
refused (a key written twice, two ``<<``) as a ProfileError, never another exception.

    .venv/bin/python benchmarks/fuzz_exports.py [--examples N]

On 4e0a4d2, 1,000 examples each: 306 profiles exported and run as their profile (694 refused by
validation), 444 documents read as the spec says (556 refused). On the code before class 4 it fails
at once: "env: invalid option -- '='" (env name "-"), and docker run --user - as a value word.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_dyno.core.errors import DynoError, ProfileError
from llm_dyno.core.profiles.exporters import to_docker_run, to_vllm_serve
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.profiles.yamlio import load_with_lines
from llm_dyno.core.secrets import is_reference

_PIECES = ["-", "--", "-S", "--split-string=sh -c 'touch P1'", "$(touch P2)", "`touch P3`", "\n", "'", '"']
_PIECES += [";touch P4", "=", "a", "x.y", "\\", "$", " ", "#"]
_RECORDER = """#!{python}
import json, os, sys
with open(os.path.join(os.environ["RECORD_DIR"], os.path.basename(sys.argv[0]) + ".json"), "w") as f:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ)}}, f)
"""

# a whole reference ($a, ${A}) or an escape ($$) is filled in at launch as at paste: not literal text
_word = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4).map("".join)
_word = _word.filter(lambda w: not is_reference(w) and "$$" not in w)
# "_" alone is the shell's own (bash sets it to the command's path): no shell line can pass it
_name = st.lists(st.sampled_from(["A", "_", ".", "-", "=", "b9", "$(x)", "[", " "]), min_size=1, max_size=3)
_name = _name.map("".join).filter(lambda n: n != "_")


@st.composite
def profiles(draw: st.DrawFn) -> dict[str, Any]:
    """Profile data (not yet validated) with hostile words everywhere a user's text goes."""
    env = draw(st.dictionaries(_name, _word, max_size=3))
    args = draw(st.lists(st.one_of(_word.map(lambda w: "--x=" + w), _word), max_size=4))
    runtime = draw(st.sampled_from(["docker", "process"]))
    data: dict[str, Any] = {
        "name": "fuzz",
        "runtime": runtime,
        "model": draw(_word),
        "args": args,
        "env": env,
    }
    if runtime == "docker":
        labels = draw(st.dictionaries(_word, _word, max_size=2))
        data["docker"] = {"image": "vllm/vllm-openai:v0.11.0", "labels": labels, "user": draw(_word)}
    return data


def _run(script: str, folder: Path) -> dict[str, Any]:
    fakes, record, work = folder / "bin", folder / "record", folder / "work"
    for sub in (record, work):
        shutil.rmtree(sub, ignore_errors=True)
        sub.mkdir()
    if not fakes.exists():
        fakes.mkdir()
        for name in ("docker", "vllm"):
            (fakes / name).write_text(_RECORDER.format(python=sys.executable), encoding="utf-8")
            (fakes / name).chmod(0o755)
    env = {"PATH": f"{fakes}:/usr/bin:/bin", "RECORD_DIR": str(record), "HOME": str(folder)}
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, check=False
    )
    made = [p.name for p in work.iterdir()]
    assert done.returncode == 0, (done.stderr, script)
    assert made == [], (made, script)
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in record.glob("*.json")}


def check_export(data: dict[str, Any], folder: Path, counts: dict[str, int]) -> None:
    """Refused by validation, or both shell exports run exactly the profile's command."""
    try:
        profile = Profile.model_validate(data)
    except (ValueError, DynoError):
        counts["refused"] += 1
        return
    counts["exported"] += 1
    got = _run(to_vllm_serve(profile), folder)
    assert list(got) == ["vllm"], got
    assert got["vllm"]["argv"] == ["serve", *profile.vllm_argv()], (got, profile)
    assert {k: got["vllm"]["env"].get(k) for k in profile.env} == profile.env
    if profile.docker is None:
        return
    argv = _run(to_docker_run(profile), folder)["docker"]["argv"]
    i, seen = 1, []
    while argv[i].startswith("-"):  # pflag: an option's own value word never starts with "-"
        if argv[i].startswith("--") and "=" in argv[i]:
            seen.append(tuple(argv[i].split("=", 1)))
            i += 1
        else:
            assert not argv[i + 1].startswith("-"), argv
            seen.append((argv[i], argv[i + 1]))
            i += 2
    assert argv[i:] == [profile.docker.image, *profile.vllm_argv()], argv
    assert sorted(v for f, v in seen if f in ("-e", "--env")) == sorted(
        f"{k}={v}" for k, v in profile.env.items()
    )
    assert sorted(v for f, v in seen if f == "--label") == sorted(
        f"{k}={v}" for k, v in profile.docker.labels.items()
    )


@st.composite
def merge_docs(draw: st.DrawFn) -> tuple[str, dict[str, Any] | None]:
    """A YAML document and what the spec makes of its ``s`` mapping (None: it must be refused)."""
    keys = ["a", "b", "c"]
    anchors = draw(
        st.lists(st.dictionaries(st.sampled_from(keys), st.integers(0, 9), max_size=3), max_size=3)
    )
    lines = [f"x{i}: &x{i} {json.dumps(m)}" for i, m in enumerate(anchors)]
    own = draw(st.lists(st.tuples(st.sampled_from(keys), st.integers(10, 19)), max_size=3))
    merges = draw(
        st.lists(st.lists(st.integers(0, max(len(anchors) - 1, 0)), min_size=1, max_size=3), max_size=2)
    )
    body: list[str] = []
    if anchors:
        for chosen in merges:
            body.append("  <<: [" + ", ".join(f"*x{j}" for j in chosen) + "]")
    body += [f"  {k}: {v}" for k, v in own]
    lines += ["s:", *(body or ["  {}"])] if body else ["s: {}"]
    if len(body) and (len([k for k, _ in own]) != len({k for k, _ in own}) or (anchors and len(merges) > 1)):
        return "\n".join(lines) + "\n", None
    expect: dict[str, Any] = {}
    if anchors and merges:
        for j in reversed(merges[0]):  # the earlier mapping wins: apply the later ones first
            expect.update(anchors[j])
    expect.update(dict(own))
    return "\n".join(lines) + "\n", expect


def check_merge(case: tuple[str, dict[str, Any] | None], counts: dict[str, int]) -> None:
    """Refused (a ProfileError) exactly when the spec or Compose refuses; otherwise as the spec says."""
    text, expect = case
    try:
        data, _ = load_with_lines(text, "fuzz.yml")
    except ProfileError:
        assert expect is None, text
        counts["refused"] += 1
        return
    assert expect is not None, text
    assert data["s"] == expect, (text, data["s"], expect)
    counts["read"] += 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=300)
    n = parser.parse_args().examples
    quiet = settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    export_counts = {"refused": 0, "exported": 0}
    merge_counts = {"refused": 0, "read": 0}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        given(profiles())(quiet(lambda data: check_export(data, folder, export_counts)))()
    given(merge_docs())(quiet(lambda case: check_merge(case, merge_counts)))()
    print(
        f"exports: {export_counts['exported']} run in bash as their profile, "
        f"{export_counts['refused']} refused"
    )
    print(f"yaml merges: {merge_counts['read']} read as the spec says, {merge_counts['refused']} refused")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
