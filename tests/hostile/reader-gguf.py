#!/usr/bin/env python3
"""Rewrite a little-endian GGUF v2/v3 file for the reader-* hostile cases.

  reader-gguf.py IN OUT [--drop KEY] [--str-arr-len KEY N] [--set-str KEY VALUE]

--drop removes a key; --set-str replaces a key's value with a string;
--str-arr-len cuts a string array to N elements or
pads it with "<padK>" strings. Tensor infos and data are kept byte for byte
(the data section is re-aligned after the new header).
"""
import struct
import sys

FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip(b, p, t):
    if t in FIXED:
        return p + FIXED[t]
    if t == 8:
        (n,) = struct.unpack_from("<Q", b, p)
        return p + 8 + n
    et, n = struct.unpack_from("<IQ", b, p)
    p += 12
    for _ in range(n):
        p = skip(b, p, et)
    return p


def main():
    src, dst = sys.argv[1], sys.argv[2]
    ops = sys.argv[3:]
    b = open(src, "rb").read()
    assert b[:4] == b"GGUF"
    ver, nt, nkv = struct.unpack_from("<IQQ", b, 4)
    assert ver in (2, 3), "v2/v3 little-endian only"
    p = 24
    kvs = []
    align = 32
    for _ in range(nkv):
        (kl,) = struct.unpack_from("<Q", b, p)
        key = b[p + 8:p + 8 + kl].decode()
        start = p
        p += 8 + kl
        (t,) = struct.unpack_from("<I", b, p)
        vstart = p + 4
        p = skip(b, vstart, t)
        if key == "general.alignment":
            (align,) = struct.unpack_from("<I", b, vstart)
        kvs.append([key, t, b[start:p], vstart])
    tstart = p
    for _ in range(nt):
        (nl,) = struct.unpack_from("<Q", b, p)
        p += 8 + nl
        (nd,) = struct.unpack_from("<I", b, p)
        p += 4 + 8 * nd + 4 + 8
    tinfo = b[tstart:p]
    data = b[(p + align - 1) // align * align:] if nt else b""

    i = 0
    while i < len(ops):
        op = ops[i]
        if op == "--drop":
            kvs = [kv for kv in kvs if kv[0] != ops[i + 1]]
            i += 2
        elif op == "--str-arr-len":
            key, n = ops[i + 1], int(ops[i + 2])
            for kv in kvs:
                if kv[0] != key:
                    continue
                et, cnt = struct.unpack_from("<IQ", b, kv[3])
                assert kv[1] == 9 and et == 8, key + " is not a string array"
                q = kv[3] + 12
                items = []
                for _ in range(cnt):
                    (sl,) = struct.unpack_from("<Q", b, q)
                    items.append(b[q + 8:q + 8 + sl])
                    q += 8 + sl
                items = items[:n] + [b"<pad%d>" % k for k in range(n - len(items))]
                kb = key.encode()
                kv[2] = (struct.pack("<Q", len(kb)) + kb + struct.pack("<IIQ", 9, 8, n)
                         + b"".join(struct.pack("<Q", len(s)) + s for s in items))
            i += 3
        elif op == "--set-str":
            key, val = ops[i + 1].encode(), ops[i + 2].encode()
            for kv in kvs:
                if kv[0] == ops[i + 1]:
                    kv[2] = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(val)) + val
            i += 3
        else:
            sys.exit("unknown option " + op)

    out = bytearray(b"GGUF" + struct.pack("<IQQ", ver, nt, len(kvs)))
    for kv in kvs:
        out += kv[2]
    out += tinfo
    if nt:
        out += b"\0" * ((-len(out)) % align)
        out += data
    open(dst, "wb").write(out)


main()
