#!/usr/bin/env bash
# Hostile inputs: every tests/hostile/*.sh case, each with the exit status and
# the message it must give. A case is a bash fragment sourced in its own
# subshell with these at hand:
#   $bin   the ggscope binary        $tmp   an empty folder for this case
#   $here  tests/hostile             $shared  ../shared (may be absent)
#   expect STATUS REGEX -- CMD ARGS...   run CMD (stdin /dev/null, 60 s limit),
#          check its exit status and that stderr has REGEX (grep -E); with
#          STATUS 2 also that stderr is exactly one line
#   check NAME EXPR                      one more assertion (EXPR is eval'd)
#   skip WHY                             skip the rest of the case, visibly
set -u
bin=${GGSCOPE_BIN:?}
here=$(cd "$(dirname "$0")/hostile" && pwd)
shared=$(cd "${GGSCOPE_SHARED:-../shared}" 2>/dev/null && pwd || echo "${GGSCOPE_SHARED:-../shared}")
export bin here shared
total_fail=0; total_pass=0; total_skip=0
for case_file in "$here"/*.sh; do
    name=$(basename "$case_file" .sh)
    tmp=$(mktemp -d)
    out=$(
        export tmp
        fail=0; pass=0
        check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $name: $1"; fail=$((fail+1)); fi; }
        expect() {
            local want=$1 re=$2; shift 3
            timeout 60 "$@" </dev/null >"$tmp/.out" 2>"$tmp/.err"; local rc=$?
            if [ "$rc" != "$want" ]; then
                echo "FAIL: $name: exit $rc, expected $want: $*"; sed 's/^/    /' "$tmp/.err" | head -5; fail=$((fail+1)); return 1; fi
            if ! grep -Eq -- "$re" "$tmp/.err"; then
                echo "FAIL: $name: stderr lacks /$re/: $*"; sed 's/^/    /' "$tmp/.err" | head -5; fail=$((fail+1)); return 1; fi
            if [ "$want" = 2 ] && [ "$(wc -l <"$tmp/.err")" != 1 ]; then
                echo "FAIL: $name: stderr is not one line: $*"; sed 's/^/    /' "$tmp/.err" | head -5; fail=$((fail+1)); return 1; fi
            pass=$((pass+1))
        }
        skip() { echo "SKIP: $name: $1"; echo "RESULT $pass $fail 1"; exit 0; }
        cd "$tmp" && source "$case_file"
        echo "RESULT $pass $fail 0"
    )
    rm -rf "$tmp"
    echo "$out" | grep -av '^RESULT'
    read -r _ p f s <<<"$(echo "$out" | grep -a '^RESULT' | tail -1)"
    if [ -z "${p:-}" ]; then echo "FAIL: $name: the case died"; p=0; f=1; s=0; fi
    total_pass=$((total_pass+p)); total_fail=$((total_fail+f)); total_skip=$((total_skip+s))
    echo "$name: $p passed, $f failed"
done
echo "hostile: $total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" = 0 ]
