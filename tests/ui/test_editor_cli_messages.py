"""One check for a changed profile: a bad engine-flag value typed in the editor reads as ``llm-dyno profile
set`` says it (both go through ``Profile.with_changes``), and neither front end writes anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from llm_dyno.core.profiles.edit import get_flag
from llm_dyno.core.profiles.store import ProfileStore

MTP = "qwen36-27b-mtp"


def profile_set(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "llm_dyno", "profile", "set", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_bad_value_reads_the_same_in_the_editor_as_in_profile_set_and_nothing_is_saved(  # type: ignore[no-untyped-def]
    window, qtbot, store: ProfileStore, ui_home: Path
) -> None:
    path = store.path_for(MTP)
    before = path.read_bytes()
    ran = profile_set(ui_home, MTP, "max-model-len=abc")
    assert ran.returncode != 0 and "Traceback" not in ran.stderr, ran.stderr
    assert "field 'args[" in ran.stderr and "→ fix the value of --max-model-len" in ran.stderr, ran.stderr
    assert path.read_bytes() == before

    window.select_profile(MTP)
    field = window.editor.form.editor("max_model_len")
    field.selectAll()
    qtbot.keyClicks(field, "abc")
    message = window.editor.validation.errors["max_model_len"]
    assert message == "--max-model-len 'abc': expected a whole number of tokens, e.g. 32768"
    assert message in ran.stderr  # the CLI's message, word for word
    shown = window.editor.form.fields["max_model_len"].hint.text()
    assert shown[:1].lower() + shown[1:] in message  # under the field, without the flag it names
    assert not window.editor.save_button.isEnabled()
    window.editor.save_button.click()
    window.editor.save()  # Ctrl+S's slot: refused while the draft is invalid
    assert path.read_bytes() == before

    # a good value through the CLI: saved in place (same flags, same order), and the editor agrees
    args = store.get(MTP).args
    ran = profile_set(ui_home, MTP, "max-model-len=16384")
    assert ran.returncode == 0 and "--max-model-len" in ran.stdout, ran.stderr
    after = store.get(MTP).args
    assert get_flag(after, "max-model-len") == "16384" and len(after) == len(args)
    field.selectAll()
    qtbot.keyClicks(field, "16384")
    assert window.editor.validation.profile is not None
    assert window.editor.validation.profile.args == after


def test_profile_set_refuses_what_is_not_flag_equals_value(ui_home: Path, store: ProfileStore) -> None:
    before = store.path_for(MTP).read_bytes()
    ran = profile_set(ui_home, MTP, "max-model-len")
    assert ran.returncode != 0 and "'max-model-len' is not FLAG=VALUE" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr and store.path_for(MTP).read_bytes() == before
