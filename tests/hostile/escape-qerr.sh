# qerr's table, CSV and JSON show tensor names (and the roles cut from them)
# escaped; the JSON is valid and the CSV quotes a field with a comma or quote.
python3 "$here/escape-gguf.py" e.gguf
"$bin" qerr e.gguf --types q8_0 >q.out 2>q.err; rc=$?
check "qerr exits 0" '[ "$rc" = 0 ]'
check "qerr table is clean" 'python3 "$here/escape-gguf.py" --clean q.out'
check "qerr table shows the escaped name" 'grep -qF -- "blk.1.ffn_up\x1b[2J\x07\xff\u202e" q.out'
check "qerr table shows the escaped role" 'grep -qF -- "ffn_up\x1b[2J\x07\xff\u202e" q.out'
"$bin" qerr e.gguf --types q8_0 --csv >c.out 2>c.err
check "qerr --csv is clean" 'python3 "$here/escape-gguf.py" --clean c.out'
check "qerr --csv has the escaped name" 'grep -qF -- "blk.1.ffn_up\x1b[2J\x07\xff\u202e,q8_0" c.out'
check "qerr --csv quotes a name with a comma and a quote" "grep -qF -- '\"blk.2.ffn_down,\"\"x\"\"\",q8_0' c.out"
"$bin" qerr e.gguf --types q8_0 --json >j.out 2>j.err
check "qerr --json raw output is clean" 'python3 "$here/escape-gguf.py" --clean j.out'
check "qerr --json is valid and holds the names" \
    'python3 -c "import json,sys; d=json.loads(open(sys.argv[1],\"rb\").read().decode()); n=[r[\"name\"] for r in d]; assert \"blk.1.ffn_up\x1b[2J\x07\ufffd\u202e\" in n and \"blk.0.attn_q\x1b[2J\x07mid\ufffd\u202e\u0085\" in n, n" j.out'
