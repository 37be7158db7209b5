#!/usr/bin/env bash
# ggscope tokenize: ids, BOS rule, special tokens, --many, usage errors.
# Expected ids: the model authors' vectors (../shared/fixtures/vocab/*.out)
# plus the BOS the metadata asks for (checked against llama.cpp's peer).
set -u
bin=${GGSCOPE_BIN:?}
shared=${GGSCOPE_SHARED:-../shared}
V=$shared/fixtures/vocab
fail=0
check() {   # check NAME EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then
    echo "FAIL $1: expected [$2] got [$3]"
    fail=1
  else
    echo "ok   $1"
  fi
}
if [[ ! -f $V/ggml-vocab-llama-bpe.gguf ]]; then
  # without ../shared: the demo model's SentencePiece vocabulary (BOS 1,
  # <|im_start|> = 3), the BOS rule, special tokens and the usage errors
  echo "SKIP (part): ../shared is absent: no check against the authors' vectors"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  XDG_CACHE_HOME=$tmp/cache "$bin" </dev/null >/dev/null 2>&1
  D=$(ls "$tmp"/cache/ggscope/*.gguf)
  with=$("$bin" tokenize "$D" "Once upon a time" --ids)
  without=$("$bin" tokenize "$D" "Once upon a time" --ids --no-bos)
  check "demo: BOS first" "1 $without" "$with"
  check "demo: --special" "3" "$("$bin" tokenize "$D" "<|im_start|>" --ids --special --no-bos)"
  plain=$("$bin" tokenize "$D" "<|im_start|>" --ids --no-bos)
  [[ " $plain " == *" 3 "* ]] && { echo "FAIL special token recognised without --special"; fail=1; } || echo "ok   no special without --special"
  check "demo: stdin" "$without" "$(printf 'Once upon a time' | "$bin" tokenize "$D" - --ids --no-bos)"
  "$bin" tokenize "$D" >/dev/null 2>&1; check "missing TEXT exits 2" 2 $?
  "$bin" tokenize "$D" x --bogus >/dev/null 2>&1; check "bad option exits 2" 2 $?
  "$bin" tokenize /nonexistent.gguf x >/dev/null 2>&1; check "missing file exits 2" 2 $?
  exit $fail
fi
check "llama-bpe adds BOS" "128000 9906 1917" "$("$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" "Hello world" --ids)"
check "llama-bpe --no-bos" "9906 1917" "$("$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" "Hello world" --ids --no-bos)"
check "qwen2 no BOS" "9707 1879" "$("$bin" tokenize "$V/ggml-vocab-qwen2.gguf" "Hello world" --ids)"
check "spm adds BOS and prefix space" "1 15043 3186" "$("$bin" tokenize "$V/ggml-vocab-llama-spm.gguf" "Hello world" --ids)"
check "qwen2 --special" "151644 872" "$("$bin" tokenize "$V/ggml-vocab-qwen2.gguf" "<|im_start|>user" --ids --special)"
plain=$("$bin" tokenize "$V/ggml-vocab-qwen2.gguf" "<|im_start|>user" --ids)
[[ " $plain " == *" 151644 "* ]] && { echo "FAIL special token recognised without --special"; fail=1; } || echo "ok   no special without --special"
check "stdin" "9906 1917" "$(printf 'Hello world' | "$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" - --ids --no-bos)"
out=$("$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" $'Hi\n' --pieces --no-bos)
check "pieces" "  13347 'Hi'
    198 '\\n'" "$out"
tmp=$(mktemp)
printf '["Hello world", " Hello world", ""]' > "$tmp"
check "--many" "[[9906,1917],[22691,1917],[]]" "$("$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" --many "$tmp")"
check "--many=FILE, options before FILE" "[[9906,1917],[22691,1917],[]]" "$("$bin" tokenize --many="$tmp" "$V/ggml-vocab-llama-bpe.gguf")"
rm -f "$tmp"
"$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" >/dev/null 2>&1; check "missing TEXT exits 2" 2 $?
"$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" x --bogus >/dev/null 2>&1; check "bad option exits 2" 2 $?
check "bad option: one line" "ggscope: tokenize: unknown option '--bogus' (see ggscope tokenize --help)" "$("$bin" tokenize "$V/ggml-vocab-llama-bpe.gguf" x --bogus 2>&1)"
"$bin" tokenize /nonexistent.gguf x >/dev/null 2>&1; check "missing file exits 2" 2 $?
"$bin" tokenize --help | grep -q -- "--special" ; check "help" 0 $?
exit $fail
