# A FIFO named as the model: open() blocked forever waiting for a writer.
# `timeout 5` makes this case fail fast (status 124) if it blocks again.
mkfifo fifo.gguf
expect 2 'fifo\.gguf: .*not a regular file.*expected' -- timeout 5 "$bin" info fifo.gguf
expect 2 'fifo\.gguf: .*not a regular file' -- timeout 5 "$bin" dump fifo.gguf x --stats
