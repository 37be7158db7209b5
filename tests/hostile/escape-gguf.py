#!/usr/bin/env python3
"""Write a small GGUF v3 file whose names, keys and strings carry terminal
control sequences, a NUL in the middle, an invalid byte, a C1 control and a
bidi override (a helper of the escape-*.sh hostile cases, not a case itself).

usage: escape-gguf.py OUT.gguf [--bad-model]  write the file (--bad-model:
                                    an unsupported, hostile tokenizer model)
       escape-gguf.py --clean FILE  exit 0 when FILE is valid UTF-8 without
                                    control characters (but newline and tab), C1
                                    controls or bidi controls; else say where
"""
import struct
import sys

EVIL = b"\x1b[2J\x07\x00mid\xff\xe2\x80\xae\xc2\x85end"   # ESC[2J, BEL, NUL, 0xff, RLO, NEL
# Keys and tensor names may not hold a NUL (the reader refuses them: they could
# not be looked up), so names carry everything else.
EVIL_NAME = EVIL.replace(b"\x00", b"")


def gstr(b):
    return struct.pack("<Q", len(b)) + b


def kv_str(key, val):
    return gstr(key) + struct.pack("<I", 8) + gstr(val)


def kv_arr(key, etype, items):
    out = gstr(key) + struct.pack("<IIQ", 9, etype, len(items))
    for it in items:
        if etype == 8:
            out += gstr(it)
        elif etype == 6:
            out += struct.pack("<f", it)
        elif etype == 5:
            out += struct.pack("<i", it)
    return out


def clean(path):
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        print("%s: invalid UTF-8 at byte %d" % (path, e.start))
        return 1
    bad = set(range(0x20)) - {0x09, 0x0A} | {0x7F} | set(range(0x80, 0xA0)) | \
        {0x061C, 0x200E, 0x200F, 0x2028, 0x2029} | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))
    for i, ch in enumerate(text):
        if ord(ch) in bad:
            print("%s: raw U+%04X at character %d" % (path, ord(ch), i))
            return 1
    return 0


if sys.argv[1] == "--clean":
    sys.exit(clean(sys.argv[2]))

tokens = [b"<unk>", b"<s" + EVIL + b">", b"</s>", b"\xe2\x96\x81a", b"a", b"\xe4\xb8\xad"]
kvs = [
    kv_str(b"general.architecture", b"ll\x1b[2Jama\xe2\x80\xae"),
    kv_str(b"general.name", b"evil" + EVIL),
    kv_str(b"evil.key" + EVIL_NAME, b"value" + EVIL),
    kv_str(b"tokenizer.ggml.model", b"ll\x1b[2Jama\xe2\x80\xae" if "--bad-model" in sys.argv else b"llama"),
    kv_arr(b"tokenizer.ggml.tokens", 8, tokens),
    kv_arr(b"tokenizer.ggml.scores", 6, [0.0, 0.0, 0.0, -1.0, -2.0, -3.0]),
    kv_arr(b"tokenizer.ggml.token_type", 5, [2, 3, 3, 1, 1, 1]),
    kv_arr(b"evil.array", 8, [b"ok", EVIL]),
    kv_str(b"tokenizer.chat_template", b"{{ messages | no_such\x1b[2J\xe2\x80\xae }}"),
]
# Tensors: F32, 256 x 2 (q4_K re-quantizable). The first name has an ESC
# sequence, BEL, an invalid byte, RLO and NEL (reachable only through the
# file); the second no NEL (dump can name it on the command line); the third
# has CSV's comma and quote.
names = [b"blk.0.attn_q" + EVIL_NAME[:-3], b"blk.1.ffn_up\x1b[2J\x07\xff\xe2\x80\xae", b'blk.2.ffn_down,"x"']
ne = (256, 2)
nbytes = ne[0] * ne[1] * 4
tinfo = b""
for i, nm in enumerate(names):
    tinfo += gstr(nm) + struct.pack("<IQQIQ", 2, ne[0], ne[1], 0, i * nbytes)
head = b"GGUF" + struct.pack("<IQQ", 3, len(names), len(kvs)) + b"".join(kvs) + tinfo
head += b"\0" * ((-len(head)) % 32)
data = b""
for i in range(len(names)):
    data += b"".join(struct.pack("<f", ((k * 7 + i) % 23) / 7.0 - 1.5) for k in range(ne[0] * ne[1]))
with open(sys.argv[1], "wb") as f:
    f.write(head + data)
