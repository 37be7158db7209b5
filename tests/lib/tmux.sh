# The tmux helpers of the end-to-end tests, written once. Source it after
# setting BIN (the ggscope binary); optional: OUT (a folder where `save` puts
# screens), WAIT_LIMIT (default seconds of the wait_* helpers, 15), SOCK (the
# tmux server's name). Failures are counted in $fails; the tmux server is
# killed by tmux_cleanup (call it from the test's EXIT trap).
#   T ARGS...                  tmux on this test's own server
#   start S COLSxROWS ARGS...  a session S running "$BIN ARGS..." (then "EXITED rc")
#   start_env S COLSxROWS ENV ARGS...   the same under `env ENV`
#   screen                     the current screen's text
#   keys KEYS...               tmux send-keys to the current session
#   wait_for TEXT [SECONDS]    poll until the screen shows TEXT (fixed string)
#   wait_re REGEX [SECONDS]    poll until the screen matches REGEX (extended)
#   wait_gone TEXT [SECONDS]   poll until TEXT has left the screen
#   check WHAT COMMAND...      one assertion (prints ok / FAIL and the screen)
#   has REGEX / count TEXT     screen tests for conditions
#   save NAME                  the screen into $OUT/NAME.txt when OUT is set
#   tmux_retry_if_gone SCRIPT  before the verdict: if the tmux server itself died
#                              (not ggscope), print why it matters and run the
#                              whole test once more (a second death fails)
# A session named "keeper" keeps the server up between the test's sessions
# (killing the last session ends a server, and a session started meanwhile
# dies with it). A dead tmux server is reported once, with the machine's state (disk, memory,
# processes), and later waits fail at once instead of repeating it.
SOCK=${SOCK:-ggscope-e2e-$$}
OUT=${OUT:-}
WAIT_LIMIT=${WAIT_LIMIT:-15}
fails=${fails:-0}
S=${S:-main}
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
tmux_cleanup() { T kill-server >/dev/null 2>&1; rm -rf "${TMUX_RCDIR:-/nonexistent}"; }
TMUX_GONE=0          # the server died under the test (see _tmux_gone)
TMUX_RCDIR=$(mktemp -d)
screen() { T capture-pane -p -t "$S" 2>/dev/null; }
_tmux_alive() { T has-session >/dev/null 2>&1; }
_tmux_keeper() { T has-session -t =keeper >/dev/null 2>&1 || T new-session -d -s keeper -x 20 -y 5 "sleep 3600"; }
_tmux_gone() {   # report a dead server once, with what the machine looked like
    (( TMUX_GONE )) && return 0
    TMUX_GONE=1; : >"$TMUX_RCDIR/.gone"
    echo "FAIL: the tmux server is gone ($(tmux -V 2>/dev/null)); the sessions' exit statuses:"
    local f; for f in "$TMUX_RCDIR"/*.rc; do [[ -e $f ]] && echo "    $(basename "$f" .rc): $(cat "$f")"; done
    echo "    (a session without a status was killed with the server, before ggscope exited)"
    echo "---- machine ----"
    { uptime; df -h /tmp . 2>&1; free -m 2>&1; ulimit -u -n 2>&1
      ps -eo pid,ppid,stat,rss,etime,comm --sort=-rss 2>/dev/null | head -12
      dmesg 2>/dev/null | tail -5; } | sed 's/^/    /'
    echo "-----------------"
}
keys() { T send-keys -t "$S" "$@"; }
start() {
    S=$1; local w=${2%x*} h=${2#*x}; shift 2
    TMUX_GONE=0; _tmux_keeper
    T new-session -d -s "$S" -x "$w" -y "$h" "$BIN $*; rc=\$?; echo \$rc >$TMUX_RCDIR/$S.rc; echo EXITED \$rc; sleep 600"
}
# app_pid: the pid of the program started in session $S (a child of the
# pane's shell; never another test's ggscope running at the same time)
app_pid() {
    local pp
    pp=$(T display -p -t "$S" '#{pane_pid}' 2>/dev/null) || return 1
    pgrep -n -P "$pp" -f "^$BIN( |\$)"
}
start_env() {
    S=$1; local w=${2%x*} h=${2#*x} env=$3; shift 3
    TMUX_GONE=0; _tmux_keeper
    T new-session -d -s "$S" -x "$w" -y "$h" "env $env $BIN $*; rc=\$?; echo \$rc >$TMUX_RCDIR/$S.rc; echo EXITED \$rc; sleep 600"
}
_tmux_wait() {   # _tmux_wait MODE PATTERN LIMIT: MODE F (shows text), E (matches), G (text gone)
    local mode=$1 pat=$2 limit=${3:-$WAIT_LIMIT} t0=$SECONDS
    if (( TMUX_GONE )); then echo "FAIL: (no tmux server) $pat"; fails=$((fails + 1)); return 1; fi
    while (( SECONDS - t0 < limit )); do
        if ! _tmux_alive; then
            echo "FAIL: waiting for: $pat"; _tmux_gone; fails=$((fails + 1)); return 1
        fi
        case $mode in
            F) screen | grep -qF -- "$pat" && return 0 ;;
            E) screen | grep -qE -- "$pat" && return 0 ;;
            G) screen | grep -qF -- "$pat" || return 0 ;;
        esac
        sleep 0.03
    done
    case $mode in
        G) echo "FAIL: still on screen after ${limit}s: $pat" ;;
        E) echo "FAIL: waited ${limit}s for /$pat/" ;;
        *) echo "FAIL: waited ${limit}s for: $pat" ;;
    esac
    echo "---- screen ----"; screen; echo "----------------"
    fails=$((fails + 1)); return 1
}
wait_for() { _tmux_wait F "$1" "${2:-}"; }
wait_re() { _tmux_wait E "$1" "${2:-}"; }
wait_gone() { _tmux_wait G "$1" "${2:-}"; }
check() {
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; screen; fails=$((fails + 1)); fi
}
has() { screen | grep -qE -- "$1"; }
count() { screen | grep -cF -- "$1"; }
save() { [[ -n $OUT ]] && mkdir -p "$OUT" && screen > "$OUT/$1.txt"; return 0; }
tmux_retry_if_gone() {   # tmux_retry_if_gone SCRIPT: see the header
    (( fails )) || return 0
    [[ -e $TMUX_RCDIR/.gone ]] || (( TMUX_GONE )) || return 0
    if [[ -n ${GGSCOPE_TMUX_RETRY:-} ]]; then
        echo "FAIL: the tmux server died again on the second run"; return 0
    fi
    echo "note: the tmux server died during this run (above); the failures it caused are"
    echo "      not ggscope's verdict, so the whole test runs once more"
    tmux_cleanup
    GGSCOPE_TMUX_RETRY=1 bash "$1"
    exit $?
}
