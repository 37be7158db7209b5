# An output that exists and is not a regular file is never replaced: a
# folder, a FIFO, a device node (as root, `quantize IN /dev/null` renamed a
# regular file over /dev/null). Refused: one line, exit 2. dump -o writes
# into a FIFO or device as it is.
python3 "$here/write-mkgguf.py" f32 in.gguf 8 256
mkdir sub
mkfifo pipe
expect 2 'not a regular file' -- "$bin" quantize in.gguf sub --type q8_0
check "folder still a folder" '[ -d sub ] && [ -z "$(ls -A sub)" ]'
expect 2 'not a regular file' -- "$bin" quantize in.gguf pipe --type q8_0
check "FIFO still a FIFO" '[ -p pipe ]'
if mknod null c 1 3 2>/dev/null; then
    expect 2 'not a regular file' -- "$bin" quantize in.gguf null --type q8_0
    check "device node still a device" '[ -c null ]'
    "$bin" dump in.gguf blk.0.attn_q.weight --f32 -o null 2>dump.err; rc=$?
    check "dump -o into a device node (exit $rc: $(head -1 dump.err))" '[ $rc = 0 ]'
    check "device node still a device after dump" '[ -c null ]'
fi
check "no temporary file left" '[ -z "$(ls -A | grep -E "^\.(sub|pipe|null)\.")" ]'
