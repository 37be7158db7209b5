#!/usr/bin/env bash
# End-to-end test of the chat page on a Harmony (gpt-oss) chat template: a
# random-weight model (bench_mkmodel) carrying a short Harmony-shaped
# template; a session whose reply holds an analysis and a final channel is
# loaded (/load):
#   - the transcript shows the analysis folded under a "thinking" line (t in
#     the transcript unfolds it, dimmed, and folds it again) and the final
#     channel as the answer, without the channel markup;
#   - /template: the next prompt carries only the final channel of the reply
#     (the Harmony template drops earlier analyses), through the model's template.
#   GGSCOPE_BIN      the binary (required)
#   GGSCOPE_MKMODEL  bench_mkmodel (required)
set -u
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
MK=${GGSCOPE_MKMODEL:?GGSCOPE_MKMODEL must point to bench_mkmodel}
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
TMP=$(mktemp -d)
OUT=${GGSCOPE_SCREENS_OUT:-}
fails=0
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT

cat >"$TMP/harmony.jinja" <<'J'
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{%- if '<|channel|>' in m.content -%}{{ raise_exception('channel tags in content') }}{%- endif -%}
<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>
{%- else -%}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}
J
"$MK" "$TMP/h.gguf" --template "$TMP/harmony.jinja" >/dev/null || { echo "FAIL: bench_mkmodel"; exit 1; }
cat >"$TMP/s.json" <<'S'
{"ggscope_chat": 1, "messages": [
 {"role": "user", "content": "Hello"},
 {"role": "assistant", "content": "<|channel|>analysis<|message|>The user greets me.<|end|><|start|>assistant<|channel|>final<|message|>Hi, how can I help?"},
 {"role": "user", "content": "Tell me more"}]}
S

start_env main 120x30 "XDG_CACHE_HOME=$TMP/cache" chat "$TMP/h.gguf"
wait_for "┌ Message" && wait_for "model template (Jinja" && echo "ok: the model's Harmony template is used"
keys "/load $TMP/s.json" Enter
wait_for "loaded 3 messages" && wait_for "Hi, how can I help?" && echo "ok: the final channel is the reply"
lacks() { ! screen | grep -qF -- "$1"; }
wait_for "▸ thinking · " && check "the analysis channel is folded" lacks "The user greets me."
keys Tab; wait_for "t thinking"
keys t
wait_for "▾ thinking · " && wait_for "The user greets me." && echo "ok: t unfolds the analysis channel as thinking"
keys t
wait_gone "The user greets me." && echo "ok: t folds it again"
keys t; wait_for "The user greets me."
keys Enter
check "the channel markup is hidden" lacks "<|channel|>"
save harmony-transcript
keys "/template" Enter
wait_for "<|start|>assistant<|channel|>final<|message|>Hi, how" && \
    echo "ok: the next prompt holds the reply's final channel"
check "the next prompt drops the analysis" lacks "The user greets me."
save harmony-template
keys C-c
wait_for "EXITED 0" && echo "ok: Ctrl+C exits with status 0"
exit $(( fails ? 1 : 0 ))
