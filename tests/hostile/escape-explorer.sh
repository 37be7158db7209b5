# The explorer's panes show names, keys and strings from the file escaped and
# never send the file's raw control bytes, invalid bytes, C1 controls or
# bidi overrides to the terminal: the screen (tmux capture-pane) shows the
# escaped text and the raw terminal stream (tmux pipe-pane) lacks the bytes.
command -v tmux >/dev/null 2>&1 || skip "tmux is not installed"
python3 "$here/escape-gguf.py" e.gguf
sock="ggscope-escape-$$"
T() { tmux -L "$sock" -f /dev/null "$@"; }
trap 'T kill-server >/dev/null 2>&1' EXIT
export XDG_CACHE_HOME=$tmp/cache
# a "keeper" session holds the server up: killing the last session ends the
# server, and a session started while it shuts down dies with it ("server
# exited unexpectedly"), which once failed CI
T new-session -d -s keeper -x 20 -y 5 "sleep 3600"
T new-session -d -s m -x 200 -y 50 "sleep 0.5; LANG=C.UTF-8 LC_ALL=C.UTF-8 $bin $tmp/e.gguf; sleep 600"
T pipe-pane -t m -o "cat >>$tmp/raw.log"
shows() {   # shows TEXT: poll the screen for a fixed string (10 s)
    local t0=$SECONDS
    while (( SECONDS - t0 < 10 )); do
        T capture-pane -p -t m | grep -qF -- "$1" && return 0
        sleep 0.1
    done
    T capture-pane -p -t m | head -12 >&2
    return 1
}
# (keys are grouped by dotted prefix: "evil" holds "key\x1b..."; long text is cut with "…")
check "the metadata pane shows the escaped key" 'shows "key\x1b[2J\x07mid"'
check "the metadata pane shows the escaped value" 'shows "value\x1b[2J\x07\x00mid"'
check "the metadata pane shows an escaped string" 'shows "evil\x1b[2J\x07\x00mid\xff"'
check "the title line shows the architecture escaped" 'shows "ll\x1b[2Jama\u202e"'
check "the tensor pane shows the escaped name" 'shows "ffn_up\x1b[2J\x07\xff\u202e"'
# the detail pane of the selected tensor, and the hex view
T send-keys -t m Tab; sleep 0.3; T send-keys -t m Down; sleep 0.3; T send-keys -t m Enter; sleep 0.5
check "the detail pane shows an escaped name" 'shows "attn_q\x1b[2J\x07mid\xff\u202e\u0085" || shows "ffn_up\x1b[2J\x07\xff\u202e"'
# a search jumps to the key; Enter opens its value in the viewer
T send-keys -t m '/' ; sleep 0.3; T send-keys -t m 'evil.key' Enter; sleep 1
T send-keys -t m Enter
check "the viewer's title shows the escaped key" 'shows "─ evil.key\x1b[2J\x07mid\xff\u202e\u0085end ·"'
check "the viewer shows the escaped value" 'shows "│value\x1b[2J\x07\x00mid\xff\u202e\u0085end "'
T send-keys -t m q; sleep 0.3; T send-keys -t m q; sleep 0.5
T capture-pane -p -e -t m >screen.txt
check "raw stream received data" '[ -s raw.log ]'
check "no raw BEL, 0xff, RLO or NEL in the terminal stream" \
    '! LC_ALL=C grep -qaP "\x07|\xff|\xe2\x80\xae|\xc2\x85" raw.log'
check "no raw ESC[2J right after a name" '! LC_ALL=C grep -qaP "(attn_q|ffn_up|evil\.key|value)\x1b\[2J" raw.log'
# the quantization error page (table, heatmap roles, status line)
T kill-session -t m
T new-session -d -s m -x 200 -y 50 "sleep 0.5; LANG=C.UTF-8 LC_ALL=C.UTF-8 $bin qerr $tmp/e.gguf --types q8_0 --tui; sleep 600"
T pipe-pane -t m -o "cat >>$tmp/raw2.log"
check "the qerr page shows the escaped name" 'shows "blk.1.ffn_up\x1b[2J\x07\xff\u202e"'
check "the qerr page shows the escaped name" 'shows "blk.0.attn_q\x1b[2J\x07mid"'
# select each row: the histogram pane's title and the status line name it
T send-keys -t m Down; sleep 0.5
check "the histogram title shows a name escaped (row 2)" 'shows "Histograms  blk.1.ffn_up\x1b[2J\x07\xff\u202e" || shows "Histograms  blk.0.attn_q\x1b[2J\x07mid"'
T send-keys -t m Down; sleep 0.5
check "the histogram title shows a name escaped (row 3)" 'shows "Histograms  blk.1.ffn_up\x1b[2J\x07\xff\u202e" || shows "Histograms  blk.0.attn_q\x1b[2J\x07mid"'
T send-keys -t m q; sleep 0.5
check "qerr page: raw stream received data" '[ -s raw2.log ]'
check "qerr page: no raw BEL, 0xff, RLO or NEL in the terminal stream" \
    '! LC_ALL=C grep -qaP "\x07|\xff|\xe2\x80\xae|\xc2\x85" raw2.log'
