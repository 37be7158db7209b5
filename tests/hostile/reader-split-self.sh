# A shard that claims to be a later shard of its own set: m-00001-of-00002.gguf
# with split.no = 1, split.count = 2 (71 bytes) made the split opener reopen
# "shard 1" (itself) until the stack overflowed. Also split.no = 1 with the
# name of shard 2 but no shard 1 on disk, and a set whose first shard names
# itself "of 00002" but claims split.count = 3.
split_file() { # PATH NO COUNT: a tensor-less GGUF with split.no / split.count (uint16)
    python3 - "$@" <<'PY'
import struct, sys
def kv(k, v): return struct.pack("<Q", len(k)) + k + struct.pack("<IH", 2, v)
open(sys.argv[1], "wb").write(b"GGUF" + struct.pack("<IQQ", 3, 0, 2)
    + kv(b"split.no", int(sys.argv[2])) + kv(b"split.count", int(sys.argv[3])))
PY
}
split_file m-00001-of-00002.gguf 1 2
check "the self-referencing shard is 71 bytes" '[ "$(stat -c %s m-00001-of-00002.gguf)" = 71 ]'
expect 2 'm-00001-of-00002\.gguf: .*split\.no.*expected' -- "$bin" info m-00001-of-00002.gguf
expect 2 'm-00001-of-00002\.gguf: .*split\.no.*expected' -- "$bin" tokenize m-00001-of-00002.gguf hi
expect 2 'm-00001-of-00002\.gguf: .*split\.no.*expected' -- "$bin" run m-00001-of-00002.gguf -p hi -n 1
# a second shard opened directly, whose first shard is missing
split_file s-00002-of-00002.gguf 1 2
expect 2 's-00001-of-00002\.gguf' -- "$bin" info s-00002-of-00002.gguf
# the first shard says it is shard 2 too
split_file t-00001-of-00002.gguf 1 2
split_file t-00002-of-00002.gguf 1 2
expect 2 't-0000[12]-of-00002\.gguf: .*expected' -- "$bin" info t-00002-of-00002.gguf
# split.count disagrees with the name
split_file c-00001-of-00002.gguf 0 3
expect 2 'c-00001-of-00002\.gguf: .*split\.count.*expected' -- "$bin" info c-00001-of-00002.gguf
