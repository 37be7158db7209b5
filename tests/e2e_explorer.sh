#!/usr/bin/env bash
# End-to-end test of the explorer: drives the real binary in a real terminal
# (tmux), asserting on the screen's text. Polls instead of sleeping.
#   GGSCOPE_BIN           the binary (required)
#   GGSCOPE_SHARED        ../shared (stories260K, qwen2 vocab); absent: the demo model
#   GGSCOPE_SCREENS_OUT   if set, a directory where each pane's screen is saved
set -u
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
SHARED=${GGSCOPE_SHARED:-../shared}
OUT=${GGSCOPE_SCREENS_OUT:-}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
WAIT_LIMIT=10
source "$(dirname "$0")/lib/tmux.sh"
trap tmux_cleanup EXIT

MODEL=
if [[ -f $SHARED/models/stories260K.gguf ]]; then
    MODEL=$SHARED/models/stories260K.gguf
    echo "model: stories260K"
else
    echo "note: ../shared is absent: using the built-in demo model"
fi

# ---- open: all three panes and the status line ----
start main 120x40 "$MODEL"
wait_for "┌ Metadata" && wait_for "┌ Tensors" && wait_for "┌ Detail" && echo "ok: three panes open"
if [[ -n $MODEL ]]; then
    wait_for "stories260K.gguf" && wait_for "llama" && wait_for "48 tensors" && echo "ok: status line"
fi
wait_for "q quit" && echo "ok: key bar"
save tensors

# ---- mouse: a click selects a row (X10 mouse report typed into the pane) ----
mouse() {   # mouse BUTTON X Y (0-based screen cells, < 95)
    local b=$1 x=$2 y=$3
    keys -l "$(printf "\e[M\x$(printf %x $((32 + b)))\x$(printf %x $((33 + x)))\x$(printf %x $((33 + y)))")"
}
row=$(screen | grep -n '  output\.weight' | head -1 | cut -d: -f1)
# the column of the name (the panes' widths follow their content)
col=$(screen | sed -n "${row:-1}p" | perl -CSD -ne 'print index($_, "output.weight")')
if [[ -n $row && $col -gt 0 ]]; then
    mouse 0 "$col" $((row - 1)); mouse 3 "$col" $((row - 1))
    wait_for "Detail  output.weight" && echo "ok: mouse click selects a tensor"
    mouse 65 "$col" $((row - 1))   # wheel down: three rows further
    wait_gone "Detail  output.weight" && echo "ok: mouse wheel scrolls"
else
    echo "FAIL: no output.weight row to click"; fails=$((fails + 1))
fi

# ---- the detail views: hex, values, histogram ----
keys Home; wait_for "Detail  token_embd.weight"   # a 2-D tensor
keys x; wait_for "[X]HEX" && wait_for "block 0 of" && echo "ok: hex view"
save detail-hex
keys v; wait_for "[V]ALUES" && wait_for "row 0/" && echo "ok: values view"
keys Tab; wait_for "[Detail]"   # focus the detail pane
keys Down Down Right; wait_for "row 2/" && wait_for "col 1/" && echo "ok: values cursor moves"
save detail-values
keys g; wait_for "[G]HISTOGRAM" && wait_for "absmax" 20 && wait_for "std" && echo "ok: histogram finished"
save detail-histogram
# its figures equal `ggscope dump --stats` for the same tensor
name=$(screen | grep -o 'Detail  [^ ]*' | head -1 | awk '{print $2}')
if [[ -n $MODEL && -n $name ]]; then
    want=$("$BIN" dump "$MODEL" "$name" --stats | awk '$1=="std"{print $2}')
    shown=$(screen | grep -o 'std  *[-0-9.e]*' | head -1 | awk '{print $2}')
    check "histogram std ($shown) equals dump --stats ($want) to 6 digits" \
        awk -v a="$shown" -v b="$want" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-5*(b<0?-b:b)+1e-12)}'
fi
keys s; wait_for "scale log" && echo "ok: log scale toggle"
keys s

# ---- tensor list: filter as you type, sort, fold ----
keys Tab Tab   # detail -> metadata -> tensors
wait_for "[Tensors]"
keys f; keys -l "attn_q"; wait_for "filter: attn_q"
if [[ -n $MODEL ]]; then
    wait_for "5 of 48" && wait_gone "ffn_up.weight" && echo "ok: filter shows 5 attn_q tensors"
fi
save tensors-filtered
keys Escape; wait_gone "filter:" && echo "ok: Esc clears the filter"
keys 5; wait_for "bytes↑" && echo "ok: sort by bytes"
keys 0

# ---- metadata: expand the token array, scroll it ----
keys Tab Tab; wait_for "[Metadata]"
# walk down to tokenizer.ggml.tokens and unfold it
for _ in $(seq 1 40); do
    screen | grep -q '›.*tokens' && break
    keys j; sleep 0.02
done
check "cursor on the tokens array" bash -c "tmux -L $SOCK capture-pane -p -t main | grep -q '›.*tokens'"
# the token array unfolds as a table: id, piece, score, type
keys Enter; wait_re "│ +0  '<unk>' +0 +unknown" && echo "ok: token array unfolded"
keys PgDn PgDn; wait_re "│ +6[0-9]  '" && echo "ok: token array pages"
save metadata
keys Left Left; wait_gone "  '<unk>'" && echo "ok: ← goes to the array, then folds it"

# ---- search ----
keys / ; wait_for "search:"
keys -l "ffn_down"; keys Enter
wait_for "match 1 of" && wait_for "[Tensors]" && echo "ok: search jumps to a tensor"
keys n; wait_for "match 2 of" && echo "ok: n goes to the next match"

# ---- help overlay ----
keys '?'; wait_for "Keys everywhere" && wait_for "Tensors pane" && echo "ok: help overlay"
save help
keys Escape; wait_gone "Keys everywhere"

# ---- resize: 80x24 (stacked layout), back to 120x40 ----
T resize-window -t main -x 80 -y 24
wait_gone "┌ Metadata" && wait_for "┌ Tensors" && echo "ok: 80x24 layout"
check "nothing drawn past 80 columns" bash -c "tmux -L $SOCK capture-pane -p -t main | perl -CSD -ne 'chomp; exit 1 if length(\$_) > 80'"
save narrow-80x24
keys Tab Tab; wait_for "┌ Metadata" && echo "ok: metadata alone at 80x24"
T resize-window -t main -x 120 -y 40
wait_for "┌ Detail" && wait_for "┌ Metadata" && echo "ok: back to 120x40"

# ---- quit: the terminal is restored ----
keys q; wait_for "EXITED 0" && wait_gone "┌ Tensors" && echo "ok: q quits, terminal restored"
check "alternate screen left" test "$(T display -p -t main '#{alternate_on}')" = 0

# ---- a large vocabulary: the 150k-token array scrolls instantly ----
VOCAB=$SHARED/fixtures/vocab/ggml-vocab-qwen2.gguf
if [[ -f $VOCAB ]]; then
    start vocab 120x40 "$VOCAB"
    wait_for "string × 151936"
    for _ in $(seq 1 40); do
        screen | grep -q '›.*tokens' && break
        keys j; sleep 0.02
    done
    keys Enter; wait_re "│ +0  '!'"
    t0=$(date +%s%N)
    keys End; wait_re "│ +151935  '"  # one key: the last element of the last unfolded array row
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 ))
    echo "info: End in the 151936-token array drawn after ${ms} ms"
    check "End in the token array answers within 1 s" test "$ms" -lt 1000
    save metadata-qwen2-tokens
    keys Home; wait_for "▾ general"
    keys q; wait_for "EXITED 0"
else
    echo "note: qwen2 vocabulary absent: the 150k-token scroll is not checked"
fi

# ---- SIGTERM exits cleanly and restores the terminal; no FILE -> the demo ----
start term 120x40
wait_for "┌ Tensors"
wait_for "demo" && echo "ok: no FILE opens the demo model"
# the demo model holds quantized tensors: the hex view decodes a Q4_K block
keys f; keys -l "q4_k"; keys Enter; wait_for "filter: q4_k"
keys Enter; wait_for "[Detail]"
keys x ']'; wait_for "block 1 of" && wait_for "dmin" && wait_for "scale[0]" && echo "ok: hex view shows the Q4_K block anatomy"
keys Right Right; wait_for "▸scale[0]" && echo "ok: → selects a field"
save detail-hex-q4_K
keys v; wait_for "[V]ALUES" && wait_for "row 0/" && echo "ok: values of a Q4_K tensor"
pid=$(app_pid || true)
if [[ -n $pid ]]; then
    kill -TERM "$pid"
    wait_for "EXITED 0" && echo "ok: SIGTERM exits cleanly"
    check "alternate screen left after SIGTERM" test "$(S=term; T display -p -t term '#{alternate_on}')" = 0
else
    echo "FAIL: ggscope process not found"; fails=$((fails + 1))
fi

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails failure(s)"; exit 1; fi
echo "all explorer end-to-end checks passed"
