#!/usr/bin/env bash
# End-to-end test of the chat as a daily tool (tmux), on a scripted reply
# (GGSCOPE_CHAT_REPLY_FILE: the reply is a Markdown file, streamed a few
# bytes a token) and the built-in demo model:
#   1. a reply with every Markdown element renders at 80 and 120 columns,
#      while it streams and after; r shows its raw text and back;
#   2. /copy, y and c: the OSC 52 sequence in the pane's raw output (tmux
#      pipe-pane) carries the text in base64; the file fallback holds it and
#      the message names it; /mouse off and m release the mouse;
#   3. no traps: /set and the command line refuse out-of-range sampling
#      values and say the range; Esc before the first token leaves no empty
#      reply and gives the message back; quitting (/quit, q in the
#      transcript) saves a changed conversation under $XDG_STATE_HOME and says
#      where, and nothing when unchanged; key bars show only working keys;
#      /save ~/x.json expands ~ and a failed save names the file; Ctrl+A/E/K/
#      U/W and Alt+B/F edit the input; the input history survives a restart.
#   GGSCOPE_BIN           the binary (required)
#   GGSCOPE_MKMODEL       bench_mkmodel (optional: Esc during a prompt's evaluation)
#   GGSCOPE_SCREENS_OUT   if set, a directory where screens are saved
set -u
OUT=${GGSCOPE_SCREENS_OUT:-}
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
fails=0
# ---- 0. the command line: sampling values out of range, the range in the message ----
for form in "--temp -1:>= 0" "--top-p 1.5:0..1" "--min-p -0.1:0..1" "--top-k -1:0..16777216" "--repeat-penalty 0:> 0"; do
    opt=${form%%:*} want=${form#*:}
    # shellcheck disable=SC2086
    msg=$("$BIN" chat $opt </dev/null 2>&1); rc=$?
    [[ $rc == 2 && $msg == *"$want"* ]] && echo "ok: chat $opt refused: $msg" || { echo "FAIL: chat $opt: rc $rc, '$msg'"; fails=$((fails + 1)); }
done
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit $(( fails ? 1 : 77 )); }
TMP=$(mktemp -d)
export XDG_CACHE_HOME=$TMP/cache XDG_STATE_HOME=$TMP/state HOME=$TMP/home
mkdir -p "$HOME"
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
REPLY_MD=$TMP/reply.md
cat > "$REPLY_MD" <<'MD'
# Daily tool

Some **bold**, *italic* and `inline code`, see [the docs](https://example.org/docs).

- first item
- second item that is long enough to wrap around at eighty columns of terminal width, surely
  - nested

1. one
2. two

> a quote from someone

| name | value |
|:-----|------:|
| alpha | 1 |
| beta | 22 |

```python
def hello():
    print("a line that is much too long for a box of eighty columns, so it gets cut there")
```

---

The end.
MD
chat() {   # chat SESSION COLSxROWS ENV ARGS...
    start_env "$1" "$2" "XDG_CACHE_HOME=$XDG_CACHE_HOME XDG_STATE_HOME=$XDG_STATE_HOME HOME=$HOME $3" chat "${@:4}"
}
rendered() {   # the checks of a rendered reply at width $1
    local w=$1
    check "$w: heading underlined" has "Daily tool"
    check "$w: H1 rule" has "  ══════════"
    check "$w: emphasis and inline code without their marks" has "Some bold, italic and inline code, see"
    check "$w: a link as text and URL" has "the docs <https://example.org/docs>"
    check "$w: bullets" has "• first item"
    check "$w: a nested bullet" has "    ◦ nested"
    check "$w: numbers" has "  1\\. one"
    check "$w: a quote" has "│ a quote from someone"
    check "$w: a table, aligned" has "  name  │ value"
    check "$w: a table row, right-aligned" has "  beta  │    22"
    check "$w: the table's rule" has "──────┼──────"
    check "$w: a code box with its language" has "┌─ python ─"
    check "$w: the box's bottom" has "└──────"
    check "$w: no Markdown marks left" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -qE '\\*\\*|\`\`\`|^│  #'"
    check "$w: a horizontal rule" has "  ─{40,}"
}

# ---- 1. rendered while streaming and after, at 80 and 120 columns; r ----
for w in 80 120; do
    chat "md$w" "${w}x48" "GGSCOPE_CHAT_REPLY_FILE=$REPLY_MD GGSCOPE_CHAT_DELAY_MS=40"
    wait_for "┌ Message"
    keys "show me" Enter
    wait_for "generating" && wait_for "│ a quote from someone" && {
        if has "generating"; then echo "ok: $w: rendered while streaming (the quote, with the reply still generating)"
        else echo "note: $w: the reply ended before the streaming check"; fi
        check "$w: while streaming: the list rendered" has "• first item"
    }
    wait_for "end of turn" 30
    rendered "$w"
    save "chat-markdown-$w"
    if [[ $w == 80 ]]; then
        check "80: a code line too long is cut with a marker, the box kept" has "so… │"
    else
        check "120: the code line fits at 120" has "cut there\"\\) +│"
    fi
    keys Tab
    wait_for "selected: r raw"
    keys r
    wait_for "**bold**" && echo "ok: $w: r shows the raw text"
    check "$w: raw: the fence shown" has '```python'
    keys r
    wait_gone "**bold**" && echo "ok: $w: r renders it again"
    keys C-c; wait_for "EXITED 0"
done

# ---- 2. copy: OSC 52 in the raw output, the file fallback; the mouse ----
chat copy 180x40 "GGSCOPE_CHAT_REPLY_FILE=$REPLY_MD GGSCOPE_CHAT_DELAY_MS=0"
T pipe-pane -t copy -o "cat >> $TMP/raw.out"
wait_for "┌ Message"
keys "copy this" Enter
wait_for "end of turn" 30
keys "/copy" Enter
wait_for "copied message 2" && echo "ok: /copy says what it copied"
check "/copy names the fallback file" has "$XDG_STATE_HOME/ggscope/copied.txt"
want=$(base64 -w0 < "$REPLY_MD")
for _ in $(seq 50); do grep -qF "]52;c;$want" "$TMP/raw.out" 2>/dev/null && break; sleep 0.05; done
check "/copy: OSC 52 with the reply in base64 in the pane's raw output" grep -qF $'\e]52;c;'"$want"$'\a' "$TMP/raw.out"
check "/copy: the tmux passthrough form too" grep -qF $'\ePtmux;\e\e]52;c;'"$want" "$TMP/raw.out"
check "/copy: the file holds the reply" cmp -s "$REPLY_MD" "$XDG_STATE_HOME/ggscope/copied.txt"
keys "/copy 1" Enter
wait_for "copied message 1 (yours)" && check "/copy 1: your message" grep -qx "copy this" "$XDG_STATE_HOME/ggscope/copied.txt"
keys "/copy 9" Enter
wait_for "N is a message number, 1 to 2" && echo "ok: /copy 9 refused with the range"
keys Tab; wait_for "selected: r raw"
keys c
wait_for "copied code block 1 of 1 (python)" && echo "ok: c copies the code block"
printf 'def hello():\n    print("a line that is much too long for a box of eighty columns, so it gets cut there")' > "$TMP/code.txt"
check "c: the file holds the whole code (the cut line too)" cmp -s "$TMP/code.txt" "$XDG_STATE_HOME/ggscope/copied.txt"
keys y
wait_for "copied message 2" && check "y: the selected reply" cmp -s "$REPLY_MD" "$XDG_STATE_HOME/ggscope/copied.txt"
: > "$TMP/raw.out"
keys m
wait_for "mouse off" && echo "ok: m releases the mouse"
for _ in $(seq 50); do grep -qF $'\e[?1000l' "$TMP/raw.out" 2>/dev/null && break; sleep 0.05; done
check "mouse off: reporting switched off in the raw output" grep -qF $'\e[?1000l' "$TMP/raw.out"
wait_for "m mouse on" 10 && echo "ok: the key bar offers m mouse on"
keys Enter "/mouse on" Enter
wait_for "mouse on" && echo "ok: /mouse on"
keys C-c; wait_for "EXITED 0"

# ---- 3. no traps ----
chat traps 120x30 "GGSCOPE_CHAT_DELAY_MS=0" --temp 0
wait_for "┌ Message"
check "input box: the key bar shows no key that the box does not take (q, ?)" bash -c "! tmux -L $SOCK capture-pane -p -t $S | tail -1 | grep -qE 'q quit|\\? help'"
keys Tab; wait_for "[Chat]"
check "transcript, no reply: no r / y / c, no Esc stop" bash -c "! tmux -L $SOCK capture-pane -p -t $S | tail -1 | grep -qE 'r raw|y copy|Esc stop'"
keys Enter
for set in "temp -1:temp must be >= 0 (got -1)" "top_p 1.5:top_p must be in [0, 1] (got 1.5)" \
           "min_p -0.5:min_p must be in [0, 1] (got -0.5)" "top_k -1:top_k must be >= 0" \
           "repeat_penalty 0:repeat_penalty must be > 0"; do
    keys "/set ${set%%:*}" Enter
    wait_for "/set: ${set#*:}" && echo "ok: /set ${set%%:*} refused with the range"
done
keys "/show" Enter; wait_for "temp            0"; keys q
# the editing keys
keys "hello brave new world"
keys C-a M-f M-f C-k
wait_for "› hello brave" && check "Ctrl+A, Alt+F twice, Ctrl+K" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -q 'new world'"
keys " there" M-b M-b C-w
wait_for "› brave there" && echo "ok: Alt+B twice, Ctrl+W"
keys C-e " friend" C-u
wait_gone "brave there" && echo "ok: Ctrl+E, Ctrl+U"
# /save: ~ expanded; an error names the file, not the temporary one
keys "Hello" Enter
wait_for "end of turn" 30
keys "/save ~/x.json" Enter
wait_for "saved 2 messages to $HOME/x.json" && check "/save ~/x.json: the file in \$HOME" test -s "$HOME/x.json"
keys "/save /nonexistent-dir/x.json" Enter
wait_for "/save: /nonexistent-dir/x.json: the folder does not exist" && echo "ok: a failed /save names the file"
check "no temporary name in the message" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -q '\\.x\\.json\\.'"
# quitting right after a save: nothing to save
keys "/quit" Enter
wait_for "EXITED 0"
check "saved conversation: no autosave on quit" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -q 'conversation saved to'"
# the history survives the restart; a changed conversation is saved on quit (q in the transcript)
chat traps2 120x30 "GGSCOPE_CHAT_DELAY_MS=0" --temp 0
wait_for "┌ Message"
keys Up
wait_for "› /quit" && keys Up && wait_for "› /save /nonexistent-dir/x.json" && echo "ok: the input history survives a restart"
keys C-u "Hi again" Enter
wait_for "end of turn" 30
keys Tab; wait_for "[Chat]"
keys q
wait_for "EXITED 0"
wait_for "conversation saved to $XDG_STATE_HOME/ggscope/sessions/chat-" && echo "ok: q in the transcript saves the conversation and says where"
saved=$(grep -l "Hi again" "$XDG_STATE_HOME"/ggscope/sessions/*.json 2>/dev/null | head -1)
check "the autosaved session holds the conversation" test -n "$saved"
nsaved=$(ls "$XDG_STATE_HOME"/ggscope/sessions/*.json | wc -l)
chat traps3 120x30 "GGSCOPE_CHAT_DELAY_MS=0" --load "$saved"
wait_for "Hi again" && echo "ok: --load of the autosaved session"
keys C-c; wait_for "EXITED 0"
check "unchanged after --load: nothing saved again" test "$(ls "$XDG_STATE_HOME"/ggscope/sessions/*.json | wc -l)" -eq "$nsaved"
# Esc before the first token: no empty reply, the message back in the box
DEMO=$(ls "$XDG_CACHE_HOME"/ggscope/*.gguf 2>/dev/null | head -1)
SLOW=$TMP/slow.gguf
printf '%s' '{%- for i in range(1000000) %}{%- endfor -%}{%- for m in messages -%}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}' > "$TMP/slow.jinja"
python3 "$(dirname "$0")/lib/set_template.py" "$DEMO" "$SLOW" "$TMP/slow.jinja"
chat esc 120x30 "GGSCOPE_CHAT_DELAY_MS=0" "$SLOW" --temp 0
wait_for "┌ Message"
keys "Never answered" Enter
wait_for "building the prompt" 5
keys Escape
wait_for "no reply; your message is back in the input box" 10 && echo "ok: Esc before the first token: no reply"
check "the message is back in the input box" has "› Never answered"
check "no empty assistant turn" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -q '▌ assistant'"
check "nothing in the transcript" has "0 messages"
keys C-c; wait_for "EXITED 0"
# ... and while the prompt is evaluated: a random-weight model (bench_mkmodel)
# given a ~2,600-token message on one thread takes seconds to evaluate it
if [[ -n ${GGSCOPE_MKMODEL:-} ]] && "$GGSCOPE_MKMODEL" "$TMP/eval.gguf" --embd 384 --layers 6 --ff 1152 --heads 6 \
        --kv-heads 6 --ctx 4096 --type q8_0 >/dev/null 2>&1; then
    long=$(python3 -c "print(' '.join(['word%d' % (i % 50) for i in range(300)]))")
    chat evalesc 120x30 "GGSCOPE_CHAT_DELAY_MS=0" "$TMP/eval.gguf" --ctx 4096 --threads 1 --temp 0
    wait_for "┌ Message"
    keys -l "$long"
    keys Enter
    wait_re "prompt [0-9]+/[0-9]+ tokens.* Esc stops" 10   # the progress line (issue 19, item 4)
    keys Escape
    wait_for "stopped while the prompt was evaluated (Esc): no reply" 10 && echo "ok: Esc while the prompt is evaluated: no reply"
    check "evaluation: the message is back in the input box (its last rows shown)" has "word48 word49 *│$"
    check "evaluation: nothing in the transcript" has "0 messages"
    check "evaluation: no empty assistant turn" bash -c "! tmux -L $SOCK capture-pane -p -t $S | grep -q '▌ assistant'"
    keys C-c; wait_for "EXITED 0"
else
    echo "SKIP (part): no GGSCOPE_MKMODEL: Esc during the prompt's evaluation not run"
fi

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails check(s) failed"; exit 1; fi
echo "all daily-tool chat checks passed"
