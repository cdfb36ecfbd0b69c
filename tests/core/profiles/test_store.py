"""The profile store: round trips, broken files, duplicates, rename/delete/undo, kills mid-write."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from llm_dyno.core.errors import ProfileError, StoreError
from llm_dyno.core.profiles.model import Profile, profile_from_yaml
from llm_dyno.core.profiles.store import ProfileStore

APP = Path(__file__).resolve().parents[3] / "app"


def _profile(name: str = "demo", max_len: int = 4096) -> Profile:
    return Profile(
        name=name,
        runtime="process",
        model="/models/tiny",
        args=("--max-model-len", str(max_len), "--port", "8011"),
        env={"HF_TOKEN": "${HF_TOKEN}"},
    )


def test_save_then_load_gives_equal_profile(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    path = store.save(_profile())
    assert path == tmp_path / "demo.yaml"
    assert store.get("demo") == _profile()
    assert profile_from_yaml(path.read_text()) == _profile()


def test_second_save_keeps_previous_version_as_backup(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(_profile(max_len=1000))
    store.save(_profile(max_len=2000))
    assert store.get("demo").engine().max_model_len == 2000
    backup = profile_from_yaml((tmp_path / "demo.yaml.bak").read_text())
    assert backup.engine().max_model_len == 1000


def test_broken_file_is_reported_and_others_still_load(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(_profile("good"))
    (tmp_path / "broken.yaml").write_text("name: x\nmodel: [unclosed\n")
    (tmp_path / "badtype.yaml").write_text(
        "name: y\nmodel: m\nruntime: process\nargs: [--max-model-len, many]\n"
    )
    report = store.load_all()
    assert report.names() == ["good"]
    messages = sorted(str(e) for e in report.errors)
    assert len(messages) == 2
    assert "badtype.yaml:4" in messages[0] and "args[0]" in messages[0] and "many" in messages[0]
    assert "broken.yaml:" in messages[1] and "not valid YAML" in messages[1]


def test_duplicate_names_in_two_files_are_reported(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(_profile("same"))
    (tmp_path / "zz-copy.yaml").write_text((tmp_path / "same.yaml").read_text())
    report = store.load_all()
    assert report.names() == ["same"]
    assert len(report.errors) == 1 and "duplicate profile name 'same'" in str(report.errors[0])


def test_save_without_replace_refuses_existing_name(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(_profile())
    with pytest.raises(StoreError, match="already exists"):
        store.save(_profile(max_len=1), replace=False)
    assert store.get("demo").engine().max_model_len == 4096


def test_rename_moves_file_and_delete_can_be_undone(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(_profile("first"))
    new_path = store.rename("first", "second")
    assert new_path.name == "second.yaml" and not (tmp_path / "first.yaml").exists()
    assert store.get("second").name == "second"
    trashed = store.delete("second")
    assert store.load_all().names() == []
    restored = store.restore(trashed)
    assert restored.name == "second" and store.load_all().names() == ["second"]


def test_get_unknown_lists_known_names(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(_profile("alpha"))
    with pytest.raises(StoreError) as info:
        store.get("beta")
    assert "no profile named 'beta'" in str(info.value) and "alpha" in str(info.value)


def test_bad_values_name_file_line_and_field() -> None:
    text = "name: x\nruntime: docker\nmodel: m\ndocker:\n  image: vllm/vllm-openai\n  shm_size: lots\n"
    with pytest.raises(ProfileError) as info:
        profile_from_yaml(text, source="p.yaml")
    assert str(info.value).startswith("p.yaml:6, field 'docker.shm_size'")


def test_secret_values_are_refused() -> None:
    with pytest.raises(ValueError, match="secret"):
        Profile(name="x", runtime="process", model="m", env={"HF_TOKEN": "hf_abcdef"})
    with pytest.raises(ValueError, match="secret"):
        Profile(name="x", runtime="process", model="m", args=("--api-key", "sk-123"))
    ok = Profile(name="x", runtime="process", model="m", args=("--api-key", "${VLLM_API_KEY}"))
    assert ok.engine().api_key == "${VLLM_API_KEY}"


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {app!r})
    from pathlib import Path
    from llm_dyno.core.profiles.model import Profile
    from llm_dyno.core.profiles.store import ProfileStore
    store = ProfileStore(Path({folder!r}))
    i = int(sys.argv[1])
    print("ready", flush=True)
    while True:
        i += 1
        store.save(Profile(name="victim", runtime="process", model="m" * (i % 500 + 1),
                           args=("--max-model-len", str(i))))
    """
)


@pytest.mark.slow
def test_kill_during_saves_never_loses_or_corrupts(tmp_path: Path) -> None:
    """Kill -9 a writer at random moments; the file is always a whole, valid version."""
    store = ProfileStore(tmp_path)
    store.save(Profile(name="victim", runtime="process", model="m", args=("--max-model-len", "1")))
    script = tmp_path.parent / "writer.py"
    script.write_text(WRITER.format(app=str(APP), folder=str(tmp_path)))
    rng = random.Random(1234)
    last = 1
    for round_ in range(40):
        proc = subprocess.Popen([sys.executable, str(script), str(last)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.15))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        report = store.load_all()
        assert report.errors == (), f"round {round_}: {report.errors}"
        (victim,) = report.profiles
        value = victim.profile.engine().max_model_len
        assert value is not None and value >= last, "a kill must never roll back a completed save"
        last = value
        backup = tmp_path / "victim.yaml.bak"
        if backup.exists():
            profile_from_yaml(backup.read_text(), str(backup))
        store.cleanup()
        assert not list(tmp_path.glob(".*.tmp"))
    assert last > 1, "the writer never completed a save: the test did not exercise anything"
