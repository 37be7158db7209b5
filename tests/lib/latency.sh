# Key latency through a real terminal, for the chat's end-to-end tests. Source
# it after tests/lib/tmux.sh (it uses keys and screen).
#   latency CHARS   type each character, time until the input box shows it
#                   ("› TYPED"); prints "MEDIAN MAX" in ms, and the figures
#                   on stderr ("info: key press -> echo: ...")
latency() {
    local typed="" lat=() ch t0
    for ch in $(echo "$1" | grep -o .); do
        typed+=$ch; t0=$(date +%s%N); keys "$ch"
        while ! screen | grep -qF "› $typed"; do (( ($(date +%s%N) - t0) > 3000000000 )) && break; done
        lat+=($(( ($(date +%s%N) - t0) / 1000000 )))
    done
    echo "info: key press -> echo: ${lat[*]} ms" >&2
    echo "$(printf '%s\n' "${lat[@]}" | sort -n | sed -n "$(( (${#lat[@]} + 1) / 2 ))p") $(printf '%s\n' "${lat[@]}" | sort -n | tail -1)"
}
