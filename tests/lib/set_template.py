"""set_template.py SRC DST TEMPLATE: the GGUF SRC with its tokenizer.chat_template
replaced by the text of TEMPLATE, written to DST (the header rewritten, then the
same tensor data). Used by the tmux tests for a model whose template is slow."""
import struct, sys
src, dst, tmpl = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
b = open(src, 'rb').read()
assert b[:4] == b'GGUF'
nt, nkv = struct.unpack_from('<QQ', b, 8)
p = 24
SZ = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip_str(p):
    return p + 8 + struct.unpack_from('<Q', b, p)[0]
def skip_val(t, p):
    if t == 8:
        return skip_str(p)
    if t == 9:
        et, n = struct.unpack_from('<IQ', b, p); p += 12
        for _ in range(n):
            p = skip_val(et, p)
        return p
    return p + SZ[t]
out = bytearray(b[:24]); align = 32
for _ in range(nkv):
    k0 = p; p = skip_str(p); key = b[k0 + 8:p].decode()
    t, = struct.unpack_from('<I', b, p); v0 = p + 4; p = skip_val(t, v0)
    if key == 'general.alignment':
        align, = struct.unpack_from('<I', b, v0)
    if key == 'tokenizer.chat_template':
        e = tmpl.encode(); out += b[k0:v0] + struct.pack('<Q', len(e)) + e
    else:
        out += b[k0:p]
t0 = p
for _ in range(nt):
    p = skip_str(p); nd, = struct.unpack_from('<I', b, p); p += 4 + 8 * nd + 4 + 8
out += b[t0:p]
out += b'\0' * ((-len(out)) % align)
out += b[(p + align - 1) // align * align:]
open(dst, 'wb').write(out)
