#!/usr/bin/env bash
# Refresh the stored peer logits of the model-logits tests: the test writes
# its models into a folder (GGSCOPE_DUMP_MODELS) and prints "PATH ids A,B,..
# [keep K]" per model, the peer oracle (llama.cpp) evaluates each, and the
# logits (the last K positions when K is given) go to the test's data folder.
#   bench/make_test_logits.sh [BUILD_DIR]            tests/data/model_logits (test_model_logits)
#   HASWELL=1 bench/make_test_logits.sh [BUILD_DIR]  tests/data/model_logits_haswell
#                                                    (test_model_logits_haswell; on an AVX2-only machine)
#   ONLY=REGEX  refresh only the cases whose name matches
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
peer=$src/../shared/peer/peer
test=test_model_logits data=tests/data/model_logits
if [[ ${HASWELL:-0} == 1 ]]; then test=test_model_logits_haswell data=tests/data/model_logits_haswell; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$src"
GGSCOPE_DUMP_MODELS=$dir "$build/$test" 2>/dev/null | grep ' ids ' | while read -r model _ ids _ keep; do
  name=$(basename "$model" .gguf)
  [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && continue
  out=$data/$name.txt
  {
    echo "# logits of llama.cpp (peer logits --all) for the model $test writes as '$name'"
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
