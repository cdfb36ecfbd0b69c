"""The Tune view's knobs in the window's words.

A knob is offered by the name every table, chart and message of the view gives it (its label): a vLLM
flag as ``--max-num-seqs``, as the editor's flags and the launch plan write engine flags; the draft depth
as ``num_speculative_tokens``, its key in the speculative config; the GPU's settings as ``power``,
``sm_clock`` and ``mem_clock``. What the user types is read as the command line reads it (either spelling).
A refusal names the row ("Knob 1") instead of the command line's ``--vary``.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QComboBox

from llm_dyno.core.errors import DynoError
from llm_dyno.core.tune.knob_kinds import KNOB_SUGGESTIONS, KnobKind
from llm_dyno.core.tune.knobs import Knob, KnobError, Vary, parse_knob, parse_vary
from llm_dyno.core.tune.recipes import RECIPES, recipe_vary
from llm_dyno.ui.messages import speaks_cli

NO_GPU = "no GPU on this profile (vLLM on the CPU)"
# the recipes that read their values from a GPU (they refuse a profile without one), by the knob they turn
GPU_RECIPES = {"power-cap": Knob(KnobKind.POWER), "clock-lock": Knob(KnobKind.SM_CLOCK)}
_CLI_HEAD = re.compile(r"^(?:--vary|knob) '[^']*': ")


def knob_choices(gpu_less: bool) -> list[str]:
    """The knobs a row offers, by label (``env:`` stays a prefix to complete); none of the GPU's own
    settings for a profile that uses no GPU."""
    out: list[str] = []
    for name in KNOB_SUGGESTIONS:
        if name.endswith(":"):
            out.append(name)
            continue
        knob = parse_knob(name)
        if not (gpu_less and knob.gpu is not None):
            out.append(knob.label)
    return out


def knob_tip(gpu_less: bool) -> str:
    """The knob rows' tooltip: what can be typed, and why the GPU settings are missing if they are."""
    gpu = [parse_knob(n).label for n in KNOB_SUGGESTIONS if not n.endswith(":") and parse_knob(n).gpu]
    head = "num_speculative_tokens, any vLLM flag (e.g. --max-num-seqs), env:NAME, image"
    if gpu_less:
        return f"{head}; {', '.join(gpu)} are not offered: {NO_GPU}"
    return f"{head}, {', '.join(gpu)}"


def fill_recipes(combo: QComboBox, gpu_less: bool) -> None:
    """Give each recipe of ``combo`` a tooltip with the knob it turns; a recipe that needs a GPU is
    disabled on a profile without one, saying why."""
    model = combo.model()
    for i in range(combo.count()):
        name = combo.itemText(i)
        if name not in RECIPES:
            continue
        gpu_knob = GPU_RECIPES.get(name)
        if gpu_knob is not None:
            tip = f"Varies {gpu_knob.label} over values read from the GPU"
        else:
            try:
                vary = recipe_vary(name, None)
            except DynoError as exc:  # a recipe added later that needs a GPU
                tip = exc.message
            else:
                tip = f"Varies {vary.knob.label}: {', '.join(vary.values)}"
        off = gpu_less and gpu_knob is not None
        combo.setItemData(i, f"{tip} (not here: {NO_GPU})" if off else tip, Qt.ItemDataRole.ToolTipRole)
        if isinstance(model, QStandardItemModel) and (item := model.item(i)) is not None:
            item.setEnabled(not off)
            if off and combo.currentIndex() == i:
                combo.setCurrentIndex(0)  # the "(knobs below)" entry


def row_vary(row: int, knob: str, values: str) -> Vary:
    """The knob row ``row`` (1-based) read as the command line reads ``--vary KNOB=VALUES``; a refusal
    names the row and the knob by its label."""
    try:
        return parse_vary(f"{knob}={values}")
    except KnobError as exc:
        try:
            name = parse_knob(knob).label
        except KnobError:
            name = knob
        rest = _CLI_HEAD.sub("", exc.message).replace("after '='", "in its Values")
        hint = exc.hint if exc.hint and not speaks_cli(exc.hint) else None
        raise KnobError(f"Knob {row} ({name}): {rest}", hint=hint, fix=exc.fix, subject=exc.subject) from None
