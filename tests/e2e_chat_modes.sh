#!/usr/bin/env bash
# End-to-end test of the chat's reasoning, feedback, modes and templates
# (issue 19, items 2, 4 and 5), in tmux:
#   0. the command line: --template / --format on `run` and `chat` (a
#      missing file, an unknown name, a template that does not parse or
#      render: one line, exit 2); `run --template F` and `run --format N`
#      generate from the rendered user turn, as --tokens of that render does;
#   1. reasoning: a scripted reply (GGSCOPE_CHAT_REPLY_FILE) with a <think>
#      block streams as one folded line "thinking… N tokens, T s" with the
#      streaming cursor, then folds to "thinking · N tokens · T s"; t in the
#      transcript unfolds and folds it; the next prompt (/template) carries
#      the answer, not the thinking (the template decides: reasoning_content);
#   2. raw mode (needs ../shared): `chat --raw` continues "Once upon a time"
#      on stories260K exactly as `ggscope run -p` does (greedy); /template
#      says "raw (no template)"; /mode chat goes back; --format and
#      --template are named by /template;
#   3. feedback (needs ../shared): the status line and /show name the
#      backend and threads; the context gauge equals the conversation's
#      prompt tokens after /edit, /clear and /load (counted with `ggscope
#      template` + `tokenize`) and the prompt + reply after an overflow; the
#      first line of a reply has no stray leading space (inspector view);
#   4. the prompt-evaluation progress line (a random-weight model from
#      bench_mkmodel on one thread): "prompt N/M tokens · R tok/s · T s left".
#   GGSCOPE_BIN       the binary (required)
#   GGSCOPE_MKMODEL   bench_mkmodel (optional: part 4)
#   GGSCOPE_SHARED    ../shared (optional: parts 0's run checks, 2, 3)
#   GGSCOPE_SCREENS_OUT   if set, a directory where screens are saved
set -u
OUT=${GGSCOPE_SCREENS_OUT:-}
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
SHARED=${GGSCOPE_SHARED:-../shared}
MODEL=$SHARED/models/stories260K.gguf
fails=0
TMP=$(mktemp -d)
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$TMP/cache} XDG_STATE_HOME=$TMP/state HOME=$TMP/home
mkdir -p "$HOME"
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
expect2() {   # expect2 WHAT WANT CMD...: exit status 2 and one line holding WANT
    local what=$1 want=$2 msg rc; shift 2
    msg=$("$@" </dev/null 2>&1); rc=$?
    if [[ $rc == 2 && $msg == *"$want"* && $(printf '%s\n' "$msg" | wc -l) == 1 ]]; then ok "$what: $msg"
    else bad "$what: rc $rc, '$msg'"; fi
}

# ---- 0. the command line ----
printf '%s' '{{ raise_exception("this template refuses") }}' > "$TMP/raise.jinja"
printf '%s' '{% if %}' > "$TMP/broken.jinja"
cat > "$TMP/chatml.jinja" <<'J'
{%- for m in messages -%}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}
J
for cmd in chat run; do
    args=(); [[ $cmd == run ]] && args=(-p "Hello")
    "$BIN" $cmd --help | grep -q -- "--template FILE" && ok "$cmd --help lists --template" || bad "$cmd --help: no --template"
    "$BIN" $cmd --help | grep -q -- "--format NAME" && ok "$cmd --help lists --format" || bad "$cmd --help: no --format"
    if [[ $cmd == run && ! -f $MODEL ]]; then continue; fi
    m=(); [[ $cmd == run ]] && m=("$MODEL")
    expect2 "$cmd: a missing template file" "--template $TMP/none.jinja: " "$BIN" $cmd "${m[@]}" "${args[@]}" --template "$TMP/none.jinja"
    expect2 "$cmd: an unknown format" "--format nope: unknown format (one of: chatml, llama2, llama3" \
        "$BIN" $cmd "${m[@]}" "${args[@]}" --format nope
    expect2 "$cmd: a template that raises" "this template refuses" "$BIN" $cmd "${m[@]}" "${args[@]}" --template "$TMP/raise.jinja"
    expect2 "$cmd: a template that does not parse" "$TMP/broken.jinja: chat template failed: line 1" \
        "$BIN" $cmd "${m[@]}" "${args[@]}" --template "$TMP/broken.jinja"
    expect2 "$cmd: --template and --format together" "either --template or --format" \
        "$BIN" $cmd "${m[@]}" "${args[@]}" --template "$TMP/chatml.jinja" --format chatml
done
"$BIN" chat --help | grep -q -- "--raw" && ok "chat --help lists --raw" || bad "chat --help: no --raw"
if [[ -f $MODEL ]]; then
    expect2 "run: --template with --tokens" "do not apply to --tokens" "$BIN" run "$MODEL" --tokens 1,2 --format chatml
    g=(-n 24 --temp 0 --repeat-penalty 1)
    by_file=$("$BIN" run "$MODEL" -p "Hello there" --template "$TMP/chatml.jinja" "${g[@]}" 2>/dev/null)
    by_name=$("$BIN" run "$MODEL" -p "Hello there" --format chatml "${g[@]}" 2>/dev/null)
    plain=$("$BIN" run "$MODEL" -p "Hello there" "${g[@]}" 2>/dev/null)
    ids=$("$BIN" tokenize "$MODEL" $'<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n' --special --ids 2>/dev/null | tr ' ' ',')
    by_ids=$("$BIN" run "$MODEL" --tokens "$ids" "${g[@]}" 2>/dev/null)
    echo "info: run --format chatml: $(printf %q "$by_name")"
    [[ -n $by_name && $by_file == "$by_name" ]] && ok "run --template FILE = run --format chatml" || bad "run --template vs --format: '$by_file' / '$by_name'"
    [[ $by_ids == "$by_name" ]] && ok "run --format chatml = run --tokens of the rendered turn" || bad "run --format vs --tokens: '$by_ids' / '$by_name'"
    [[ $plain != "$by_name" ]] && ok "run -p without a template continues the text itself" || bad "run -p: the same as with a template"
else
    echo "SKIP (part): no $MODEL: run --template / --format outputs not compared"
fi

command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit $(( fails ? 1 : 77 )); }
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
chat() {   # chat SESSION COLSxROWS ENV ARGS...
    start_env "$1" "$2" "XDG_CACHE_HOME=$XDG_CACHE_HOME XDG_STATE_HOME=$XDG_STATE_HOME HOME=$HOME $3" chat "${@:4}"
}
lacks() { ! screen | grep -qF -- "$1"; }
hasF() { screen | grep -qF -- "$1"; }
gauge() { screen | head -1 | grep -oE 'ctx [^ ]+ [0-9]+/' | grep -oE '[0-9]+/$' | tr -d /; }
gauge_is() {   # gauge_is WHAT N: the gauge shows N (it may take a worker's render)
    local t0=$SECONDS
    while (( SECONDS - t0 < 10 )); do [[ $(gauge) == "$2" ]] && break; sleep 0.05; done
    [[ $(gauge) == "$2" ]] && ok "$1: the gauge shows $2" || { bad "$1: the gauge shows $(gauge), not $2"; screen | head -1; }
}
ntok() {   # ntok MESSAGES.json: tokens of the chat prompt (generation prompt included) of stories260K
    "$BIN" template "$MODEL" "$1" > "$TMP/p.txt" 2>/dev/null
    local p; p=$(cat "$TMP/p.txt"; printf x); p=${p%x}
    "$BIN" tokenize "$MODEL" "$p" --special --ids 2>/dev/null | wc -w
}

# ---- 1. reasoning: <think> folded while it streams and after; t unfolds ----
cat > "$TMP/think.md" <<'MD'
<think>
The user says hello. A short greeting back is enough; nothing else is needed here.
</think>

Hello! **How** can I help?
MD
chat think 100x30 "GGSCOPE_CHAT_REPLY_FILE=$TMP/think.md GGSCOPE_CHAT_DELAY_MS=60"
wait_for "┌ Message"
keys "hi" Enter
wait_re "▸ thinking… [0-9]+ tokens, [0-9.]+ s" 10 && ok "streaming thinking: one folded line with its tokens and time"
check "streaming: the streaming cursor" has "▍"
check "streaming: the thinking itself is folded" lacks "The user says hello"
save chat-thinking-streaming
wait_for "end of turn" 20
wait_re "▸ thinking · [0-9]+ tokens · [0-9.]+ s · t shows" && ok "after: folded with its token count and time"
check "after: the thinking is folded" lacks "The user says hello"
check "after: the answer is rendered" has "Hello! How can I help\?"
check "after: no streaming cursor" lacks "▍"
check "after: no <think> tag shown" lacks "<think>"
keys Tab; wait_for "t thinking"
keys t
wait_for "▾ thinking · " && wait_for "The user says hello." && ok "t unfolds the thinking"
save chat-thinking
keys t
wait_gone "The user says hello." && ok "t folds it again"
keys Enter "/template" Enter
wait_for "/template: model template" && wait_for "Hello! **How** can I help?" && ok "the next prompt holds the answer"
check "the next prompt drops the thinking (the template has no reasoning_content)" lacks "The user says hello"
keys Escape
keys C-c; wait_for "EXITED 0"

if [[ -f $MODEL ]]; then
    # ---- 2. raw mode: continues the text as `ggscope run -p` ----
    N=40
    g=(--temp 0 --repeat-penalty 1 -n $N --threads 1)
    chat raw 120x30 "GGSCOPE_CHAT_DELAY_MS=0" "$MODEL" --raw "${g[@]}"
    wait_for "┌ Message"
    wait_for "raw: no template" && ok "raw mode named in the status line"
    keys "Once upon a time" Enter
    wait_for "n_predict reached" 30 || wait_for "end of turn" 5
    keys "/save $TMP/raw.json" Enter
    wait_for "saved 2 messages"
    raw_reply=$(python3 -c "import json; print(json.load(open('$TMP/raw.json'))['messages'][1]['content'], end='')"; printf x)
    raw_reply=${raw_reply%x}
    run_reply=$("$BIN" run "$MODEL" -p "Once upon a time" "${g[@]}" 2>/dev/null; printf x)
    run_reply=${run_reply%x}; run_reply=${run_reply%$'\n'}
    echo "info: raw chat: $(printf %q "$raw_reply")"
    echo "info: run -p:   $(printf %q "$run_reply")"
    [[ -n $raw_reply && $raw_reply == "$run_reply" ]] && ok "raw mode continues \"Once upon a time\" exactly as run -p" \
        || bad "raw mode differs from run -p"
    keys "/template" Enter
    wait_for "/template: raw (no template)" && ok "/template: raw (no template)"
    wait_for "Once upon a time${run_reply:0:20}" && ok "/template: the text as one, no markup"
    back() { keys Escape; wait_gone "/template: " 5; }   # (Esc then a key at once would read as Alt+key)
    back; keys "/mode chat" Enter
    wait_for "chat mode: the chat template" && ok "/mode chat: the template again"
    keys "/template" Enter
    wait_for "/template: no template (fallback ChatML)" && wait_for "<|im_start|>user" && ok "/template: the model's (none: ChatML)"
    back; keys "/mode raw" Enter
    wait_for "raw mode: no template" && ok "/mode raw"
    keys C-c; wait_for "EXITED 0"
    chat fmt 120x30 "GGSCOPE_CHAT_DELAY_MS=0" "$MODEL" --format llama3 "${g[@]}"
    wait_for "┌ Message"
    keys "Hi" Enter
    wait_re "end of turn|n_predict reached" 30 >/dev/null
    keys "/template" Enter
    wait_for "/template: built-in Llama 3 (--format llama3)" && wait_for "<|start_header_id|>user<|end_header_id|>" \
        && ok "--format llama3: /template names and uses it"
    back; keys C-c; wait_for "EXITED 0"
    chat tpl 120x30 "GGSCOPE_CHAT_DELAY_MS=0" "$MODEL" --template "$TMP/chatml.jinja" "${g[@]}"
    wait_for "┌ Message"
    keys "/template" Enter
    wait_for "/template: $TMP/chatml.jinja (--template)" && ok "--template FILE: /template names the file"
    back; keys C-c; wait_for "EXITED 0"

    # ---- 3. feedback: backend, gauge, no stray space ----
    chat fb 150x40 "GGSCOPE_CHAT_DELAY_MS=0" "$MODEL" --temp 0 --repeat-penalty 1 -n 30 --threads 1
    wait_for "┌ Message"
    check "the status line names the backend and threads" bash -c "tmux -L $SOCK capture-pane -p -t $S | head -1 | grep -q '· cpu, 1 thread ·'"
    keys "/show" Enter
    wait_re "backend +cpu, 1 thread" && ok "/show names the backend and threads"
    keys q
    keys "Once upon a time" Enter
    wait_for "n_predict reached" 30 || wait_for "end of turn" 5
    keys "Tell me more" Enter
    wait_for "4 messages"; wait_gone "generating" 30
    keys "/edit" Enter
    wait_for "edit the message"
    keys C-u "/save $TMP/e.json" Enter; wait_for "saved 2 messages"
    python3 -c "import json; json.dump(json.load(open('$TMP/e.json'))['messages'], open('$TMP/e.m.json', 'w'))"
    gauge_is "/edit" "$(ntok "$TMP/e.m.json")"
    first=$(python3 -c "import json; print(repr(json.load(open('$TMP/e.json'))['messages'][1]['content'][:1]))")
    keys Tab i
    wait_for "token 1/"
    save chat-inspector-stories
    check "the inspector escapes a token's '\"' as \\\"" hasF '"\""'   # stories260K greedy: the reply opens with a quote
    row=$(screen | grep -n "▌ assistant" | head -1 | cut -d: -f1)
    line=$(screen | sed -n "$((row + 1))p")
    echo "info: the reply's text starts with $first; its first line: '${line:0:40}'"
    [[ $line == "│  "[^\ ]* ]] && ok "the first line of a reply has no stray leading space" || bad "a leading space: '$line'"
    keys i Enter
    keys "/clear" Enter
    wait_for "conversation cleared"
    gauge_is "/clear" 0
    cat > "$TMP/l.json" <<'S'
{"ggscope_chat": 1, "messages": [
 {"role": "user", "content": "Hello"},
 {"role": "assistant", "content": "Once upon a time there was a dog."},
 {"role": "user", "content": "More please"}]}
S
    python3 -c "import json; json.dump(json.load(open('$TMP/l.json'))['messages'], open('$TMP/l.m.json', 'w'))"
    keys "/load $TMP/l.json" Enter
    wait_for "loaded 3 messages"
    gauge_is "/load" "$(ntok "$TMP/l.m.json")"
    keys C-c; wait_for "EXITED 0"
    # overflow: a small context; the oldest turns dropped; the gauge = the prompt as cut + the reply
    chat ovf 150x40 "GGSCOPE_CHAT_DELAY_MS=0" "$MODEL" --temp 0 --repeat-penalty 1 -n 30 --ctx 128 --threads 1
    wait_for "┌ Message"
    for m in "Once upon a time" "Tell me more" "And then" "What happened next"; do
        keys "$m" Enter
        wait_re "end of turn|n_predict reached|context full" 30 >/dev/null; wait_gone "generating" 30
    done
    wait_for "no longer reach" 5 && ok "overflow: the oldest turns dropped"
    info=$(screen | grep -E "tokens · (n_predict reached|end of turn|context full)" | tail -1)
    np=$(sed -E 's/.*prompt ([0-9]+) tokens.*/\1/' <<<"$info"); ng=$(sed -E 's/^│? *([0-9]+) tokens.*/\1/' <<<"$info")
    gauge_is "after an overflow (prompt $np + reply $ng - 1)" $((np + ng - 1))
    save chat-context-gauge
    keys C-c; wait_for "EXITED 0"
else
    echo "SKIP (part): no $MODEL: raw mode, --format/--template in the chat, the gauge not checked"
fi

# ---- 4. the prompt's evaluation: a progress line instead of "generating…" ----
if [[ -n ${GGSCOPE_MKMODEL:-} ]] && "$GGSCOPE_MKMODEL" "$TMP/eval.gguf" --embd 384 --layers 6 --ff 1152 --heads 6 \
        --kv-heads 6 --ctx 4096 --type q8_0 >/dev/null 2>&1; then
    long=$(python3 -c "print(' '.join(['word%d' % (i % 50) for i in range(300)]))")
    chat eval 170x30 "GGSCOPE_CHAT_DELAY_MS=0" "$TMP/eval.gguf" --ctx 4096 --threads 1 --temp 0
    wait_for "┌ Message"
    keys -l "$long"
    keys Enter
    wait_re "prompt [0-9]+/[0-9]+ tokens · [0-9]+ tok/s · [0-9.]+ s left · Esc stops" 10 \
        && ok "the status line: prompt tokens done of total, rate, time left"
    check "the reply's head shows the progress" has "▌ assistant  prompt [0-9]+/[0-9]+ tokens"
    check "no 'generating…' while the prompt is evaluated" lacks "generating…"
    save chat-prompt-progress
    keys Escape
    wait_for "stopped while the prompt was evaluated" 10
    keys C-c; wait_for "EXITED 0"
else
    echo "SKIP (part): no GGSCOPE_MKMODEL: the progress line not checked"
fi

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails check(s) failed"; exit 1; fi
echo "all chat modes checks passed"
