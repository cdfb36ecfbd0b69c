"""Secret references: the one syntax, resolved only at launch."""

from __future__ import annotations

import importlib.util

import pytest

from llm_dyno.core.errors import DynoError
from llm_dyno.core.secrets import is_reference, resolve_command, resolve_env, resolve_reference

ENV = {"HF_TOKEN": "abc", "EMPTY": ""}


def test_reference_forms() -> None:
    assert resolve_reference("${HF_TOKEN}", ENV) == "abc"
    assert resolve_reference("$HF_TOKEN", ENV) == "abc"
    assert resolve_reference("${MISSING:-fallback}", ENV) == "fallback"
    assert resolve_reference("${EMPTY:-fallback}", ENV) == "fallback"
    assert resolve_reference("${MISSING}", ENV) is None
    assert resolve_reference("plain", ENV) == "plain"
    assert [is_reference(v) for v in ("${A}", "$A", "keyring:svc/u", "hf_abc", "a${B}")] == [
        True,
        True,
        True,
        False,
        False,
    ]


def test_env_and_command_resolution() -> None:
    assert resolve_env({"A": "${HF_TOKEN}", "B": "${MISSING}", "C": "x"}, ENV) == {
        "A": "abc",
        "B": "",
        "C": "x",
    }
    argv = ["vllm", "serve", "m", "--hf-token", "${HF_TOKEN}", "--port", "8000"]
    assert resolve_command(argv, ENV) == ["vllm", "serve", "m", "--hf-token", "abc", "--port", "8000"]


@pytest.mark.skipif(importlib.util.find_spec("keyring") is not None, reason="keyring is installed here")
def test_keyring_reference_without_keyring_says_what_to_do() -> None:
    with pytest.raises(DynoError, match="keyring") as info:
        resolve_env({"HF_TOKEN": "keyring:llm-dyno/HF_TOKEN"}, ENV)
    assert "HF_TOKEN" in str(info.value) and "pip install keyring" in str(info.value)
