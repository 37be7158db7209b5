# A GPT-2-style vocabulary without tokenizer.ggml.pre: the tokenizer copied
# the absent name with memcpy(dst, NULL, 0), which UBSan aborts on (the
# sanitizer build of this case). The real GPT-2 vocabulary, key dropped.
src=$shared/fixtures/vocab/ggml-vocab-gpt-2.gguf
[ -f "$src" ] || skip "../shared is absent (needs $src)"
python3 "$here/reader-gguf.py" "$src" nopre.gguf --drop tokenizer.ggml.pre
check "the key is gone" '! grep -q tokenizer.ggml.pre nopre.gguf'
check "tokenize succeeds" '"$bin" tokenize nopre.gguf "Hello world" --ids >ids.txt 2>err.txt'
check "tokenized as GPT-2 does" '[ "$(cat ids.txt)" = "15496 995" ] || { echo "    got: $(cat ids.txt)"; false; }'
check "info succeeds" '"$bin" info nopre.gguf >/dev/null 2>&1' 
