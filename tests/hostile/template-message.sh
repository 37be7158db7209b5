# Template text quoted in an error (a token, raise_exception's argument) is
# untrusted: newlines and terminal escape sequences come out escaped, so the
# error stays one line of plain text.
printf '[{"role":"user","content":"Hi"}]' > m.json
printf '{{ raise_exception("first\\nsecond \\x1b]0;pwned\\x07 \\x1b[2J") }}' > raise.jinja
printf "{{ 1 'a\nb' }}" > syntax.jinja
expect 1 'first\\nsecond \\x1b\]0;pwned\\x07 \\x1b\[2J' -- "$bin" template raise.jinja m.json --strict
check "raise: one line on stderr" '[ "$(wc -l < .err)" = 1 ]'
check "raise: no escape byte" '! grep -q $'"'"'\x1b'"'"' .err'
expect 1 "got string 'a\\\\nb'" -- "$bin" template syntax.jinja m.json --strict
check "syntax: one line on stderr" '[ "$(wc -l < .err)" = 1 ]'
