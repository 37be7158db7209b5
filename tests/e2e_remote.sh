#!/usr/bin/env bash
# Remote files: `info`, `dump` and the explorer on http:// URLs served by a
# real nginx (started here as the current user, temporary config, a free
# port on 127.0.0.1), compared with the same commands on the local files;
# a split set; the errors (404, a server ignoring ranges, a redirect loop, a
# truncated body, a timeout, not a GGUF) against nginx and a small python
# server (tests/helpers/badhttp.py); the 2.2 GB TinyLlama-shaped file read
# with under 4 MB (nginx's access log), or a sparse file of that shape;
# `info URL --ctx N` (text and JSON) equal to the local file's estimate,
# reading the header only; progress within one slow request (badhttp's
# slow mode) on a terminal's stderr (script) and the explorer's status line.
set -u
NGINX=${NGINX:-/usr/sbin/nginx}
[ -x "$NGINX" ] || { echo "SKIP: nginx not installed ($NGINX; Debian: nginx-light)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
bin=${GGSCOPE_BIN:?}
mk=${GGSCOPE_MKMODEL:?}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
chmod 755 "$tmp"   # nginx's workers may run as another user
ngx_pid= bad_pid=
cleanup() {
    [ -n "$ngx_pid" ] && kill "$ngx_pid" 2>/dev/null
    [ -n "$bad_pid" ] && kill "$bad_pid" 2>/dev/null
    command -v tmux >/dev/null && tmux -L "ggscope-remote-$$" kill-server >/dev/null 2>&1
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
# expect STATUS REGEX CMD...: the exit status and one stderr line matching REGEX
expect() {
    local want=$1 re=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
    if [ $rc = "$want" ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -qE -- "$re" "$tmp/err"; then
        pass=$((pass+1)); echo "ok: $(cat "$tmp/err")"
    else
        fail=$((fail+1)); echo "FAIL: $* -> exit $rc (expected $want, one line matching /$re/):"; cat "$tmp/err"
    fi
}

# ---- the files ----
www=$tmp/www; mkdir -p "$www/sub" "$tmp/logs" "$tmp/temp"
# a header over 1 MiB (70000 tokens): the reader grows its window
"$mk" "$www/m.gguf" --type q4_0 --embd 256 --layers 2 --ff 512 --heads 4 --kv-heads 4 --n-vocab 70000 >/dev/null
(cd "$www/sub" && python3 "$src/tests/hostile/write-mkgguf.py" split "$www/sub/S")
: > "$www/empty.gguf"
printf '<!DOCTYPE html><html><body>not a model</body></html>\n' > "$www/page.gguf"
big=${GGSCOPE_BIG_GGUF:-/work/notes/vs/tinyllama-f16.gguf}   # the TinyLlama-shaped 2.2 GB file, when there
if [ -f "$big" ]; then
    ln -s "$big" "$www/big.gguf"; echo "note: the 2.2 GB file: $big"
else
    # a sparse file of the same shape: TinyLlama's tensors in f16, a 32000-token vocabulary
    python3 - "$www/big.gguf" <<'PY'
import struct, sys
def s(x): b = x.encode(); return struct.pack("<Q", len(b)) + b
kv = [s("general.architecture") + struct.pack("<I", 8) + s("llama")]
for k, v in (("llama.embedding_length", 2048), ("llama.block_count", 22), ("llama.feed_forward_length", 5632),
             ("llama.attention.head_count", 32), ("llama.attention.head_count_kv", 4), ("llama.context_length", 2048)):
    kv.append(s(k) + struct.pack("<II", 4, v))
kv.append(s("tokenizer.ggml.model") + struct.pack("<I", 8) + s("llama"))
kv.append(s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 32000) + b"".join(s("t%d" % i) for i in range(32000)))
kv.append(s("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 32000) + struct.pack("<32000f", *[0.0] * 32000))
ts = [("token_embd.weight", [2048, 32000], 1), ("output_norm.weight", [2048], 0), ("output.weight", [2048, 32000], 1)]
for i in range(22):
    p = "blk.%d." % i
    ts += [(p + "attn_norm.weight", [2048], 0), (p + "attn_q.weight", [2048, 2048], 1), (p + "attn_k.weight", [2048, 256], 1),
           (p + "attn_v.weight", [2048, 256], 1), (p + "attn_output.weight", [2048, 2048], 1), (p + "ffn_norm.weight", [2048], 0),
           (p + "ffn_gate.weight", [2048, 5632], 1), (p + "ffn_up.weight", [2048, 5632], 1), (p + "ffn_down.weight", [5632, 2048], 1)]
info, off = b"", 0
for name, ne, t in ts:
    n = 1
    for d in ne: n *= d
    info += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", t, off)
    off += (n * (2 if t else 4) + 31) // 32 * 32
h = b"GGUF" + struct.pack("<IQQ", 3, len(ts), len(kv)) + b"".join(kv) + info
h += b"\0" * ((-len(h)) % 32)
with open(sys.argv[1], "wb") as f:
    f.write(h); f.truncate(len(h) + off)
PY
    echo "note: $big is absent: a sparse file of its shape ($(stat -c %s "$www/big.gguf") bytes)"
fi

# ---- nginx ----
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{
    echo "daemon off; worker_processes 1; pid $tmp/nginx.pid; error_log $tmp/logs/error.log;"
    [ "$(id -u)" = 0 ] && echo "user root;"
    echo "events { worker_connections 64; }"
    echo "http {"
    echo "  log_format bytes '\$request_uri \$status \$body_bytes_sent';"
    echo "  access_log $tmp/logs/access.log bytes;"
    for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $tmp/temp;"; done
    echo "  server { listen 127.0.0.1:$port; root $www;"
    echo "    location /norange/ { alias $www/; max_ranges 0; } }"
    echo "}"
} > "$tmp/nginx.conf"
"$NGINX" -p "$tmp" -c "$tmp/nginx.conf" 2>"$tmp/logs/start.log" &
ngx_pid=$!
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/page.gguf" 2>/dev/null && break
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.05
done
kill -0 "$ngx_pid" 2>/dev/null || { echo "FAIL: nginx did not start:"; cat "$tmp/logs/start.log" "$tmp/logs/error.log"; exit 1; }
U=http://127.0.0.1:$port
logbytes() { awk -v p="$1" '$1 == p { s += $3 } END { print s + 0 }' "$tmp/logs/access.log"; }

# ---- info and dump over HTTP equal the local ones ----
"$bin" info "$www/m.gguf" | sed 1d > "$tmp/l.txt"
"$bin" info "$U/m.gguf" > "$tmp/r.txt"; rc=$?
check "info URL exits 0" '[ $rc = 0 ]'
check "info URL == info FILE (apart from the name)" 'sed 1d "$tmp/r.txt" | cmp -s - "$tmp/l.txt"'
check "the name line is the URL" 'head -1 "$tmp/r.txt" | grep -qF "$U/m.gguf"'
"$bin" info --json "$www/m.gguf" | sed "s|$www/m.gguf|X|g" > "$tmp/lj"
"$bin" info --json "$U/m.gguf" | sed "s|$U/m.gguf|X|g" > "$tmp/rj"
check "info --json URL == info --json FILE" 'cmp -s "$tmp/lj" "$tmp/rj"'
for args in "token_embd.weight --values" "token_embd.weight --hex --rows 60000:60002" "output_norm.weight --stats" \
            "blk.1.ffn_down.weight --hist --bins 8" \
            "token_embd.weight --stats --rows 60000:60010" "token_embd.weight --values --rows 69998:70000 --json" "blk.0.attn_q.weight --f32" "token_embd.weight --raw --rows 100:300"; do
    "$bin" dump "$www/m.gguf" $args > "$tmp/l.bin" 2>&1
    "$bin" dump "$U/m.gguf" $args > "$tmp/r.bin" 2>&1
    check "dump URL $args == dump FILE" 'cmp -s "$tmp/l.bin" "$tmp/r.bin"'
done
# only the tensor's bytes are read, in whole blocks
: > "$tmp/logs/access.log"
"$bin" dump "$U/m.gguf" blk.1.attn_k.weight --raw > /dev/null
n=$(logbytes /m.gguf)
check "dump reads the header and the tensor's blocks only ($n bytes of $(stat -c %s "$www/m.gguf"))" '[ "$n" -le $((4 << 20)) ]'
: > "$tmp/logs/access.log"
"$bin" dump "$U/m.gguf" token_embd.weight --hex --rows 60000:60002 > /dev/null
n=$(logbytes /m.gguf)
check "dump --rows of a 9.6 MiB tensor reads the header and one or two blocks ($n bytes)" '[ "$n" -le $((4 << 20)) ]'
check "read counts on stderr with GGSCOPE_VERBOSE" \
    'GGSCOPE_VERBOSE=1 "$bin" info "$U/m.gguf" 2>&1 >/dev/null | grep -qE "^ggscope: read [0-9.]+ MiB of 21\.[0-9] MiB in [0-9]+ requests?$"'

# ---- info --ctx: the memory estimate from the header alone (a shape-only model) ----
# The estimate's "program" part is this process's own resident set before it
# opens the file (as a run would load it), which address-space randomization
# moves by a few pages from run to run (two local runs differ too): both sides
# run without it (setarch -R) so that the outputs compare byte for byte.
# Under AddressSanitizer its allocator moves it by a page or two even so:
# there (only) the program and total figures are left out of the comparison.
norand="" san=0
if setarch -R true 2>/dev/null; then norand="setarch -R"; else echo "note: setarch -R unavailable: program/total lines may differ by a few pages"; fi
if ldd "$bin" 2>/dev/null | grep -q asan; then
    san=1; echo "note: a sanitizer build: the estimates compare without their program and total figures"
fi
norm() { if [ $san = 1 ]; then sed -E -e 's/^(  (program|total):).*/\1/' -e 's/"(runtime|total)":[0-9]+/"\1":X/g'; else cat; fi; }
# same_est A B: the two estimates are equal, but for the program's measured
# resident size (and so the total), which may differ by up to 1 MiB: under a
# loaded machine (ctest -j) one run touches a page or two more than the other
same_est() {
    python3 - "$1" "$2" <<'PY'
import re, sys
a, b = (open(f).read().splitlines() for f in sys.argv[1:3])
def split(lines):
    fixed, meas = [], []
    for l in lines:
        # the number is right-aligned: its padding changes with its width
        m = re.match(r"^(  (?:program|total):)\s+([0-9.]+)( MiB.*)$", l)
        if m:
            fixed.append(m.group(1) + " X" + m.group(3)); meas.append(float(m.group(2)) * 1048576)
            continue
        js = re.findall(r'"(?:runtime|total)":([0-9]+)', l)
        meas += [float(v) for v in js]
        fixed.append(re.sub(r'"(runtime|total)":[0-9]+', r'"\1":X', l))
    return fixed, meas
fa, ma = split(a)
fb, mb = split(b)
ok = fa == fb and len(ma) == len(mb) and all(abs(x - y) <= 1048576 for x, y in zip(ma, mb))
sys.exit(0 if ok else 1)
PY
}
: > "$tmp/logs/access.log"
"$bin" info "$U/m.gguf" > /dev/null
hdr=$(logbytes /m.gguf)
for ctx in 512 8192; do
    $norand "$bin" info "$www/m.gguf" --ctx $ctx | sed 1d | norm > "$tmp/l.txt"
    : > "$tmp/logs/access.log"
    $norand "$bin" info "$U/m.gguf" --ctx $ctx | norm > "$tmp/r.txt"; rc=${PIPESTATUS[0]}
    n=$(logbytes /m.gguf)
    check "info URL --ctx $ctx exits 0 with an estimate" '[ $rc = 0 ] && grep -q "^memory estimate (context $ctx" "$tmp/r.txt"'
    sed 1d "$tmp/r.txt" > "$tmp/r1.txt"
    same_est "$tmp/r1.txt" "$tmp/l.txt" || diff "$tmp/r1.txt" "$tmp/l.txt" | head -8
    check "info URL --ctx $ctx == info FILE --ctx $ctx (apart from the name)" 'same_est "$tmp/r1.txt" "$tmp/l.txt"'
    check "info URL --ctx $ctx reads what info URL reads: the header ($n and $hdr bytes)" '[ "$n" = "$hdr" ]'
done
$norand "$bin" info --json "$www/m.gguf" --ctx 512 | sed "s|$www/m.gguf|X|g" | norm > "$tmp/lj"
$norand "$bin" info --json "$U/m.gguf" --ctx 512 | sed "s|$U/m.gguf|X|g" | norm > "$tmp/rj"
check "info --json URL --ctx 512 == info --json FILE --ctx 512" 'same_est "$tmp/lj" "$tmp/rj" && grep -q "\"memory\":{\"n_ctx\":512" "$tmp/rj"'

# ---- a split set: every shard URL ----
"$bin" info "$www/sub/S-00002-of-00002.gguf" | sed 1d > "$tmp/l.txt"
"$bin" info "$U/sub/S-00002-of-00002.gguf" > "$tmp/r.txt"; rc=$?
check "split set over HTTP opens (from shard 2)" '[ $rc = 0 ]'
check "split set info URL == info FILE" 'sed 1d "$tmp/r.txt" | cmp -s - "$tmp/l.txt"'
rm "$www/sub/S-00002-of-00002.gguf"
expect 2 'S-00002-of-00002\.gguf: shard 2 of 2 is missing' "$bin" info "$U/sub/S-00001-of-00002.gguf"

# ---- errors: one line, exit 2 ----
expect 2 "^$U/nope\.gguf: HTTP 404 Not Found$" "$bin" info "$U/nope.gguf"
expect 2 'the server ignores range requests \(HTTP 200 for bytes=0-1048575\): download the file instead' "$bin" info "$U/norange/m.gguf"
expect 2 'page\.gguf: offset 0: this is an HTML/XML page' "$bin" info "$U/page.gguf"
expect 2 'empty\.gguf: offset 0: the file is empty' "$bin" info "$U/empty.gguf"
expect 2 'this command reads local files only' "$bin" qerr "$U/m.gguf"
"$bin" info "$www/m.gguf" >/dev/null   # (warm)
python3 "$src/tests/helpers/badhttp.py" "$tmp/badport" "$www/m.gguf" "$U/m.gguf" &
bad_pid=$!
for _ in $(seq 100); do [ -s "$tmp/badport" ] && break; sleep 0.05; done
B=http://127.0.0.1:$(cat "$tmp/badport")
expect 2 'trunc\.gguf: the body was cut short: 524288 of 1048576 bytes' "$bin" info "$B/trunc.gguf"
expect 2 'loop\.gguf: gave up after following 8 redirects' "$bin" info "$B/loop.gguf"
expect 2 'plain\.gguf: the server ignores range requests \(HTTP 200' "$bin" info "$B/plain.gguf"
t0=$(date +%s.%N)
expect 2 'stall\.gguf: timed out: no data from 127\.0\.0\.1:[0-9]+ for 1 s' env GGSCOPE_NET_TIMEOUT=1 "$bin" info "$B/stall.gguf"
check "the timeout took about a second" "python3 -c 'import sys; sys.exit(not ($(date +%s.%N) - $t0 < 6))'"
"$bin" info "$B/redir.gguf" > "$tmp/r.txt"; rc=$?
check "a redirect is followed (info equals the target's)" '[ $rc = 0 ] && sed 1d "$tmp/r.txt" | cmp -s - <("$bin" info "$www/m.gguf" | sed 1d)'
expect 2 "^http://127\.0\.0\.1:1/m\.gguf: connection refused \(127\.0\.0\.1:1\)$" "$bin" info "http://127.0.0.1:1/m.gguf"

# ---- the 2.2 GB file: info reads under 4 MB ----
: > "$tmp/logs/access.log"
"$bin" info "$U/big.gguf" | sed 1d > "$tmp/r.txt"
"$bin" info "$www/big.gguf" | sed 1d > "$tmp/l.txt"
n=$(logbytes /big.gguf)
echo "note: info of the $(stat -L -c %s "$www/big.gguf")-byte file read $n bytes in $(grep -c '^/big.gguf' "$tmp/logs/access.log") requests"
check "info on the 2.2 GB file reads under 4 MB ($n bytes)" '[ "$n" -gt 0 ] && [ "$n" -lt 4000000 ]'
check "info on the 2.2 GB file equals the local info" 'cmp -s "$tmp/r.txt" "$tmp/l.txt"'
# its memory estimate: from the header too
: > "$tmp/logs/access.log"
$norand "$bin" info "$U/big.gguf" --ctx 512 | sed 1d | norm > "$tmp/r.txt"
$norand "$bin" info "$www/big.gguf" --ctx 512 | sed 1d | norm > "$tmp/l.txt"
n=$(logbytes /big.gguf)
check "info --ctx 512 on the 2.2 GB file reads under 4 MB ($n bytes)" '[ "$n" -gt 0 ] && [ "$n" -lt 4000000 ]'
same_est "$tmp/r.txt" "$tmp/l.txt" || diff "$tmp/r.txt" "$tmp/l.txt" | head -8
check "info --ctx 512 on the 2.2 GB file equals the local estimate" 'grep -q "^memory estimate" "$tmp/r.txt" && same_est "$tmp/r.txt" "$tmp/l.txt"'

# ---- progress within one request: a slow server (64 KiB every 50 ms), stderr a terminal ----
if command -v script >/dev/null; then
    script -qfec "$bin info $B/slow.gguf" "$tmp/tty.txt" > /dev/null 2>&1; rc=$?
    check "info on a slow server exits 0 (rc=$rc)" '[ $rc = 0 ]'
    # the header's first read is one request of 1 MiB: several counts of it
    # mean progress from inside the request (between requests there is none)
    prog=$(python3 - "$tmp/tty.txt" <<'PY'
import re, sys
t = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
seen = []
for m in re.finditer(r"fetching slow\.gguf: ([0-9.]+ (?:B|KiB|MiB)) of 1\.0 MiB", t):
    if m.group(1) not in seen:
        seen.append(m.group(1))
print(" | ".join(seen))
PY
)
    echo "info: progress of the first 1 MiB request: $prog"
    check "progress within one request: at least 3 counts of the 1 MiB read" '[ "$(echo "$prog" | tr "|" "\n" | grep -c .)" -ge 3 ]'
    check "the progress line is erased at the end (CR ESC[K)" 'python3 -c "import sys; sys.exit(b\"\\r\\033[K\" not in open(sys.argv[1], \"rb\").read())" "$tmp/tty.txt"'
else
    echo "SKIP (part): script (util-linux) not installed: the progress check"
fi

# ---- the explorer on a URL: metadata, tensors, values of the visible blocks ----
if command -v tmux >/dev/null; then
    BIN=$bin SOCK=ggscope-remote-$$ WAIT_LIMIT=10
    source "$src/tests/lib/tmux.sh"
    fails=0
    : > "$tmp/logs/access.log"
    start main 120x40 "$U/m.gguf"
    wait_for "┌ Tensors" && wait_for "21 tensors" && wait_for "m.gguf" && echo "ok: the explorer opens a URL"
    hdr=$(logbytes /m.gguf)
    keys Home; wait_for "Detail  token_embd.weight"
    keys v; wait_for "[V]ALUES" && wait_re "row 0/70000 .*= -?[0-9]" && echo "ok: values of a remote tensor"
    keys x; wait_for "block 0 of" && wait_re "0x[0-9a-f]{4}_[0-9a-f]{4} +[0-9a-f]{2} [0-9a-f]{2}" && echo "ok: hex of a remote tensor"
    # rows 0.. lie in the header's window: far rows are read on demand
    keys v; wait_for "[V]ALUES"; keys :; keys -l 60000; keys Enter
    wait_re "row 60000/70000 .*= -?[0-9]" && echo "ok: values of row 60000"
    n=$(( $(logbytes /m.gguf) - hdr ))
    check "values read the visible blocks only ($n bytes; token_embd has $((70000 * 256 / 32 * 18)))" [ "$n" -gt 0 -a "$n" -le $((2 << 20)) ]
    keys g; wait_for "absmax" 20 && echo "ok: histogram of a remote tensor"
    keys q; wait_for "EXITED 0" && echo "ok: quits"
    # M: the memory estimate of a remote file (shapes only)
    start mem 160x40 "$U/m.gguf"
    wait_for "┌ Tensors"; keys M
    wait_re "memory to run at context [0-9]+ .*resident = weights" 20 && echo "ok: M on a remote file"
    keys q; wait_for "EXITED 0"
    # a slow server: the values' fetch shows its bytes on the status line
    start slow 160x40 "$B/slow.gguf"
    wait_for "┌ Tensors" 30; keys Home; wait_for "Detail  token_embd.weight"
    keys v; wait_for "[V]ALUES"; keys :; keys -l 60000; keys Enter
    wait_re "fetching slow\.gguf: [0-9.]+ (B|KiB|MiB) of [0-9.]+ MiB" 20 && echo "ok: a slow fetch's progress on the explorer's status line"
    wait_re "row 60000/70000 .*= -?[0-9]" 30 && echo "ok: the values arrive"
    keys q; wait_for "EXITED 0"
    fail=$((fail + fails))
else
    echo "SKIP (part): tmux not installed: the explorer check"
fi

echo "e2e_remote: $pass passed, $fail failed"
[ $fail = 0 ]
