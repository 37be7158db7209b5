# Hostile chat session files (`ggscope chat --load`, the parser /load uses):
# each gives one line and exit 2 before the terminal is touched; none crashes
# or hangs. Files generated here with printf / python3.
j() { printf '{"ggscope_chat":1,"messages":[%b]}' "$1" > "$tmp/$2"; }   # %b: \NNN octal bytes
j '{"role":"user","content":"bad \377 byte"}' utf8.json
expect 2 'utf8.json: messages\[0\]\.content is not valid UTF-8' -- "$bin" chat --load "$tmp/utf8.json"
j '{"role":"user","content":"clear \\u001b[2J screen"}' esc.json
expect 2 'control character \(U\+001B' -- "$bin" chat --load "$tmp/esc.json"
j '{"role":"user","content":"csi \302\233 2J"}' c1.json
expect 2 'control character \(U\+009B' -- "$bin" chat --load "$tmp/c1.json"
j '{"role":"tool","content":"x"}' role.json
expect 2 'messages\[0\]: each message needs a role' -- "$bin" chat --load "$tmp/role.json"
j '{"role":"user","content":{"a":1}}' type.json
expect 2 'messages\[0\]' -- "$bin" chat --load "$tmp/type.json"
printf '{"ggscope_chat":1,"settings":{"temp":1e308},"messages":[]}' > temp.json
expect 2 'settings\.temp is not a valid number' -- "$bin" chat --load "$tmp/temp.json"
printf '{"ggscope_chat":1,"messages":[' > trunc.json
expect 2 'offset [0-9]+: not JSON' -- "$bin" chat --load "$tmp/trunc.json"
python3 -c "import sys; sys.stdout.write('{\"ggscope_chat\":1,\"messages\":' + '['*200000 + ']'*200000 + '}')" > deep.json
expect 2 'not JSON, or nested deeper than' -- "$bin" chat --load "$tmp/deep.json"
python3 -c "import sys; sys.stdout.write('{\"ggscope_chat\":1,\"messages\":[{\"role\":\"user\",\"content\":\"' + 'x'*(100<<20) + '\"}]}')" > big.json
expect 2 'big.json: too large for a session file \([0-9]+ bytes; at most 16 MiB\)' -- "$bin" chat --load "$tmp/big.json"
rm -f big.json
mkfifo fifo
expect 2 'fifo: not a regular file' -- "$bin" chat --load "$tmp/fifo"
expect 2 'zero: not a regular file' -- "$bin" chat --load /dev/zero
: > empty.json
expect 2 'empty.json: offset 0: not JSON' -- "$bin" chat --load "$tmp/empty.json"
printf '[]' > array.json
expect 2 'not a ggscope chat session file' -- "$bin" chat --load "$tmp/array.json"
# a good file passes the parser, then the terminal check says why it stops
printf '{"ggscope_chat":1,"messages":[{"role":"user","content":"tab\\there\\nnew line"}]}' > ok.json
expect 2 'must be a terminal' -- "$bin" chat --load "$tmp/ok.json"
