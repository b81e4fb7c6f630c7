#!/bin/sh
# t-dlopen.sh - libcurl and libpq are optional libraries loaded on first
# use: the executable records both in ELF .note.dlopen notes (FreeDesktop
# "ELF dlopen metadata": owner FDO, type 0x407c0c0a, a JSON payload), links
# neither, and check, list and dockerfile never load them; prewarm loads
# libcurl (and not libpq) before it even reaches an engine.
set -u
. "$srcdir/tests/tap.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

command -v readelf >/dev/null || skip_all "no readelf (apt-get install binutils)"
command -v python3 >/dev/null || skip_all "no python3 to read the notes"

n=$(readelf -n "$S" | grep -c '^ *FDO .*0x407c0c0a')
is "$n" 3 "readelf -n: three FDO notes of type 0x407c0c0a"
# The notes' payloads, read from the section as the spec lays them out.
objcopy -O binary --only-section=.note.dlopen "$S" "$T/notes" 2>/dev/null
notes=$(python3 - "$T/notes" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
off, out = 0, []
while off + 12 <= len(data):
    namesz, descsz, ntype = struct.unpack_from("<III", data, off)
    off += 12
    name = data[off:off + namesz].rstrip(b"\0").decode()
    off += (namesz + 3) & ~3
    desc = data[off:off + descsz].rstrip(b"\0").decode()
    off += (descsz + 3) & ~3
    assert name == "FDO" and ntype == 0x407c0c0a, (name, hex(ntype))
    for e in json.loads(desc):
        assert set(e) >= {"feature", "soname", "priority"}, e
        out.append("%s:%s:%s" % (e["feature"], e["priority"], ",".join(e["soname"])))
print(" ".join(sorted(out)))
PY
)
is "$notes" "audit:recommended:libpq.so.5 engine:recommended:libcurl.so.4 serve:recommended:libmicrohttpd.so.12" \
	"the notes are valid JSON naming libcurl.so.4 (engine), libpq.so.5 (audit) and libmicrohttpd.so.12 (serve)"
readelf -d "$S" | grep NEEDED | grep -q 'libcurl\|libpq\|libmicrohttpd'
ok $((!$?)) "none of libcurl, libpq, libmicrohttpd is linked (DT_NEEDED)"

cat >"$T/cat.json" <<'JSON'
[{"alias": "dl-one", "description": "one", "base_image": "debian:bookworm-slim",
  "setup_commands": ["echo hello"]}]
JSON
# loaded CMD...: the libraries the dynamic loader opened for CMD.
loaded() {
	LD_DEBUG=libs LD_DEBUG_OUTPUT="$T/ld" "$S" -C "$T/cat.json" "$@" >/dev/null 2>&1
	cat "$T"/ld.* 2>/dev/null | grep -o 'lib\(curl\|pq\|microhttpd\)\.so[.0-9]*' | sort -u | tr '\n' ' '
	rm -f "$T"/ld.*
}
# The probe itself must work: LD_DEBUG lists what a run loads.
LD_DEBUG=libs LD_DEBUG_OUTPUT="$T/ld" "$S" -C "$T/cat.json" check >/dev/null 2>&1
grep -q 'libjansson' "$T"/ld.* 2>/dev/null
ok $? "LD_DEBUG=libs records the libraries a run loads (the probe works)"
rm -f "$T"/ld.*
for cmd in check list "dockerfile dl-one"; do
	# shellcheck disable=SC2086
	is "$(loaded $cmd)" "" "sbxcat $cmd loads none of libcurl, libpq, libmicrohttpd"
done
got=$(DOCKER_HOST=unix://$T/no.sock loaded prewarm)
is "$got" "libcurl.so.4 " "sbxcat prewarm loads libcurl, not libpq"
done_testing
