#!/usr/bin/env bash
# The explorer's `M`: the memory estimate of running the file's model, in the
# status line, computed on a worker; its context and total are those of
# `ggscope info FILE --backend auto` (the same estimate, the same defaults).
#   GGSCOPE_BIN   the binary (required)
set -u
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
tmp=$(mktemp -d)
export XDG_CACHE_HOME=$tmp/cache
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$tmp"' EXIT

"$BIN" < /dev/null > /dev/null 2>&1   # writes the demo model into the cache
demo=$(ls "$XDG_CACHE_HOME"/ggscope/*.gguf)
"$BIN" info "$demo" --backend auto > "$tmp/info" || { echo "FAIL: info --backend auto"; exit 1; }
ctx=$(sed -n 's/^memory estimate (context \([0-9]*\),.*/\1/p' "$tmp/info")
total=$(sed -n 's/^  total: *\([0-9.]*\) MiB.*/\1/p' "$tmp/info")
[[ -n $ctx && -n $total ]] || { echo "FAIL: no estimate in info's output"; cat "$tmp/info"; exit 1; }
# the explorer measures its program before its screen, info before the file: within 10%
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.1 * b) }'; }

for size in 200x60 80x24; do
    start "m${size%x*}" "$size" "$demo"
    wait_for "tensors" || continue
    keys M
    if [[ ${size%x*} -ge 200 ]]; then
        wait_for "memory to run at context $ctx"
        got=$(screen | sed -n 's/.*memory to run at context [0-9]* ([^)]*): \([0-9.]*\) MiB resident.*/\1/p')
        check "M at $size: the total ($got MiB) within 10% of info --backend auto's ($total MiB)" near "${got:-0}" "$total"
        check "M at $size: the parts named" has "weights .* KV .* compute .* program"
    else   # the status line is cut at 80 columns: its start
        wait_for "memory to run at context $ctx"
    fi
    keys q
    wait_for "EXITED 0" || true
done
# a file the engine cannot run: one line, no crash
vocab=${GGSCOPE_SHARED:-../shared}/fixtures/vocab/ggml-vocab-llama-spm.gguf
if [[ -f $vocab ]]; then
    start mv 120x30 "$vocab"
    wait_for "keys" && keys M && wait_for "memory estimate: the engine cannot run this model"
    keys q; wait_for "EXITED 0" || true
else
    echo "SKIP: the vocabulary-only check ($vocab absent)"
fi
echo "e2e_memest_explorer: $fails failure(s)"
[ "$fails" = 0 ]
