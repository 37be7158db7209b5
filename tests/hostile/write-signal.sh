# An interrupted quantize removes its temporary file (SIGINT, SIGTERM) and
# dies of the signal; the output keeps its old contents. After SIGKILL the
# next run warns (one line) that a stale temporary file exists, and where.
# The input: one 4096 x 4096 F32 tensor (64 MiB), quantized to q4_K on one
# thread (seconds).
python3 "$here/write-mkgguf.py" f32 big.gguf 4096 4096
python3 "$here/write-mkgguf.py" f32 small.gguf 8 256
tmps() { ls -A "$tmp" | grep '^\.out\.gguf\.' ; }
# start quantize in the background with SIGINT at its default action (a
# non-interactive shell starts background jobs with SIGINT ignored)
start() {
    python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$bin" quantize big.gguf out.gguf --type q4_K --threads 1 2>err.txt &
    pid=$!
    for _ in $(seq 100); do [ -n "$(tmps)" ] && break; sleep 0.1; done
    sleep 0.5
}
echo old >out.gguf
for sig in INT TERM; do
    start
    check "$sig: temporary file while writing" '[ -n "$(tmps)" ]'
    kill -s $sig $pid
    wait $pid; rc=$?
    want=$((128 + $(kill -l $sig)))
    check "$sig: killed by the signal (status $rc, expected $want)" '[ $rc = $want ]'
    check "$sig: no temporary file left" '[ -z "$(tmps)" ]'
    check "$sig: old output untouched" '[ "$(cat out.gguf)" = old ]'
done
rm -f out.gguf
start
kill -s KILL $pid
wait $pid
stale=$(tmps)
check "KILL: the temporary file stays" '[ -n "$stale" ]'
check "KILL: no output" '[ ! -e out.gguf ]'
expect 0 "warning: .*stale temporary file.*$tmp/$stale" -- "$bin" quantize small.gguf out.gguf --type q8_0
check "warning is one line" '[ "$(grep -c stale "$tmp/.err")" = 1 ]'
check "rerun wrote the output" '[ -s out.gguf ]'
