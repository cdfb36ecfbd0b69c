"""Docker Compose's own fixtures read by the app and by Compose: the figures (match / refused by both /
refused / differ / crash / unjudged) into benchmarks/results/compose_corpus.{json,txt}.

    python benchmarks/compose_corpus.py            # judge the corpus, write the figures
    python benchmarks/compose_corpus.py --collect  # copy the fixtures, record Compose's reading

``--collect`` takes every compose file under compose-spec/compose-go's and docker/compose's test folders
with a service that has an image and a command and no build (a vLLM service names its model; the app
builds no images), copies it with the small files beside it into tests/fixtures/compose/upstream, and
records ``docker-compose config`` (v1.29, the one installable here) beside it, or its refusal.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "app"))

from tests.support.compose_corpus import (  # noqa: E402
    CLEAN_ENV,
    REFUSED_FOR_A_SHARED_REASON,
    UPSTREAM,
    UPSTREAM_PLACEHOLDER,
    judge_all,
)

MIRRORS = {
    "compose-go": ("compose-spec/compose-go", Path("/work/.mirror/compose-spec+compose-go/repo")),
    "compose": ("docker/compose", Path("/work/.mirror/docker+compose/repo")),
}
_SMALL = 64 * 1024


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _candidate(text: str) -> bool:
    try:
        data = yaml.safe_load(text.replace("!reset", "").replace("!override", ""))
    except yaml.YAMLError:
        return False
    services = data.get("services") if isinstance(data, dict) else None
    return isinstance(services, dict) and any(
        isinstance(s, dict) and "command" in s and ("image" in s or "extends" in s) and "build" not in s
        for s in services.values()
    )


_V2_ONLY = (
    (re.compile(r"'name' does not match any of the regexes"), ("name",)),
    (re.compile(r"Unsupported config option for services\.([\w.-]+): '(\w+)'"), ("services", 1, 2)),
    (re.compile(r"services\.([\w.-]+)\.(depends_on|pull_policy) "), ("services", 1, 2)),
    (re.compile(r"services\.([\w.-]+)\.healthcheck value '(\w+)'"), ("services", 1, "healthcheck", 2)),
    (
        re.compile(r"services\.([\w.-]+)\.networks\.(\w+) contains unsupported option: '(\w+)'"),
        ("services", 1, "networks", 2, 3),
    ),
    (re.compile(r"^(secrets|configs|models)\.", re.M), (1,)),
)


def _v2_only_key(stderr: str, data: dict[str, Any]) -> str | None:
    """Remove from ``data`` the v2-only key v1.29 complained about (one that decides none of the
    compared facts); its dotted path, or None when the complaint is about anything else."""
    for pattern, path in _V2_ONLY:
        m = pattern.search(stderr)
        if m is None:
            continue
        keys = [m.group(p) if isinstance(p, int) else p for p in path]
        node: Any = data
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and keys[-1] in node:
            del node[keys[-1]]
            return ".".join(keys)
    return None


def collect() -> None:
    """Copy the fixtures and record Compose's reading of each."""
    sources: dict[str, dict[str, str]] = {}
    for short, (name, repo) in MIRRORS.items():
        commit = _git(repo, "rev-parse", "HEAD").strip()
        files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        for path in files:
            if not path.endswith((".yaml", ".yml")) or not ("testdata/" in path or "fixtures/" in path):
                continue
            if not _candidate(_git(repo, "show", f"HEAD:{path}")):
                continue
            folder = str(Path(path).parent)
            for sibling in files:  # the compose file and the small files beside it (.env, env files)
                if str(Path(sibling).parent) == folder or sibling.startswith(folder + "/"):
                    body = subprocess.run(
                        ["git", "-C", str(repo), "show", f"HEAD:{sibling}"], capture_output=True, check=True
                    ).stdout
                    if len(body) <= _SMALL and sibling.count("/") - folder.count("/") <= 2:
                        dest = UPSTREAM / short / sibling
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        dest.write_bytes(body)
            sources[f"{short}/{path}"] = {"repo": name, "path": path, "commit": commit}
    (UPSTREAM / "SOURCES.json").write_text(json.dumps(sources, indent=1, sort_keys=True) + "\n")
    compose = shutil.which("docker-compose")
    if compose is None:
        raise SystemExit("docker-compose is not installed (apt-get install -y docker-compose)")
    for rel in sources:
        path = UPSTREAM / rel
        done = subprocess.run(
            [compose, "-f", path.name, "config"],
            cwd=path.parent,
            env=CLEAN_ENV,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        removed: list[str] = []
        data = yaml.safe_load(path.read_text().replace("!reset", "").replace("!override", ""))
        while done.returncode != 0 and len(removed) < 8:
            # a v2-only key that decides nothing compared here (hooks, pull_policy values, name:, …):
            # v1 judges the rest of the file without it, and the key is recorded as left out
            key = _v2_only_key(done.stderr, data)
            if key is None:
                break
            removed.append(key)
            bare = path.with_name(f".v1-{path.name}")
            bare.write_text(yaml.safe_dump(data))
            try:
                done = subprocess.run(
                    [compose, "-f", bare.name, "config"],
                    cwd=path.parent,
                    env=CLEAN_ENV,
                    capture_output=True,
                    text=True,
                    timeout=60,
                    check=False,
                )
            finally:
                bare.unlink()
        if removed and done.returncode == 0:
            done.stdout = (
                f"# judged by v1.29 without these v2-only keys: {', '.join(removed)}\n" + done.stdout
            )
        if done.returncode == 0:  # the fixtures' folder as a placeholder: the judge reads it anywhere
            recorded = done.stdout.replace(str(UPSTREAM), UPSTREAM_PLACEHOLDER)
            path.with_name(path.name + ".config.yaml").write_text(recorded)
        else:
            path.with_name(path.name + ".config-error.txt").write_text(done.stderr.strip() + "\n")
    print(f"{len(sources)} fixtures in {UPSTREAM}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--collect", action="store_true", help="copy the fixtures and record Compose's reading"
    )
    args = parser.parse_args()
    if args.collect:
        collect()
    outcomes = judge_all()
    counts = Counter(o.result for o in outcomes)
    shared = [o for o in outcomes if o.result == "refused" and o.key() in REFUSED_FOR_A_SHARED_REASON]
    not_shared = [o for o in outcomes if o.result == "refused" and o.key() not in REFUSED_FOR_A_SHARED_REASON]
    results = REPO / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "compose_corpus.json").write_text(
        json.dumps(
            {
                "counts": dict(sorted(counts.items())),
                "refused_for_a_reason_compose_shares": len(shared),
                "refused_though_compose_runs_it": len(not_shared),
                "outcomes": [
                    {
                        **o.__dict__,
                        "why": REFUSED_FOR_A_SHARED_REASON.get(o.key(), ""),
                    }
                    for o in outcomes
                ],
            },
            indent=1,
        )
        + "\n"
    )
    lines = [
        "Docker Compose's own fixtures (compose-spec/compose-go, docker/compose; see "
        "tests/fixtures/compose/upstream/SOURCES.json), every service with an image and a command,",
        "read by the app (import --bind file) and by docker-compose config v1.29 (where v1.29 cannot read "
        "a file, by the assertions of Compose v2's own tests: *.judge.yaml beside it), compared by meaning.",
        "",
        *(f"{k:>13}: {v}" for k, v in sorted(counts.items())),
        f"{'services':>13}: {len(outcomes)}",
        f"  of the refused, for a reason Compose shares: {len(shared)}; though Compose runs it: "
        f"{len(not_shared)}",
        "",
        *(
            f"{o.result:>13}  {o.key()}  {o.detail[:300]}"
            for o in outcomes
            if o.result not in ("match", "refused")
        ),
        "",
        "refused for a reason Compose shares (it fails there too, or refuses the same):",
        *(
            f"  {o.key()}  {o.detail[:300]}\n      why shared: {REFUSED_FOR_A_SHARED_REASON[o.key()]}"
            for o in shared
        ),
        "",
        "refused though Compose runs it (named with key and line at import, never dropped):",
        *(f"  {o.key()}  {o.detail[:300]}" for o in not_shared),
    ]
    (results / "compose_corpus.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:12]))


if __name__ == "__main__":
    main()
