#!/usr/bin/env python3
"""Random chat-template snippets for bench/jinja_diff.sh.

usage: jinja_gen.py MODE COUNT SEED > CASES.json
  MODE expr: expressions, filters, tests, methods, operators over typed
             variables (many cases raise in both interpreters: that is tested too)
  MODE ws:   statement structures over messages with random whitespace, `-`
             markers and comments (lstrip_blocks / trim_blocks behaviour)
"""
import json
import random
import sys

STRS = ["''", "'a'", "'Hello World'", "' pad  '", "'a,b,,c'", "'ÄÖü ß'", "'x\\ny'", "'The quick brown fox'", '"dq\\"s"', "'12'", "'3.5'", "'  7 '", "'abcabc'"]
NUMS = ["0", "1", "2", "3", "7", "-4", "10", "0.5", "2.0", "-1.25", "0.1", "100", "3.75", "9223372036854775807", "123456789012", "0.000001", "1234567.5"]
VARS = ["messages", "messages[0]", "messages[1].content", "messages[-1]['role']", "s", "n", "f", "l", "d", "e", "z", "u", "d.a", "d['b']", "l[0]", "b", "ns"]
FILTERS = ["trim", "length", "tojson", "upper", "lower", "title", "capitalize", "first", "last", "list", "string", "int", "float",
           "abs", "reverse", "sort", "unique", "items", "join", "join(', ')", "default('D')", "default('D', true)", "tojson(indent=2)",
           "replace('a', 'X')", "indent(2)", "map(attribute='role')", "selectattr('role', 'equalto', 'user')", "dictsort", "int(5)", "sort(reverse=true)",
           "tojson(sort_keys=true)", "safe", "length > 2", "join('|')", "first | string", "rejectattr('role', 'eq', 'user')"]
METHODS = ["upper()", "lower()", "strip()", "lstrip()", "rstrip()", "title()", "capitalize()", "split()", "split(',')", "split(' ', 1)",
           "startswith('H')", "endswith('d')", "replace('l', 'L')", "replace('', '-')", "items()", "keys()", "values()", "get('a')", "get('q', 9)",
           "startswith(('x', 'a'))", "length", "split(none, 1)", "replace('a', 'b', 1)"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "mapping", "iterable", "sequence", "boolean", "true", "false",
         "odd", "even", "lower", "upper", "callable"]
BIN = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or", "**"]

def atom(d):
    r = R.random()
    if r < 0.25: return R.choice(STRS)
    if r < 0.45: return R.choice(NUMS)
    if r < 0.7: return R.choice(VARS)
    if r < 0.76: return R.choice(["none", "true", "false", "True", "None"])
    if r < 0.85 and d > 0: return "[" + ", ".join(expr(d - 1) for _ in range(R.randint(0, 3))) + "]"
    if r < 0.9 and d > 0: return "{" + ", ".join("%s: %s" % (R.choice(["'k'", "'a'", "'z'"]), expr(d - 1)) for _ in range(R.randint(0, 2))) + "}"
    return R.choice(VARS)

def expr(d=3):
    if d <= 0: return atom(0)
    r = R.random()
    if r < 0.2: return atom(d)
    if r < 0.45: return "%s %s %s" % (expr(d - 1), R.choice(BIN), expr(d - 1))
    if r < 0.6: return "%s | %s" % (post(d - 1), R.choice(FILTERS))
    if r < 0.7: return "%s.%s" % (R.choice(["s", "e", "d", "messages[0].content", "'a b c'", "(s ~ 'x')", "n", "l"]), R.choice(METHODS))
    if r < 0.77: return "%s is %s%s" % (post(d - 1), R.choice(["", "not "]), R.choice(TESTS))
    if r < 0.84: return "(%s if %s else %s)" % (expr(d - 1), expr(d - 1), expr(d - 1))
    if r < 0.9: return "not %s" % post(d - 1)
    if r < 0.94: return "%s[%s]" % (post(d - 1), R.choice(["0", "-1", "1:", ":2", "::-1", "'a'", "1:3", "::2", "-2:"]))
    if r < 0.97: return "-%s" % post(d - 1)
    return "(%s)" % expr(d - 1)

def post(d):
    return atom(d) if R.random() < 0.6 else "(%s)" % expr(d)

def stmt():
    r = R.random()
    if r < 0.4: return "{{ %s }}" % expr()
    if r < 0.55: return "{%% for x in %s %%}[{{ loop.index }}{{ x }}{%% if loop.last %%}L{%% endif %%}]{%% else %%}E{%% endfor %%}" % post(2)
    if r < 0.7: return "{%% if %s %%}T{%% elif %s %%}M{%% else %%}F{%% endif %%}" % (expr(2), expr(2))
    if r < 0.8: return "{%% set v = %s %%}<{{ v }}>" % expr()
    if r < 0.9: return "{%% for k, v in %s | items %%}{{ k }}={{ v }};{%% endfor %%}" % R.choice(["d", "{'x': 1, 'y': [2]}", "messages[0]"])
    return "{%% macro m(a, b=%s) %%}({{ a }}|{{ b }}){%% endmacro %%}{{ m(%s) }}{{ m(%s, b=%s) }}" % (expr(1), expr(1), expr(1), expr(1))

VARS_EXPR = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello, World"},
                          {"role": "assistant", "content": " Hi! "}],
             "s": "Hello, World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": [1, 2]}, "e": "", "z": 0,
             "b": True, "add_generation_prompt": True}


def expr_case():
    ws = R.choice(["", "\n", "  ", " \n  "])
    t = ws.join(stmt() for _ in range(R.randint(1, 3)))
    if R.random() < 0.2:
        t = t.replace("{%", "{%-").replace("}}", "-}}")
    if R.random() < 0.2:
        t = "{% set ns = namespace(c=0) %}" + t + "{% set ns.c = ns.c + 1 %}{{ ns.c }}"
    return {"template": t, "vars": VARS_EXPR}


def ws():
    return R.choice(["", "", " ", "\n", "\n    ", "  \n", "\n\n", "\t", " \n  \n", "\r\n"])
def o(kind):  # open tag with optional '-'
    return kind + R.choice(["", "", "-"]) + R.choice([" ", "", "  "])
def c(kind):
    return R.choice([" ", "", "  "]) + R.choice(["", "", "-"]) + kind
def S(body): return o("{%") + body + c("%}")
def E(body): return o("{{") + body + c("}}")
def C(body): return "{#" + R.choice(["", "-"]) + body + R.choice(["", "-"]) + "#}"
EXPRS = ["m.role", "m.content", "m.content | trim", "loop.index", "loop.index0 ~ '/' ~ loop.length", "m.content | length",
         "'<|' + m.role + '|>'", "m.content.strip()", "ns.n", "(m.content | tojson)", "m.role | upper", "m.content.split(' ')[0]",
         "loop.first", "loop.last", "loop.revindex", "bos_token", "eos_token", "m.content[:5]", "m.get('role')", "m['content'].replace(' ', '_')"]
TOP = ["bos_token", "eos_token", "messages | length", "ns.n", "messages[0].role", "messages | map(attribute='role') | join(',')",
       "add_generation_prompt", "(messages | selectattr('role', 'equalto', 'user') | list | length)", "messages[-1].content | trim"]
def text():
    return R.choice(["", "x", "<start>", " text ", "A\nB", "  indented", "\n", "|", "end"])
def block(d):
    parts = []
    for _ in range(R.randint(1, 4)):
        r = R.random()
        if r < 0.3: parts.append(text())
        elif r < 0.5: parts.append(E(R.choice(EXPRS)))
        elif r < 0.6 and d > 0: parts.append(S("if m.role == '%s'" % R.choice(["user", "assistant", "system"])) + ws() + block(d - 1) + ws() + S(R.choice(["elif loop.first", "else"])) + ws() + block(d - 1) + ws() + S("endif"))
        elif r < 0.7: parts.append(S("set ns.n = ns.n + 1"))
        elif r < 0.8: parts.append(C(" note "))
        elif r < 0.9 and d > 0: parts.append(S("for w in m.content.split(' ') if w") + E("w") + ws() + S("if not loop.last") + "," + S("endif") + S("endfor"))
        else: parts.append(S("set t = m.role ~ ':'") + E("t"))
        parts.append(ws())
    return "".join(parts)
def template():
    t = S("set ns = namespace(n=0)") + ws()
    if R.random() < 0.5: t += C(" header ") + ws()
    t += E(R.choice(TOP)) + ws()
    t += S("for m in messages" + R.choice(["", " if m.role != 'system'"])) + ws() + block(2) + ws() + S(R.choice(["else", "endfor"]))
    if t.endswith("else" + c("%}")) or "else" in t[-12:]:
        t += "none" + S("endfor")
    t += ws() + S("if add_generation_prompt") + ws() + R.choice(["<gen>", E("'<|assistant|>\\n'")]) + ws() + S("endif") + ws()
    t += E(R.choice(TOP)) + R.choice(["", "\n", "\n\n", "  "])
    if R.random() < 0.2: t = "  " + t.replace("{%", "\n  {%")
    return t
VARS_WS = {"messages": [{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hello there, World"},
                        {"role": "assistant", "content": "Hi!\n\nHow can I help?"},
                        {"role": "user", "content": "ünï 😀 code"}],
           "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": True}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("expr", "ws"):
        sys.exit(__doc__)
    R = random.Random(int(sys.argv[3]))
    make = expr_case if sys.argv[1] == "expr" else (lambda: {"template": template(), "vars": VARS_WS})
    json.dump([make() for _ in range(int(sys.argv[2]))], sys.stdout)
