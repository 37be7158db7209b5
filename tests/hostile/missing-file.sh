# A missing file is bad input: one line, exit 2 (also a smoke check of the runner).
expect 2 'cannot open' -- "$bin" info "$tmp/missing.gguf"
