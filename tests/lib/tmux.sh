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
SOCK=${SOCK:-ggscope-e2e-$$}
OUT=${OUT:-}
WAIT_LIMIT=${WAIT_LIMIT:-15}
fails=${fails:-0}
S=${S:-main}
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
tmux_cleanup() { T kill-server >/dev/null 2>&1; }
screen() { T capture-pane -p -t "$S"; }
keys() { T send-keys -t "$S" "$@"; }
start() {
    S=$1; local w=${2%x*} h=${2#*x}; shift 2
    T new-session -d -s "$S" -x "$w" -y "$h" "$BIN $*; echo EXITED \$?; sleep 600"
}
start_env() {
    S=$1; local w=${2%x*} h=${2#*x} env=$3; shift 3
    T new-session -d -s "$S" -x "$w" -y "$h" "env $env $BIN $*; echo EXITED \$?; sleep 600"
}
_tmux_wait() {   # _tmux_wait MODE PATTERN LIMIT: MODE F (shows text), E (matches), G (text gone)
    local mode=$1 pat=$2 limit=${3:-$WAIT_LIMIT} t0=$SECONDS
    while (( SECONDS - t0 < limit )); do
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
