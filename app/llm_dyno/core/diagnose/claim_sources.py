"""Where the diagnosis's claims about a reference's configuration come from: one entry per claim, with
the repository and path (at a commit), the PR or issue, or the documentation page it rests on.

The rows of the reference diff and the findings about the reference's compose cite these by key, so a
claim is written once and its source beside it. The causes table keeps its own sources (causes.py,
from shared/reference/FIELD_EVIDENCE.md).
"""

from __future__ import annotations

from dataclasses import dataclass

RECIPE = "noonghunna/qwen36-27b-single-3090"
RECIPE_REBENCH = "061a5f1"  # 2026-04-27, "full re-bench cycle on unified substrate"


@dataclass(frozen=True)
class ClaimSource:
    """A claim in a few words and where it is published."""

    claim: str
    where: str


CLAIMS: dict[str, ClaimSource] = {
    "recipe-compose": ClaimSource(
        "the reference's configuration is the recipe's own compose file at its re-bench commit",
        f"{RECIPE} compose/*.yml @ {RECIPE_REBENCH}",
    ),
    "recipe-pin-drift": ClaimSource(
        "the recipe's composes ran two older pins (dev21 @sha256:9bba4628…, dev174 nightly-100c7b65…) "
        "before its re-bench unified all six on dev205 (nightly-07351e08…)",
        f"{RECIPE} README.md @ {RECIPE_REBENCH}, 'Recently fixed: 2026-04-27 … Image split'",
    ),
    "genesis-modular": ClaimSource(
        "Genesis v7.14+ is a modular package mounted at …/dist-packages/vllm/_genesis and applied with "
        "`python3 -m vllm._genesis.patches.apply_all`; it replaced the patch_genesis_unified.py script",
        f"{RECIPE} compose/docker-compose.yml @ {RECIPE_REBENCH} (volume comment); commit a260bda "
        "'migrate legacy composes to Genesis v7.14+ modular layout'",
    ),
    "genesis-opt-in": ClaimSource(
        "Genesis v7.14 opt-in patches are off by default and must be enabled per process "
        "(GENESIS_ENABLE_*); the fp8 composes enable P64 (streaming tool calls), P68 and P69 "
        "(long-context tool adherence)",
        f"{RECIPE} compose/docker-compose.v714.yml and compose/docker-compose.yml @ {RECIPE_REBENCH}",
    ),
    "genesis-results": ClaimSource(
        "Genesis v7.54 on dev205 applies 26, skips 37, fails 0 on the fp8 paths",
        f"{RECIPE} README.md @ {RECIPE_REBENCH}, 'Cause B — Genesis patch anchor drift'",
    ),
    "genesis-neutral": ClaimSource(
        "Genesis is performance-neutral on the fp8 + MTP path: 55.0 / 70.5 TPS with v7.54, 54.7 / 68.2 "
        "without (the no-Genesis control)",
        f"{RECIPE} README.md @ {RECIPE_REBENCH}, 'Genesis exoneration'; "
        "compose/docker-compose.no-genesis-mtp.yml",
    ),
    "start-packages": ClaimSource(
        "packages installed by `pip install` in the start script are unpinned: each new container "
        "installs the newest release at that moment",
        "pip documentation, 'pip install' (a requirement without a version specifier takes the "
        "latest release): https://pip.pypa.io/en/stable/cli/pip_install/",
    ),
    "pytorch-alloc-conf": ClaimSource(
        "PyTorch reads PYTORCH_CUDA_ALLOC_CONF as <option>:<value>,<option2>:<value2>…",
        "PyTorch docs, CUDA semantics, 'Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF' "
        "(https://docs.pytorch.org/docs/stable/notes/cuda.html; pytorch/pytorch docs/source/notes/cuda.rst)",
    ),
    "pytorch-alloc-parser": ClaimSource(
        "the allocator splits the value on ',' ':' '[' ']' only, so `max_split_size_mb=512` is one unknown "
        "key and is refused: \"Unrecognized key 'max_split_size_mb=512' in CUDA allocator config\" (older "
        'releases: "Unrecognized CachingAllocator option: …")',
        "pytorch/pytorch c10/cuda/CUDAAllocatorConfig.cpp (parseArgs), c10/core/AllocatorConfig.cpp "
        "(ConfigTokenizer / lexArgs)",
    ),
    "recipe-context": ClaimSource(
        "context length barely moves single-stream decode: 55.0 / 70.5 TPS at 20K, 53.4 / 69.6 at 75K",
        f"{RECIPE} README.md @ {RECIPE_REBENCH}, variant table (Default, Tools-text)",
    ),
    "recipe-vision": ClaimSource(
        "dropping the vision tower (--language-model-only) frees memory for the KV pool, not decode speed",
        f"{RECIPE} README.md @ {RECIPE_REBENCH}, Tools-text row ('Drops vision to free KV pool')",
    ),
    "batched-tokens": ClaimSource(
        "--max-num-batched-tokens is a prefill / memory knob; no source ties it to decode speed",
        "club-3090 CHANGELOG #847 / #849 (shared/reference/FIELD_EVIDENCE.md, cause 9)",
    ),
    "graph-default": ClaimSource(
        "with FlashInfer and spec decode vLLM downgrades FULL_AND_PIECEWISE to PIECEWISE by itself; the "
        "recipe leaves cudagraph_mode at the default",
        f"vllm #49547, PR #32936; {RECIPE} compose/docker-compose.yml @ {RECIPE_REBENCH} (no "
        "--compilation-config)",
    ),
    "engine-flag": ClaimSource(
        "an engine setting changes what vLLM runs; its effect here is not published",
        "vLLM engine arguments (docs/configuration/engine_args.md)",
    ),
    "model-path": ClaimSource(
        "vLLM reads a local model folder as it reads a downloaded repository: its config.json and weights",
        "vLLM engine arguments, --model ('Name or path of the Hugging Face model to use')",
    ),
    "not-engine": ClaimSource(
        "names, addresses, restart policy and model-folder paths do not change what the GPU computes",
        "Docker Compose file reference (services: container_name, ports, restart, volumes)",
    ),
    "single-gpu-nccl": ClaimSource(
        "NCCL settings act between GPUs; a single-GPU server (tensor-parallel-size 1) does not use them",
        "NVIDIA NCCL documentation, 'Environment Variables'",
    ),
    "power-cap": ClaimSource(
        "a lower power cap lowers decode speed (a 3090: ~33 → ~43 TPS from 230 to 330 W)",
        "club-3090 power-cap-sweep.sh, #58; the founding post (shared/reference/REFERENCE_NUMBERS.md)",
    ),
}


def cite(key: str) -> str:
    """Where the claim ``key`` is published (KeyError for a key that is not here: a typo in a rule)."""
    return CLAIMS[key].where
