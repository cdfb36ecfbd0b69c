"""Editing engine flags in place keeps the user's spelling and order."""

from __future__ import annotations

import pytest

from llm_dyno.core.profiles.edit import (
    get_flag,
    get_switch,
    has_flag,
    remove_flag,
    set_flag,
    set_optional_flag,
    set_switch,
)
from llm_dyno.core.profiles.flags import engine_config

ARGS = (
    "--served-model-name",
    "qwen",
    "--max_model_len=4096",
    "-tp",
    "1",
    "--enable-prefix-caching",
    "--port",
    "8000",
)


def test_get_flag_reads_any_spelling() -> None:
    assert get_flag(ARGS, "max-model-len") == "4096"
    assert get_flag(ARGS, "tensor-parallel-size") == "1"
    assert get_flag(ARGS, "kv-cache-dtype") is None
    assert has_flag(ARGS, "enable-prefix-caching")
    assert get_flag(ARGS, "enable-prefix-caching") is None


def test_set_existing_keeps_spelling_and_order() -> None:
    out = set_flag(ARGS, "max-model-len", "8192")
    assert out == (
        "--served-model-name",
        "qwen",
        "--max_model_len=8192",
        "-tp",
        "1",
        "--enable-prefix-caching",
        "--port",
        "8000",
    )
    out = set_flag(ARGS, "tensor-parallel-size", "2")
    assert out[3:5] == ("-tp", "2")
    out = set_flag(ARGS, "port", "8001")
    assert out[-2:] == ("--port", "8001")
    assert len(out) == len(ARGS)


def test_set_missing_appends() -> None:
    out = set_flag(ARGS, "kv-cache-dtype", "fp8")
    assert out == (*ARGS, "--kv-cache-dtype", "fp8")
    assert engine_config(out).kv_cache_dtype == "fp8"


def test_last_occurrence_wins() -> None:
    args = ("--port", "1", "--dtype", "half", "--port", "2")
    assert get_flag(args, "port") == "2"
    assert set_flag(args, "port", "3") == ("--port", "1", "--dtype", "half", "--port", "3")


def test_value_looking_like_a_flag_is_glued() -> None:
    assert set_flag((), "chat-template", "-x") == ("--chat-template=-x",)
    assert set_flag(("--chat-template", "a"), "chat-template", "-x") == ("--chat-template=-x",)
    assert set_flag((), "seed", "-1") == ("--seed", "-1")


def test_flag_missing_its_value_gets_one() -> None:
    assert set_flag(("--max-model-len", "--dtype", "half"), "max-model-len", "10") == (
        "--max-model-len",
        "10",
        "--dtype",
        "half",
    )


def test_remove_flag_all_spellings() -> None:
    args = ("--max-model-len", "1", "--dtype", "half", "--max_model_len=2", "--enforce-eager")
    assert remove_flag(args, "max-model-len") == ("--dtype", "half", "--enforce-eager")
    assert remove_flag(args, "enforce-eager") == args[:-1]
    assert remove_flag(args, "absent") == args


def test_set_optional_flag() -> None:
    assert set_optional_flag(ARGS, "port", None) == ARGS[:-2]
    assert set_optional_flag(ARGS, "port", "  ") == ARGS[:-2]
    assert set_optional_flag(ARGS, "port", " 9 ")[-1] == "9"


def test_switches() -> None:
    assert get_switch(ARGS, "enable-prefix-caching") is True
    assert get_switch(ARGS, "enable-chunked-prefill") is None
    off = set_switch(ARGS, "enable-prefix-caching", False)
    assert off[5] == "--no-enable-prefix-caching" and len(off) == len(ARGS)
    assert get_switch(off, "enable-prefix-caching") is False
    on = set_switch(off, "enable-prefix-caching", True)
    assert on == ARGS
    assert set_switch(ARGS, "enable-prefix-caching", None) == tuple(
        t for t in ARGS if t != "--enable-prefix-caching"
    )
    assert set_switch(ARGS, "enforce-eager", True) == (*ARGS, "--enforce-eager")
    assert set_switch(ARGS, "enable-prefix-caching", True) == ARGS


def test_switch_without_negative_form_is_removed() -> None:
    args = ("--trust-remote-code", "--dtype", "half")
    assert set_switch(args, "trust-remote-code", False) == ("--dtype", "half")


@pytest.mark.parametrize("state", [True, False, None])
def test_switch_roundtrip(state: bool | None) -> None:
    assert get_switch(set_switch(ARGS, "enable-chunked-prefill", state), "enable-chunked-prefill") is state


def test_flag_groups_cover_args() -> None:
    from llm_dyno.core.profiles.edit import flag_groups

    args = ("stray", "--port", "8000", "--enforce-eager", "--x=1", "-tp", "2")
    groups = flag_groups(args)
    assert [g[0] for g in groups] == [None, "port", "enforce-eager", "x", "tensor-parallel-size"]
    assert tuple(t for _, tokens in groups for t in tokens) == args


def test_replace_unmanaged_keeps_managed_in_place() -> None:
    from llm_dyno.core.profiles.edit import replace_unmanaged

    args = ("--reasoning-parser", "qwen3", "--port", "8000", "--trust-remote-code", "--dtype", "half")
    managed = frozenset({"port", "dtype"})
    out = replace_unmanaged(args, managed, [("--reasoning-parser", "deepseek"), ("--trust-remote-code",)])
    assert out == (
        "--reasoning-parser",
        "deepseek",
        "--port",
        "8000",
        "--trust-remote-code",
        "--dtype",
        "half",
    )
    assert replace_unmanaged(args, managed, [("--a",)]) == ("--a", "--port", "8000", "--dtype", "half")
    assert replace_unmanaged(args, managed, [("--a",), ("--b",), ("--c", "1")]) == (
        "--a",
        "--port",
        "8000",
        "--b",
        "--dtype",
        "half",
        "--c",
        "1",
    )
