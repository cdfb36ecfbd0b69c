"""Build a tiny, randomly initialised Qwen2 model offline, for tests that start a real vLLM server.

Nothing comes from a model hub: the config is written by hand, the weights are random (a fixed seed
makes them reproducible), and the tokenizer is a byte-level BPE trained with the ``tokenizers``
library on Python's own stdlib sources. The folder holds what ``vllm serve DIR`` needs:
``config.json``, ``model.safetensors``, ``tokenizer.json``, ``tokenizer_config.json`` (with a
ChatML-style chat template that accepts ``enable_thinking``) and ``generation_config.json``.

It needs torch, transformers and tokenizers, so run it with the vllm venv's python::

    <vllm-venv>/bin/python app/llm_dyno/core/demo/tinymodel.py DEST [--layers 2] [--seed 0]

It imports only the standard library at the top (torch and friends inside the functions), so the app
can find this file without those. The CPU-demo setup (:mod:`llm_dyno.core.demo.cpu_demo`) runs it as a
subprocess to make the ``cpu-demo`` model; the tests' ``tiny_model`` / ``draft_model`` fixtures
(tests/conftest.py) run it the same way. A draft model for speculative decoding is the same recipe
with ``layers=1`` and another seed: it shares the tokenizer (trained deterministically on the same
text) and vocabulary.
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
from pathlib import Path

VOCAB_SIZE = 2048
HIDDEN = 128
HEADS = 2
KV_HEADS = 1
MAX_POSITIONS = 4096

# ChatML, as Qwen uses it; enable_thinking=false adds an empty think block like Qwen3's template.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and enable_thinking is false -%}<think>\n\n</think>\n\n{%- endif -%}"
    "{%- endif -%}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]


def _training_text(limit_bytes: int = 3_000_000) -> list[str]:
    """Python stdlib sources: always present, deterministic in order, enough to learn 2k merges."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts: list[str] = []
    total = 0
    for path in sorted(stdlib.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        texts.append(text)
        total += len(text)
        if total >= limit_bytes:
            break
    return texts


def _build_tokenizer(dest: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_text(), trainer=trainer)
    tok.save(str(dest / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": MAX_POSITIONS,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
        "additional_special_tokens": SPECIAL_TOKENS[1:],
    }
    (dest / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (dest / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, indent=2)
    )


def build_tiny_model(dest: str | Path, layers: int = 2, seed: int = 0) -> Path:
    """Write a tiny Qwen2 model (random bf16 weights from ``seed``) and its tokenizer into ``dest``.

    Returns the folder. Building takes a few seconds; the result is about 1-2 MB.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    _build_tokenizer(out)
    eos_id = SPECIAL_TOKENS.index("<|im_end|>")
    pad_id = SPECIAL_TOKENS.index("<|endoftext|>")
    config = Qwen2Config(
        vocab_size=VOCAB_SIZE,
        hidden_size=HIDDEN,
        intermediate_size=HIDDEN * 4,
        num_hidden_layers=layers,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HIDDEN // HEADS,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    generation = {"bos_token_id": pad_id, "eos_token_id": eos_id, "pad_token_id": pad_id, "do_sample": True}
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2))
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: build into DEST."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = build_tiny_model(args.dest, layers=args.layers, seed=args.seed)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
