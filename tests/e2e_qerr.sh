#!/usr/bin/env bash
# End-to-end test of the quantization error page (tmux): `ggscope qerr --tui`
# shows the table, the layer x role heatmap and the histograms; `m` cycles the
# heatmap's metric; Enter on a cell jumps to that tensor in the explorer; `e`
# from the explorer (ggscope FILE --vs PARENT) opens the page. The CLI's
# self-comparison prints inf, never nan.
#   GGSCOPE_BIN, GGSCOPE_SHARED; GGSCOPE_SCREENS_OUT: save the screens there
set -u
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
SHARED=${GGSCOPE_SHARED:-../shared}
OUT=${GGSCOPE_SCREENS_OUT:-}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
TMPD=$(mktemp -d)
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$TMPD"' EXIT

F32=$SHARED/models/tinyllamas-stories-260k-f32.gguf
Q8=$SHARED/models/tinyllamas-stories-260k-q8_0.gguf
if [[ ! -f $F32 || ! -f $Q8 ]]; then
    # no ../shared: a model quantized by ggscope from the demo model's tensors
    echo "note: ../shared is absent: the demo model, quantized by ggscope to f16 and q8_0"
    "$BIN" --no-tui >/dev/null 2>&1
    DEMO=$(ls "$XDG_CACHE_HOME"/ggscope/*.gguf 2>/dev/null | head -1)
    [[ -n $DEMO ]] || { echo "SKIP: no model available"; exit 77; }
    F32=$TMPD/f16.gguf
    Q8=$TMPD/q8.gguf
    "$BIN" quantize "$DEMO" "$F32" --type f16 2>/dev/null || { echo "FAIL: quantize f16"; exit 1; }
    "$BIN" quantize "$DEMO" "$Q8" --type q8_0 2>/dev/null || { echo "FAIL: quantize q8_0"; exit 1; }
fi

# ---- CLI: a file against itself is inf, not nan ----
out=$("$BIN" qerr "$Q8" --vs "$Q8")
check "self comparison prints inf" grep -q " inf " <<<"$out"
check "self comparison prints no nan" bash -c '! grep -qi nan <<<"$1"' _ "$out"

# ---- the page, colour, 120x40 ----
start qerr 120x40 qerr "$Q8" --vs "$F32" --tui
wait_for "Quantization error"
wait_for "Heatmap"
wait_for "blk.1"
wait_for "relative RMSE"
wait_for "Histograms"
wait_for "|error| 0"
wait_gone "Esc cancels" 120   # the measurement has finished (slow under the sanitizers)
check "the table lists q8_0 rows" bash -c 'tmux -L "$1" capture-pane -p -t qerr | grep -q "q8_0"' _ "$SOCK"
save qerr-heatmap
keys Tab m
wait_for "SQNR (dB)"
keys m
wait_for "bits per weight"
keys m
wait_for "relative RMSE"
# move to blk.1, second role, and jump into the explorer
keys Home Down Right
wait_for "blk.1."
cell=$(screen | grep -o 'blk\.1\.[a-z_]*\.weight' | tail -1)
role=${cell#blk.1.}; role=${role%.weight}
check "blk.1, second column is attn_k ($role)" test "$role" = attn_k
keys Enter
wait_for "[Tensors]"
check "Enter on a heatmap cell selects $cell in the explorer" bash -c 'tmux -L "$1" capture-pane -p -t qerr | grep "›" | grep -q "$2"' _ "$SOCK" "$role"
keys e
wait_for "[Heatmap]"
keys q
wait_for "EXITED 0"
T kill-session -t qerr

# ---- monochrome: shade characters ----
start mono 120x40 qerr "$Q8" --vs "$F32" --tui --mono
wait_for "relative RMSE"
wait_for "good ▁≤1% ▂≤3.2% ▄≤10% ▆≤32% █>32% bad  · no data"   # fixed bands; no data is not the best band
save qerr-heatmap-mono
keys q
wait_for "EXITED 0"
T kill-session -t mono

# ---- from the explorer: e ----
start ex 100x30 "$Q8" --vs "$F32"
wait_for "[Tensors]"
keys e
wait_for "Heatmap"
wait_for "vs parent"
save qerr-80x30
keys e
wait_for "[Tensors]"
keys q
wait_for "EXITED 0"

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails failure(s)"; exit 1; fi
echo "all qerr e2e checks passed"
