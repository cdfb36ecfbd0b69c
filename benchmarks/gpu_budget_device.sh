#!/bin/bash
# On a lent NVIDIA GPU machine (read-only: nothing is set on the GPU), from the repository root with the
# app's wheels in .whl/ (pip download for its Python): the GPU budget's live NVML reading, first with
# the GPU free, then while another process (torch) holds 100 GiB. Output: benchmarks/results/gpu_budget_h200.txt
set -u
rm -f /tmp/held
PY=$(command -v python3)
NP=""; $PY -c "import numpy" 2>/dev/null || NP=numpy
$PY -m pip install -q --no-index --find-links .whl --target /tmp/deps pydantic PyYAML platformdirs httpx prometheus_client docker paramiko nvidia-ml-py $NP 2>&1 | tail -2
export LLM_DYNO_HOME=/tmp/home PYTHONPATH=$PWD/app:/tmp/deps
mkdir -p /tmp/home/config/profiles /tmp/model
echo '{"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":1000,"max_position_embeddings":512,"torch_dtype":"bfloat16","intermediate_size":128}' > /tmp/model/config.json
cat > /tmp/home/config/profiles/half.yaml <<'Y'
schema: 1
name: half
runtime: process
process:
  executable: /bin/false
model: /tmp/model
gpus: [0]
args: [--gpu-memory-utilization, '0.5', --port, '8301']
Y
L() { $PY -m llm_dyno "$@"; }
echo "== nvidia-smi before"; nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
echo "== plan (nothing else on the GPU)"; L plan half 2>&1 | tail -25; L plan half --json > ${OUT:-/tmp}/plan_free.json 2>${OUT:-/tmp}/plan_free.err; echo "rc=$?"
# another process takes 100 GiB of the 140
$PY - <<'P' &
import torch, time
x = torch.empty(100 * 2**30, dtype=torch.uint8, device="cuda")
open("/tmp/held", "w").write("ok")
time.sleep(120)
P
HOLD=$!
for i in $(seq 60); do [ -f /tmp/held ] && break; sleep 1; done
echo "== nvidia-smi while another process holds memory"; nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
echo "== plan"; L plan half 2>&1 | grep -i -B2 -A8 "budget"; L plan half --json > ${OUT:-/tmp}/plan_held.json 2>${OUT:-/tmp}/plan_held.err; echo "rc=$?"
echo "== launch (must be refused before anything starts)"; L launch half; echo "launch rc=$?"
L status
kill $HOLD; wait $HOLD 2>/dev/null
echo "== after"; nvidia-smi --query-gpu=memory.used --format=csv,noheader
