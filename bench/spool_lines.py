# bench/spool_lines.py - `audit export --format jsonl` lines (stdin) as
# spool lines (stdout), for the benches that flush a spool: each row
# without "seq", then "sum" as src/audit/spool.c's spool_line makes it
# (the SHA-256 hex of the line's bytes before ',"sum":"').
import hashlib
import json
import sys

out = sys.stdout.buffer
for line in sys.stdin.buffer:
    o = json.loads(line)
    o.pop("seq", None)
    body = json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode()[:-1]
    out.write(body + b",\"sum\":\"" + hashlib.sha256(body).hexdigest().encode() + b"\"}\n")
