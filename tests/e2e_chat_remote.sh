#!/usr/bin/env bash
# End-to-end test of the remote chat (`ggscope chat --remote URL`) against
# llama.cpp's own server (../shared/peer/llama-server, run on 127.0.0.1),
# driven in a real terminal (tmux):
#   - the command line without a server (exit 2, one line);
#   - a scripted server (tests/lib/oai_mock.py, python3) for what llama-server
#     does not do on demand: reasoning_content (the page's thinking block), no logprobs (the inspector
#     says so), an unknown model (404), an error event mid-stream, silence
#     (--timeout 1): one line each, the message and any partial reply kept;
#   - stories260K, greedy: the chat's reply equals `ggscope run` on the prompt
#     the server rendered (POST /apply-template), the same number of tokens;
#     the token inspector shows the server's top_logprobs; /regen, /edit,
#     /save, /load as locally; /models lists the server's model;
#   - Esc during a long reply closes the request within 200 ms (the screen's
#     "reply stopped", and the server's slot idle again); against the
#     scripted server, measured from outside: tmux's Escape to the server
#     seeing the connection closed (median of 3, < 200 ms), and keys echoed
#     while a slow stream arrives within the idle round trip + 50 ms;
#   - no /props: the context gauge from /v1/models (max_model_len), else
#     "ctx N tokens";
#   - the server killed in the middle of a reply: the transcript keeps the
#     message and the partial reply, with one error line;
#   - connection refused, and 401 (llama-server --api-key) without the key:
#     one line each; with --api-key-env the demo model recites its text and
#     the key is never on the screen.
# Skips (exit 77, a SKIP line) when tmux, curl or python3 is missing, and the
# llama-server part when it is not built (`../shared/peer/llama-server --path`
# builds it once).
#   GGSCOPE_BIN      the binary (required)
#   GGSCOPE_SHARED   ../shared
set -u
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
SHARED=${GGSCOPE_SHARED:-../shared}
fails=0

# ---- 0. the command line, without a terminal or a server ----
pre() { if "$@"; then echo "ok: $WHAT"; else echo "FAIL: $WHAT"; fails=$((fails + 1)); fi; }
msg=$("$BIN" chat --remote </dev/null 2>&1); rc=$?
WHAT="--remote without a URL: exit 2, one line ($msg)" pre test "$rc" = 2 -a "$(printf '%s\n' "$msg" | wc -l)" = 1
msg=$("$BIN" chat --remote ftp://x </dev/null 2>&1); rc=$?
WHAT="--remote ftp://x refused: exit 2 ($msg)" pre test "$rc" = 2
msg=$(env -u GGSCOPE_NO_SUCH_KEY "$BIN" chat --remote http://127.0.0.1:1 --api-key-env GGSCOPE_NO_SUCH_KEY </dev/null 2>&1); rc=$?
WHAT="--api-key-env of an unset variable: exit 2 ($msg)" pre test "$rc" = 2
msg=$("$BIN" chat --remote http://127.0.0.1:1 model.gguf </dev/null 2>&1); rc=$?
WHAT="a FILE with --remote refused: exit 2" pre test "$rc" = 2
"$BIN" chat --remote=http://x --help | grep -q -- "--api-key-env" && echo "ok: chat --remote --help" || { echo "FAIL: chat --remote --help"; fails=$((fails + 1)); }

skip() { echo "SKIP: $*"; exit $(( fails ? 1 : 77 )); }
command -v tmux >/dev/null 2>&1 || skip "tmux is not installed"
command -v curl >/dev/null 2>&1 || skip "curl is not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"

TMP=$(mktemp -d)
export XDG_CACHE_HOME=$TMP/cache XDG_STATE_HOME=$TMP/state
source "$(dirname "$0")/lib/tmux.sh"
source "$(dirname "$0")/lib/latency.sh"
PIDS=()
trap 'tmux_cleanup; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() {   # wait_http URL PID NAME: until URL answers (60 s)
    local t0=$SECONDS
    until curl -sf "$1" >/dev/null 2>&1 || curl -s -o /dev/null -w '%{http_code}' "$1" 2>/dev/null | grep -q 401; do
        if ! kill -0 "$2" 2>/dev/null || (( SECONDS - t0 > 60 )); then
            echo "FAIL: $3 did not start:"; tail -5 "$TMP/$3.log"; fails=$((fails + 1)); return 1
        fi
        sleep 0.1
    done
}
chat() {   # chat SESSION ARGS...: ggscope chat --remote in tmux
    local s=$1; shift
    start "$s" 140x40 chat "$@"
}
saved_reply() {   # saved_reply FILE N: message N's content of a saved session, exactly
    python3 -c "import json,sys; sys.stdout.write(json.load(open('$1'))['messages'][$2]['content'])"
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# ---- A. a scripted server (tests/lib/oai_mock.py) for what llama-server does not do ----
MPORT=$(free_port)
CLOSELOG=$TMP/closed.log
python3 "$(dirname "$0")/lib/oai_mock.py" "$MPORT" "$CLOSELOG" >"$TMP/mock.log" 2>&1 &
PIDS+=($!)
if wait_http "http://127.0.0.1:$MPORT/v1/models" $! mock; then
    MURL=http://127.0.0.1:$MPORT
    chat mock --remote "$MURL" --timeout 1
    wait_for "┌ Message" && wait_for "remote: noprobs at $MURL" && echo "ok: --model defaults to the first of /v1/models"
    keys "Hello" Enter
    wait_for "end of turn" && echo "ok: a reply from the scripted server"
    check "reasoning_content: the chat's thinking block, folded" has "▸ thinking"
    check "the reply" has "Hello from the mock\."
    # no /props: the context from the models list (vLLM's max_model_len), the usage's tokens
    check "no /props: the gauge's size from /v1/models' max_model_len (14/4096)" has "ctx [░█]+ 14/4096"
    keys Tab; sleep 0.1; keys t
    wait_for "The user says hello" && echo "ok: t unfolds the reasoning"
    keys i
    wait_for "the server returned no token probabilities" && echo "ok: no logprobs: the inspector says so"
    keys i; keys Enter
    keys "/models" Enter
    wait_for "5 models at $MURL" && echo "ok: /models"
    keys q; sleep 0.1
    keys "/models nosuch" Enter
    wait_for "the server lists no model 'nosuch'" && echo "ok: /models NAME: a name the server does not list is refused"
    keys "/models midstream" Enter
    wait_for "remote: midstream at" && echo "ok: /models NAME: the title names NAME"
    keys "Hello" Enter
    wait_for "the server: out of memory on the device" && echo "ok: /models NAME: the next reply asks for NAME"
    keys C-c; wait_for "EXITED 0"
    chat missing --remote "$MURL" --model missing
    wait_for "┌ Message"; keys "Hello" Enter
    wait_for "HTTP 404: The model \`missing\` does not exist." && echo "ok: an unknown model: one line"
    wait_for "1 messages" && echo "ok: the message stays"
    keys C-c; wait_for "EXITED 0"
    chat mid --remote "$MURL" --model midstream
    wait_for "┌ Message"; keys "Hello" Enter
    wait_for "the server: out of memory on the device" && echo "ok: an error in the middle of the stream: one line"
    wait_for "2 messages" && check "the partial reply is kept" has "Three words then"
    check "no context size anywhere: the gauge is a count (\"ctx N tokens\")" has "ctx [0-9]+ tokens"
    keys C-c; wait_for "EXITED 0"
    chat silent --remote "$MURL" --model silent --timeout 1
    wait_for "┌ Message"; keys "Hello" Enter
    wait_for "the stream broke off after 2 tokens: timed out: no data from 127.0.0.1:$MPORT for 1 s" 10 && echo "ok: a silent server: one line after --timeout"
    wait_for "2 messages" && check "the partial reply is kept" has "Waiting for"
    keys C-c; wait_for "EXITED 0"

    # ---- measured from outside the process: keys while a slow stream
    # arrives (a chunk every 50 ms) against the idle round trip; Esc to the
    # server seeing the connection closed (the mock logs it, within 5 ms) ----
    chat lat --remote "$MURL" --model slow
    wait_for "┌ Message"
    idle=$(latency abcde); keys C-u
    keys "Go on" Enter
    wait_for "streaming… Esc stops" 10
    busy=$(latency fghij); keys C-u
    echo "info: key -> echo, idle: median ${idle% *} ms, max ${idle#* } ms; while streaming: median ${busy% *} ms, max ${busy#* } ms"
    check "keys while a reply streams: echoed within the idle round trip + 50 ms (median ${busy% *} ms, idle ${idle% *} ms)" \
        test "${busy% *}" -lt $(( ${idle% *} + 50 ))
    esc=()
    for k in 1 2 3; do
        (( k > 1 )) && { keys "Go on" Enter; wait_for "streaming… Esc stops" 10 >/dev/null; }
        sleep 0.3
        : > "$CLOSELOG"
        t0=$(date +%s%N); keys Escape
        for _ in $(seq 300); do [[ -s $CLOSELOG ]] && break; sleep 0.01; done
        tc=$(awk '{print $2}' "$CLOSELOG" 2>/dev/null | head -1)
        esc+=($(( ${tc:-$((t0 + 9999000000))} / 1000000 - t0 / 1000000 )))
        wait_for "reply stopped (Esc)" >/dev/null
    done
    esc_med=$(printf '%s\n' "${esc[@]}" | sort -n | sed -n 2p)
    echo "info: Esc (tmux send-keys) -> the server sees the connection closed: ${esc[*]} ms (median $esc_med ms)"
    check "Esc closes the request within 200 ms, measured by the server (median of 3: $esc_med ms)" test "$esc_med" -lt 200
    keys C-c; wait_for "EXITED 0"
fi

LS="$SHARED/peer/llama-server"
# the peer's cache, where llama-server was built (ctest points XDG_CACHE_HOME at the build folder)
export PEER_CACHE=${PEER_CACHE:-$HOME/.cache/ggscope-peer}
[[ -x $LS ]] || skip "no $LS (../shared is absent): the llama-server part"
"$LS" --built >/dev/null 2>&1 || skip "llama-server is not built ($LS --path builds it once, a few minutes): the llama-server part"
STORIES=$SHARED/models/stories260K.gguf
[[ -f $STORIES ]] || skip "no $STORIES"
serve() {   # serve NAME MODEL ARGS...: llama-server on a free port; sets PORT and SRV (its pid)
    local name=$1 model=$2; shift 2
    PORT=$(free_port)
    "$LS" "$model" --port "$PORT" -np 1 -t 1 "$@" >"$TMP/$name.log" 2>&1 &
    SRV=$!; PIDS+=("$SRV")
    wait_http "http://127.0.0.1:$PORT/health" "$SRV" "$name"
}

# ---- 1. stories260K: greedy equals ggscope run on the server's rendered prompt ----
# --ignore-eos: replies as long as asked (section 2); a greedy 40-token reply does not meet EOS
serve stories "$STORIES" -c 8192 --ignore-eos || exit 1
URL=http://127.0.0.1:$PORT
S_PORT=$PORT S_PID=$SRV
N=40
RLOG=$TMP/remote.log
start_env st 140x40 "GGSCOPE_REMOTE_LOG=$RLOG" chat --remote "$URL" --temp 0 --repeat-penalty 1 -n $N
wait_for "┌ Message" && wait_re "remote: [^ ]*stories260K" && echo "ok: the chat opens; the model named (the first of /v1/models)"
keys "Once upon a time" Enter
wait_for "n_predict reached" 30 && echo "ok: a greedy reply of $N tokens streams"
check "tokens/s and time to first token from the stream" has "$N tokens · n_predict reached · [0-9.]+ tok/s · first token [0-9]+ ms"
save remote-greedy
keys "/save $TMP/st.json" Enter
wait_for "saved 2 messages"
chat_reply=$(saved_reply "$TMP/st.json" 1; printf x); chat_reply=${chat_reply%x}
curl -s "$URL/apply-template" -d '{"messages":[{"role":"user","content":"Once upon a time"}]}' >"$TMP/tpl.json"
prompt=$(python3 -c "import json,sys; sys.stdout.write(json.load(open('$TMP/tpl.json'))['prompt'])"; printf x); prompt=${prompt%x}
echo "info: the server's rendered prompt: $(printf %q "$prompt")"
# the server tokenizes the rendered prompt with the model's BOS and special
# tokens parsed; `run -p` adds the BOS too (stories260K has no special tokens in the text)
srv_ids=$(curl -s "$URL/tokenize" -d "$(python3 -c "import json,sys; print(json.dumps({'content': sys.argv[1], 'add_special': True, 'parse_special': True}))" "$prompt")" |
          python3 -c "import json,sys; print(','.join(map(str, json.load(sys.stdin)['tokens'])))")
our_ids=$("$BIN" tokenize "$STORIES" "$prompt" --special --ids 2>/dev/null | tr ' ' ',')
echo "info: server's prompt tokens: $srv_ids"
echo "info: ggscope's prompt tokens: $our_ids"
check "the prompt is the same tokens for the server and ggscope (BOS included)" test "$srv_ids" = "$our_ids"
run_reply=$("$BIN" run "$STORIES" -p "$prompt" -n $N --temp 0 --repeat-penalty 1 2>/dev/null; printf x); run_reply=${run_reply%x}
run_reply=${run_reply%$'\n'}
echo "info: remote reply: $(printf %q "$chat_reply")"
echo "info: run reply:    $(printf %q "$run_reply")"
check "stories260K greedy: the remote reply equals ggscope run on the server's rendered prompt" test "$chat_reply" = "$run_reply"
check "the reply is not empty" test -n "$chat_reply"

# the token inspector: the server's top_logprobs
keys Tab; sleep 0.1; keys i
wait_re "token 1/$N .* p = [0-9.]+" && echo "ok: the inspector shows the server's probabilities"
check "the inspector lists 5 alternatives" has "│ 5\. "
save remote-inspector
keys i; keys Enter; sleep 0.1

# /regen /edit as locally
keys "/regen" Enter
wait_for "n_predict reached" 30
wait_for "2 messages" && check "/regen replaces the reply (greedy: the same text)" test "$(count "n_predict reached")" -eq 1
keys "/edit" Enter
wait_for "› Once upon a time" && echo "ok: /edit puts the message back in the input box"
keys C-u "Once upon a time there was" Enter
wait_for "n_predict reached" 30 && wait_for "2 messages" && echo "ok: the edited message is answered"
keys "/save $TMP/st2.json" Enter
wait_for "saved 2 messages"
check "/save: the edited message" test "$(python3 -c "import json; print(json.load(open('$TMP/st2.json'))['messages'][0]['content'])")" = "Once upon a time there was"
keys "/clear" Enter; wait_for "0 messages"
keys "/load $TMP/st.json" Enter
wait_for "loaded 2 messages" && wait_for "2 messages" && echo "ok: /load restores a saved conversation"
keys "/models" Enter
wait_for "┌─ Models" && wait_re "\* .*stories260K" && echo "ok: /models lists the server's models"
keys q; sleep 0.1

# ---- 2. Esc during a long reply closes the request within 200 ms ----
keys "/set n_predict 6000" Enter; wait_for "n_predict = 6000"
# the terminal's own round trip (tmux: send-keys, then a capture showing the
# change), measured on the idle chat: the Esc figure below includes one
typed=""; idle=()
for ch in a b c d e; do
    typed+=$ch; t0=$(now_ms); keys "$ch"
    while ! screen | grep -qF "› $typed"; do (( $(now_ms) - t0 > 3000 )) && break; done
    idle+=($(( $(now_ms) - t0 )))
done
keys C-u
rt=$(printf '%s\n' "${idle[@]}" | sort -n | sed -n 3p)
echo "info: idle key -> echo: ${idle[*]} ms (median $rt ms: tmux's round trip)"
esc_once() {   # a long reply, Esc: prints "SCREEN SLOT" ms (to "reply stopped" on screen; to the server's slot idle)
    keys "/clear" Enter; wait_for "0 messages" >/dev/null
    keys "Tell me a very long story" Enter
    wait_for "streaming… Esc stops" 30 >/dev/null
    sleep 0.3
    local t0 t_screen="" t_slot=""
    t0=$(now_ms); keys Escape
    while (( $(now_ms) - t0 < 3000 )); do
        [[ -z $t_screen ]] && screen | grep -qF "reply stopped (Esc)" && t_screen=$(( $(now_ms) - t0 ))
        [[ -z $t_slot ]] && curl -s "$URL/slots" | grep -q '"is_processing":false' && t_slot=$(( $(now_ms) - t0 ))
        [[ -n $t_screen && -n $t_slot ]] && break
    done
    echo "${t_screen:-9999} ${t_slot:-9999}"
}
# three times (a loaded machine delays tmux and curl now and then): the median
e_screen=(); e_slot=()
for k in 1 2 3; do
    r=$(esc_once); e_screen+=("${r% *}"); e_slot+=("${r#* }")
done
med() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
t_screen=$(med "${e_screen[@]}"); t_slot=$(med "${e_slot[@]}")
echo "info: Esc -> 'reply stopped' on screen: ${e_screen[*]} ms; -> the server's slot idle: ${e_slot[*]} ms"
# from the inside (GGSCOPE_REMOTE_LOG): the cancel flag to the request closed,
# the acceptance figure; from the outside (tmux, curl: each a process started
# on a loaded 2-core machine) a bound against a frozen chat only
inner=$(awk '{print $2}' "$RLOG" 2>/dev/null | sort -n | tail -1)
echo "info: Esc -> the request closed (inside, at most): $(awk '{printf "%s ", $2}' "$RLOG" 2>/dev/null)ms"
check "Esc closes the request within 200 ms, all three times (longest ${inner:-never} ms)" \
    awk -v v="${inner:-9999}" 'BEGIN { exit !(v < 200) }'
check "Esc: 'reply stopped' on the screen within 1 s (median $t_screen ms, tmux's round trip ~$rt ms)" test "$t_screen" -lt 1000
check "Esc: the server stops generating within 1 s (its slot idle after $t_slot ms, median)" test "$t_slot" -lt 1000
wait_re "[0-9]+ tokens · stopped" && echo "ok: the partial reply is kept, marked stopped"
save remote-esc

# ---- 3. the server killed in the middle of a reply ----
keys "/clear" Enter; wait_for "0 messages"
keys "Another long story please" Enter
wait_for "streaming… Esc stops" 30
sleep 0.2
kill -9 "$S_PID"
wait_re "the stream broke off after [0-9]+ tokens|the server closed the stream" 10 && echo "ok: one error line in the transcript"
wait_for "2 messages" && echo "ok: the message and the partial reply are kept"
check "the partial reply's line says error" has "[0-9]+ tokens · error"
save remote-killed
keys "/save $TMP/killed.json" Enter
wait_for "saved 2 messages" && check "the saved conversation holds the message" \
    test "$(python3 -c "import json; print(json.load(open('$TMP/killed.json'))['messages'][0]['content'])")" = "Another long story please"
keys "Are you there?" Enter
wait_for "connection refused (127.0.0.1:$S_PORT)" 10 && echo "ok: the next message: connection refused, one line"
wait_for "3 messages" && echo "ok: the conversation is kept"
keys C-c; wait_for "EXITED 0"

# ---- 4. connection refused at start; 401 without the key; the demo model with it ----
DEAD=$(free_port)
chat dead --remote "http://127.0.0.1:$DEAD"
wait_for "┌ Message"
wait_for "models unknown: connection refused (127.0.0.1:$DEAD)" && echo "ok: no server: the status line says why"
keys "Hello" Enter
wait_for "connection refused (127.0.0.1:$DEAD)" && check "connection refused: one line in the transcript" test "$(count "connection refused (127.0.0.1:$DEAD)")" -ge 1
wait_for "1 messages" && echo "ok: the message stays"
keys C-c; wait_for "EXITED 0"

"$BIN" </dev/null >/dev/null 2>&1   # writes the demo model into the cache (then: not a terminal)
DEMO=$(ls "$XDG_CACHE_HOME"/ggscope/*.gguf 2>/dev/null | head -1)
KEY=k-$RANDOM-secret-$RANDOM
if [[ -z $DEMO ]]; then
    echo "FAIL: the demo model was not written"; fails=$((fails + 1))
elif serve demo "$DEMO" -c 512 --api-key "$KEY"; then
    URL=http://127.0.0.1:$PORT
    chat nokey --remote "$URL" --model demo --temp 0
    wait_for "┌ Message"
    keys "Hello" Enter
    wait_re "HTTP 401: .*" 10 && echo "ok: 401 without the key: one line ($(screen | grep -o 'HTTP 401: [^│]*' | head -1 | sed 's/ *$//'))"
    wait_for "1 messages"
    keys C-c; wait_for "EXITED 0"
    start_env key 140x40 "GGSCOPE_TEST_KEY=$KEY" chat --remote "$URL" --api-key-env GGSCOPE_TEST_KEY --temp 0
    wait_for "┌ Message"
    keys "Hello" Enter
    wait_for "end of turn" 30 && echo "ok: with --api-key-env the server answers"
    keys "/save $TMP/demo.json" Enter
    wait_for "saved 2 messages"
    demo_reply=$(saved_reply "$TMP/demo.json" 1)
    echo "info: demo reply: $demo_reply"
    # llama-server streams each token's piece as it is: the first ("▁Once")
    # keeps the SentencePiece space that ggscope's own detokenizer drops at
    # the start of a reply; the remote chat shows the server's text unchanged
    check "the demo model recites its text through llama-server (one leading space: the server's first piece)" \
        test "$demo_reply" = " Once upon a time, ggscope opened one GGUF file. It showed every tensor in hex, measured quantization error layer by layer, and chatted with models on its own engine. The end."
    keys Tab; sleep 0.1; keys i
    wait_re "token 1/[0-9]+ " && echo "ok: the inspector on the demo model's reply"
    keys i; keys Enter
    check "the key is never on the screen" test "$(count "$KEY")" -eq 0
    keys C-c; wait_for "EXITED 0"
fi

tmux_retry_if_gone "$0"
if (( fails )); then echo "$fails check(s) failed"; exit 1; fi
echo "all remote chat checks passed"
