#!/usr/bin/env python3
r"""Small GGUF v3 files for the write-* hostile cases (not a case itself).

  write-mkgguf.py f32 OUT ROWS COLS [UNKNOWN_TYPE_ID [NAME]]
      one F32 tensor blk.0.attn_q.weight (COLS x ROWS, finite values); with
      UNKNOWN_TYPE_ID a second tensor NAME (blk.0.mystery.weight) of that type
      id (NAME may hold escapes such as \n)
  write-mkgguf.py nulkey OUT
      one F32 tensor and the metadata keys "a.x\0y" and "a.x\0z" (NUL bytes)
  write-mkgguf.py nulname OUT
      one F32 tensor "blk.0.attn_q.weight\0x"
  write-mkgguf.py split PREFIX
      PREFIX-00001-of-00002.gguf and PREFIX-00002-of-00002.gguf, one F32
      tensor each, with split.no / split.count / split.tensors.count
  write-mkgguf.py strip IN OUT KEY_PREFIX
      IN (v3, little-endian) without the metadata keys that start with KEY_PREFIX
"""
import struct
import sys

ALIGN = 32


def gstr(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def kv_u32(k, v):
    return gstr(k) + struct.pack('<II', 4, v)


def kv_u16(k, v):
    return gstr(k) + struct.pack('<IH', 2, v)


def kv_i32(k, v):
    return gstr(k) + struct.pack('<Ii', 5, v)


def kv_str(k, v):
    return gstr(k) + struct.pack('<I', 8) + gstr(v)


def pad(n):
    return b'\0' * ((ALIGN - n % ALIGN) % ALIGN)


def write(path, kvs, tensors):
    """tensors: (name, type_id, ne list, data bytes or None for an unknown type)"""
    head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)) + b''.join(kvs)
    off, data = 0, b''
    for name, ty, ne, d in tensors:
        head += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', x) for x in ne)
        head += struct.pack('<IQ', ty, off)
        if d is not None:
            data += d + pad(len(d))
            off = len(data)
    with open(path, 'wb') as f:
        f.write(head + pad(len(head)) + data)


def floats(n):
    # a repeating pattern of finite values (not all zero: the quantizers do real work)
    pat = struct.pack('<4096f', *[((i * 7919) % 2001 - 1000) / 1000.0 for i in range(4096)])
    reps, rest = divmod(n, 4096)
    return pat * reps + pat[:rest * 4]


def main():
    cmd = sys.argv[1]
    if cmd == 'f32':
        out, rows, cols = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        ts = [('blk.0.attn_q.weight', 0, [cols, rows], floats(rows * cols))]
        if len(sys.argv) > 5:
            name = sys.argv[6].encode().decode('unicode_escape') if len(sys.argv) > 6 else 'blk.0.mystery.weight'
            ts.append((name, int(sys.argv[5]), [32, 2], None))
        write(out, [kv_str('general.architecture', 'llama')], ts)
    elif cmd == 'nulkey':
        kvs = [kv_str('general.architecture', 'llama'), kv_u32('a.x\0y', 1), kv_u32('a.x\0z', 2)]
        write(sys.argv[2], kvs, [('blk.0.attn_q.weight', 0, [256, 8], floats(2048))])
    elif cmd == 'nulname':
        write(sys.argv[2], [kv_str('general.architecture', 'llama')],
              [('blk.0.attn_q.weight\0x', 0, [256, 8], floats(2048))])
    elif cmd == 'split':
        p = sys.argv[2]
        for k in (1, 2):
            kvs = [kv_u16('split.no', k - 1), kv_u16('split.count', 2), kv_i32('split.tensors.count', 2)]
            if k == 1:
                kvs.insert(0, kv_str('general.architecture', 'llama'))
            write('%s-%05d-of-00002.gguf' % (p, k), kvs,
                  [('blk.%d.attn_q.weight' % (k - 1), 0, [64, 4], floats(256))])
    elif cmd == 'strip':
        src, out, prefix = sys.argv[2], sys.argv[3], sys.argv[4]
        b = open(src, 'rb').read()
        assert b[:4] == b'GGUF' and struct.unpack_from('<I', b, 4)[0] == 3
        nt, nkv = struct.unpack_from('<QQ', b, 8)
        pos = 24
        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

        def skip_val(pos, t):
            if t in sizes:
                return pos + sizes[t]
            if t == 8:
                return pos + 8 + struct.unpack_from('<Q', b, pos)[0]
            et, n = struct.unpack_from('<IQ', b, pos)
            pos += 12
            if et in sizes:
                return pos + sizes[et] * n
            for _ in range(n):
                pos = skip_val(pos, et)
            return pos
        kept = []
        for _ in range(nkv):
            start = pos
            kl = struct.unpack_from('<Q', b, pos)[0]
            key = b[pos + 8:pos + 8 + kl].decode()
            t = struct.unpack_from('<I', b, pos + 8 + kl)[0]
            pos = skip_val(pos + 12 + kl, t)
            if not key.startswith(prefix):
                kept.append(b[start:pos])
        infos_start = pos
        for _ in range(nt):
            nl = struct.unpack_from('<Q', b, pos)[0]
            nd = struct.unpack_from('<I', b, pos + 8 + nl)[0]
            pos += 8 + nl + 4 + 8 * nd + 4 + 8
        infos = b[infos_start:pos]
        data = b[pos + (ALIGN - pos % ALIGN) % ALIGN:]
        head = b'GGUF' + struct.pack('<IQQ', 3, nt, len(kept)) + b''.join(kept) + infos
        with open(out, 'wb') as f:
            f.write(head + pad(len(head)) + data)
    else:
        sys.exit('unknown command ' + cmd)


main()
