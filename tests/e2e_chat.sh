#!/usr/bin/env bash
# End-to-end test of the chat page: drives `ggscope chat` in a real terminal
# (tmux) on the built-in demo model (written fresh into a temporary
# XDG_CACHE_HOME), whose greedy reply recites a known text.
#   - a user turn streams the reply; /regen, /clear, /save + /load round trip;
#   - with generation slowed down (GGSCOPE_CHAT_DELAY_MS): key presses during
#     generation are answered within 100 ms (measured: time from send-keys
#     until the key shows in the input box), resize during generation, Esc
#     stops the reply mid-way, quitting (Ctrl+C) during generation exits 0
#     and leaves the alternate screen;
#   - with ../shared: on stories260K with greedy settings the first reply
#     equals `ggscope run` on the same rendered prompt;
#   - a 10,000-message session (/load) and a model whose chat template takes
#     ~2 s a render: while the prompt is built (or /template renders) keys are
#     answered (the chat's own stall log: under 50 ms of the loop thread's
#     CPU per event; tmux echo near the idle chat's) and Ctrl+C exits within
#     1 s.
#   GGSCOPE_BIN           the binary (required)
#   GGSCOPE_SHARED        ../shared (optional)
#   GGSCOPE_SCREENS_OUT   if set, a directory where screens are saved
set -u
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
# ---- 0. the command line, without a terminal ----
pre_fails=0
"$BIN" chat --help | grep -q -- "--repeat-penalty" && echo "ok: chat --help" || { echo "FAIL: chat --help"; pre_fails=1; }
"$BIN" --help | grep -q "chat " && echo "ok: chat listed in ggscope --help" || { echo "FAIL: chat not in --help"; pre_fails=1; }
"$BIN" chat --bogus </dev/null >/dev/null 2>&1; rc=$?
[[ $rc == 2 ]] && echo "ok: unknown option exits 2" || { echo "FAIL: unknown option exits $rc"; pre_fails=1; }
"$BIN" chat --temp abc </dev/null >/dev/null 2>&1; rc=$?
[[ $rc == 2 ]] && echo "ok: bad --temp exits 2" || { echo "FAIL: bad --temp exits $rc"; pre_fails=1; }
# options with a value: `--opt V` and `--opt=V` alike (getopt_long); an unknown option: one line, exit 2
for form in "--temp 0.5" "--temp=0.5" "-n 7" "--n-predict=7" "-t2"; do
    # shellcheck disable=SC2086
    "$BIN" chat $form </dev/null 2>&1 | grep -q "must be a terminal" && echo "ok: chat $form accepted" || { echo "FAIL: chat $form"; pre_fails=1; }
done
for form in "--temp abc" "--temp=abc"; do
    # shellcheck disable=SC2086
    msg=$("$BIN" chat $form </dev/null 2>&1); rc=$?
    [[ $rc == 2 && $msg == "ggscope: --temp: expected a number, got 'abc'" ]] && echo "ok: chat $form refused" || { echo "FAIL: chat $form: rc $rc, '$msg'"; pre_fails=1; }
done
msg=$("$BIN" chat --bogus=1 </dev/null 2>&1); rc=$?
[[ $rc == 2 && $msg == "ggscope: chat: unknown option '--bogus=1' (see ggscope chat --help)" ]] && echo "ok: unknown option: one line, exit 2" || { echo "FAIL: unknown option: rc $rc, '$msg'"; pre_fails=1; }
"$BIN" chat </dev/null 2>&1 | grep -q "must be a terminal" && echo "ok: no terminal: a clear error" || { echo "FAIL: no terminal"; pre_fails=1; }
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit $(( pre_fails ? 1 : 77 )); }
SHARED=${GGSCOPE_SHARED:-../shared}
OUT=${GGSCOPE_SCREENS_OUT:-}
TMP=$(mktemp -d)
export XDG_CACHE_HOME=$TMP/cache   # the demo model is written fresh
export XDG_STATE_HOME=$TMP/state   # input history, autosaved conversations
fails=$pre_fails
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
start() {   # start SESSION COLSxROWS ENV ARGS...: the chat under `env ENV`
    start_env "$1" "$2" "$3" chat "${@:4}"
}

DEMO_START="Once upon a time, ggscope opened one GGUF file."
DEMO_END="on its own engine. The end."

# ---- 1. a turn streams the demo's reply; /regen /clear /save /load ----
start main 140x30 "GGSCOPE_CHAT_DELAY_MS=0" --temp 0
wait_for "┌ Message" && wait_for "ctx" && echo "ok: chat page open (status line with context gauge)"
wait_for "model template (Jinja" && echo "ok: the template named in the status line"
keys "Hello there" Enter
wait_for "$DEMO_END" && wait_for "end of turn" && echo "ok: the reply streams the demo text and stops at <|im_end|>"
check "reply starts with the demo text" test "$(count "$DEMO_START")" -eq 1
check "tokens/s and time to first token shown" has 'tok/s · first token [0-9]* ms'
wait_for "2 messages"
save chat-reply

keys "/re"
wait_for "Tab: /regen" && echo "ok: / offers completion"
keys Tab
wait_for "/regen" ; keys Enter
# the old reply's "end of turn" and "2 messages" are still on screen until the
# new reply replaces it: wait for the regenerated reply's own info line, which
# reuses the cached prompt (the first reply reused nothing)
wait_re 'prompt [0-9]+ tokens: [1-9][0-9]* reused'
wait_for "end of turn"
wait_for "2 messages" && check "/regen replaces the reply (one copy)" test "$(count "$DEMO_START")" -eq 1

keys "And a second message" Enter
wait_for "4 messages" && wait_for "reused"
# the second turn reuses the cache: the info line of the last reply shows "N reused" with N > 0
check "second turn reuses the KV cache" has '[1-9][0-9]* reused'

# inspector on the last reply
keys Tab; sleep 0.05; keys i
wait_for "token 1/32" && wait_for "entropy" && wait_for " 1. " && wait_for " 5. " && \
    echo "ok: token inspector shows probability, entropy, top-5"
keys Right
wait_for "token 2/32" && echo "ok: → selects the next token"
save chat-inspector
keys i Enter
wait_gone "entropy"

SESSION=$TMP/session.json
keys "/save $SESSION" Enter
wait_for "saved 4 messages"
check "session file written" test -s "$SESSION"
check "session file is JSON with the transcript" python3 -c "
import json,sys; j=json.load(open('$SESSION'))
m=j['messages']; assert j['ggscope_chat']==1 and len(m)==4, m
assert m[0]=={'role':'user','content':'Hello there'}, m[0]
assert m[1]['role']=='assistant' and 'The end.' in m[1]['content']
assert j['settings']['temp']==0"
check "no temporary file left" bash -c "! ls $TMP | grep -q tmp"
keys "/clear" Enter
wait_for "0 messages" && wait_gone "$DEMO_START" && echo "ok: /clear empties the transcript"
keys "/load $SESSION" Enter
wait_for "loaded 4 messages" && wait_for "4 messages" && wait_for "Hello there" && wait_for "And a second message" && \
    echo "ok: /load restores the transcript"
check "/load restores both replies" test "$(count "$DEMO_START")" -eq 2
keys "/edit" Enter
wait_for "2 messages" && wait_for "› And a second message" && echo "ok: /edit puts the last message back in the box"
keys C-u "/template" Enter
wait_for "<|im_start|>" && wait_for "special tokens highlighted" && wait_for ", 5 special" && echo "ok: /template shows the rendered prompt, its 5 special tokens found"
save chat-template
keys Escape; sleep 0.1   # Esc and the next key at once read as Alt+key
keys "/show" Enter
wait_for "repeat_penalty" && wait_for "context" && echo "ok: /show"
keys q
# multi-line input: Alt+Enter, and a bracketed paste keeps its new lines
keys "line one" M-Enter "line two"
wait_for "line two" && check "Alt+Enter makes a new line" has '› line one'
keys C-u
keys "shift one"; keys -l $'\e[13;2u'; keys "shift two"
wait_for "shift two" && check "Shift+Enter (CSI 13;2u) makes a new line" has '› shift one'
keys C-u
keys Up
wait_for "› /show" && keys Up && wait_for "› /template" && echo "ok: ↑ walks the history"
keys C-u
keys "/help" Enter
wait_for "Chat help" && wait_for "Alt+Enter" && echo "ok: /help"
keys q
wait_gone "Chat help"
T set-buffer -b p "$(printf 'pasted A\npasted B')"
T paste-buffer -p -b p -t "$S"
wait_for "pasted B" && check "paste keeps the new line (not sent)" test "$(count "pasted")" -eq 2
keys C-u
keys C-c
wait_for "EXITED 0" && echo "ok: Ctrl+C exits with status 0"

# ---- 2. slow generation: latency, resize, Esc, quit ----
start slow 100x30 "GGSCOPE_CHAT_DELAY_MS=400" --temp 0
wait_for "┌ Message"
keys "Tell me" Enter
wait_for "generating" && wait_for "Once upon"
lat=()
typed=""
for ch in a b c d e f; do
    typed+=$ch
    t0=$(date +%s%N)
    keys "$ch"
    while ! screen | grep -qF "› $typed"; do
        (( ($(date +%s%N) - t0) > 3000000000 )) && break
    done
    t1=$(date +%s%N)
    lat+=($(( (t1 - t0) / 1000000 )))
done
sorted=$(printf '%s\n' "${lat[@]}" | sort -n | tr '\n' ' ')
median=$(printf '%s\n' "${lat[@]}" | sort -n | sed -n 3p)
max=$(printf '%s\n' "${lat[@]}" | sort -n | tail -1)
echo "info: key press -> echo during generation: ${sorted}ms (median ${median} ms, max ${max} ms)"
check "key presses during generation answered within 100 ms (median)" test "$median" -lt 100
check "still generating while typing" has generating
T resize-window -t "$S" -x 70 -y 20
wait_for "generating"
check "resize during generation re-lays out (70 columns)" python3 -c "
import sys; l=[x for x in sys.argv[1].split('\n') if '┌ Chat' in x][0]; assert len(l.rstrip())==70 and l.rstrip().endswith('┐'), l" "$(screen)"
wait_for "┌ Message"
save chat-generating-70x20
keys Escape; sleep 0.1
wait_for "reply stopped" && wait_gone "generating" && echo "ok: Esc stops the reply"
check "stopped mid-way (the reply does not reach its end)" test "$(count "The end.")" -eq 0
check "the stopped reply is marked" has stopped
keys C-u "/set n_predict 500" Enter
wait_for "n_predict = 500"
keys "Again" Enter
wait_for "generating"
check "alternate screen on while running" test "$(T display -p -t "$S" '#{alternate_on}')" = 1
keys C-c
wait_for "EXITED 0" 10 && echo "ok: quit during generation: the worker stops, exit status 0"
check "terminal restored (alternate screen off)" test "$(T display -p -t "$S" '#{alternate_on}')" = 0

# ---- 3. a full context drops the oldest turn, keeps the system prompt, never crashes ----
start small 100x40 "GGSCOPE_CHAT_DELAY_MS=0" --temp 0 --ctx 100 --system "'Be brief.'"
wait_for "┌ Message"
keys "First question" Enter
wait_for "end of turn"
keys "Second question" Enter
wait_for "context full" && wait_for "dropped" && echo "ok: a full context drops the oldest turn with a notice"
wait_for "4 messages" && wait_gone "generating" && check "the system prompt is kept" has "Be brief."
check "the new reply is complete" test "$(count "The end.")" -eq 2
save chat-context-full
keys C-c
wait_for "EXITED 0"

# ---- 4. the chat is one key away from the explorer ----
S=ex
T new-session -d -s ex -x 120 -y 30 "env GGSCOPE_CHAT_DELAY_MS=0 $BIN explore; echo EXITED \$?; sleep 600"
wait_for "┌ Tensors" && wait_for "c chat"
keys c
wait_for "┌ Message" && echo "ok: c opens the chat page from the explorer"
wait_for "chat: ready" && echo "ok: the chat's engine opened on a worker, then the page"
keys "Hello" Enter
wait_for "$DEMO_END"
keys F2
wait_for "┌ Tensors" && echo "ok: F2 goes back to the explorer"
keys c
wait_for "$DEMO_END" && echo "ok: c again: the conversation is still there"
keys F2
wait_for "┌ Tensors"
keys q
wait_for "EXITED 0"

# a file that holds no model: a message, no crash
SRC=${GGSCOPE_SRC:-.}
if [[ -f $SRC/tests/data/quant-vectors.gguf ]]; then
    S=nomodel
    T new-session -d -s nomodel -x 120 -y 30 "$BIN explore $SRC/tests/data/quant-vectors.gguf; echo EXITED \$?; sleep 600"
    wait_for "┌ Tensors"
    keys c
    wait_for "chat: " && echo "ok: c on a file without a model says why"
    keys q
    wait_for "EXITED 0"
fi

# ---- 5. with ../shared: stories260K greedy reply equals ggscope run ----
MODEL=$SHARED/models/stories260K.gguf
if [[ -f $MODEL ]]; then
    N=40
    start st 120x40 "GGSCOPE_CHAT_DELAY_MS=0" "$MODEL" --temp 0 --repeat-penalty 1 -n $N
    wait_for "┌ Message"
    wait_for "ChatML" && echo "ok: fallback format named in the status line"
    keys "Once upon a time" Enter
    wait_for "n_predict reached" 30 || wait_for "end of turn" 5
    keys "/save $TMP/st.json" Enter
    wait_for "saved 2 messages"
    chat_reply=$(python3 -c "import json; print(json.load(open('$TMP/st.json'))['messages'][1]['content'], end='')"; printf x)
    chat_reply=${chat_reply%x}
    echo '[{"role":"user","content":"Once upon a time"}]' > "$TMP/m.json"
    "$BIN" template "$MODEL" "$TMP/m.json" > "$TMP/prompt.txt" 2>/dev/null
    prompt=$(cat "$TMP/prompt.txt"; printf x); prompt=${prompt%x}
    ids=$("$BIN" tokenize "$MODEL" "$prompt" --special --ids 2>/dev/null | tr ' ' ',')
    run_reply=$("$BIN" run "$MODEL" --tokens "$ids" -n $N --temp 0 --repeat-penalty 1 2>/dev/null; printf x)
    run_reply=${run_reply%x}
    run_reply=${run_reply%$'\n'}
    echo "info: chat reply: $(printf %q "$chat_reply")"
    echo "info: run reply:  $(printf %q "$run_reply")"
    check "stories260K greedy: chat's first reply equals ggscope run on the rendered prompt" \
        test "$chat_reply" = "$run_reply"
    check "the reply is not empty" test -n "$chat_reply"
    # key presses while the model generates at full speed (no delay)
    keys "/set n_predict 1500" Enter
    wait_for "n_predict = 1500"
    keys "/set temp 0.8" Enter
    wait_for "temp = 0.8"
    keys "Tell me a story" Enter
    wait_for "generating"
    lat=(); typed=""
    for ch in p q r s t u; do
        typed+=$ch
        t0=$(date +%s%N)
        keys "$ch"
        while ! screen | grep -qF "› $typed"; do
            (( ($(date +%s%N) - t0) > 3000000000 )) && break
        done
        lat+=($(( ($(date +%s%N) - t0) / 1000000 )))
    done
    median=$(printf '%s\n' "${lat[@]}" | sort -n | sed -n 3p)
    if screen | grep -q generating; then
        echo "info: key press -> echo during full-speed generation (stories260K): ${lat[*]} ms (median $median ms)"
        check "key presses during full-speed generation answered within 100 ms (median)" test "$median" -lt 100
    else
        echo "note: the reply ended before the latency measurement finished"
    fi
    keys Escape; sleep 0.1
    wait_gone "generating"
    keys C-c
    wait_for "EXITED 0"
else
    echo "SKIP (part): ../shared is absent: no stories260K comparison with ggscope run"
fi

# ---- 6. a 10,000-message session: the UI answers while the prompt is built; Ctrl+C exits at once ----
# The prompt of a long conversation is built on a worker (the cut binary-
# searched); the chat logs the longest time it held the loop thread
# (GGSCOPE_CHAT_STALL_LOG), whose CPU time must stay under 50 ms: the
# acceptance check, measured from the inside (wall-clock time is logged too;
# on a machine loaded 10 times over its cores it is inflated by waiting for
# a core, which no program controls). From the outside, keys typed right
# after sending are echoed through tmux (whose round trip alone costs tens
# to hundreds of ms on a loaded machine): the median may exceed that of the
# idle chat, measured just before, by at most 150 ms, and no key may wait
# 1 s (the frozen chat this guards against took seconds to minutes). Key presses typed right after sending must
stall_ms() { awk '{print int($4)}' "$1" 2>/dev/null || echo 0; }   # the loop thread's CPU time
source "$(dirname "$0")/lib/latency.sh"   # latency CHARS: "MEDIAN MAX" in ms
lat_check() {   # lat_check WHAT "MEDIAN MAX" "IDLE-MEDIAN IDLE-MAX"
    local med=${2% *} max=${2#* } base=${3% *}
    check "$1: echoed within the idle chat's time + 150 ms (median ${med} ms, idle ${base} ms)" \
        test "$med" -lt $(( base + 150 ))
    check "$1: no key waits 1 s (longest ${max} ms)" test "$max" -lt 1000
}
quit_ms() {   # Ctrl+C; prints "A E": ms until the terminal is restored (alternate screen off), until the process has exited
    local t0=$(date +%s%N) ta=""
    keys C-c
    while ! screen | grep -q "EXITED"; do
        [[ -z $ta && $(T display -p -t "$S" '#{alternate_on}') == 0 ]] && ta=$(( ($(date +%s%N) - t0) / 1000000 ))
        (( ($(date +%s%N) - t0) > 10000000000 )) && break
        sleep 0.01
    done
    local te=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "${ta:-$te} $te"
}
# under ASan the process's exit runs LeakSanitizer's check (hundreds of ms on
# this machine) after the chat has closed: the process may take 3 s there
exit_limit=1000
ldd "$BIN" 2>/dev/null | grep -q 'libasan\|asan' && exit_limit=3000
quit_check() {   # quit_check WHAT "A E"
    local ta=${2% *} te=${2#* }
    check "$1: the chat closes (terminal restored) within 1 s (${ta} ms)" test "$ta" -lt 1000
    check "$1: the process exits within $exit_limit ms (${te} ms)" test "$te" -lt "$exit_limit"
}
python3 -c "
import json
m = []
for i in range(5000):
    m.append({'role': 'user', 'content': 'Question number %d: what did ggscope do with the tensor in layer %d?' % (i, i % 32)})
    m.append({'role': 'assistant', 'content': 'Answer %d: it showed every tensor in hex and measured the quantization error.' % i})
json.dump({'ggscope_chat': 1, 'system': 'Be brief.', 'messages': m}, open('$TMP/long.json', 'w'))"
STALL=$TMP/stall.txt
rm -f "$STALL"
start long 120x30 "GGSCOPE_CHAT_DELAY_MS=50 GGSCOPE_CHAT_STALL_LOG=$STALL" --temp 0
wait_for "┌ Message"
keys "/load $TMP/long.json" Enter
wait_for "loaded 10000 messages" 30 && echo "ok: /load of a 10,000-message session"
wait_for "Answer 4999"
echo "info: /load and the first layout of 10,000 messages: $(cat "$STALL" 2>/dev/null)"
idle=$(latency uvwxyz); keys C-u
rm -f "$STALL"   # a new measurement: from sending on
keys "Hello there" Enter
lat_check "keys typed while a 10,000-message prompt is built" "$(latency abcdefg)" "$idle"
wait_for "oldest messages" 60 && echo "ok: the prompt was cut (the oldest turns dropped)"
echo "info: $(cat "$STALL" 2>/dev/null)"
check "the chat never held the loop thread 50 ms or more (longest $(stall_ms "$STALL") ms of CPU)" test "$(stall_ms "$STALL")" -lt 50
keys C-u "Again" Enter
quit_check "Ctrl+C right after sending (prompt being built)" "$(quit_ms)"
wait_for "EXITED 0" 1
start longarg 120x30 "GGSCOPE_CHAT_DELAY_MS=0" --load "$TMP/long.json" --temp 0
wait_for "10000 messages" 30 && wait_for "Answer 4999" && echo "ok: --load starts with the session loaded"
keys C-c
wait_for "EXITED 0"

# ---- 7. a slow chat template (a long range() loop, ~2 s a render): keys answered, Ctrl+C at once ----
DEMO=$(ls "$TMP"/cache/ggscope/*.gguf 2>/dev/null | head -1)
[[ -z $DEMO ]] && { XDG_CACHE_HOME=$TMP/cache "$BIN" </dev/null >/dev/null 2>&1; DEMO=$(ls "$TMP"/cache/ggscope/*.gguf | head -1); }
SLOW=$TMP/slow-template.gguf
printf '%s' '{%- for i in range(1000000) %}{%- endfor -%}{%- for m in messages -%}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}' > "$TMP/slow.jinja"
# the demo model with its tokenizer.chat_template replaced (the GGUF rewritten: header, then the same data)
python3 "$(dirname "$0")/lib/set_template.py" "$DEMO" "$SLOW" "$TMP/slow.jinja"
echo '[{"role":"user","content":"hi"}]' > "$TMP/m1.json"
t0=$(date +%s%N); "$BIN" template "$SLOW" "$TMP/m1.json" >/dev/null 2>&1; render_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "info: one render of the slow template: ${render_ms} ms"
rm -f "$STALL"
start slowtpl 120x30 "GGSCOPE_CHAT_STALL_LOG=$STALL" "$SLOW" --temp 0
wait_for "┌ Message"
idle=$(latency uvwxyz); keys C-u
keys "Hello" Enter
lat_check "keys typed while the slow template renders" "$(latency hijklmn)" "$idle"
wait_for "end of turn" 30 && echo "ok: the reply comes after the slow render"
keys C-u "/template" Enter
lat_check "keys typed while /template renders" "$(latency opq)" "$idle"
wait_for "special tokens highlighted" 30 && echo "ok: /template shows the slow template's render"
keys Escape; sleep 0.1
keys C-u "Again" Enter
# polled, not slept: under load the key itself can take over 200 ms to arrive
wait_for "building the prompt" 5 && echo "ok: still building the prompt when Ctrl+C comes (the render takes ${render_ms} ms)"
quit_check "Ctrl+C while the slow template renders" "$(quit_ms)"
wait_for "EXITED 0" 1
echo "info: $(cat "$STALL" 2>/dev/null)"
check "the chat never held the loop thread 50 ms or more (longest $(stall_ms "$STALL") ms of CPU)" test "$(stall_ms "$STALL")" -lt 50

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails check(s) failed"; exit 1; fi
echo "all chat checks passed"
