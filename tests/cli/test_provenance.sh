#!/usr/bin/env bash
# Provenance a third party can check (docs/provenance.md): every source file's name, size and
# SHA-256 (compared with sha256sum's), a hub-cache snapshot's repository and revision, the
# recipe's SHA-256, in the artifact, the report and ninfer-inspect --provenance; a damaged hub
# blob refused; ninfer-verify --against naming the source file that differs (bytes, size, a
# missing file) before it re-derives; --no-source-digests; the --attest statement (in-toto v1:
# subject = the artifact's files with sha256sum's digests, predicate = the provenance), signed
# and checked with ssh-keygen -Y, refused where it would replace an input, the artifact, its
# report or a special file; a scale-out conversion byte for byte the run's, digests included; a
# plan whose recorded digests were changed refused; hostile provenance shown escaped.
# usage: test_provenance.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

rev=0123456789abcdef0123456789abcdef01234567
hub=$work/cache/hub/models--acme--tiny-llama
snap=$hub/snapshots/$rev
mkdir -p "$hub/blobs" "$snap" "$work/plain" "$work/q" "$work/r" "$work/s" "$work/b" "$work/n" "$work/a" "$work/so" "$work/so2" "$work/c"
"$bin/ninfer-gen-checkpoint" "$work/plain/ck" --shards 2 >/dev/null || bad "gen-checkpoint"
echo '{"bos_token_id": 1}' >"$work/plain/ck/generation_config.json"
# the hub's layout: each file a link to ../../blobs/<its sha256>
for f in "$work"/plain/ck/*; do
    h=$(sha256sum "$f" | cut -c1-64)
    cp "$f" "$hub/blobs/$h"
    ln -s "../../blobs/$h" "$snap/$(basename "$f")"
done

# field FILE PYTHON-EXPR: print the expression over the JSON document d of FILE
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# --- quick mode from the snapshot: files, sizes, digests, hub
run 0 "$bin/ninfer-convert" "$snap" -o "$work/q/m.ninfer" --format q4_g64_fp16 --attest "$work/q/m.intoto.json" -j 2
run 0 "$bin/ninfer-inspect" "$work/q/m.ninfer" --provenance --json
cp "$work/out" "$work/prov.json"
python3 - "$work/prov.json" "$work/plain/ck" "$rev" <<'EOF' && ok || bad "provenance of the snapshot"
import hashlib, json, os, sys
d = json.load(open(sys.argv[1])); ck = sys.argv[2]
src = d["sources"]["base"]
assert src["hub"] == {"repo": "acme/tiny-llama", "revision": sys.argv[3]}, src["hub"]
names = [f["path"] for f in src["files"]]
assert names == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                 "model.safetensors.index.json", "config.json", "generation_config.json",
                 "tokenizer.json"], names
for f in src["files"]:
    b = open(os.path.join(ck, f["path"]), "rb").read()
    assert f["bytes"] == len(b) and f["sha256"] == hashlib.sha256(b).hexdigest(), f
assert d["recipe_sha256"] is None and d["converter"].startswith("ninfer-tools "), d
assert d["objects_recorded"] > 0
EOF
for f in model-00001-of-00002.safetensors config.json; do
    contains "$work/q/m.ninfer" "$(sha256sum "$work/plain/ck/$f" | cut -c1-64)" # in the directory itself
done
# the report's provenance is the artifact's (without its per-object records)
python3 - "$work/q/m.ninfer.conversion.json" "$work/prov.json" <<'EOF' && ok || bad "report provenance"
import json, sys
r = json.load(open(sys.argv[1]))["provenance"]; p = json.load(open(sys.argv[2]))
assert r["sources"]["base"]["files"] == p["sources"]["base"]["files"], r
assert r["sources"]["base"]["hub"] == p["sources"]["base"]["hub"]
EOF
run 0 "$bin/ninfer-verify" "$work/q/m.ninfer"
run 0 "$bin/ninfer-inspect" "$work/q/m.ninfer" --provenance
contains "$work/out" "hub           acme/tiny-llama revision $rev"
contains "$work/out" "$(sha256sum "$work/plain/ck/tokenizer.json" | cut -c1-64)              77  tokenizer.json"
contains "$work/out" "recipe        (no SHA-256: recorded as JSON only)"

# --- the statement: in-toto v1, subject = sha256sum of the published files
python3 - "$work/q/m.intoto.json" "$work/prov.json" <<'EOF' && ok || bad "statement shape"
import json, sys
s = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
assert list(s) == ["_type", "subject", "predicateType", "predicate"], list(s)
assert s["_type"] == "https://in-toto.io/Statement/v1"
assert s["predicateType"] == "urn:ninfer-tools:conversion:v1"
assert [x["name"] for x in s["subject"]] == ["m.ninfer"], s["subject"]
pr = s["predicate"]
assert pr["sources"]["base"]["files"] == p["sources"]["base"]["files"]
assert pr["artifact_id"] == p["artifact_id"] and pr["converter"] == p["converter"]
assert "objects" not in pr
EOF
(cd "$work/q" && python3 -c "
import json; s = json.load(open('m.intoto.json'))
print(''.join('%s  %s\n' % (x['digest']['sha256'], x['name']) for x in s['subject']), end='')" | sha256sum -c --quiet) \
    && ok || bad "sha256sum -c of the subject"
# signed and checked with OpenSSH (installed when root, else the signature part is skipped)
if ! command -v ssh-keygen >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq openssh-client >/dev/null 2>&1
fi
if command -v ssh-keygen >/dev/null; then
    ssh-keygen -q -t ed25519 -N '' -C conv@example.com -f "$work/key" >/dev/null
    echo "conv@example.com $(cut -d' ' -f1,2 "$work/key.pub")" >"$work/allowed_signers"
    check ssh-keygen -q -Y sign -f "$work/key" -n ninfer-attestation "$work/q/m.intoto.json"
    check ssh-keygen -q -Y verify -f "$work/allowed_signers" -I conv@example.com -n ninfer-attestation \
        -s "$work/q/m.intoto.json.sig" <"$work/q/m.intoto.json"
    sed 's/"m.ninfer"/"n.ninfer"/' "$work/q/m.intoto.json" >"$work/forged.json"
    if ssh-keygen -q -Y verify -f "$work/allowed_signers" -I conv@example.com -n ninfer-attestation \
        -s "$work/q/m.intoto.json.sig" <"$work/forged.json" >/dev/null 2>&1; then
        bad "a changed statement verified"
    else ok; fi
else
    echo "SKIP signing with ssh-keygen: not installed and not root (apt-get install openssh-client)"
fi

# --- a recipe: its SHA-256; split artifact: every file in the subject
cat >"$work/r.yaml" <<EOF
recipe: 1
sources:
  base: $snap
output:
  name: m
  max_file_bytes: 300000
defaults: {format: q8_g32_fp16}
rules:
  - match: ["*norm*"]
    when: {rank: 1}
    format: fp32
EOF
run 0 "$bin/ninfer-convert" -r "$work/r.yaml" -o "$work/r/m.ninfer" --attest "$work/r/m.intoto.json" \
    --artifact-id 00112233445566778899aabbccddeeff
check test "$(field "$work/r/m.intoto.json" 'd["predicate"]["recipe_sha256"]')" = "$(sha256sum "$work/r.yaml" | cut -c1-64)"
check test "$(field "$work/r/m.intoto.json" 'len(d["subject"])')" -gt 1
(cd "$work/r" && python3 -c "
import json; s = json.load(open('m.intoto.json'))
print(''.join('%s  %s\n' % (x['digest']['sha256'], x['name']) for x in s['subject']), end='')" | sha256sum -c --quiet) \
    && ok || bad "sha256sum -c of a split artifact's subject"
check test "$(field "$work/r/m.intoto.json" '[x["name"] for x in d["subject"]][0]')" = m.ninfer

# --- scale-out: the plan's maker hashes; the artifact is the run's byte for byte
run 0 "$bin/ninfer-convert" -r "$work/r.yaml" -o "$work/so/m.ninfer" --artifact-id 00112233445566778899aabbccddeeff \
    --plan-out "$work/plan.json"
contains "$work/plan.json" "$(sha256sum "$work/plain/ck/config.json" | cut -c1-64)"
run 0 "$bin/ninfer-convert" --plan "$work/plan.json" --task all
run 0 "$bin/ninfer-convert" --plan "$work/plan.json" --assemble
same "$work/r/m.ninfer" "$work/so/m.ninfer"
# a plan whose recorded digest was changed lays out another directory: refused
sed "s|$work/so/m.ninfer|$work/so2/m.ninfer|" "$work/plan.json" \
    | sed "s/$(sha256sum "$work/plain/ck/config.json" | cut -c1-64)/$(printf '%064d' 0)/" >"$work/plan2.json"
run 1 "$bin/ninfer-convert" --plan "$work/plan2.json" --task 0
python3 - "$work/plan.json" "$work/plan3.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p["provenance"]["recipe_sha256"] = "<script>"
json.dump(p, open(sys.argv[2], "w"))
EOF
run 1 "$bin/ninfer-convert" --plan "$work/plan3.json" --task 0
contains "$work/err" "provenance: not"
run 2 "$bin/ninfer-convert" -r "$work/r.yaml" -o "$work/so3/m.ninfer" --plan-out "$work/p4.json" --attest "$work/s.json"

# --- a damaged download: the blob's name is not the file's SHA-256
bhub=$work/cache/hub/models--acme--broken
mkdir -p "$bhub/blobs" "$bhub/snapshots/$rev"
for f in "$work"/plain/ck/*; do
    h=$(sha256sum "$f" | cut -c1-64)
    cp "$f" "$bhub/blobs/$h"
    ln -s "../../blobs/$h" "$bhub/snapshots/$rev/$(basename "$f")"
done
cfg=$(sha256sum "$work/plain/ck/config.json" | cut -c1-64)
printf ' ' >>"$bhub/blobs/$cfg"
run 1 "$bin/ninfer-convert" "$bhub/snapshots/$rev" -o "$work/b/m.ninfer" --format q8_g32_fp16
contains "$work/err" "config.json: its SHA-256 is"
contains "$work/err" "hub cache stores it as blob $cfg"
check test ! -e "$work/b/m.ninfer"
run 0 "$bin/ninfer-convert" "$bhub/snapshots/$rev" -o "$work/b/m.ninfer" --format q8_g32_fp16 --no-source-digests

# --- verify --against: the files first
run 0 "$bin/ninfer-verify" "$work/q/m.ninfer" --against "$work/plain/ck"
contains "$work/out" "6 source files with the recorded SHA-256; "
run 0 "$bin/ninfer-verify" "$work/q/m.ninfer" --against "$work/plain/ck" --json
check test "$(field "$work/out" 'd["against"]["source_digests"], d["against"]["source_files_checked"]')" = "equal 6"
cp -r "$work/plain/ck" "$work/c1"
python3 - "$work/c1/model-00002-of-00002.safetensors" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-1, 2); b = f.read(1); f.seek(-1, 2); f.write(bytes([b[0] ^ 1]))
EOF
run 1 "$bin/ninfer-verify" "$work/q/m.ninfer" --against "$work/c1"
contains "$work/out" "against: source file model-00002-of-00002.safetensors differs from the one the artifact was made from: SHA-256 $(sha256sum "$work/c1/model-00002-of-00002.safetensors" | cut -c1-64), recorded $(sha256sum "$work/plain/ck/model-00002-of-00002.safetensors" | cut -c1-64)"
run 1 "$bin/ninfer-verify" "$work/q/m.ninfer" --against "$work/c1" --json
check test "$(field "$work/out" 'd["against"]["source_digests"]')" = differ
cp -r "$work/plain/ck" "$work/c2"
rm "$work/c2/generation_config.json"
echo ' ' >>"$work/c2/tokenizer.json"
echo '{}' >"$work/c2/chat_template.json"
run 1 "$bin/ninfer-verify" "$work/q/m.ninfer" --against "$work/c2" --json
python3 - "$work/out" <<'EOF' && ok || bad "verify: missing, resized and unrecorded files"
import json, sys
d = json.load(open(sys.argv[1])); a = d["against"]
m = [p["message"] for p in d["problems"]]
assert "source file generation_config.json: the artifact was made from it, %s has none" % a["source"] in m, m
assert any(x.startswith("source file tokenizer.json: 79 bytes, the artifact was made from one of 77 bytes") for x in m), m
assert a["source_digests"] == "differ" and a["source_files_checked"] == 4 and a["source_files_unrecorded"] == 1, a
EOF
# sizes only
run 0 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/n/m.ninfer" --format q8_g32_fp16 --no-source-digests
lacks "$work/n/m.ninfer" "sha256"
run 0 "$bin/ninfer-verify" "$work/n/m.ninfer" --against "$work/plain/ck"
contains "$work/out" "no source SHA-256 recorded"
run 1 "$bin/ninfer-verify" "$work/n/m.ninfer" --against "$work/c2"
contains "$work/out" "source file tokenizer.json: 79 bytes"

# --- --attest refusals: nothing written, the old set kept
run 2 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/plain/ck/config.json"
contains "$work/err" "refusing to overwrite an input"
run 2 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/a/m.ninfer"
run 2 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/a/m.ninfer.conversion.json"
mkfifo "$work/a/fifo.json"
run 2 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/a/fifo.json"
contains "$work/err" "not a regular file"
echo old >"$work/a/s.json"
run 3 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/a/s.json"
contains "$work/err" "exists (use --force to replace it)"
check test ! -e "$work/a/m.ninfer"
run 3 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/nodir/s.json"
check test ! -e "$work/a/m.ninfer"
# the run's own names, however spelled (./, a link to the directory), with --force too
(cd "$work/a" && run 2 "$bin/ninfer-convert" "$work/plain/ck" -o m.ninfer --format q8_g32_fp16 --attest ./m.ninfer)
contains "$work/err" "that is the artifact of this conversion"
(cd "$work/a" && run 2 "$bin/ninfer-convert" "$work/plain/ck" -o m.ninfer --format q8_g32_fp16 --attest ./m.ninfer.conversion.json --force)
ln -s . "$work/a/lnk"
(cd "$work/a" && run 2 "$bin/ninfer-convert" "$work/plain/ck" -o m.ninfer --format q8_g32_fp16 --max-file-bytes 600000 --attest lnk/m.ninfer.part-0001)
contains "$work/err" "that is a part name of this conversion"
check test ! -e "$work/a/m.ninfer"
run 3 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/nodir/s.json"
contains "$work/err" "its directory does not exist"
run 0 "$bin/ninfer-convert" "$work/plain/ck" -o "$work/a/m.ninfer" --format q8_g32_fp16 --attest "$work/a/s.json" --force
check test "$(field "$work/a/s.json" 'd["subject"][0]["digest"]["sha256"]')" = "$(sha256sum "$work/a/m.ninfer" | cut -c1-64)"

# --- hostile provenance: shown escaped, wrong types as not recorded
python3 - "$work/q/m.ninfer" "$work/h.ninfer" <<'EOF'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack_from("<Q", b, 8)[0]
d = json.loads(bytes(b[32:32 + n]).decode())
p = d["provenance"]
p["converter"] = "evil\x1b[31m<script>"
p["recipe_sha256"] = 7
p["sources"]["base"]["files"] = [{"path": "a\nb", "bytes": -1, "sha256": "zz"}, 5,
                                 {"path": "ok.bin", "bytes": 3, "sha256": "A" * 64}]
p["sources"]["base"]["hub"] = {"repo": 1}
t = json.dumps(d, separators=(",", ":")).encode()
assert len(t) <= n
b[32:32 + n] = t + b" " * (n - len(t))
open(sys.argv[2], "wb").write(b)
EOF
run 0 "$bin/ninfer-inspect" "$work/h.ninfer" --provenance
lacks "$work/out" "$(printf '\x1b')"
contains "$work/out" "$(printf '  %-64s  %14s  %s' '(no SHA-256 recorded)' '?' 'a\nb')"
contains "$work/out" "recipe        (no SHA-256: recorded as JSON only)"
lacks "$work/out" "hub "
run 0 "$bin/ninfer-inspect" "$work/h.ninfer" --provenance --json
check test "$(field "$work/out" '[f["sha256"] for f in d["sources"]["base"]["files"]]')" = "[None, None, None]"
run 2 "$bin/ninfer-inspect" "$work/plain/ck" --provenance
run 2 "$bin/ninfer-inspect" "$work/q/m.ninfer" --provenance --summary

# --- the digest cache: a second conversion of the same files does not read them again; an entry
# is found by the file's identity (device, inode, size, times), so a poisoned entry shows it was
# used, and a file touched since, NINFER_DIGEST_CACHE=0 or a cache others may write are not fooled
cache=$XDG_CACHE_HOME/ninfer-tools/sha256
rm -rf "$XDG_CACHE_HOME"
cp -r "$work/plain/ck" "$work/cc"
run 0 "$bin/ninfer-convert" "$work/cc" -o "$work/c/m.ninfer" --format q8_g32_fp16
check test "$(ls "$cache" | wc -l)" -eq 6
real=$(sha256sum "$work/cc/config.json" | cut -c1-64)
fake=$(printf '%064d' 7)
entry=$(grep -l " $real\$" "$cache"/*)
sed -i "s/$real/$fake/" "$entry"
run 0 "$bin/ninfer-convert" "$work/cc" -o "$work/c/m.ninfer" --format q8_g32_fp16 --force
contains "$work/c/m.ninfer" "$fake"
NINFER_DIGEST_CACHE=0 run 0 "$bin/ninfer-convert" "$work/cc" -o "$work/c/m.ninfer" --format q8_g32_fp16 --force
lacks "$work/c/m.ninfer" "$fake"
contains "$work/c/m.ninfer" "$real"
chmod 0770 "$cache"
run 0 "$bin/ninfer-convert" "$work/cc" -o "$work/c/m.ninfer" --format q8_g32_fp16 --force
lacks "$work/c/m.ninfer" "$fake"
chmod 0700 "$cache"
touch -d '2001-01-01' "$work/cc/config.json"
run 0 "$bin/ninfer-convert" "$work/cc" -o "$work/c/m.ninfer" --format q8_g32_fp16 --force
lacks "$work/c/m.ninfer" "$fake"
contains "$work/c/m.ninfer" "$real"
printf 'garbage' >"$entry"
run 0 "$bin/ninfer-convert" "$work/cc" -o "$work/c/m.ninfer" --format q8_g32_fp16 --force
contains "$work/c/m.ninfer" "$real"
# verify --against never takes the cache: it reads
sed -i "s/$real/$fake/" "$cache"/* 2>/dev/null
run 0 "$bin/ninfer-verify" "$work/c/m.ninfer" --against "$work/cc"

# the same digests at every SIMD level (the scalar SHA-256 and the CPU's)
NINFER_SIMD=scalar run 0 "$bin/ninfer-inspect" "$work/q/m.ninfer" --provenance --json
NINFER_SIMD=scalar run 0 "$bin/ninfer-convert" "$snap" -o "$work/s/m.ninfer" --format q4_g64_fp16 -j 1
run 0 "$bin/ninfer-inspect" "$work/s/m.ninfer" --provenance --json
python3 - "$work/out" "$work/prov.json" <<'EOF' && ok || bad "digests at NINFER_SIMD=scalar"
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a["sources"] == b["sources"], (a["sources"], b["sources"])
EOF

finish test_provenance
