#!/usr/bin/env bash
# ggscope template on a real GGUF (the Phi-3 vocabulary, which carries a chat
# template) renders exactly what the reference (llama.cpp's GGUF reader +
# @huggingface/jinja, via ../shared/peer/peer) rendered: the expected outputs
# in tests/data/chat were produced by the peer. Skips (77) without ../shared.
set -u
bin=${GGSCOPE_BIN:?GGSCOPE_BIN not set}
src=${GGSCOPE_SRC:-.}
shared=${GGSCOPE_SHARED:-$src/../shared}
vocab=$shared/fixtures/vocab/ggml-vocab-phi-3.gguf
data=$src/tests/data/chat
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # NAME EXPECTED-FILE ARGS...
  local name=$1 want=$2
  shift 2
  if ! "$bin" template "$@" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL $name: exit status $?: $(cat "$tmp/err")"
    fail=1
  elif ! cmp -s "$tmp/out" "$want"; then
    echo "FAIL $name: output differs from the reference"
    diff "$tmp/out" "$want" | head -20
    fail=1
  elif [[ -s $tmp/err ]]; then
    echo "FAIL $name: unexpected stderr: $(cat "$tmp/err")"
    fail=1
  else
    echo "ok   $name"
  fi
}
# a .jinja template file (one of the feature templates, peer-rendered)
t=$src/tests/data/templates
check jinja-file "$t/chatlike.basic.expected" "$t/chatlike.jinja" "$t/basic.messages.json" --bos '<s>' --eos '</s>'

# a template that raises: the fallback is used and stderr says so
printf '<|im_start|>{{ raise_exception("no") }}' >"$tmp/raise.jinja"
printf '[{"role":"user","content":"Hi"}]' >"$tmp/m.json"
if "$bin" template "$tmp/raise.jinja" "$tmp/m.json" >"$tmp/out" 2>"$tmp/err" &&
   [[ $(cat "$tmp/out") == $'<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant' ]] &&
   grep -q 'ChatML (built-in fallback' "$tmp/err"; then
  echo "ok   fallback reported"
else
  echo "FAIL fallback: $(cat "$tmp/out") / $(cat "$tmp/err")"; fail=1
fi
# --strict refuses the fallback (exit 1)
"$bin" template "$tmp/raise.jinja" "$tmp/m.json" --strict >/dev/null 2>&1
rc=$?
if [[ $rc -eq 1 ]]; then echo "ok   --strict"; else echo "FAIL --strict: exit $rc"; fail=1; fi
# bad input: exit 2
printf '{"role": "user"}' >"$tmp/bad.json"
"$bin" template "$tmp/raise.jinja" "$tmp/bad.json" >/dev/null 2>&1
rc=$?
if [[ $rc -eq 2 ]]; then echo "ok   bad messages -> 2"; else echo "FAIL bad messages: exit $rc"; fail=1; fi
"$bin" template "$tmp/nonexistent.gguf" "$tmp/m.json" >/dev/null 2>&1
rc=$?
if [[ $rc -eq 2 ]]; then echo "ok   missing file -> 2"; else echo "FAIL missing file: exit $rc"; fail=1; fi
"$bin" template --help | grep -q -- '--no-gen' || { echo "FAIL --help"; fail=1; }

# the acceptance check: a real GGUF model's template, as the reference renders it
if [[ ! -f $vocab ]]; then
  echo "SKIP: ../shared is absent ($vocab): the GGUF checks did not run"
  [[ $fail -eq 0 ]] && exit 77
  exit 1
fi
check phi3-gguf "$data/phi3.conv.expected" "$vocab" "$data/conv.json"
check phi3-gguf-nogen "$data/phi3.conv.nogen.expected" "$vocab" "$data/conv.json" --no-gen
check phi3-gguf-unicode "$data/phi3.conv-unicode.expected" "$vocab" "$data/conv-unicode.json"
check phi3-gguf-bos-eos "$data/phi3.conv-unicode.nogen-bos-eos.expected" "$vocab" "$data/conv-unicode.json" \
  --bos '[B]' --eos '[E]' --no-gen
# messages from standard input
if ! "$bin" template "$vocab" - <"$data/conv.json" | cmp -s - "$data/phi3.conv.expected"; then
  echo "FAIL stdin messages"; fail=1
else
  echo "ok   stdin messages"
fi
# --format names every built-in format, the families' ones too
for f in phi4:'<|im_start|>user<|im_sep|>' granite:'<|start_of_role|>user<|end_of_role|>' \
         mistral-v7:'[INST] ' mistral-v7-tekken:'[INST]' olmo2:'<|user|>' harmony:'<|start|>user<|message|>'; do
  out=$("$bin" template "$vocab" "$data/conv.json" --format "${f%%:*}" 2>&1)
  if [[ $? == 0 && $out == *"${f#*:}"* ]]; then echo "ok   --format ${f%%:*}"; else echo "FAIL --format ${f%%:*}: $out" | head -3; fail=1; fi
done
if "$bin" template "$vocab" "$data/conv.json" --format nope >/dev/null 2>&1; then echo "FAIL --format nope accepted"; fail=1; else echo "ok   --format nope refused"; fi

exit $fail
