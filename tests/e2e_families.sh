#!/usr/bin/env bash
# End-to-end: the chat runs every family of docs/engine.md beyond llama and
# qwen2 (e2e_chat), the mixture-of-experts ones included, in a real terminal
# (tmux). Per family, a random-weight model (bench_mkmodel --arch,
# the family's vocabulary or its stand-in from ../shared/fixtures/vocab) with
# the family's own chat template from ../shared/fixtures/templates (OLMo 2:
# none there, so the file has none and the built-in fallback is used): the
# chat opens, names the template in the status line, answers one turn with
# the engine (random weights: any text) and stops at the token limit, and
# /template shows the family's turn markers. gpt-oss: the o200k_harmony
# stand-in vocabulary and the Harmony template of llama.cpp's tree when one
# is at hand ($GGSCOPE_GPT_OSS_TEMPLATE, or /tmp/llama-src), else none (the
# built-in Harmony format); its turn ends at <|return|> or the token limit.
#   GGSCOPE_BIN  the binary (required); GGSCOPE_MKMODEL  bench_mkmodel (required)
#   GGSCOPE_SHARED  ../shared (optional: skipped, visibly, without it)
set -u
BIN=${GGSCOPE_BIN:?GGSCOPE_BIN must point to the ggscope binary}
MK=${GGSCOPE_MKMODEL:?GGSCOPE_MKMODEL must point to bench_mkmodel}
SHARED=${GGSCOPE_SHARED:-../shared}
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
[[ -d $SHARED/fixtures/vocab && -d $SHARED/fixtures/templates ]] || { echo "SKIP: no $SHARED/fixtures (vocabularies, templates)"; exit 77; }
TMP=$(mktemp -d)
export XDG_CACHE_HOME=$TMP/cache
fails=0
source "$(dirname "$0")/lib/tmux.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
V=$SHARED/fixtures/vocab T=$SHARED/fixtures/templates T_OWN=$TMP
# family | vocabulary | template file (- = none: the built-in fallback) | what the status line names | writer options | a marker of /template (last: it may hold '|')
HT=${GGSCOPE_GPT_OSS_TEMPLATE:-/tmp/llama-src/models/templates/openai-gpt-oss-120b.jinja}
if [[ -f $HT ]]; then
  cp "$HT" "$T_OWN/gpt-oss.jinja"; oss="gpt-oss|gpt-2|@gpt-oss|model template (Jinja||<|start|>user"
else
  echo "note: no Harmony template at $HT: gpt-oss runs on the built-in format"
  oss="gpt-oss|gpt-2|-|no template (fallback Harmony)||<|start|>user"
fi
rows=(
  "qwen3|qwen2|Qwen-Qwen3-0.6B|model template (Jinja||<|im_start|>user"
  "gemma3|llama-spm|google-gemma-2-2b-it|model template (Jinja||<start_of_turn>user"
  "phi3|phi-3|microsoft-Phi-3.5-mini-instruct|model template (Jinja||<|user|>"
  "smollm3|llama-bpe|HuggingFaceTB-SmolLM3-3B|model template (Jinja||<|im_start|>user"
  "olmo2|gpt-2|-|no template (fallback OLMo 2)||<|user|>"
  "granite|gpt-2|ibm-granite-granite-3.3-2B-Instruct|model template (Jinja||<|start_of_role|>user"
  "mistral3|llama-spm|mistralai-Mistral-Nemo-Instruct-2407|model template (Jinja||[INST]"
  "qwen3moe|qwen2|Qwen-Qwen3-0.6B|model template (Jinja|--experts 8 --experts-used 2|<|im_start|>user"
  "llama|llama-spm|mistralai-Mistral-Nemo-Instruct-2407|model template (Jinja|--experts 4 --experts-used 2|[INST]"
  "$oss"
)
for row in "${rows[@]}"; do
  IFS='|' read -r arch voc tpl status extra marker <<<"$row"
  f=$TMP/$arch.gguf
  targs=()
  [[ $tpl != - ]] && targs=(--template "$T/$tpl.jinja")
  [[ $tpl == @* ]] && targs=(--template "$T_OWN/${tpl#@}.jinja")
  # shellcheck disable=SC2206
  xargs_=($extra)
  if ! "$MK" "$f" --arch "$arch" --type q8_0 --vocab "$V/ggml-vocab-$voc.gguf" --seed 3 "${targs[@]}" "${xargs_[@]}" \
       2>"$TMP/mk.err"; then
    echo "FAIL: $arch: bench_mkmodel: $(head -c 300 "$TMP/mk.err")"; fails=$((fails + 1)); continue
  fi
  start_env "$arch" 150x34 "GGSCOPE_CHAT_DELAY_MS=0" chat "$f" --temp 0 -n 12 --backend cpu
  if ! wait_for "┌ Message" 20; then continue; fi
  wait_for "$status" && echo "ok: $arch: the status line names the template ($status)"
  keys "Hello, who are you?" Enter
  wait_re 'tok/s · first token [0-9]+ ms' 30 && wait_for "2 messages" && \
    echo "ok: $arch: one turn answered by the engine (tokens/s shown)"
  keys C-u "/template" Enter
  wait_for "$marker" && echo "ok: $arch: /template shows $marker"
  keys Escape; sleep 0.1
  screen | grep -q "EXITED" && { echo "FAIL: $arch: the chat exited"; fails=$((fails + 1)); }
  T kill-session -t "$arch" 2>/dev/null
done
echo "families: $fails failed"
[[ $fails == 0 ]]
