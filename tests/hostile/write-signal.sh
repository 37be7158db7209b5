# An interrupted quantize removes its temporary file (SIGINT, SIGTERM) and
# dies of the signal; the output keeps its old contents. After SIGKILL the
# next run warns (one line) that a stale temporary file exists, and where.
# The input: one 4096 x 4096 F32 tensor (64 MiB), quantized to q4_K on one
# thread (a fraction of a second to seconds; write-stopped.py holds it).
python3 "$here/write-mkgguf.py" f32 big.gguf 4096 4096
python3 "$here/write-mkgguf.py" f32 small.gguf 8 256
tmps() { ls -A "$tmp" | grep '^\.out\.gguf\.' ; }
# start quantize in the background, stopped (SIGSTOP) by write-stopped.py as
# soon as its temporary file exists, so a fast machine cannot finish first;
# $pid is quantize's, $runner the waiting script's
start() {
    rm -f mark
    python3 "$here/write-stopped.py" mark "$bin" quantize big.gguf out.gguf --type q4_K --threads 1 2>err.txt &
    runner=$!
    for _ in $(seq 300); do [ -s mark ] && break; sleep 0.1; done
    pid=$(cat mark 2>/dev/null)
}
echo old >out.gguf
for sig in INT TERM; do
    start
    check "$sig: temporary file while writing" '[ -n "$(tmps)" ]'
    check "$sig: stopped while writing (pid $pid)" '[ "$pid" -gt 0 ] 2>/dev/null'
    kill -s $sig $pid; kill -s CONT $pid
    wait $runner; rc=$?
    want=$((128 + $(kill -l $sig)))
    check "$sig: killed by the signal (status $rc, expected $want)" '[ $rc = $want ]'
    check "$sig: no temporary file left" '[ -z "$(tmps)" ]'
    check "$sig: old output untouched" '[ "$(cat out.gguf)" = old ]'
done
rm -f out.gguf
start
kill -s KILL $pid
wait $runner
stale=$(tmps)
check "KILL: the temporary file stays" '[ -n "$stale" ]'
check "KILL: no output" '[ ! -e out.gguf ]'
expect 0 "warning: .*stale temporary file.*$tmp/$stale" -- "$bin" quantize small.gguf out.gguf --type q8_0
check "warning is one line" '[ "$(grep -c stale "$tmp/.err")" = 1 ]'
check "rerun wrote the output" '[ -s out.gguf ]'
