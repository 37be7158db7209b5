#!/usr/bin/env bash
# Refresh the stored peer logits of tests/test_model_logits.c: the test writes
# its models into a folder (GGSCOPE_DUMP_MODELS), the peer oracle (llama.cpp)
# evaluates each, and the logits go to tests/data/model_logits/NAME.txt.
# usage: bench/make_test_logits.sh [BUILD_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
peer=$src/../shared/peer/peer
dir=$(mktemp -d)
cd "$src"
GGSCOPE_DUMP_MODELS=$dir "$build/test_model_logits" 2>/dev/null | grep ' ids ' | while read -r model _ ids; do
  name=$(basename "$model" .gguf)
  out=tests/data/model_logits/$name.txt
  {
    echo "# logits of llama.cpp (peer logits --all) for the model test_model_logits writes as '$name'"
    echo "ids $ids"
    "$peer" logits "$model" "$ids" --all --top 1 | python3 -c '
import json, sys
for line in sys.stdin:
    print(" ".join("%.9g" % x for x in json.loads(line)["logits"]))'
  } > "$out"
  echo "$out"
done
rm -rf "$dir"
