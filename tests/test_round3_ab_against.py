"""Issue 28: `llm-dyno ab NAME --against OTHER` measures two profiles with the A/B that exists: each
launched in turn by the process runtime (A B A B over the rounds), both benchmarked with the same
suite, both stored tagged as one A/B pair, a verdict per prompt. The servers are stand-ins that stream
a recorded vLLM answer (tests/support/standin_stream_vllm.py); everything else runs as a user's does."""

from __future__ import annotations

import json
from pathlib import Path

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.support.cli import cli
from tests.support.standin_stream_vllm import write_stream_standin
from tests.support.vllm_env import free_port

SUITE = (
    "name: tiny\nwarmups: 0\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 24,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)


def _profile(home: Path, exe: Path, name: str, *extra: str) -> None:
    profile = Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(exe)),
        model="org/tiny",
        args=("--served-model-name", "tiny", "--port", str(free_port()), *extra),
    )
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(profile.to_yaml())


def test_ab_against_another_profile_stores_both_as_a_pair_and_prints_verdicts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    exe = write_stream_standin(tmp_path)
    _profile(home, exe, "original")
    _profile(home, exe, "original - fix x", "--max-num-seqs", "4")
    (home / "tiny.yaml").write_text(SUITE)
    done = cli(home, "ab", "original - fix x", "--against", "original", "--suite", str(home / "tiny.yaml"),
               "--no-thermal-wait", "--json", str(home / "ab.json"), timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [x.strip() for x in done.stdout.splitlines()]
    launched = [x.split("'")[1] for x in lines if x.startswith("launching '")]
    assert launched == ["original", "original - fix x", "original", "original - fix x"], done.stdout
    (verdict,) = [x for x in lines if x.startswith("narrative: ")]
    assert any(w in verdict for w in ("net gain", "net loss", "within noise")), verdict
    assert "original " in verdict and "original - fix x " in verdict
    data = json.loads((home / "ab.json").read_text())
    assert data["kind"] == "profile_ab"
    assert (data["baseline_profile"], data["candidate_profile"]) == ("original", "original - fix x")
    ids = [int(part.split(")")[0]) for part in done.stdout.split("saved as #")[1:]]
    assert len(ids) == 2
    sides = [json.loads(cli(home, "history", "show", str(i), "--json").stdout) for i in ids]
    base, cand = sides
    assert {"ab", "ab-baseline"} <= set(base["tags"]) and {"ab", "ab-candidate"} <= set(cand["tags"])
    assert "ab-without" not in base["tags"]  # not mistaken for a spec-decode A/B by the diagnosis
    (pair,) = [t for t in cand["tags"] if t.startswith("ab-pair-")]
    assert pair in base["tags"]
    assert base["context"]["profile"]["name"] == "original"
    assert "--max-num-seqs" in cand["context"]["profile"]["args"]
    assert all(len([r for r in p["runs"] if not r["warmup"]]) == 2 for s in sides for p in s["prompts"])


def test_ab_against_itself_or_an_unknown_profile_is_refused_before_any_launch(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _profile(home, write_stream_standin(tmp_path), "original")
    same = cli(home, "ab", "original", "--against", "original")
    assert same.returncode != 0 and "needs two different profiles" in same.stderr
    unknown = cli(home, "ab", "original", "--against", "nope")
    assert unknown.returncode != 0 and "no profile named 'nope'" in unknown.stderr
    assert "launching" not in same.stdout + unknown.stdout
