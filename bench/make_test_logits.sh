#!/usr/bin/env bash
# Refresh the stored peer logits of the model-logits tests: the test writes
# its models into a folder (GGSCOPE_DUMP_MODELS) and prints "PATH ids A,B,..
# [keep K]" per model, the peer oracle (llama.cpp) evaluates each, and the
# logits (the last K positions when K is given) go to the test's data folder.
#   bench/make_test_logits.sh [BUILD_DIR]            tests/data/model_logits (test_model_logits)
#   HASWELL=1 bench/make_test_logits.sh [BUILD_DIR]  tests/data/model_logits_haswell
#                                                    (test_model_logits_haswell; on an AVX2-only machine)
#   ZEN4=1 bench/make_test_logits.sh [BUILD_DIR]     tests/data/model_logits_zen4
#                                                    (test_model_logits_zen4; on an AVX-512 machine)
#   ONLY=REGEX  refresh only the cases whose name matches
#   MOE=1       the mixture-of-experts cases below instead, written by bench_mkmodel (the
#               test need not have them yet): a test case NAME ARCH TYPE SEED N_TOK KEEP
#               mirrors one with testmodel_arch_params(ARCH), n_vocab 300, wtype TYPE,
#               seed SEED and the options' fields, ids[0] = 1, ids[i] = (i*97 + SEED*31) % 300
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
peer=$src/../shared/peer/peer
test=test_model_logits data=tests/data/model_logits
if [[ ${HASWELL:-0} == 1 ]]; then test=test_model_logits_haswell data=tests/data/model_logits_haswell; fi
if [[ ${ZEN4:-0} == 1 ]]; then test=test_model_logits_zen4 data=tests/data/model_logits_zen4; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$src"

# NAME ARCH TYPE SEED N_TOK KEEP [bench_mkmodel options]: 8 experts 2 used (llama: Mixtral
# style, --experts), gpt-oss 32 / 4 with MXFP4 experts when quantized and a 16-token sliding
# window that the prompt crosses; 64 tokens take ggml's tiled attention (gpt-oss: the sinks'
# fmaf form), the short case its one-chunk form
MOE_CASES=(
  "qwen3moe_f32 qwen3moe f32 69 64 8"
  "qwen3moe_f16 qwen3moe f16 70 64 8"
  "qwen3moe_q8_0 qwen3moe q8_0 71 64 8"
  "qwen3moe_q4_K qwen3moe q4_K 72 64 8"
  "gpt-oss_f32 gpt-oss f32 73 64 8 --swa 16"
  "gpt-oss_f16 gpt-oss f16 74 64 8 --swa 16"
  "gpt-oss_q8_0 gpt-oss q8_0 75 64 8 --swa 16"
  "gpt-oss_q8_0_short gpt-oss q8_0 76 12 12 --swa 16"
  "llama_moe_f32 llama f32 77 64 8 --experts 8 --experts-used 2"
  "llama_moe_f16 llama f16 78 64 8 --experts 8 --experts-used 2"
  "llama_moe_q8_0 llama q8_0 79 64 8 --experts 8 --experts-used 2"
  "llama_moe_q4_K llama q4_K 80 64 8 --experts 8 --experts-used 2"
)
models() { # "PATH ids A,B,.. keep K" per model
  if [[ ${MOE:-0} != 1 ]]; then
    GGSCOPE_DUMP_MODELS=$dir "$build/$test" 2>/dev/null | grep ' ids '
    return
  fi
  local c name arch type seed ntok keep extra
  for c in "${MOE_CASES[@]}"; do
    read -r name arch type seed ntok keep extra <<<"$c"
    [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && continue
    # shellcheck disable=SC2086
    "$build/bench_mkmodel" "$dir/$name.gguf" --arch "$arch" --type "$type" --seed "$seed" --n-vocab 300 $extra >&2
    echo "$dir/$name.gguf ids $(python3 -c 'import sys; s, n = map(int, sys.argv[1:]); print(",".join(["1"] + [str((i * 97 + s * 31) % 300) for i in range(1, n)]))' "$seed" "$ntok") keep $keep"
  done
}
writer=$test
[[ ${MOE:-0} == 1 ]] && writer=bench_mkmodel
models | while read -r model _ ids _ keep; do
  name=$(basename "$model" .gguf)
  [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && continue
  out=$data/$name.txt
  {
    echo "# logits of llama.cpp (peer logits --all) for the model $writer writes as '$name'"
    echo "ids $ids"
    "$peer" logits "$model" "$ids" --all --top 1 | python3 -c '
import json, sys
keep = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else 0
lines = [" ".join("%.9g" % x for x in json.loads(l)["logits"]) for l in sys.stdin]
print("\n".join(lines[-keep:] if keep else lines))' "${keep:-}"
  } > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$out"
done
