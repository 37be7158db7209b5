# A chat template is untrusted: one that doubles a string 22 times, then
# scans it 2000 x 2000 times, stops with "template too costly" (its work
# limit) in well under the runner's 60 s, on one line; so do the memory,
# recursion and range() bounds. --strict: no fallback to a built-in format.
printf '[{"role":"user","content":"Hi"}]' > m.json
t() { printf '%s' "$2" > "$1.jinja"; }
t scan "{% set ns = namespace(s='x') %}{% for i in range(22) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{% for i in range(2000) %}{% for j in range(2000) %}{% if 'y' in ns.s %}{% endif %}{% endfor %}{% endfor %}"
t memory "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
t recursion "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
t fanout "{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}"
t range "{% for i in range(9223372036854775807) %}{% endfor %}"
start=$SECONDS
expect 1 'scan.jinja: .*template too costly: more than [0-9]+ bytes of work' -- "$bin" template scan.jinja m.json --strict
check "scan: one line on stderr" '[ "$(wc -l < .err)" = 1 ]'
expect 1 'template too costly: more than [0-9]+ MiB of memory' -- "$bin" template memory.jinja m.json --strict
check "memory: one line on stderr" '[ "$(wc -l < .err)" = 1 ]'
expect 1 'template too costly: nested deeper than 200 levels' -- "$bin" template recursion.jinja m.json --strict
expect 1 'template too costly' -- "$bin" template fanout.jinja m.json --strict
expect 1 'range\(\): too many items \(9223372036854775807; at most 1000000\)' -- "$bin" template range.jinja m.json --strict
check "range: no internal type name" '! grep -q "Value" .err'
check "all five within 30 s" '[ $((SECONDS - start)) -lt 30 ]'
# without --strict the built-in format renders instead, and stderr says why
expect 0 'template too costly' -- "$bin" template scan.jinja m.json
check "fallback: ChatML rendered" 'grep -q "<|im_start|>user" .out'
