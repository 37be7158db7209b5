#!/usr/bin/env bash
# End-to-end test of the explorer's layout and vocabularies at 80x24 and
# 200x60 (tmux): column widths from the content, the split keys (< >), the
# title at 120 columns, the flat sort (a), search as you type with the match
# lit, `:` to the last row, Ctrl+U in the filter, the hex view of a float
# tensor, the token table, decoded byte-level BPE pieces (r: raw), a
# vocabulary-only file on the whole screen.
#   GGSCOPE_BIN           the binary (required)
#   GGSCOPE_SHARED        ../shared (stories260K, vocabularies); absent: SKIP
#   GGSCOPE_SCREENS_OUT   if set, a directory where screens are saved
set -u
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
command -v perl >/dev/null 2>&1 || { echo "SKIP: perl is not installed"; exit 77; }
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
SHARED=${GGSCOPE_SHARED:-../shared}
OUT=${GGSCOPE_SCREENS_OUT:-}
MODEL=$SHARED/models/stories260K.gguf
QWEN=$SHARED/fixtures/vocab/ggml-vocab-qwen2.gguf
SPM=$SHARED/fixtures/vocab/ggml-vocab-llama-spm.gguf
for f in "$MODEL" "$QWEN" "$SPM"; do
    [[ -f $f ]] || { echo "SKIP: $f is absent (../shared)"; exit 77; }
done
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
WAIT_LIMIT=10
source "$(dirname "$0")/lib/tmux.sh"
tmp=$(mktemp -d)
trap 'tmux_cleanup; rm -rf "$tmp"' EXIT

# the column (0-based, in characters) of TEXT's first occurrence on the screen
col() { screen | TEXT=$1 perl -CSD -ne 'BEGIN{$t=$ENV{TEXT}; utf8::decode($t)} if ((my $i = index($_, $t)) >= 0) { print $i; exit }'; }
line_no() { screen | grep -nF -- "$1" | head -1 | cut -d: -f1; }
# the widest line of the screen, in characters
widest() { screen | perl -CSD -ne 'chomp; $m = length if length > $m; END { print $m + 0 }'; }

for size in 200x60 80x24; do
    w=${size%x*}; h=${size#*x}
    echo "---- $size ----"

    # ---- column widths follow the content and the terminal ----
    start "m$w" "$size" "$MODEL"
    wait_for "┌ Tensors"
    check "$size: nothing drawn past $w columns" test "$(widest)" -le "$w"
    # the name column: the longest name ("    attn_output.weight", 22 columns
    # in its group) and one blank, whatever the width
    nc=$(screen | grep -m1 '  name  ' | perl -CSD -ne 'print index($_, "type") - index($_, "  name")')
    check "$size: the name column is as wide as the longest name ($nc)" test "$nc" = 23
    if (( w >= 100 )); then
        # the list keeps its natural width; the metadata gets the rest
        tx=$(col "┌ Tensors")
        check "$size: the metadata gets the room the list does not need (Tensors at column $tx)" test "$tx" -ge 110
        save explorer-200x60
        # < > move the split by 4 columns
        keys '>' '>'; sleep 0.2
        wait_re "┌ Metadata[^┐]*┐┌ Tensors" >/dev/null
        tx2=$(col "┌ Tensors")
        check "$size: > > moves the split 8 columns right ($tx -> $tx2)" test "$tx2" = $((tx + 8))
        keys '<' '<' '<'; sleep 0.2
        tx3=$(col "┌ Tensors")
        check "$size: < < < moves it 12 back ($tx2 -> $tx3)" test "$tx3" = $((tx2 - 12))
        keys '>'
    else
        # stacked: < > move the split between the list and the detail by a row
        keys Tab Tab Tab; wait_for "[Tensors]"
        dy=$(line_no "┌ Detail")
        keys '>' '>'
        wait_for "[Tensors]"; sleep 0.2
        dy2=$(line_no "┌ Detail")
        check "$size: > > moves the stacked split 2 rows down ($dy -> $dy2)" test "$dy2" = $((dy + 2))
        keys '<' '<'; sleep 0.2
        check "$size: < < moves it back" test "$(line_no "┌ Detail")" = "$dy"
    fi
    check "$size: the key bar shows the split keys" has '< > split'
    keys '?'; wait_for "Keys everywhere"
    help=$(screen; for _ in 1 2 3; do keys PgDn; sleep 0.2; screen; done)
    check "$size: the help lists the split keys" grep -qE '< > +move the split between the panes left / right' <<<"$help"
    check "$size: the help lists the flat sort" grep -qE 'a +flat list across blocks' <<<"$help"
    keys Escape; wait_gone "Help ·"

    # ---- the flat sort across all tensors, largest first ----
    keys a
    wait_for "flat · sort: bytes ↓" && echo "ok: $size: a: flat, largest first"
    check "$size: flat: no block groups" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -q '▾ blk\.'"
    check "$size: flat: the largest tensor first, with its full name" has '› (token_embd|output)\.weight +f32 +64×512'
    check "$size: flat: block tensors under their full names" has '  blk\.[0-9]\.ffn_(gate|down|up)\.weight'
    [[ $w == 200 ]] && save tensors-flat
    keys a
    wait_for "▾ blk.0" && echo "ok: $size: a again: grouped"
    wait_gone "flat ·"

    # ---- Ctrl+U clears the tensor filter ----
    keys f; keys -l "attn_q"; wait_for "5 of 48"
    keys C-u; wait_for "48 of 48" && echo "ok: $size: Ctrl+U clears the filter while typing"
    keys -l "ffn_up"; keys Enter; wait_for "filter: ffn_up"
    keys C-u; wait_gone "filter:" && echo "ok: $size: Ctrl+U clears a kept filter"

    # ---- the hex view of a float tensor: each line's values decoded ----
    keys Home; wait_for "Detail  token_embd.weight"
    keys x; wait_for "[X]HEX"
    wait_re "0x0000_3760 +│50 e9 96 be│64 d8 0f 3f +-0\.2947 +0\.5619" &&
        echo "ok: $size: hex view of f32: the line's values decoded"

    # ---- search as you type, the match lit ----
    keys /; wait_for "search:"
    keys -l "ffn_do"      # no Enter: the search runs as the text changes
    wait_for "Detail  blk.0.ffn_down.weight" && wait_for "search: ffn_do" && echo "ok: $size: search as you type"
    check "$size: the match is lit in the name" bash -c \
        "tmux -L $SOCK capture-pane -e -p -t $S | grep -qP '\\e\\[[0-9;]*m(blk\\.[0-9]\\.)?ffn_do\\e\\['"
    keys -l "wn"; wait_for "search: ffn_down"
    keys Enter; wait_for "match 1 of 5 for 'ffn_down'"
    keys n; wait_for "match 2 of" && echo "ok: $size: n after a search typed"
    [[ $w == 200 ]] && save search-as-you-type

    # ---- : to the last row keeps the pane full ----
    keys Home; wait_for "Detail  token_embd.weight"
    keys :; wait_for "row:"; keys -l "511"; keys Enter
    wait_for "row 511/512"
    last=$(screen | grep -n '└' | tail -1 | cut -d: -f1)
    check "$size: : 511: row 511 on the pane's last line" bash -c \
        "tmux -L $SOCK capture-pane -p -t $S | sed -n '$((last - 1))p' | grep -qE '│ +511 '"
    check "$size: : 511: no empty row above it" bash -c \
        "tmux -L $SOCK capture-pane -p -t $S | sed -n '$((last - 2))p' | grep -qE '│ +510 '"
    keys q; wait_for "EXITED 0"

    # ---- the title at 120 columns keeps the keys and bits per weight ----
    if (( w >= 100 )); then
        long=$tmp/a-rather-long-model-file-name-for-the-title-line-F32.gguf
        ln -sf "$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")" "$long"
        start "t$w" 120x35 "$long"
        wait_for "┌ Tensors"
        check "120x35: the title keeps the keys and the bits per weight" has '19 keys · 32\.00 bpw +\[Tensors\]'
        check "120x35: the file name is shortened in its middle" has '^ ggscope  a-rather-.*….*F32\.gguf  '
        keys q; wait_for "EXITED 0"
    fi

    # ---- a vocabulary-only file: the metadata on the whole screen ----
    start "v$w" "$size" "$QWEN"
    wait_for "┌ Metadata"
    check "$size: vocabulary: no tensor pane" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -q '┌ Tensors'"
    mw=$(screen | grep '^┌ Metadata' | perl -CSD -Mutf8 -ne 'chomp; print length if /┐$/')
    check "$size: vocabulary: the metadata is $w columns wide ($mw)" test "${mw:-0}" = "$w"
    # decoded byte-level BPE pieces, searched in decoded form
    keys /; wait_for "search:"; keys -l "世界"; keys Enter
    wait_re "› +[0-9]+  '世界' " && echo "ok: $size: '世界' found and shown decoded"
    [[ $w == 80 ]] && save vocab-80x24
    keys r; wait_re "› +[0-9]+  'ä¸ĸçķĮ' " && echo "ok: $size: r shows the raw piece"
    keys r; wait_re "› +[0-9]+  '世界' "
    # a control character is escaped: Ċ is a newline
    keys /; wait_for "search:"; keys -l "Ċ"; keys Enter
    wait_re "› +198  '\\\\n' " && echo "ok: $size: a newline piece shown escaped"
    check "$size: no raw control character on screen" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -qP '[\\x00-\\x08\\x0b-\\x1f]'"
    keys q; wait_for "EXITED 0"

    # ---- the token table: id, piece, score, type ----
    start "s$w" "$size" "$SPM"
    wait_for "┌ Metadata"
    keys /; wait_for "search:"; keys -l "tokenizer.ggml.tokens"; keys Enter
    wait_for "match 1 of"
    keys Enter; wait_for "id · piece · score · type"
    wait_re "│ +0  '<unk>' +0 +unknown" && echo "ok: $size: the token table (id, piece, score, type)"
    wait_re "│ +3  '<0x00>' +0 +byte"
    keys End; wait_re "│ +31999  '.+' +-31740 +normal" && echo "ok: $size: the table's last row"
    [[ $w == 200 ]] && save vocab-table-200x60
    keys q; wait_for "EXITED 0"
done

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails failure(s)"; exit 1; fi
echo "all explorer layout checks passed"
