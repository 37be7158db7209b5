#!/usr/bin/env bash
# End-to-end test of the quantization error page's correctness (tmux), each
# check at 80x24 and at 200x60, on random models made by bench_mkmodel:
#   - whole, distinct layer and role labels on a 22-layer model (TinyLlama's
#     layer count, small dimensions), with the legend of abbreviated words;
#   - a bad --vs (missing, a text file, a cut GGUF) is one line and exit 2
#     before any page; in the explorer `e` says why, once, and opens nothing;
#   - every tensor skipped: an empty state with the grouped reasons, no ∞;
#   - fixed SQNR bands: q8_0, q4_K and q2_K look different; "no data" is not
#     "best" in monochrome; `t` switches between the --types;
#   - ‹ › markers for role columns scrolled off;
#   - a parent that is another model: a warning in the title;
#   - per-layer, per-role and whole-file rows, and the title's file SQNR and
#     bits per weight, equal to the CLI's.
#   GGSCOPE_BIN, GGSCOPE_MKMODEL; GGSCOPE_SHARED (stories260K, optional);
#   GGSCOPE_SCREENS_OUT: save the screens there
set -u
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
MK=${GGSCOPE_MKMODEL:?GGSCOPE_MKMODEL must point to bench_mkmodel}
SHARED=${GGSCOPE_SHARED:-../shared}
OUT=${GGSCOPE_SCREENS_OUT:-}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
TMPD=$(mktemp -d)
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$TMPD"' EXIT
SLOW=120   # a measurement under the sanitizers

# ---- models: 22 layers, 256 wide (q4_K fits), untied (output and output_norm) ----
SHAPE=(--layers 22 --embd 256 --ff 256 --heads 4 --kv-heads 1 --n-vocab 300 --untied)
M=$TMPD/m22.gguf; OTHER=$TMPD/m22-seed7.gguf; Q8=$TMPD/m22-q8_0.gguf
"$MK" "$M" "${SHAPE[@]}" >/dev/null || { echo "FAIL: bench_mkmodel"; exit 1; }
"$MK" "$OTHER" "${SHAPE[@]}" --seed 7 >/dev/null || { echo "FAIL: bench_mkmodel --seed 7"; exit 1; }
"$BIN" quantize "$M" "$Q8" --type q8_0 >/dev/null 2>&1 || { echo "FAIL: quantize q8_0"; exit 1; }
GEMMA=$TMPD/gemma3.gguf   # 16 roles: more than 80 columns hold
"$MK" "$GEMMA" --arch gemma3 --layers 2 --embd 256 --ff 256 --heads 4 --kv-heads 1 --n-vocab 300 --untied \
    >/dev/null || { echo "FAIL: bench_mkmodel gemma3"; exit 1; }
NARROW=$SHARED/models/stories260K.gguf   # rows of 64: q4_K's 256 never fits
if [[ ! -f $NARROW ]]; then
    NARROW=$TMPD/narrow.gguf
    "$MK" "$NARROW" --layers 2 --embd 64 --ff 172 --heads 4 --kv-heads 4 --n-vocab 300 >/dev/null \
        || { echo "FAIL: bench_mkmodel narrow"; exit 1; }
fi
echo "x y z not a gguf file" >"$TMPD/text.txt"
head -c 100 "$M" >"$TMPD/cut.gguf"

# The heatmap pane's text on the current screen: the part of each line in
# its frame (left pane at 200 columns, the whole width at 80).
heat() { screen | sed -n '/┌ Heatmap/,/└/p' | sed 's/^│//; s/││.*//; s/│$//'; }
# The role labels: the header line's words after "layer", markers left out.
role_labels() { heat | grep '^layer ' | head -1 | sed 's/^layer//; s/[‹›]//g' | tr -s ' ' '\n' | sed '/^$/d'; }
layer_labels() { heat | grep -oE '^(blk\.[0-9]+|other) ' | tr -d ' '; }
distinct() { [[ -z $(sort "$1" | uniq -d) ]]; }

# ---- the CLI's figures for the same runs ----
cli_file=$("$BIN" qerr "$M" --types q4_K | awk '$1=="file" && $2=="q4_K"{print $11, $5}')
cli_layer10=$("$BIN" qerr "$M" --types q4_K | awk '$1=="blk.10" && $2=="q4_K"{print $11}')
read -r cli_sqnr cli_bpw <<<"$cli_file"
[[ -n $cli_sqnr ]] || { echo "FAIL: no whole-file row from the CLI"; fails=$((fails + 1)); }

for SIZE in 80x24 200x60; do
    echo "==== $SIZE ===="
    ROWS=${SIZE#*x}

    # ---- labels on 22 layers, against a parent (norms and output_norm measured) ----
    start lab$ROWS $SIZE qerr "$Q8" --vs "$M" --tui --mono
    wait_for " bpw · " $SLOW   # measured (while measuring: "bpw so far")
    keys Tab
    wait_for "[Heatmap]"
    role_labels >"$TMPD/roles"
    check "$SIZE: 12 role labels ($(tr '\n' ' ' <"$TMPD/roles"))" test "$(wc -l <"$TMPD/roles")" -eq 12
    check "$SIZE: the role labels are distinct" distinct "$TMPD/roles"
    if [[ $(grep -c . "$TMPD/roles") -eq 12 ]] && ! grep -qx 'output_norm' "$TMPD/roles"; then
        check "$SIZE: abbreviated labels come with their words' legend" has 'a=attn .*o(ut)?=output'
    fi
    # every row, scrolling down one by one where they do not all fit
    : >"$TMPD/layers"
    keys Home
    for ((i = 0; i < 24; i++)); do layer_labels >>"$TMPD/layers"; keys Down; done
    sort -u "$TMPD/layers" -o "$TMPD/layers"
    check "$SIZE: 23 distinct layer labels, blk.0 … blk.21 and other ($(wc -l <"$TMPD/layers"))" \
        test "$(wc -l <"$TMPD/layers")" -eq 23
    check "$SIZE: blk.10 … blk.19 read whole" bash -c 'for i in 10 11 12 13 14 15 16 17 18 19; do grep -qx "blk.$i" "$1" || exit 1; done' _ "$TMPD/layers"
    # no data (·) is not the best band (▁): the norms' SQNR is ∞ against their own F32
    check "$SIZE: row 'other' shows both no data (·) and the best band (▁)" bash -c 'grep "^other" <<<"$1" | grep -q "·" && grep "^other" <<<"$1" | grep -q "▁"' _ "$(heat)"
    check "$SIZE: a parent of the same model gets no warning" bash -c '! grep -q "NOT THE SAME MODEL" <<<"$1"' _ "$(screen)"
    save qerr-labels-$SIZE
    keys q
    wait_for "EXITED 0"
    T kill-session -t lab$ROWS

    # ---- a bad --vs: one line, exit 2, no page ----
    for bad in "$TMPD/missing.gguf" "$TMPD/text.txt" "$TMPD/cut.gguf"; do
        start bad$ROWS $SIZE qerr "$M" --vs "$bad" --tui
        wait_for "EXITED 2"
        check "$SIZE: --vs $(basename "$bad"): one line naming the file, then exit 2" bash -c \
            'test "$(grep -c "ggscope: --vs: $2" <<<"$1")" -eq 1 && ! grep -q "Heatmap" <<<"$1"' _ "$(screen)" "$bad"
        T kill-session -t bad$ROWS
    done
    start ex$ROWS $SIZE "$M" --vs "$TMPD/text.txt"
    wait_for "[Tensors]"
    keys e
    wait_for "offset 0: bad magic"
    check "$SIZE: explorer, e with a bad --vs: the error once, no page" bash -c \
        'test "$(grep -c "bad magic" <<<"$1")" -eq 1 && ! grep -q "Heatmap" <<<"$1"' _ "$(screen)"
    keys q
    wait_for "EXITED 0"
    T kill-session -t ex$ROWS

    # ---- every tensor skipped: why, grouped; no ∞ ----
    start skip$ROWS $SIZE qerr "$NARROW" --types q4_K --tui --mono
    wait_for "nothing measured at q4_K" $SLOW
    wait_for "× ne[0]=64 is not a multiple of q4_K's block of 256"
    wait_for "× 1-D tensor"
    wait_for "no data: nothing was measured"
    check "$SIZE: no ∞ on the empty page" bash -c '! grep -q "∞" <<<"$1"' _ "$(screen)"
    save qerr-empty-$SIZE
    keys q
    wait_for "EXITED 0"
    T kill-session -t skip$ROWS

    # ---- fixed bands, three types on one page (t) ----
    start bands$ROWS $SIZE qerr "$M" --types q8_0,q4_K,q2_K --tui --mono
    wait_for " bpw · " $SLOW   # measured (while measuring: "bpw so far")
    wait_for "good ▁≤1% ▂≤3.2% ▄≤10% ▆≤32% █>32% bad  · no data"
    wait_for "t type"
    wait_for "q8_0 1/3"
    keys Tab Home   # the heatmap, from blk.0
    wait_for "[Heatmap]"
    check "$SIZE: q8_0 in the best band (▁)" bash -c 'grep "^blk\.0 " <<<"$1" | grep -q "▁"' _ "$(heat)"
    keys t
    wait_for "q4_K 2/3"
    check "$SIZE: t: q4_K in the 10% band (▄)" bash -c 'grep "^blk\.0 " <<<"$1" | grep -q "▄" && ! grep "^blk\.0 " <<<"$1" | grep -q "▁"' _ "$(heat)"
    keys t
    wait_for "q2_K 3/3"
    check "$SIZE: t: q2_K in the 32% band (▆)" bash -c 'grep "^blk\.0 " <<<"$1" | grep -q "▆"' _ "$(heat)"
    keys m
    wait_for "good ▁≥40 ▂30–40 ▄20–30 ▆10–20 █<10 dB bad"
    save qerr-bands-$SIZE
    keys t
    wait_for "q8_0 1/3"
    keys q
    wait_for "EXITED 0"
    T kill-session -t bands$ROWS

    # ---- aggregates and the title's figures, as the CLI's ----
    start agg$ROWS $SIZE qerr "$M" --types q4_K --tui
    wait_for " bpw · " $SLOW   # measured (while measuring: "bpw so far")
    wait_for "SQNR $cli_sqnr dB · $(printf %.2f "$cli_bpw") bpw"
    keys v
    wait_for "per layer"
    keys Down Down Down Down Down Down Down Down Down Down
    wait_re "›blk\.10 "
    check "$SIZE: the blk.10 row's SQNR is the CLI's ($cli_layer10)" has "blk\.10 +q4_K +[0-9.]+ +$cli_layer10 "
    keys v
    wait_for "per role"
    keys End
    wait_re "token_embd +q4_K"
    keys v
    wait_re "file +q4_K +[0-9.]+ +$cli_sqnr "
    save qerr-file-$SIZE
    keys v
    wait_for "why they were not measured"
    wait_for "× 1-D tensor"
    keys q
    wait_for "EXITED 0"
    T kill-session -t agg$ROWS

    # ---- another model as the parent: a warning ----
    start other$ROWS $SIZE qerr "$M" --vs "$OTHER" --tui
    wait_for "⚠ NOT THE SAME MODEL? relative error" $SLOW
    keys q
    wait_for "EXITED 0"
    T kill-session -t other$ROWS

    # ---- 16 roles: markers where columns are off the pane ----
    start mk$ROWS $SIZE qerr "$GEMMA" --vs "$GEMMA" --tui
    wait_for " bpw · " $SLOW   # measured (while measuring: "bpw so far")
    keys Tab
    wait_for "[Heatmap]"
    role_labels >"$TMPD/roles"
    check "$SIZE: gemma3's visible role labels are distinct" distinct "$TMPD/roles"
    if [[ $SIZE == 80x24 ]]; then
        check "80x24: 16 columns do not fit: › marks those off to the right" bash -c 'grep "^layer" <<<"$1" | grep -q "›"' _ "$(heat)"
        keys End
        wait_re '^.layer +‹'
        role_labels >"$TMPD/roles"
        check "80x24: End: the last columns, distinct" distinct "$TMPD/roles"
        save qerr-markers-$SIZE
    else
        check "200x60: all 16 columns fit, no marker" bash -c 'test "$(wc -l <"$1")" -eq 16 && ! grep "^layer" <<<"$2" | grep -q "[‹›]"' _ "$TMPD/roles" "$(heat)"
    fi
    keys q
    wait_for "EXITED 0"
    T kill-session -t mk$ROWS
done

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails failure(s)"; exit 1; fi
echo "all qerr page e2e checks passed"
