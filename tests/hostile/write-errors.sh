# Write errors name the final path and the cause: a missing folder (bad
# argument: exit 2, one line), a file-size limit, a full disk and a read-only
# file system (exit 1); no temporary file is left behind. Same for dump -o
# and for the demo model written into the cache folder.
python3 "$here/write-mkgguf.py" f32 in.gguf 64 1024
expect 2 "/nonexistent/dir/o\.gguf.*folder /nonexistent/dir does not exist" -- "$bin" quantize in.gguf /nonexistent/dir/o.gguf --type q8_0
expect 2 "/nonexistent/dir/o\.bin.*folder /nonexistent/dir does not exist" -- "$bin" dump in.gguf blk.0.attn_q.weight --f32 -o /nonexistent/dir/o.bin
# a file-size limit makes write() fail (EFBIG) without root
mkdir lim
expect 1 "cannot write .*$tmp/lim/o\.gguf: File too large" -- bash -c "ulimit -f 8; trap '' XFSZ; exec \"\$0\" \"\$@\"" "$bin" quantize in.gguf "$tmp/lim/o.gguf" --type f16
expect 1 "cannot write .*$tmp/lim/o\.bin: File too large" -- bash -c "ulimit -f 8; trap '' XFSZ; exec \"\$0\" \"\$@\"" "$bin" dump in.gguf blk.0.attn_q.weight --f32 -o "$tmp/lim/o.bin"
check "limit: nothing left in the folder" '[ -z "$(ls -A lim)" ]'
if [ "$(id -u)" != 0 ]; then
    mkdir ro && chmod 555 ro
    expect 1 "$tmp/ro/o\.gguf: .*Permission denied" -- "$bin" quantize in.gguf "$tmp/ro/o.gguf" --type q8_0
    chmod 755 ro
    skip "a full disk and a read-only file system need root (unshare -m, mount tmpfs)"
fi
unshare -m true 2>/dev/null || skip "unshare -m is not permitted here"
mkdir full rofs
# inside a private mount namespace: a 64 KiB tmpfs (full), a read-only tmpfs;
# what is left in them afterwards goes to left.txt
inns=(unshare -m bash -c 'mount -t tmpfs -o size=64k tmpfs "$1/full" && mount -t tmpfs -o ro tmpfs "$1/rofs" || exit 99
t=$1; shift; "$@"; rc=$?; ls -A "$t/full" "$t/rofs" >"$t/left.txt"; exit $rc' _ "$tmp")
expect 1 "cannot write .*$tmp/full/o\.gguf: No space left on device" -- "${inns[@]}" "$bin" quantize in.gguf "$tmp/full/o.gguf" --type f16
check "full: no temporary file left" '! grep -q "^\." left.txt'
expect 1 "cannot write .*$tmp/full/o\.bin: No space left on device" -- "${inns[@]}" "$bin" dump in.gguf blk.0.attn_q.weight --f32 -o "$tmp/full/o.bin"
check "full: no temporary file left (dump)" '! grep -q "^\." left.txt'
expect 1 "demo model.*$tmp/full/ggscope/.*No space left on device" -- "${inns[@]}" env XDG_CACHE_HOME="$tmp/full" "$bin" --no-tui
expect 1 "$tmp/rofs/o\.gguf: .*Read-only file system" -- "${inns[@]}" "$bin" quantize in.gguf "$tmp/rofs/o.gguf" --type q8_0
