"""Knob kinds: one object per kind (parse, check, apply, put back), found through one table."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from llm_dyno.cli import run as run_cli
from llm_dyno.core.profiles.edit import get_flag
from llm_dyno.core.profiles.model import DockerSettings, Profile, profile_from_yaml
from llm_dyno.core.tune import knob_kinds
from llm_dyno.core.tune.apply import tuned_copy
from llm_dyno.core.tune.knob_kinds import GPU_KNOBS, KINDS, KNOB_SUGGESTIONS, FlagKind, KnobError, KnobKind
from llm_dyno.core.tune.knobs import Knob, Setting, apply_settings, current_value, parse_knob, parse_vary
from tests.test_hostile_files import SHIPPED

SPEC = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'


def profile() -> Profile:
    shipped = profile_from_yaml(SHIPPED.read_text())
    return shipped.with_changes(
        args=(*shipped.args, "--speculative-config", SPEC), docker=DockerSettings(image="vllm/vllm-openai:v1")
    )


def test_every_kind_has_an_object_and_every_name_parses_to_it_and_back() -> None:
    assert set(KINDS) == set(KnobKind)
    for kind, obj in KINDS.items():
        for name in (*obj.aliases, *(n for n in obj.suggested if n != "env:")):
            knob = parse_knob(name)
            assert knob.kind is kind, name
            assert Knob.from_label(knob.label, knob.kind.value) == knob  # a stored record reads back
    assert parse_knob("env:VLLM_X") == Knob(KnobKind.ENV, "VLLM_X")
    assert parse_knob("--max_num_seqs") == Knob(KnobKind.FLAG, "max-num-seqs")
    assert KNOB_SUGGESTIONS[:2] == ("num-speculative-tokens", "max-num-batched-tokens")
    assert GPU_KNOBS == ("power", "sm-clock", "mem-clock")  # what a GPU-less profile is not offered


def test_each_kind_applies_reads_back_and_keeps_its_value() -> None:
    p = profile()
    settings = tuple(
        s
        for v in (
            "num_speculative_tokens=5",
            "max-num-seqs=7",
            "env:VLLM_X=1",
            "image=img:2",
            "power=250",
            "sm_clock=1410",
        )
        for s in parse_vary(v).settings()
    )
    changed = apply_settings(p, settings)
    assert json.loads(get_flag(changed.args, "speculative-config") or "")["num_speculative_tokens"] == 5
    read = {s.knob.label: current_value(changed, s.knob) for s in settings}
    assert read == {
        "num_speculative_tokens": "5", "--max-num-seqs": "7", "env:VLLM_X": "1", "image": "img:2",
        "power": None, "sm_clock": None,  # GPU settings do not change the server
    }  # fmt: skip
    copy, notes = tuned_copy(p, settings, taken=set())
    assert (
        copy.power is not None
        and copy.power.limit_w == 250.0
        and current_value(copy, parse_knob("power")) == "250"
    )
    assert notes == [
        "sm_clock=1410 is a GPU clock lock: a profile cannot hold it (lock it with the tune's value)"
    ]
    assert copy.env["VLLM_X"] == "1" and copy.name == f"{p.name}-tuned"


@pytest.mark.parametrize(
    ("vary", "message"),
    [
        ("num_speculative_tokens=0", "'0' is not a positive whole number"),
        ("max-model-len=big", "'big' is not a positive whole number"),
        ("kv-cache-dtype=fp9", "'fp9' is not a KV-cache dtype"),
        ("power=-3", "'-3' is not a power in watts"),
        ("mem_clock=1.5", "'1.5' is not a positive whole number"),
    ],
)
def test_each_kind_checks_its_values(vary: str, message: str) -> None:
    with pytest.raises(KnobError, match=message):
        parse_vary(vary)


def test_a_table_missing_a_kind_or_naming_one_twice_is_refused() -> None:
    without = {k: v for k, v in KINDS.items() if k is not KnobKind.IMAGE}
    with pytest.raises(ValueError, match="knob kinds without an object: image"):
        knob_kinds.check_kinds(without)
    with pytest.raises(ValueError, match="'image' is given the object of 'env'"):
        knob_kinds.check_kinds({**KINDS, KnobKind.IMAGE: KINDS[KnobKind.ENV]})
    clash = dataclasses.make_dataclass("Clash", [], bases=(FlagKind,))()
    clash.aliases = ("power",)
    with pytest.raises(ValueError, match="knob name 'power' means both"):
        knob_kinds.check_kinds({**KINDS, KnobKind.FLAG: clash})


class SwapKind(FlagKind):
    """A kind added at runtime: ``swap`` varies --swap-space, in whole GiB of at least 4."""

    kind = "swap"  # type: ignore[assignment]  # a KnobKind member in the real thing
    prefix, aliases, suggested = None, ("swap",), ("swap",)

    def check(self, name: str, value: str, text: str) -> None:
        if not value.isdigit() or int(value) < 4:
            raise KnobError(f"--vary {text!r}: {value!r} GiB of swap is too little (at least 4)")

    def apply(self, profile: Profile, name: str, value: str) -> Profile:
        return super().apply(profile, "swap-space", value)


def test_a_kind_added_to_the_table_reaches_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The "Extending" section's claim: one object in KINDS, and ``llm-dyno tune`` parses, checks and
    applies the new knob through it."""
    monkeypatch.setitem(KINDS, "swap", SwapKind())  # type: ignore[index]
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    assert run_cli(["profile", "import", str(SHIPPED), "--name", "demo"]) == 0
    assert run_cli(["tune", "demo", "--vary", "swap=2,8"]) == 2  # the in-process CLI entry
    assert "'2' GiB of swap is too little (at least 4)" in capsys.readouterr().err
    (setting,) = parse_vary("swap=8").settings()
    assert setting.knob.label == "swap" and setting.knob.relaunch
    assert get_flag(apply_settings(profile(), (setting,)).args, "swap-space") == "8"
    assert str(Setting(setting.knob, "8")) == "swap=8"
