#!/bin/bash
# json.sh - --json of cafs info, list and cache stat (docs/json.md): every
# output parses with python3's json, has the documented keys with the right
# types, agrees with the text output, and hostile file names (control
# characters, quotes, backslashes, bytes that are not UTF-8) come out as
# valid JSON from which the exact name is recovered (NAME_hex). (stats
# --json: stats-metrics.sh.)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
PY=/usr/bin/python3
[ -x $PY ] || skip_all "no /usr/bin/python3"

src=$T/src
mkdir -p "$src/dir"
"$GEN" 300K 7 >"$src/dir/big"
# hostile names, made by python so that every byte is what it says
$PY - "$src" <<'PYEOF'
import os, sys
d = os.fsencode(sys.argv[1])
for name in [b"new\nline", b"tab\there", b'quote"and\\back', b"ctl\x01\x1f\x7f", b"bad\xff\xfeutf8",
             b"caf\xc3\xa9", b"over\xc0\xaflong", b"sur\xed\xa0\x80rogate"]:
    with open(os.path.join(d, name), "wb") as f:
        f.write(name)
os.symlink(b"target\xff\n\"", os.path.join(d, b"link"))
PYEOF
ok "make an archive index of hostile names" "$CAFS" make --store="$T/store" "$T/img.caidx" "$src"

"$CAFS" list --json --store="$T/store" "$T/img.caidx" >"$T/list.json"
ok "list --json: one object per line, every key, exact names recovered" $PY - "$T/list.json" "$src" <<'PYEOF'
import json, os, sys
keys = {"path", "type", "mode", "size", "uid", "gid", "user", "group", "mtime_ns", "target", "device"}
got = {}
for line in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    line.decode("utf-8")  # valid UTF-8, whatever the names
    e = json.loads(line)
    extra = set(e) - keys
    assert keys <= set(e) and extra <= {"path_hex", "target_hex"}, e
    path = bytes.fromhex(e["path_hex"]) if "path_hex" in e else e["path"].encode()
    assert ("path_hex" in e) == (b"\xff" in path or b"\xc0" in path or b"\xed" in path), e
    if "path_hex" in e:
        assert "\ufffd" in e["path"], e
    got[path] = e
want = {b"."}
root = os.fsencode(sys.argv[2])
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        want.add(os.path.relpath(os.path.join(d, n), root))
assert set(got) == want, (set(got) ^ want)
assert got[b"dir/big"]["type"] == "file" and got[b"dir/big"]["size"] == 300 * 1024
assert got[b"dir"]["type"] == "directory" and got[b"dir"]["size"] is None
assert got[b"new\nline"]["path"] == "new\nline"
assert got[b'quote"and\\back']["path"] == 'quote"and\\back'
assert got[b"ctl\x01\x1f\x7f"]["path"] == "ctl\x01\x1f\x7f"
assert got[b"caf\xc3\xa9"]["path"] == "caf\u00e9" and "path_hex" not in got[b"caf\xc3\xa9"]
l = got[b"link"]
assert l["type"] == "symlink" and bytes.fromhex(l["target_hex"]) == b"target\xff\n\"", l
st = os.lstat(os.path.join(root, b"dir/big"))
assert got[b"dir/big"]["mode"] == "%04o" % (st.st_mode & 0o7777)
assert got[b"dir/big"]["mtime_ns"] == st.st_mtime_ns and got[b"dir/big"]["uid"] == st.st_uid
PYEOF
"$CAFS" list --store="$T/store" "$T/img.caidx" >"$T/list.txt"
ok "... as many entries as the text listing" test "$(wc -l <"$T/list.json")" = "$(wc -l <"$T/list.txt")"
ok "mtree has no --json (refused), list has" sh -c "'$CAFS' mtree --json --store='$T/store' '$T/img.caidx' 2>/dev/null; test \$? = 2"

"$CAFS" info --json "$T/img.caidx" >"$T/info.json"
"$CAFS" info "$T/img.caidx" >"$T/info.txt"
ok "info --json: every key, its type, and the text's numbers" $PY - "$T/info.json" "$T/info.txt" <<'PYEOF'
import json, re, sys
i = json.load(open(sys.argv[1]))
t = open(sys.argv[2]).read()
ints = ["chunk_size_min", "chunk_size_avg", "chunk_size_max", "size_bytes", "chunks", "chunk_smallest",
        "chunk_median", "chunk_mean", "chunk_largest"]
assert set(i) == set(ints) | {"kind", "feature_flags", "features", "digest", "stores", "present_chunks",
                              "present_bytes"}, i
assert all(type(i[k]) is int for k in ints), i
assert i["kind"] == "archive_index" and i["digest"] == "sha512-256"
assert int(i["feature_flags"], 16) == int(re.search(r"Feature flags: (0x[0-9a-f]+)", t).group(1), 16)
assert i["features"] and all(type(f) is str for f in i["features"])
assert i["chunks"] == int(re.search(r"Chunks: (\d+)", t).group(1))
assert i["size_bytes"] == int(re.search(r"Size: (\d+)", t).group(1))
assert i["stores"] == [] and i["present_chunks"] is None and i["present_bytes"] is None
PYEOF
"$CAFS" info --json --store="$T/store" "$T/img.caidx" >"$T/info2.json"
ok "info --json --store: the store holds every chunk" $PY -c '
import json, sys
i = json.load(open(sys.argv[1]))
assert i["stores"] == [sys.argv[2]] and i["present_chunks"] == i["chunks"] and i["present_bytes"] == i["size_bytes"], i
' "$T/info2.json" "$T/store"

"$CAFS" cache fill --cache="$T/cache" --store="$T/store" "$T/img.caidx" >/dev/null 2>&1
"$CAFS" cache stat --json --cache="$T/cache" "$T/img.caidx" >"$T/cache.json"
"$CAFS" cache stat --cache="$T/cache" >"$T/cache.txt"
ok "cache stat --json: every key; the cache holds the image" $PY - "$T/cache.json" "$T/cache.txt" "$T/cache" <<'PYEOF'
import json, re, sys
c = json.load(open(sys.argv[1]))
t = open(sys.argv[2]).read()
assert set(c) == {"cache", "chunks", "size_bytes", "disk_bytes", "temporary_files", "sources"}, c
assert c["cache"] == sys.argv[3]
assert c["chunks"] == int(re.search(r"Chunks: (\d+)", t).group(1)) > 0
assert c["size_bytes"] == int(re.search(r"Size: (\d+)", t).group(1))
[s] = c["sources"]
assert set(s) == {"source", "chunks", "chunks_present", "bytes", "bytes_present"}, s
assert s["chunks_present"] == s["chunks"] > 0 and s["bytes_present"] == s["bytes"] > 0, s
PYEOF
"$CAFS" cache stat --json --cache="$T/cache" "$T/img.caidx" "$T/nonexistent.caidx" >"$T/cache2.json" 2>"$T/err"
ok "... a source that cannot be read: null, exit status 1, still valid JSON" sh -c "test $? = 1 &&
	$PY -c 'import json,sys; c = json.load(open(sys.argv[1])); assert c[\"sources\"][1] is None and c[\"sources\"][0]' '$T/cache2.json'"
ok "cache prune has no --json" sh -c "'$CAFS' cache prune --json --max-size=1 --cache='$T/cache' 2>/dev/null; test \$? = 2"
done_testing
