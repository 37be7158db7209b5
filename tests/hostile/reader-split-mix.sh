# Shard sets must not mix: mm-00001-of-00003.gguf says split.count = 2, and
# mm-00002-of-00002.gguf (of another, two-shard set) exists beside it; it was
# pulled in as the second shard. Also a later shard whose split.count or
# split.no disagrees with its own name, and a count of zero.
split_file() { # PATH NO COUNT [TENSOR]: split.no / split.count (uint16), one F32 tensor
    python3 - "$@" <<'PY'
import struct, sys
path, no, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
name = (sys.argv[4] if len(sys.argv) > 4 else "t%d" % no).encode()
def kv(k, v): return struct.pack("<Q", len(k)) + k + struct.pack("<IH", 2, v)
b = b"GGUF" + struct.pack("<IQQ", 3, 1, 2) + kv(b"split.no", no) + kv(b"split.count", count)
b += struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, 8, 0, 0)
b += b"\0" * ((-len(b)) % 32) + b"\0" * 32
open(path, "wb").write(b)
PY
}
split_file mm-00001-of-00003.gguf 0 2
split_file mm-00002-of-00002.gguf 1 2
expect 2 'mm-00001-of-00003\.gguf: .*split\.count.*expected' -- "$bin" info mm-00001-of-00003.gguf
# the same pair opened from the other end
expect 2 'mm-0000[12]-of-0000[23]\.gguf: .*expected' -- "$bin" info mm-00002-of-00002.gguf
# a valid two-shard set opens
split_file ok-00001-of-00002.gguf 0 2
split_file ok-00002-of-00002.gguf 1 2
check "a valid set opens from shard 1" '"$bin" info ok-00001-of-00002.gguf >ok1.txt && grep -q t1 ok1.txt'
check "a valid set opens from shard 2" '"$bin" info ok-00002-of-00002.gguf >ok2.txt && grep -q t0 ok2.txt' 
# second shard claims another count, then another index
split_file bc-00001-of-00002.gguf 0 2
split_file bc-00002-of-00002.gguf 1 3
expect 2 'bc-00002-of-00002\.gguf: .*split\.count.*expected' -- "$bin" info bc-00001-of-00002.gguf
split_file bn-00001-of-00002.gguf 0 2
split_file bn-00002-of-00002.gguf 0 2
expect 2 'bn-00002-of-00002\.gguf: .*split\.no.*expected' -- "$bin" info bn-00001-of-00002.gguf
# split.count = 0
split_file z.gguf 0 0
expect 2 'z\.gguf: .*split\.count.*expected' -- "$bin" info z.gguf
