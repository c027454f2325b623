#!/usr/bin/env python3
"""Handcrafted bad inputs for every reader of ninfer-tools (docs/security.md, "Bad-input corpus").

    python3 tests/badinput/gen_bad_inputs.py OUT_DIR [DATA_DIR]

writes one directory OUT_DIR/<case>/ per case with the bad file(s) and OUT_DIR/cases.tsv, one
line per case, tab-separated:

    name  status  needles  flags  program  arg...

- status: the exit status the program must return (cmd/cli/cli.h: 1 invalid input, 2 usage, 3 I/O);
- needles: substrings that must all appear in the program's output (stdout + stderr), separated
  by " && "; they name the file and the rule (and the object/tensor/key and position where the
  reader knows it);
- flags: "-" or a comma list: "mem" = the case declares a huge count/length in a tiny file and
  must also fail the same way under `ulimit -v` (tests/cli/test_bad_inputs.sh; skipped in
  sanitizer builds);
- program and args: run in the case directory; "{out}" is replaced by an output path prefix, which
  must not exist afterwards (nor any other new file in the case directory).

Modelled on ggml's test-gguf (header, KV, tensor info, data classes) and the rules of
docs/security.md 2.2-2.3 (safetensors, GGUF), docs/artifact.md 5 and 7 (.ninfer v3), docs/recipes.md
(recipes), the llama-imatrix format and docs/dialects.md "Bad input" (quantized checkpoints: every
dialect's companions, scales, codes and declarations).  Nothing is random: the same tree gives the
same bytes.
"""
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

OUT = sys.argv[1]
DATA = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "tests", "data")
UPSTREAM = os.path.join(DATA, "upstream")
FUZZ_CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")

CASES = []


def case(name, status, needles, prog, args, files, flags="-"):
    """files: {relative path: bytes | str | None (a FIFO) | ("symlink", target)}."""
    assert all(c.isalnum() or c in "_-" for c in name), name
    assert not any(c[0] == name for c in CASES), "duplicate case " + name
    d = os.path.join(OUT, name)
    os.makedirs(d)
    for rel, data in files.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if data is None:
            os.mkfifo(p)
            continue
        if isinstance(data, tuple):
            os.symlink(data[1], p)
            continue
        with open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
    if isinstance(needles, str):
        needles = [needles]
    for n in needles:
        assert "\t" not in n and "\n" not in n and " && " not in n, n
    CASES.append((name, str(status), " && ".join(needles), flags, prog, *args))


# ================================================================ GGUF
GG_U8, GG_I8, GG_U16, GG_I16, GG_U32, GG_I32, GG_F32, GG_BOOL, GG_STR, GG_ARR, GG_U64, GG_I64, GG_F64 = range(13)
FMT = {GG_U8: "<B", GG_I8: "<b", GG_U16: "<H", GG_I16: "<h", GG_U32: "<I", GG_I32: "<i", GG_F32: "<f",
       GG_BOOL: "<B", GG_U64: "<Q", GG_I64: "<q", GG_F64: "<d"}
U64MAX = (1 << 64) - 1


def q(n):
    return struct.pack("<Q", n)


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return q(len(b)) + b


def gval(t, v):
    return gstr(v) if t == GG_STR else struct.pack(FMT[t], v)


def gkv(key, t, v):
    b = gstr(key) + struct.pack("<I", t)
    if t == GG_ARR:
        et, items = v
        return b + struct.pack("<IQ", et, len(items)) + b"".join(gval(et, x) for x in items)
    return b + gval(t, v)


def ginfo(name, ne, gt, offset):
    return gstr(name) + struct.pack("<I", len(ne)) + b"".join(q(n) for n in ne) + struct.pack("<IQ", gt, offset)


def gguf_raw(kv_bytes, n_kv, info_bytes, n_tensors, data=b"", version=3, alignment=32):
    b = b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + kv_bytes + info_bytes
    b += b"\0" * ((-len(b)) % alignment)
    return b + data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def gguf(kvs=(), tensors=(), version=3, alignment=32):
    """kvs: (key, type, value); tensors: (name, ne, ggml type, raw bytes) laid out as ggml does."""
    kvb = b"".join(gkv(*kv) for kv in kvs)
    info, data, off = b"", b"", 0
    for i, (name, ne, gt, raw) in enumerate(tensors):
        info += ginfo(name, ne, gt, off)
        pad = (-len(raw)) % alignment
        data += raw + (b"\0" * pad if i + 1 < len(tensors) else b"")
        off += len(raw) + pad
    return gguf_raw(kvb, len(kvs), info, len(tensors), data, version, alignment)


ARCH = ("general.architecture", GG_STR, "llama")
T1 = ("token_embd.weight", [4, 2], 0, f32(*range(8)))  # 8 F32 values, 32 bytes


def gcase(name, needles, data, flags="-", status=1, fname="bad.gguf"):
    if isinstance(needles, str):
        needles = [needles]
    case("gguf_" + name, status, [fname] + needles, "ninfer-inspect", [fname], {fname: data}, flags)


def gguf_cases():
    hdr = lambda v=3, nt=0, nkv=0: b"GGUF" + struct.pack("<IQQ", v, nt, nkv)
    good = gguf([ARCH], [T1])
    # header
    gcase("empty_file", "truncated", b"", fname="empty.gguf")
    gcase("bad_magic", ["bad magic", "expected \"GGUF\""], b"GGUX" + good[4:], fname="bad_magic.gguf")
    gcase("magic_only", ["truncated", "the version"], b"GGUF")
    gcase("truncated_header", ["truncated", "n_kv"], hdr()[:20])
    gcase("version_0", "version 0 is not a GGUF version", hdr(0) + good[24:])
    gcase("version_1", "GGUF version 1 is not supported", hdr(1) + good[24:])
    gcase("version_4", "GGUF version 4 is not supported", hdr(4) + good[24:])
    gcase("version_big_endian", "byte-swapped", hdr(0x03000000) + good[24:])
    gcase("n_tensors_2e63", ["byte 8", "n_tensors 9223372036854775808 exceeds the reader's cap"],
          hdr(3, 1 << 63, 0), "mem")
    gcase("n_tensors_2e40", ["n_tensors 1099511627776 exceeds the reader's cap"], hdr(3, 1 << 40, 0), "mem")
    gcase("n_kv_2e63", ["byte 16", "n_kv 9223372036854775808 exceeds the reader's cap"], hdr(3, 0, 1 << 63), "mem")
    gcase("n_kv_u64_max", "exceeds the reader's cap", hdr(3, 0, U64MAX), "mem")
    gcase("n_kv_beyond_bytes", ["smallest encoding of 1000000 key/value pairs", "truncated"],
          hdr(3, 0, 1000000) + bytes(136), "mem")
    gcase("n_tensors_beyond_bytes", ["smallest encoding of 0 key/value pairs and 1000000 tensor infos"],
          hdr(3, 1000000, 0) + bytes(136), "mem")
    # KVs
    kvs1 = lambda kvb, n=1: gguf_raw(kvb, n, b"", 0)
    gcase("key_length_2e63", ["byte 24", "key 0", "the key length 9223372036854775808 exceeds the cap"],
          kvs1(q(1 << 63) + b"abc"), "mem")
    gcase("key_length_past_end", ["key 0", "truncated: the key needs 1000"], kvs1(q(1000) + b"abc"))
    gcase("key_empty", ["key 0", "empty key"], kvs1(gkv("", GG_U8, 1)))
    gcase("key_nul", ["key 0", "the key contains a NUL byte"], kvs1(gkv(b"a\0b", GG_U8, 1)))
    gcase("kv_type_13", ["key 0 'x'", "bad value type 13"], kvs1(gstr("x") + struct.pack("<I", 13) + bytes(8)))
    gcase("kv_type_u32_max", ["bad value type 4294967295"], kvs1(gstr("x") + struct.pack("<I", 0xFFFFFFFF) + bytes(8)))
    gcase("kv_value_truncated", ["key 0 'x'", "truncated: the value needs 8 bytes, 2 remain"],
          hdr(3, 0, 1) + gstr("x") + struct.pack("<I", GG_U64) + b"\1\2")
    gcase("string_length_2e40", ["key 0 'general.name'", "the string length 1099511627776 exceeds the cap"],
          kvs1(gstr("general.name") + struct.pack("<I", GG_STR) + q(1 << 40) + b"x" * 16), "mem")
    gcase("string_length_u64_max", ["the string length 18446744073709551615 exceeds the cap"],
          kvs1(gstr("general.name") + struct.pack("<I", GG_STR) + q(U64MAX)), "mem")
    gcase("string_past_end", ["key 0 'general.name'", "truncated: the string needs 4096"],
          kvs1(gstr("general.name") + struct.pack("<I", GG_STR) + q(4096) + b"x" * 16), "mem")
    gcase("nested_array", ["key 0 'a'", "nested arrays are not supported"],
          kvs1(gstr("a") + struct.pack("<II", GG_ARR, GG_ARR) + q(1) + struct.pack("<IQ", GG_U8, 1) + b"\0"))
    gcase("array_elem_type_13", ["key 0 'a'", "bad array element type 13"],
          kvs1(gstr("a") + struct.pack("<II", GG_ARR, 13) + q(1) + b"\0"))
    gcase("array_count_2e40", ["key 0 'tokenizer.ggml.scores'", "array of 1099511627776 f32 values exceeds the cap"],
          kvs1(gstr("tokenizer.ggml.scores") + struct.pack("<II", GG_ARR, GG_F32) + q(1 << 40) + bytes(16)), "mem")
    gcase("array_count_u64_max", ["exceeds the cap"],
          kvs1(gstr("a") + struct.pack("<II", GG_ARR, GG_U64) + q(U64MAX) + bytes(16)), "mem")
    gcase("array_count_past_end", ["key 0 'a'", "an array of 60000000 u64 values"],
          kvs1(gstr("a") + struct.pack("<II", GG_ARR, GG_U64) + q(60000000) + bytes(64)), "mem")
    gcase("array_strings_past_end", ["key 0 'tokenizer.ggml.tokens'", "an array of 50000000 string values"],
          kvs1(gstr("tokenizer.ggml.tokens") + struct.pack("<II", GG_ARR, GG_STR) + q(50000000) + gstr("a") * 4), "mem")
    gcase("array_string_element_huge", ["key 0 'tokenizer.ggml.tokens'", "string 1 length 1099511627776 exceeds"],
          kvs1(gstr("tokenizer.ggml.tokens") + struct.pack("<II", GG_ARR, GG_STR) + q(2) + gstr("a") + q(1 << 40)), "mem")
    gcase("duplicate_key", ["duplicate key 'general.architecture'", "first at byte 24"],
          gguf([ARCH, ("general.name", GG_STR, "x"), ARCH], [T1]))
    gcase("alignment_wrong_type", ["key 'general.alignment'", "must be a u32, not u64"],
          gguf([("general.alignment", GG_U64, 32)], [T1]))
    gcase("alignment_array", ["key 'general.alignment'", "must be a u32, not array of u32"],
          gguf([("general.alignment", GG_ARR, (GG_U32, [32]))], [T1]))
    gcase("alignment_zero", ["key 'general.alignment'", "alignment 0"], gguf([("general.alignment", GG_U32, 0)], [T1]))
    gcase("alignment_not_power_of_two", "alignment 48 is not a power of two",
          gguf([("general.alignment", GG_U32, 48)], [T1], alignment=48))
    gcase("alignment_too_big", "alignment 1073741824 exceeds the reader's cap",
          gguf([("general.alignment", GG_U32, 1 << 30)], [T1]))
    # tensor infos
    t1 = lambda info, data=f32(*range(8)), n=1: gguf_raw(gkv(*ARCH), 1, info, n, data)
    gcase("tensor_name_empty", ["tensor info 0", "empty tensor name"], t1(ginfo("", [8], 0, 0)))
    gcase("tensor_name_64_bytes", ["tensor info 0", "length 64 exceeds the cap of 63"], t1(ginfo("n" * 64, [8], 0, 0)))
    gcase("tensor_name_length_2e63", ["tensor info 0", "exceeds the cap"], t1(q(1 << 63) + b"abcd"), "mem")
    gcase("tensor_name_nul", ["tensor info 0", "the tensor name contains a NUL byte"], t1(ginfo(b"a\0b", [8], 0, 0)))
    gcase("duplicate_tensor_name", ["duplicate tensor name 'w'", "first at byte"],
          gguf([ARCH], [("w", [8], 0, f32(*range(8))), ("w", [8], 0, f32(*range(8)))]))
    gcase("n_dims_5", ["tensor 0 'w'", "n_dims 5 exceeds GGML_MAX_DIMS (4)"], t1(ginfo("w", [8, 1, 1, 1, 1], 0, 0)))
    gcase("n_dims_u32_max", ["tensor 0 'w'", "n_dims 4294967295 exceeds"],
          t1(gstr("w") + struct.pack("<I", 0xFFFFFFFF) + q(8) * 4))
    gcase("ne_zero", ["tensor 0 'w'", "ne[1] is 0"], t1(ginfo("w", [8, 0], 0, 0)))
    gcase("ne_negative", ["tensor 0 'w'", "ne[0] = 9223372036854775808 is negative"], t1(ginfo("w", [1 << 63], 0, 0)))
    gcase("ne_product_overflow", ["tensor 0 'w'", "the element count ne[0..1] overflows int64"],
          t1(ginfo("w", [1 << 32, 1 << 32], 0, 0)))
    gcase("byte_size_overflow", ["tensor 0 'w'", "overflows U64"], t1(ginfo("w", [1 << 62], 28, 0)))
    gcase("unknown_ggml_type", ["tensor 0 'w'", "99"], t1(ginfo("w", [8], 99, 0)))
    gcase("ggml_type_u32_max", ["tensor 0 'w'", "4294967295"], t1(ginfo("w", [8], 0xFFFFFFFF, 0)))
    gcase("removed_ggml_type", ["tensor 0 'w'", "Q4_2", "removed from ggml"], t1(ginfo("w", [32], 4, 0)))
    gcase("ne0_not_block_multiple", ["tensor 0 'w'", "ne[0] = 33 is not a multiple of the Q4_0 block size 32"],
          t1(ginfo("w", [33], 2, 0), bytes(36)))
    gcase("info_truncated", ["tensor 0 'w'", "truncated"], gguf_raw(gkv(*ARCH), 1, gstr("w") + struct.pack("<I", 2) + q(8), 1, b""))
    gcase("offset_misaligned", ["tensor 0 'w'", "data offset 4 is not a multiple of the alignment 32"],
          t1(ginfo("w", [8], 0, 4)))
    gcase("offset_gap", ["tensor 1 'b'", "data offset 64 leaves a gap of 32 bytes after tensor 'a'"],
          t1(ginfo("a", [8], 0, 0) + ginfo("b", [8], 0, 64), f32(*range(8)) * 3, 2))
    gcase("offset_overlap", ["tensor 1 'b'", "data offset 0 overlaps tensor 'a', which ends at 32"],
          t1(ginfo("a", [8], 0, 0) + ginfo("b", [8], 0, 0), f32(*range(8)) * 2, 2))
    gcase("offset_gap_first", ["tensor 0 'a'", "leaves a gap of 32 bytes after the start of the data section"],
          t1(ginfo("a", [8], 0, 32), f32(*range(8)) * 2))
    gcase("offset_u64_max", ["tensor 0 'a'", "not a multiple of the alignment"], t1(ginfo("a", [8], 0, U64MAX)))
    gcase("data_truncated", ["tensor 'a'", "runs past the end of the file", "data section truncated"],
          t1(ginfo("a", [8], 0, 0), f32(*range(7))))
    gcase("data_missing", ["tensor 'a'", "runs past the end of the file"], t1(ginfo("a", [8], 0, 0), b""))
    gcase("huge_tensor_tiny_file", ["tensor 'a'", "runs past the end of the file"],
          t1(ginfo("a", [1 << 20, 1 << 20], 0, 0), b""), "mem")


# ================================================================ safetensors
def st_file(header, data=b"", pad=0):
    h = (header if isinstance(header, (bytes, str)) else json.dumps(header, separators=(",", ":")))
    h = (h.encode() if isinstance(h, str) else h) + b" " * pad
    return q(len(h)) + h + data


def st_entry(dtype="F32", shape=(2,), off=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(off)}


def scase(name, needles, data, flags="-", fname="bad.safetensors"):
    if isinstance(needles, str):
        needles = [needles]
    case("st_" + name, 1, [fname] + needles, "ninfer-inspect", [fname], {fname: data}, flags)


def st_cases():
    d8 = bytes(8)
    scase("too_short", "too short for the 8-byte safetensors header length", b"\x10\0\0\0")
    scase("header_length_past_end", ["byte 0", "header length 100 runs past the end of the file"], q(100) + b"{}")
    scase("header_length_2e63", ["byte 0", "header length 9223372036854775808 exceeds the cap"], q(1 << 63) + b"{}", "mem")
    scase("header_length_over_cap", ["header length 100000001 exceeds the cap"], q(100000001) + b"{}" + bytes(64), "mem")
    scase("header_length_zero", ["header byte 8", "must start with '{'"], q(0) + d8)
    scase("not_json", ["header byte", "JSON line 1"], st_file(b'{"a": nope}'))
    scase("not_object", ["header byte 8", "must start with '{'"], st_file(b'["a"]'))
    scase("json_truncated", ["header byte", "JSON"], st_file(b'{"a":{"dtype":"F32"'))
    scase("invalid_utf8", ["header byte", "JSON"], st_file(b'{"\xff\xfe":' + json.dumps(st_entry()).encode() + b"}", d8))
    scase("nan_literal", ["header byte", "JSON"], st_file(b'{"a":{"dtype":"F32","shape":[NaN],"data_offsets":[0,8]}}', d8))
    scase("trailing_garbage_in_header", ["header byte", "JSON"], st_file(b'{} x'))
    scase("bad_dtype", ["tensor 'w'", "unknown dtype \"F17\""], st_file({"w": st_entry("F17")}, d8))
    scase("dtype_not_string", ["tensor 'w'", "dtype is an integer, expected a string"], st_file({"w": st_entry(32)}, d8))
    scase("shape_not_array", ["tensor 'w'", "shape is a string"], st_file({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}}, d8))
    scase("shape_negative", ["tensor 'w'", "shape[0] is an integer below 0"], st_file({"w": st_entry(shape=(-2,))}, d8))
    scase("shape_float", ["tensor 'w'", "shape[0] is a real number"], st_file({"w": st_entry(shape=(2.0,))}, d8))
    scase("shape_rank_17", ["array of more than 16 elements"], st_file({"w": st_entry(shape=[1] * 16 + [2])}, d8))
    scase("shape_overflow", ["tensor 'w'", "element count of the shape overflows U64"],
          st_file({"w": st_entry(shape=(1 << 62, 1 << 62))}, d8))
    scase("shape_bits_overflow", ["tensor 'w'", "F64 size of the shape overflows U64"],
          st_file({"w": st_entry("F64", shape=(1 << 62,))}, d8))
    scase("size_mismatch", ["tensor 'w'", "data_offsets [0, 8] hold 8 bytes but F32 with 4 elements needs 16"],
          st_file({"w": st_entry(shape=(2, 2))}, d8))
    scase("subbyte_misaligned", ["tensor 'w'", "3 F4 elements do not end on a byte boundary"],
          st_file({"w": st_entry("F4", shape=(3,), off=(0, 2))}, b"\0\0"))
    scase("offsets_reversed", ["tensor 'w'", "data_offsets [8, 0] end before they begin"], st_file({"w": st_entry(off=(8, 0))}, d8))
    scase("offsets_past_end", ["tensor 'w'", "run past the end of the data buffer"], st_file({"w": st_entry(off=(0, 8))}, b"\0" * 4))
    scase("offsets_overlap", ["tensor 'b'", "overlap tensor 'a'"],
          st_file({"a": st_entry(), "b": st_entry(off=(4, 12))}, bytes(12)))
    scase("offsets_alias", ["tensor 'b'", "overlap tensor 'a'"], st_file({"a": st_entry(), "b": st_entry()}, d8))
    scase("offsets_hole", ["tensor 'b'", "leave a hole of 4 bytes after tensor 'a'"],
          st_file({"a": st_entry(), "b": st_entry(off=(12, 20))}, bytes(20)))
    scase("offsets_hole_at_start", ["tensor 'a'", "leave a hole of 4 bytes after the header"],
          st_file({"a": st_entry(off=(4, 12))}, bytes(12)))
    scase("trailing_bytes", ["4 trailing bytes after the last tensor"], st_file({"a": st_entry()}, bytes(12)))
    scase("offsets_negative", ["tensor 'w'", "data_offsets[0] is an integer below 0"], st_file({"w": st_entry(off=(-8, 0))}, d8))
    scase("offsets_float", ["tensor 'w'", "data_offsets[1] is a real number"], st_file({"w": st_entry(off=(0, 8.0))}, d8))
    scase("offsets_not_pair", ["tensor 'w'", "data_offsets is an array of the wrong length"],
          st_file({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4, 8]}}, d8))
    scase("offsets_huge", ["tensor 'w'", "hold"], st_file({"w": st_entry(off=(0, 1 << 62))}, d8))
    scase("integer_beyond_int64", ["header byte", "JSON"],
          st_file(b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}}', d8))
    scase("metadata_not_object", ["__metadata__ is a string, expected an object of strings"],
          st_file({"__metadata__": "pt", "w": st_entry()}, d8))
    scase("metadata_value_not_string", ["__metadata__[\"format\"] is an integer, expected a string"],
          st_file({"__metadata__": {"format": 1}, "w": st_entry()}, d8))
    scase("duplicate_name", ["header byte", "duplicate"],
          st_file(b'{"w":' + json.dumps(st_entry()).encode() + b',"w":' + json.dumps(st_entry()).encode() + b"}", d8))
    scase("duplicate_name_escaped", ["header byte", "duplicate"],
          st_file(b'{"w":' + json.dumps(st_entry()).encode() + b',"\\u0077":' + json.dumps(st_entry()).encode() + b"}", d8))
    scase("empty_name", ["header byte 9", "empty tensor name"], st_file({"": st_entry()}, d8))
    scase("name_too_long", ["tensor name of 2000 bytes", "cap of 1024"], st_file({"n" * 2000: st_entry()}, d8))
    scase("missing_member", ["tensor 'w'", "missing \"data_offsets\""], st_file({"w": {"dtype": "F32", "shape": [2]}}, d8))
    scase("unknown_member", ["tensor 'w'", "unknown member \"offsets\""],
          st_file({"w": dict(st_entry(), offsets=[0, 8])}, d8))
    scase("entry_not_object", ["tensor 'w'", "entry is an array"], st_file({"w": ["F32", [2], [0, 8]]}, d8))
    scase("nesting_too_deep", ["JSON nested deeper than 3 levels"],
          st_file({"w": dict(st_entry(), shape=[[2]])}, d8))
    scase("deep_nesting_100k", ["JSON nested deeper than 3 levels"], st_file(b"{" + b"[" * 100000 + b"]" * 100000 + b"}"))
    n = (1 << 20) + 2
    scase("too_many_entries", ["more than 1048576 tensor entries"],
          st_file(b"{" + b",".join(b'"%x":{}' % i for i in range(n)) + b"}"), "mem")
    scase("too_many_metadata_entries", ["more than 65536 __metadata__ entries"],
          st_file(b'{"__metadata__":{' + b",".join(b'"%x":""' % i for i in range(70000)) + b"}}"), "mem")
    # not a file of ours: a system error (exit 3) in every program, as ninfer-verify has it (M2)
    case("st_fifo", 3, ["fifo.safetensors", "not a regular file"], "ninfer-inspect", ["fifo.safetensors"],
         {"fifo.safetensors": None})


def st_index_cases():
    good = lambda names: st_file({n: st_entry(off=(8 * i, 8 * i + 8)) for i, n in enumerate(names)}, bytes(8 * len(names)))
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    IDX = "model.safetensors.index.json"

    def icase(name, needles, index, shards=None, status=1, flags="-"):
        files = {IDX: index if isinstance(index, (str, bytes)) else json.dumps(index)}
        for k, v in (shards if shards is not None else {s1: good(["a", "b"]), s2: good(["c"])}).items():
            files[k] = v
        case("index_" + name, status, needles, "ninfer-inspect", [IDX], files, flags)

    icase("bad_json", [IDX, "line 1"], '{"weight_map": {"a": ')
    icase("not_object", [IDX], "[1, 2]")
    icase("no_weight_map", [IDX, "weight_map"], {"metadata": {}})
    icase("weight_map_not_object", [IDX, "weight_map"], {"weight_map": ["a"]})
    icase("weight_map_value_not_string", [IDX, 'weight_map["a"] is not a string'], {"weight_map": {"a": 1, "b": s1, "c": s2}})
    icase("missing_shard", [IDX, "shard model-00003-of-00003.safetensors is missing"],
          {"weight_map": {"a": s1, "b": s1, "c": "model-00003-of-00003.safetensors"}})
    icase("tensor_not_in_shard", ["'x'", s1], {"weight_map": {"a": s1, "b": s1, "c": s2, "x": s1}})
    icase("shard_tensor_not_listed", ["'c'", s2], {"weight_map": {"a": s1, "b": s1, "c2": s2}})
    icase("tensor_in_two_shards", ["'a'"], {"weight_map": {"a": s1, "b": s1, "c": s2}},
          {s1: good(["a", "b"]), s2: good(["a", "c"])})
    icase("path_traversal", [IDX, "../model.safetensors"], {"weight_map": {"a": "../model.safetensors"}})
    icase("absolute_path", [IDX, "/etc/passwd"], {"weight_map": {"a": "/etc/passwd"}})
    icase("duplicate_key", [IDX, "duplicate"], '{"weight_map": {"a": "%s", "a": "%s", "b": "%s", "c": "%s"}}' % (s1, s1, s1, s2))
    # pre-scan caps (a 64 MiB index of "[{},{},...]" cost 5 GB inside jansson)
    wm = '"weight_map": {"a": "%s", "b": "%s", "c": "%s"}' % (s1, s1, s2)
    icase("too_many_containers", [IDX, "more than 65536 JSON objects and arrays"],
          '{"metadata": {"x": [%s]}, %s}' % (",".join(["{}"] * 70000), wm), flags="mem")
    icase("too_many_values", [IDX, "more than 1114112 JSON values"],
          '{"metadata": {"x": [%s]}, %s}' % (",".join(["0"] * 1200000), wm), flags="mem")
    icase("too_deep", [IDX, "JSON nested deeper than 64 levels"],
          '{"metadata": {"x": %s%s}, %s}' % ("[" * 100, "]" * 100, wm))
    icase("bad_shard", [s2, "bad dtype" if False else "unknown dtype"],
          {"weight_map": {"a": s1, "b": s1, "c": s2}}, {s1: good(["a", "b"]), s2: st_file({"c": st_entry("X")}, bytes(8))})


# ================================================================ .ninfer container
def entry_bytes(root, payload, artifact_id=b"\x11" * 16, json_text=None, json_bytes=None, magic=b"NINFER\0\3", pad_to=None):
    text = json_text if json_text is not None else json.dumps(root, separators=(",", ":")).encode()
    jb = len(text) if json_bytes is None else json_bytes
    head = magic + q(jb) + artifact_id + text
    start = (len(head) + 4095) // 4096 * 4096
    return head + bytes(start - len(head)) + payload


def read_entry(path):
    b = open(path, "rb").read()
    jb = struct.unpack("<Q", b[8:16])[0]
    start = (32 + jb + 4095) // 4096 * 4096
    return b, json.loads(b[32:32 + jb]), b[16:32], b[start:]


def ccase(name, needles, files, prog="ninfer-verify", args=None, status=1, entry="bad.ninfer", flags="-"):
    if isinstance(needles, str):
        needles = [needles]
    case("container_" + name, status, [entry] + needles, prog, args if args is not None else [entry], files, flags)


def container_cases():
    raw, root, aid, payload = read_entry(os.path.join(UPSTREAM, "direct.ninfer"))
    E = "bad.ninfer"

    def mut(f, extra=b""):
        r = json.loads(json.dumps(root))
        f(r)
        return {E: entry_bytes(r, payload + extra, aid)}

    def rcase(name, needles, f, extra=b"", **kw):
        ccase(name, needles, mut(f, extra), **kw)

    def setp(path, value):
        def f(r):
            o = r
            for k in path[:-1]:
                o = o[k]
            o[path[-1]] = value
        return f

    # framing
    ccase("empty", "shorter than its 32-byte header", {E: b""})
    ccase("short", "the entry file is 20 bytes, shorter than its 32-byte header", {E: raw[:20]})
    ccase("bad_magic", ["bad magic", "expected 4e494e4645520003"], {E: b"NINFEX\0\3" + raw[8:]})
    ccase("v2_magic", "container v2", {E: b"NINFER\0\2" + raw[8:]})
    ccase("v1_magic", "container v1", {E: b"NINFER\0\1" + raw[8:]})
    ccase("gguf_named_ninfer", "bad magic", {E: gguf([ARCH], [T1])})
    ccase("json_bytes_zero", "json_bytes 0 outside", {E: raw[:8] + q(0) + raw[16:]})
    ccase("json_bytes_past_end", "json_bytes 99999 outside", {E: raw[:8] + q(99999) + raw[16:]})
    ccase("json_bytes_2e63", "json_bytes 9223372036854775808 outside", {E: raw[:8] + q(1 << 63) + raw[16:]}, flags="mem")
    ccase("json_bytes_short", ["directory"], {E: raw[:8] + q(100) + raw[16:]})
    ccase("trailing_byte", ["the entry file is 5137 bytes, expected 5136"], {E: raw + b"\0"})
    ccase("truncated_payload", ["the entry file is 5135 bytes, expected 5136"], {E: raw[:-1]})
    ccase("payload_missing", ["the entry file is 4096 bytes, expected 5136"], {E: raw[:4096]})
    # strict JSON
    text = json.dumps(root, separators=(",", ":")).encode()
    ccase("not_utf8", ["not UTF-8", "JSON byte 1"], {E: entry_bytes(None, payload, aid, b'{\xc0\xaf' + text[1:])})
    ccase("utf8_surrogate", ["not UTF-8"], {E: entry_bytes(None, payload, aid, text[:-1] + b',"x":"\xed\xa0\x80"}')})
    ccase("not_json", ["not valid JSON"], {E: entry_bytes(None, payload, aid, b"{" + text[2:])})
    ccase("trailing_data", ["trailing data after the JSON value"], {E: entry_bytes(None, payload, aid, text + b" x")})
    ccase("nan_literal", ["JSON literal NaN is not allowed"],
          {E: entry_bytes(None, payload, aid, text.replace(b'"metadata":{}', b'"metadata":{"x":NaN}'))})
    ccase("duplicate_member", ["duplicate JSON member"],
          {E: entry_bytes(None, payload, aid, text.replace(b'"metadata":{}', b'"metadata":{"a":1,"\\u0061":2}'))})
    ccase("integer_beyond_int64", ["number out of range"],
          {E: entry_bytes(None, payload, aid, text.replace(b'"metadata":{}', b'"metadata":{"a":18446744073709551616}'))})
    ccase("root_not_object", ["must be an object"], {E: entry_bytes(None, payload, aid, b"[]")})
    # records
    rcase("unknown_root_member", ["unknown member 'extra'"], setp(["extra"], 1))
    rcase("missing_objects", ["missing member 'objects'"], lambda r: r.pop("objects"))
    rcase("files_empty", ["files must be a non-empty array"], setp(["files"], []))
    rcase("files0_path_not_null", ["files[0]", "null"], setp(["files", 0, "path"], "x"))
    rcase("file_payload_zero", ["files[0]", "payload_bytes"], setp(["files", 0, "payload_bytes"], 0))
    rcase("file_unknown_member", ["files[0]", "unknown member 'sha'"], setp(["files", 0, "sha"], "x"))
    rcase("part_path_slash", ["files[1]", "../x"],
          lambda r: r["files"].append({"path": "../x", "payload_bytes": 1}))
    rcase("part_path_dotdot", ["files[1]", "'..'"], lambda r: r["files"].append({"path": "..", "payload_bytes": 1}))
    rcase("part_path_self", ["files[1]", "bad.ninfer"], lambda r: r["files"].append({"path": "bad.ninfer", "payload_bytes": 1}))
    rcase("part_path_repeated", ["files[2]"], lambda r: r["files"].extend([{"path": "p", "payload_bytes": 1}] * 2))
    rcase("components_empty", ["components"], setp(["components"], {}))
    rcase("component_no_config", ["components", "text", "config"], setp(["components", "text"], {}))
    rcase("component_target_missing", ["target", "nope"], setp(["components", "text", "target"], "nope"))
    rcase("proposal_on_other_component", ["proposal"],
          setp(["components", "vision"], {"config": {}, "proposal": {"domain": "full"}}))
    rcase("resource_not_a_resource", ["resources", "bf16/matrix"],
          setp(["components", "text", "resources"], {"t": "bf16/matrix"}))
    rcase("objects_empty", ["objects"], setp(["objects"], []))
    rcase("object_unknown_member", ["objects[0]", "bf16/matrix", "unknown member 'stride'"], setp(["objects", 0, "stride"], 1))
    rcase("object_bad_kind", ["objects[0]", "kind"], setp(["objects", 0, "kind"], "weights"))
    rcase("object_id_empty", ["objects[0]", "id"], setp(["objects", 0, "id"], ""))
    rcase("object_id_nul", ["objects[0]", "id"], setp(["objects", 0, "id"], "a\0b"))
    rcase("duplicate_object_id", ["objects[1]", "bf16/matrix"], setp(["objects", 1, "id"], "bf16/matrix"))
    rcase("object_offset_negative", ["objects[1]", "bf16/rank3", "offset"], setp(["objects", 1, "offset"], -256))
    rcase("object_offset_float", ["objects[1]", "bf16/rank3", "offset"], setp(["objects", 1, "offset"], 256.0))
    rcase("object_bytes_zero", ["objects[1]", "bf16/rank3", "bytes"], setp(["objects", 1, "bytes"], 0))
    rcase("objects_overlap", ["objects[1]", "bf16/rank3"], setp(["objects", 1, "offset"], 0))
    rcase("objects_out_of_order", ["objects[2]", "fp32/vector"], setp(["objects", 2, "offset"], 0))
    rcase("object_past_payload", ["objects[4]", "int32/matrix"], setp(["objects", 4, "offset"], 1280))
    rcase("object_offset_huge", ["objects[4]", "int32/matrix"], setp(["objects", 4, "offset"], (1 << 63) - 256))
    rcase("object_misaligned", ["bf16/rank3", "256"], setp(["objects", 1, "offset"], 200))
    rcase("object_bytes_wrong", ["bf16/rank3", "bytes"], setp(["objects", 1, "bytes"], 14))
    rcase("unknown_format", ["bf16/matrix", "q3_nonsense"], setp(["objects", 0, "format"], "q3_nonsense"))
    rcase("unknown_layout", ["bf16/matrix", "weird_layout_v9"], setp(["objects", 0, "layout"], "weird_layout_v9"))
    rcase("layout_format_mismatch", ["bf16/matrix", "row_split_k128_v1"], setp(["objects", 0, "layout"], "row_split_k128_v1"))
    rcase("shape_not_array", ["objects[0]", "shape"], setp(["objects", 0, "shape"], 6))
    rcase("shape_negative", ["objects[0]", "shape"], setp(["objects", 0, "shape"], [-2, 3]))
    rcase("shape_rank_17", ["objects[0]", "shape", "16"], setp(["objects", 0, "shape"], [1] * 17))
    rcase("shape_wrong_for_bytes", ["bf16/matrix"], setp(["objects", 0, "shape"], [3, 3]))
    rcase("shape_overflow", ["bf16/matrix"], setp(["objects", 0, "shape"], [1 << 62, 1 << 62]))
    rcase("divisors_not_nvfp4", ["bf16/matrix", "divisors"], setp(["objects", 0, "divisors"], 2))
    rcase("resource_bad_encoding", ["object 't'", "unknown resource encoding 'zip'"],
          lambda r: (r["objects"].append({"id": "t", "kind": "resource", "encoding": "zip", "offset": 1040, "bytes": 1}),
                     r["files"][0].update(payload_bytes=1041)), extra=b"\0")
    rcase("binding_missing_object", ["bindings", "direct/bf16", "nope"], setp(["bindings", "direct/bf16"], {"object": "nope"}))
    rcase("binding_both_forms", ["bindings", "direct/bf16"],
          setp(["bindings", "direct/bf16"], {"object": "bf16/matrix", "parts": [{"object": "bf16/matrix", "range": [0, 6]}]}))
    rcase("binding_range_past_elements", ["bindings", "direct/bf16", "range"],
          setp(["bindings", "direct/bf16"], {"parts": [{"object": "bf16/matrix", "range": [0, 7]}]}))
    rcase("binding_range_empty", ["bindings", "direct/bf16", "range"],
          setp(["bindings", "direct/bf16"], {"parts": [{"object": "bf16/matrix", "range": [3, 3]}]}))
    rcase("binding_parts_empty", ["bindings", "direct/bf16", "parts"], setp(["bindings", "direct/bf16"], {"parts": []}))
    rcase("use_unknown_parameter", ["uses[0]", "nope"], setp(["uses"], [{"parameter": "nope", "input": "x"}]))
    rcase("use_bad_policy", ["uses[0]", "AllowA2"],
          setp(["uses"], [{"parameter": "direct/bf16", "input": "x", "activation_policy": "AllowA2"}]))
    rcase("use_duplicate", ["uses[1]"], setp(["uses"], [{"parameter": "direct/bf16", "input": "x"}] * 2))
    rcase("metadata_name_not_id", ["metadata", "name"], setp(["metadata", "name"], ""))
    rcase("metadata_not_object", ["metadata"], setp(["metadata"], []))
    # pre-scan caps (docs/security.md 7, C2)
    deep = b"[" * 1000 + b"]" * 1000
    ccase("json_too_deep", ["nesting deeper than 900 levels"],
          {E: entry_bytes(None, payload, aid, text.replace(b'"metadata":{}', b'"metadata":{"x":' + deep + b"}"))})
    many = b"[" + b",".join([b"{}"] * 2000001) + b"]"
    ccase("json_too_many_containers", ["more than 2000000 objects and arrays"],
          {E: entry_bytes(None, payload, aid, text.replace(b'"metadata":{}', b'"metadata":{"x":' + many + b"}"))}, flags="mem")
    many = b"[" + b",".join([b"0"] * 8000001) + b"]"
    ccase("json_too_many_values", ["more than 8000000 values"],
          {E: entry_bytes(None, payload, aid, text.replace(b'"metadata":{}', b'"metadata":{"x":' + many + b"}"))}, flags="mem")
    # dequant and inspect on a bad object: refused, nothing written
    ccase("dequant_bytes_wrong", ["bf16/rank3"], mut(setp(["objects", 1, "bytes"], 14)), prog="ninfer-dequant",
          args=[E, "bf16/rank3", "-o", "{out}.bin"])
    ccase("dequant_all_bad_object", ["bf16/rank3"], mut(setp(["objects", 1, "layout"], "row_split_k128_v1")),
          prog="ninfer-dequant", args=[E, "--all", "-o", "{out}.safetensors"])
    ccase("inspect_bad_directory", ["objects[1]", "bf16/rank3"], mut(setp(["objects", 1, "offset"], 0)),
          prog="ninfer-inspect", args=[E])
    # the file and the object named once each ("FILE: object 'ID': what", not "object 'ID': object 'ID'")
    ccase("inspect_tensor_bytes_wrong", ["bad.ninfer: object 'bf16/rank3': bytes 14 != encoded size 16"],
          mut(setp(["objects", 1, "bytes"], 14)), prog="ninfer-inspect", args=[E, "--tensor", "bf16/rank3"])
    ccase("inspect_stats_unknown_layout", ["bad.ninfer: object 'bf16/matrix': unknown layout 'weird_layout_v9'"],
          mut(setp(["objects", 0, "layout"], "weird_layout_v9")), prog="ninfer-inspect",
          args=[E, "--tensor", "bf16/matrix", "--stats"])
    ccase("inspect_words_misaligned", ["bad.ninfer: object 'bf16/rank3': offset 200 is not 256-aligned"],
          mut(setp(["objects", 1, "offset"], 200)), prog="ninfer-inspect", args=[E, "--words", "bf16/rank3"])

    # split artifacts: parts
    sraw, sroot, said, spay = read_entry(os.path.join(UPSTREAM, "split.ninfer"))
    parts = {}
    for i in range(1, 5):
        n = "split.ninfer.part-%04d" % i
        parts[n] = open(os.path.join(UPSTREAM, n), "rb").read()

    def scase_(name, needles, change):
        files = {"split.ninfer": sraw, **parts}
        change(files)
        ccase(name, needles, files, entry="split.ninfer")

    scase_("part_missing", ["split.ninfer.part-0002"], lambda f: f.pop("split.ninfer.part-0002"))
    scase_("part_truncated", ["part split.ninfer.part-0003 is 12287 bytes, expected 12288"],
           lambda f: f.update({"split.ninfer.part-0003": parts["split.ninfer.part-0003"][:-1]}))
    scase_("part_extra_byte", ["part split.ninfer.part-0004 is 8935 bytes, expected 8934"],
           lambda f: f.update({"split.ninfer.part-0004": parts["split.ninfer.part-0004"] + b"\0"}))
    scase_("part_bad_magic", ["split.ninfer.part-0001"],
           lambda f: f.update({"split.ninfer.part-0001": b"NINFER\0\3" + parts["split.ninfer.part-0001"][8:]}))
    scase_("part_wrong_index", ["split.ninfer.part-0002"],
           lambda f: f.update({"split.ninfer.part-0002": parts["split.ninfer.part-0003"][:8] + q(3) +
                               parts["split.ninfer.part-0002"][16:]}))
    scase_("part_foreign", ["split.ninfer.part-0001", "does not belong to this entry"],
           lambda f: f.update({"split.ninfer.part-0001": parts["split.ninfer.part-0001"][:16] + b"\x99" * 16 +
                               parts["split.ninfer.part-0001"][32:]}))
    scase_("part_swapped", ["split.ninfer.part-0001"],
           lambda f: f.update({"split.ninfer.part-0001": parts["split.ninfer.part-0002"],
                               "split.ninfer.part-0002": parts["split.ninfer.part-0001"]}))
    scase_("part_fifo", ["split.ninfer.part-0001"], lambda f: f.update({"split.ninfer.part-0001": None}))

    # checksums and words: artifacts written by our own converter (metadata.checksums)
    craw = open(os.path.join(FUZZ_CORPUS, "container_artifact", "converted_checksums.ninfer"), "rb").read()
    _, croot, caid, cpay = read_entry_bytes(craw)
    obj = croot["objects"][0]
    start = len(craw) - len(cpay)
    flipped = bytearray(craw)
    flipped[start + obj["offset"]] ^= 0x01
    ccase("object_checksum_mismatch", [obj["id"], "checksum"], {E: bytes(flipped)})
    jb = struct.unpack("<Q", craw[8:16])[0]
    ctext = craw[32:32 + jb]
    k = ctext.index(b'"fuzz-seed"')
    ctext2 = ctext[:k + 1] + b"g" + ctext[k + 2:]
    ccase("directory_checksum_mismatch", ["checksum"], {E: craw[:32] + ctext2 + craw[32 + jb:]})
    gap = bytearray(craw)
    o0, o1 = croot["objects"][0], croot["objects"][1]
    if o0["offset"] + o0["bytes"] < o1["offset"]:
        gap[start + o0["offset"] + o0["bytes"]] = 0xAA
        ccase("nonzero_gap", ["between objects is 0xaa, expected 0x00"], {E: bytes(gap)})
    # an fp8 code that is NaN (0x7F) in the fp8_e4m3fn_row_bf16 object
    fp8 = next(o for o in croot["objects"] if o.get("format") == "fp8_e4m3fn_row_bf16")
    plain = json.loads(json.dumps(croot))
    del plain["metadata"]["checksums"]
    words = bytearray(cpay)
    words[fp8["offset"]] = 0x7F
    ccase("words_nan_code", [fp8["id"], "is NaN (not a valid E4M3FN weight code)"], {E: entry_bytes(plain, bytes(words), caid)})


def read_entry_bytes(b):
    jb = struct.unpack("<Q", b[8:16])[0]
    start = (32 + jb + 4095) // 4096 * 4096
    return b, json.loads(b[32:32 + jb]), b[16:32], b[start:]


# ================================================================ recipes and imatrix
def bf16(vals):
    out = b""
    for x in vals:
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        out += struct.pack("<H", (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)
    return out


CKPT = st_file({"model.layers.0.mlp.down_proj.weight": st_entry("BF16", (4, 64), (0, 512)),
                "model.norm.weight": st_entry("F32", (64,), (512, 768))},
               bf16([((i * 37) % 17 - 8) / 8.0 for i in range(256)]) + f32(*[1.0] * 64))


def recipe_case(name, needles, text, status=1, extra=None, flags="-"):
    files = {"ckpt/model.safetensors": CKPT, "r.yaml": text}
    files.update(extra or {})
    if isinstance(needles, str):
        needles = [needles]
    case("recipe_" + name, status, needles, "ninfer-convert",
         ["-r", "r.yaml", "-o", "{out}.ninfer", "-j", "1", "--progress=never"], files, flags)


HEAD = "recipe: 1\nsources:\n  base: ./ckpt\n"


def recipe_cases():
    recipe_case("yaml_syntax", ["r.yaml:", "2:"], "recipe: 1\nsources: {base: ./ckpt\n")
    recipe_case("tab_indent", ["r.yaml:"], "recipe: 1\nsources:\n\tbase: ./ckpt\n")
    recipe_case("empty", ["r.yaml"], "")
    recipe_case("not_mapping", ["r.yaml:1:1"], "- recipe: 1\n")
    recipe_case("version_2", ["r.yaml:1:9", "unsupported schema version 2"], "recipe: 2\n")
    recipe_case("unknown_key", ["r.yaml:4:1", "unknown top-level key 'rule'"], HEAD + "rule: []\n")
    recipe_case("wrong_type", ["r.yaml:4:9", "output: expected a mapping"], HEAD + "output: x\n")
    recipe_case("unknown_format", ["r.yaml:4:20", "unknown format 'q4'"], HEAD + "defaults: {format: q4}\n")
    recipe_case("unknown_method", ["r.yaml:4:20", "unknown method 'absmax'"], HEAD + "defaults: {method: absmax}\n")
    recipe_case("unknown_layout", ["r.yaml:6:13", "unknown tensor layout 'rows'"],
                HEAD + "rules:\n  - match: '*'\n    layout: rows\n")
    recipe_case("bad_regex", ["r.yaml:5:12", "bad regular expression '('"], HEAD + "rules:\n  - match: 're:('\n    format: bf16\n")
    recipe_case("regex_backreference", ["r.yaml:5:12", "back-reference"],
                HEAD + "rules:\n  - match: 're:(a)\\1'\n    format: bf16\n")
    recipe_case("regex_too_costly", ["r.yaml:5:12"],
                HEAD + "rules:\n  - match: 're:" + "(" * 24 + "a" + ")+" * 24 + "'\n    format: bf16\n")
    recipe_case("match_empty_list", ["r.yaml:5:12", "empty list"], HEAD + "rules:\n  - match: []\n    format: bf16\n")
    recipe_case("missing_match", ["r.yaml:5:5", "missing key 'match'"], HEAD + "rules:\n  - format: bf16\n")
    recipe_case("duplicate_key", ["r.yaml:4:1", "duplicate"], HEAD + "sources:\n  base: ./ckpt\n")
    recipe_case("anchor_alias", ["r.yaml:", "anchor"], HEAD + "defaults: &d {format: bf16}\noutput: *d\n")
    recipe_case("tag", ["r.yaml:", "tag"], HEAD + "output: !!map {name: x}\n")
    recipe_case("two_documents", ["r.yaml:", "document"], HEAD + "---\nrecipe: 1\n")
    recipe_case("too_deep", ["r.yaml:", "32"], HEAD + "components:\n  text:\n    config: " + "[" * 40 + "]" * 40 + "\n")
    recipe_case("nul_in_scalar", ["r.yaml"], HEAD + "output: {name: \"a\\0b\"}\n")
    recipe_case("non_scalar_key", ["r.yaml:", "key"], HEAD + "output: {[a]: b}\n")
    recipe_case("undefined_variable", ["r.yaml:", "NINFER_BADINPUT_UNDEFINED"],
                "recipe: 1\nsources:\n  base: ${NINFER_BADINPUT_UNDEFINED}/ckpt\n")
    recipe_case("missing_source", ["nope"], "recipe: 1\nsources:\n  base: ./nope\n", status=3)
    recipe_case("no_base_source", ["r.yaml", "base"], "recipe: 1\nsources: {}\n")
    recipe_case("rule_matches_nothing", ["r.yaml:5:5", "selector 'does.not.exist' (rules[0]) matches no tensor"],
                HEAD + "rules:\n  - match: does.not.exist\n    format: bf16\n")
    recipe_case("format_wrong_for_tensor", ["r.yaml:6:13: rules[0].format: tensor 'model.norm.weight' (F32)",
                                            "needs a rank-2 shape"],
                HEAD + "rules:\n  - match: model.norm.weight\n    format: q4_g64_fp16\n")
    recipe_case("group_member_missing", ["r.yaml:5:5: groups[0]: group 'g' has no member in the checkpoint"],
                HEAD + "groups:\n  - id: g\n    members: [nope]\n")
    recipe_case("too_many_nodes", ["r.yaml:6:", "more than 200000 YAML nodes"],
                HEAD + "components:\n  text:\n    config: {x: [" + ",".join(["{}"] * 200001) + "]}\n", flags="mem")
    recipe_case("too_big", ["r.yaml", "16777216"], "recipe: 1\n" + "#" * (16 << 20) + "\n", flags="mem")
    # the checkpoint's config.json (the component's config): capped and pre-scanned like the index
    # (F14: 125 MB of "[]," used to cost 5.6 GB and 14 s, even for --dry-run)
    recipe_case("config_too_many_values", ["ckpt/config.json", "more than 262144 JSON values",
                                           "the reader's cap for a config.json"],
                HEAD, extra={"ckpt/config.json": '{"x": [' + ",".join(["0"] * 262200) + "]}"}, flags="mem")
    recipe_case("config_too_many_containers", ["ckpt/config.json", "more than 65536 JSON objects and arrays"],
                HEAD, extra={"ckpt/config.json": '{"x": [' + ",".join(["[]"] * 65600) + "]}"}, flags="mem")
    recipe_case("config_too_deep", ["ckpt/config.json", "nested deeper than 64 levels"],
                HEAD, extra={"ckpt/config.json": '{"x": ' + "[" * 65 + "]" * 65 + "}"})
    recipe_case("config_too_big", ["ckpt/config.json", "more than the reader's cap of 16777216"],
                HEAD, extra={"ckpt/config.json": "{" + " " * (16 << 20) + "}"}, flags="mem")
    recipe_case("config_malformed", ["ckpt/config.json", "line 1"],
                HEAD, extra={"ckpt/config.json": '{"hidden_size": 8,'})

    # what a recipe may read (F2): what it publishes byte for byte (resources) stays inside the
    # recipe's directory unless the command line allows more; '..', absolute paths and links out
    # are refused naming the key, line and column.  The checkpoints it names are read wherever they
    # are, by the strict readers: a directory that is no checkpoint, or a config.json linking to a
    # file that is no JSON object, is refused as such, and its bytes are not shown
    OUTSIDE = "what the recipe may read"
    RES = HEAD + "components:\n  text:\n    resources: {s: %s}\n"
    recipe_case("resource_dotdot", ["r.yaml:6:17: components.text.resources.s: 'base/../../../../../../etc/passwd'",
                                    "resolves to /etc/passwd", OUTSIDE],
                RES % "base/../../../../../../etc/passwd")
    recipe_case("resource_absolute", ["r.yaml:6:17: components.text.resources.s: '/etc/passwd' is outside", OUTSIDE],
                RES % "/etc/passwd")
    recipe_case("resource_symlink_out", ["components.text.resources.s: './tok.json' resolves to /etc/passwd", OUTSIDE],
                RES % "./tok.json", extra={"tok.json": ("symlink", "/etc/passwd")})
    recipe_case("source_not_a_checkpoint", ["r.yaml:3:3: source 'base'", "no *.safetensors file"],
                "recipe: 1\nsources:\n  base: ../../../../../../etc\n")
    recipe_case("config_symlink_not_json", ["r.yaml:3:3: source 'base'", "ckpt/config.json", "'[' or '{' expected"],
                HEAD, extra={"ckpt/config.json": ("symlink", "/etc/passwd")})
    recipe_case("variable_not_allowed", ["r.yaml:3:3: sources.base: environment variable 'HOME' is not allowed",
                                         "--allow-env HOME"], "recipe: 1\nsources:\n  base: ${HOME}/ckpt\n")

    # importance matrices, through grouped_search
    W = "model.layers.0.mlp.down_proj.weight"
    im_recipe = HEAD + "  imatrix: ./im.gguf\nrules:\n  - match: %s\n    format: q4_g64_fp16\n    method: grouped_search\n" \
                       "    with: {imatrix: imatrix}\n" % W

    def im(kvs=None, tensors=None):
        kvs = kvs if kvs is not None else [("general.type", GG_STR, "imatrix"), ("imatrix.chunk_count", GG_U32, 4)]
        return gguf(kvs, tensors if tensors is not None else [])

    def imcase(name, needles, data, status=1):
        if isinstance(needles, str):
            needles = [needles]
        recipe_case("imatrix_" + name, ["im.gguf"] + needles, im_recipe, status, {"im.gguf": data})

    good = [(W + ".in_sum2", [64], 0, f32(*[1.0] * 64)), (W + ".counts", [1], 0, f32(4.0))]
    imcase("not_gguf", "neither GGUF nor a legacy llama-imatrix file", b"not an imatrix at all, just text\n")
    imcase("truncated", "truncated", im(tensors=good)[:-10])
    imcase("no_entries", "no T.in_sum2 tensors", im(tensors=[]))
    # another tensor is ignored (llama.cpp's quantize does), but a T.counts without its T.in_sum2 is not
    imcase("counts_orphan", "'stray.weight.counts' has no 'stray.weight.in_sum2'",
           im(tensors=good + [("stray.weight.counts", [1], 0, f32(1))]))
    imcase("counts_missing", "has no", im(tensors=good[:1]))
    imcase("counts_two_values", "counts", im(tensors=[good[0], (W + ".counts", [2], 0, f32(4.0, 4.0))]))
    imcase("negative_value", ["in_sum2", "non-negative"], im(tensors=[(W + ".in_sum2", [64], 0, f32(*[-1.0] * 64)), good[1]]))
    imcase("nan_value", ["in_sum2", "finite"], im(tensors=[(W + ".in_sum2", [64], 0, f32(*[float("nan")] * 64)), good[1]]))
    imcase("negative_count", ["counts", "non-negative"], im(tensors=[good[0], (W + ".counts", [1], 0, f32(-1.0))]))
    imcase("in_sum2_f16", "must be F32", im(tensors=[(W + ".in_sum2", [64], 1, bytes(128)), good[1]]))
    # a matrix is one row per expert (docs/names.md), with one count per row: one count is refused
    imcase("in_sum2_matrix", ["holds 1 values; expected 2", "one per row of"], im(tensors=[(W + ".in_sum2", [32, 2], 0, f32(*[1.0] * 64)), good[1]]))
    # (the planner names the recipe line of the `with`, the tensor and the imatrix file)
    recipe_case("imatrix_length_mismatch",
                ["r.yaml:9:11: rules[0].with: tensor '%s' (BF16)" % W,
                 "im.gguf: imatrix entry '%s' has 32 values but tensor '%s' has 64 input columns" % (W, W)],
                im_recipe, 1,
                {"im.gguf": im(tensors=[(W + ".in_sum2", [32], 0, f32(*[1.0] * 32)), good[1]])})
    # compressed imatrices: a FIFO must not block, a "zip bomb" must not be inflated
    zrecipe = im_recipe.replace("./im.gguf", "./im.gguf.zst")
    recipe_case("imatrix_zst_fifo", ["im.gguf.zst", "not a regular file"], zrecipe, 1, {"im.gguf.zst": None})
    if shutil.which("zstd"):
        import subprocess
        bomb = subprocess.run(["zstd", "-1", "-q", "-c"], input=bytes(256 << 20), stdout=subprocess.PIPE,
                              check=True).stdout
        recipe_case("imatrix_zst_bomb", ["im.gguf.zst", "decompresses to more than 16777216 bytes"], zrecipe, 1,
                    {"im.gguf.zst": bomb}, flags="mem")
    # the legacy format (docs/security.md 2.5): int32 entries, then name, ncall, nval, values
    def legacy(entries, trailer=b""):
        b = struct.pack("<i", len(entries))
        for name, ncall, vals in entries:
            b += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", ncall, len(vals)) + f32(*vals)
        return b + trailer
    ok64 = [1.0] * 64
    imcase("legacy_truncated", "entry 0 '%s' at byte 4: 64 values do not fit" % W, legacy([(W, 1, ok64)])[:-6])
    imcase("legacy_name_length", "name length -5 is not 1..4096 bytes",
           struct.pack("<ii", 1, -5) + bytes(32))
    imcase("legacy_negative", "value 3 (byte %d) is -1" % (4 + 4 + len(W) + 8 + 12), legacy([(W, 2, [1.0] * 3 + [-1.0] + [1.0] * 60)]))
    imcase("legacy_duplicate", "appears twice", legacy([(W, 1, ok64), (W, 1, ok64)]))
    imcase("legacy_trailer", "are not its trailer", legacy([(W, 1, ok64)], struct.pack("<i", 7)))
    imcase("legacy_after_dataset", "3 bytes after the dataset's name",
           legacy([(W, 1, ok64)], struct.pack("<ii", 7, 4) + b"wikixyz"))
    imcase("legacy_entries_huge", "2147483647 entries do not fit", struct.pack("<i", 2**31 - 1) + bytes(64))
    imcase("array_count_huge", "exceeds the cap",
           gguf_raw(gkv("general.type", GG_STR, "imatrix") + gstr("imatrix.datasets") + struct.pack("<II", GG_ARR, GG_STR) +
                    q(1 << 40), 2, b"", 0))


# ================================================================ quick mode (convert SOURCE)
def quick_cases():
    def qcase(name, needles, fname, data, status=1):
        case("quick_" + name, status, [fname] + (needles if isinstance(needles, list) else [needles]), "ninfer-convert",
             [fname, "-o", "{out}.ninfer", "--format", "q8_g32_fp16", "-j", "1", "--progress=never"], {fname: data})
    qcase("gguf_offset_overlap", ["tensor 1 'b'", "overlaps tensor 'a'"], "bad.gguf",
          gguf_raw(gkv(*ARCH), 1, ginfo("a", [8], 0, 0) + ginfo("b", [8], 0, 0), 2, f32(*range(8)) * 2))
    qcase("st_offsets_hole", ["tensor 'b'", "hole"], "bad.safetensors",
          st_file({"a": st_entry(), "b": st_entry(off=(12, 20))}, bytes(20)))
    qcase("st_truncated", ["header length"], "bad.safetensors", st_file({"a": st_entry()}, bytes(8))[:20])
    qcase("empty_file", ["empty"], "empty.safetensors", b"")
    # an F64 value beyond binary32 is named as stored, not as the infinity it would round to (M6)
    qcase("f64_overflow", ["tensor 'w'", "row 1 column 0", "source value 1e+300 (F64) overflows binary32"],
          "bad.safetensors", st_file({"w": st_entry("F64", (2, 32), (0, 512))},
                                     struct.pack("<32d", *[0.5] * 32) + struct.pack("<32d", 1e300, *[0.5] * 31)))

    # GGUF block types read as values (docs/formats.md 8.5): blocks that no format holds exactly
    # are refused by tensor, row and block, with the way forward (--requantize)
    def gblocks(name, gt, ne, data):
        return gguf([ARCH], [(name, ne, gt, data)])
    # MXFP4 [128, 64]: row 5 block 1 under exponent 0 with a nonzero code, the largest 2^0
    mx = bytearray((bytes([127]) + bytes([0x22] * 16)) * 2 * 128)
    mx[17 * (2 * 5 + 1)] = 0
    qcase("gguf_mxfp4_octaves", ["tensor 'w'", "row 5 block 1: scale 2^-127 lies more than 17 octaves", "--requantize"],
          "bad.gguf", gblocks("w", 39, [64, 128], bytes(mx)))
    # NVFP4 [128, 64]: row 2's sub-block 3 scale 0xFF (240 to ggml) has no E4M3 word
    nv = bytearray((bytes([0x38] * 4) + bytes([0x11] * 32)) * 128)
    nv[36 * 2 + 3] = 0xFF
    qcase("gguf_nvfp4_scale_ff", ["w", "row 2 block 0 sub-block 3 (cols 48..63): UE4M3 scale 0xFF", "--requantize"],
          "bad.gguf",
          gblocks("w", 40, [64, 128], bytes(nv)))
    # Q8_1 with a code -128: q8 does not hold it, and no other format does
    q81 = bytearray((struct.pack("<HH", 0x3C00, 0) + bytes(32)) * 2)
    q81[4 + 7] = 0x80
    qcase("gguf_q8_1_minus128", ["tensor 'w' (Q8_1): stored as GGUF Q8_1 blocks in", "row 0 col 7 (block 0): Q8_1 code 0x80 is -128"],
          "bad.gguf", gblocks("w", 9, [32, 2], bytes(q81)))
    # PyTorch checkpoints (docs/security.md 2.6), laid out as torch.save writes them
    # (tests/cli/gen_torch.py): each refused naming file, tensor or byte
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
    import collections
    import io
    import tempfile
    import zipfile
    import gen_torch as gt
    vals = [float(i % 9) for i in range(256)]

    def torch_bytes(state, edit=None):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.bin")
            gt.save(p, state)
            b = open(p, "rb").read()
        if edit:
            zin = zipfile.ZipFile(io.BytesIO(b))
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as z:
                for i in zin.infolist():
                    data = edit(i.filename, zin.read(i))
                    if data is not None:
                        z.writestr(i, data)
            b = out.getvalue()
        return b
    st = gt.Storage("0", "FloatStorage", vals)
    one = collections.OrderedDict([("w", gt.Tensor(st, 0, (16, 16), (16, 1)))])
    qcase("torch_storage_missing", ["tensor 'w': its storage '0' is not in the archive"], "bad.bin",
          torch_bytes(one, lambda n, d: None if n.endswith("/data/0") else d))
    qcase("torch_view_leaves", ["tensor 'w': its view (offset 250, 16 elements) leaves its storage"], "bad.bin",
          torch_bytes(collections.OrderedDict([("w", gt.Tensor(st, 250, (4, 4), (4, 1)))])))
    qcase("torch_strided_leaves", ["tensor 'w': its strided view (offset 0, last element +262) leaves its storage"],
          "bad.bin", torch_bytes(collections.OrderedDict([("w", gt.Tensor(st, 0, (8, 16), (1, 17)))])))
    small = gt.Storage("0", "FloatStorage", vals[:16])
    qcase("torch_storage_small", ["tensor 'w': its view (offset 0, 256 elements) leaves its storage '0' of 16"],
          "bad.bin", torch_bytes(collections.OrderedDict([("w", gt.Tensor(small, 0, (16, 16), (16, 1)))])))
    half = gt.Storage("0", "HalfStorage", vals + vals)
    qcase("torch_storage_two_classes", ["tensor 'v': storage '0' is 256 F32 elements for tensor 'w'", "one storage has one class"],
          "bad.bin", torch_bytes(collections.OrderedDict([("w", gt.Tensor(st, 0, (16, 16), (16, 1))),
                                                          ("v", gt.Tensor(half, 0, (16, 32), (32, 1)))])))
    qcase("torch_byteorder_big", ["bad.bin: member archive/byteorder says the storages are not little-endian"], "bad.bin",
          torch_bytes(one, lambda n, d: b"big" if n.endswith("/byteorder") else d))
    qcase("torch_local_name", ["bad.bin: zip byte", "the local header names another member than the directory does"],
          "bad.bin", torch_bytes(one).replace(b"archive/data/0", b"archive/data/X", 1))  # the local header's
    def overlapped():
        """archive/data/1's local header inside archive/data/0's bytes, where the directory points."""
        import struct
        inner = struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, 0, 0, 0x21, 0, 0, 0, 14, 0) + b"archive/data/1"
        b = bytearray(torch_bytes(one, lambda n, d: d + inner if n.endswith("/data/0") else d))
        z = zipfile.ZipFile(io.BytesIO(bytes(b)))
        lo0 = z.getinfo("archive/data/0").header_offset
        at = lo0 + 30 + 14 + 1024
        # a directory entry for archive/data/1 (stored, empty) pointing there, before the end record
        cd = int.from_bytes(b[-22 + 16:-22 + 20], "little")
        entry = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, 0, 0, 0x21, 0, 0, 0, 14, 0, 0, 0, 0, 0,
                            at) + b"archive/data/1"
        n = int.from_bytes(b[-22 + 10:-22 + 12], "little")
        size = int.from_bytes(b[-22 + 12:-22 + 16], "little")
        end = bytearray(b[-22:])
        end[8:10] = end[10:12] = (n + 1).to_bytes(2, "little")
        end[12:16] = (size + len(entry)).to_bytes(4, "little")
        return bytes(b[:cd + size]) + entry + bytes(end)
    qcase("torch_members_overlap", ["bad.bin: zip byte", "overlap"], "bad.bin", overlapped())
    # a state dict whose dicts share one dict through the memo: {a: {x: d, y: d}}
    qcase("torch_shared_dict", ["data.pkl: dict 'a.y' is reached a second time"], "bad.bin",
          torch_bytes(one, lambda n, d: b"\x80\x02}(X\x01\x00\x00\x00a}(X\x01\x00\x00\x00x}q\x00X\x01\x00\x00\x00yh\x00uu."
                      if n.endswith("data.pkl") else d))

    def deflated(edit):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.bin")
            gt.save(p, one, deflate=True)
            b = bytearray(open(p, "rb").read())
        info = zipfile.ZipFile(io.BytesIO(bytes(b))).getinfo("archive/data/0")
        lo = info.header_offset
        data = lo + 30 + int.from_bytes(b[lo + 26:lo + 28], "little") + int.from_bytes(b[lo + 28:lo + 30], "little")
        edit(b, data, info)
        return bytes(b)

    def corrupt(b, data, info):
        b[data:data + 8] = b"\xff" * 8

    def bad_crc(b, data, info):
        p = b.index(b"PK\x01\x02")
        while b[p + 46:p + 46 + 14] != b"archive/data/0":
            p = b.index(b"PK\x01\x02", p + 4)
        b[p + 16:p + 20] = (info.CRC ^ 1).to_bytes(4, "little")
    qcase("torch_deflate_corrupt", ["bad.bin: member archive/data/0: corrupt deflate data"], "bad.bin", deflated(corrupt))
    qcase("torch_deflate_crc", ["bad.bin: member archive/data/0: CRC-32 differs from the directory's"], "bad.bin",
          deflated(bad_crc))

    def legacy(state, **kw):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.bin")
            gt.save_legacy(p, state, **kw)
            return open(p, "rb").read()
    lone = collections.OrderedDict([("w", gt.LegacyTensor(st, 0, (16, 16), (16, 1)))])
    qcase("torch_legacy_big_endian", ["bad.bin: sys_info pickle at byte 21: sys_info does not say little_endian: True"],
          "bad.bin", legacy(lone, little=False))
    qcase("torch_legacy_truncated", ["bad.bin: byte", "storage '0' says 256 F32 elements, more than the file holds"],
          "bad.bin", legacy(lone)[:-100])
    qcase("torch_legacy_trailing", ["bad.bin: byte", "3 bytes after the last storage"], "bad.bin",
          legacy(lone, tail=b"abc"))
    lview = gt.LegacyTensor(st, 0, (16, 16), (16, 1))
    lview.view = ("1", 0, 256)
    qcase("torch_legacy_view", ["state dict pickle at byte", "a storage that is a view of another storage"], "bad.bin",
          legacy(collections.OrderedDict([("w", lview)])))
    qcase("torch_class_contradicts", ["tensor 'w'", "the storage class contradicts its bytes"], "bad.bin",
          torch_bytes(one, lambda n, d: d.replace(b"torch\nFloatStorage", b"torch\nDoubleStorage")
                      if n.endswith("data.pkl") else d))
    qcase("torch_global", ["data.pkl: byte", "global not allowed", "builtins.eval"], "bad.bin",
          torch_bytes(one, lambda n, d: d.replace(b"collections\nOrderedDict", b"builtins\neval")
                      if n.endswith("data.pkl") else d))
    qcase("torch_truncated", ["bad.bin: zip byte", "no end of central directory record"], "bad.bin",
          torch_bytes(one)[:300])
    # MXFP4 of 16 rows: no nvfp4 tiles
    qcase("gguf_mxfp4_rows", ["tensor 'w' (MXFP4)", "this tensor has 16 rows of 64"], "bad.gguf",
          gblocks("w", 39, [64, 16], (bytes([127]) + bytes(16)) * 32))


# ================================================================ trust boundaries (artifacts and their values)
# GGUF blocks whose binary16 scale is NaN or infinite (docs/formats.md 8.1): ggml's
# ggml_validate_row_data refuses them, so do the import and ninfer-verify.
def art_cases():
    q4k = open(os.path.join(DATA, "gguf", "q4_k.qbytes"), "rb").read()[:144]
    bad_dmin = q4k[:2] + struct.pack("<H", 0x7E00) + q4k[4:]          # block 0: dmin NaN
    recipe = ("recipe: 1\nsources:\n  base: bad.gguf\ndefaults: {format: fp32}\nrules:\n  - match: blk.0.w\n"
              "    format: gguf_q4_k\n    method: import_encoded\n")
    case("art_gguf_import_nan_dmin", 1, ["blk.0.w", "row 1 block 0", "Q4_K scale dmin 0x7E00 is NaN, not finite"],
         "ninfer-convert", ["-r", "r.yaml", "-o", "{out}.ninfer", "-j", "1", "--progress=never"],
         {"bad.gguf": gguf([ARCH], [("blk.0.w", [256, 2], 12, q4k + bad_dmin)]), "r.yaml": recipe})
    # the same block in an artifact (written by hand: our writer refuses it): a words problem
    payload = q4k + bad_dmin
    root = {"components": {"text": {"config": {}}},
            "objects": [{"id": "blk.0.w", "shape": [2, 256], "format": "gguf_q4_k", "layout": "gguf_blocks_v1",
                         "offset": 0, "bytes": 288, "kind": "tensor"}],
            "bindings": {"blk.0.w": {"object": "blk.0.w"}}, "uses": [], "metadata": {}, "provenance": {},
            "files": [{"path": None, "payload_bytes": 288}]}
    case("art_gguf_verify_nan_dmin", 1, ["bad.ninfer", "object 'blk.0.w': words: row 1 block 0",
                                         "Q4_K scale dmin 0x7e00 at byte offset 146 is NaN, not finite"],
         "ninfer-verify", ["bad.ninfer"], {"bad.ninfer": entry_bytes(root, payload)})



# ================================================================ quantized checkpoints (docs/dialects.md, "Bad input")
# Small checkpoints of every dialect (the byte layouts of tests/cli/gen_dialects.py) with one
# thing wrong each, converted in quick mode with --requantize (every quantized weight's values
# are read: the scan's checks when the plan is made, the codes' and block scales' as they are
# read) and, for the weights a format holds exactly, without it (the import reads the words).
def qst(tensors):
    """a safetensors file of (name, dtype, shape, raw bytes) tensors, laid out in order."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = st_entry(dtype, shape, (len(data), len(data) + len(raw)))
        data += raw
    return st_file(header, data)


def le32s(*words):
    return struct.pack("<%dI" % len(words), *words)


def le16s(*words):
    return struct.pack("<%dH" % len(words), *words)


QF = "ckpt/model.safetensors"
QCFG = "ckpt/config.json"
QHF = "ckpt/hf_quant_config.json"
QP = "model.layers.0.mlp.down_proj"  # the quantized module of every case
QW = QP + ".weight"


def qconfig(q):
    return json.dumps({"model_type": "dialect-test", "quantization_config": q})


# DeepSeek-V3 (quant_method fp8): E4M3 codes [4, 8] in 2x4 blocks, F32 scales [2, 2]
DS_Q = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [2, 4]}
DS_CODES = bytes((0x28 + 3 * i) % 0x7E for i in range(32))


def ds_tensors(scale=le32s(*[0x3F000000] * 4), scale_dtype="F32", scale_shape=(2, 2), codes=DS_CODES,
               codes_dtype="F8_E4M3"):
    ts = [(QW, codes_dtype, [4, 8], codes)]
    if scale is not None:
        ts.append((QW + "_scale_inv", scale_dtype, list(scale_shape), scale))
    return ts + [("model.norm.weight", "F32", [4], f32(1, 1, 1, 1))]


# compressed-tensors pack-quantized int4, group 8, asymmetric: codes I32 [4, 2] (K = 16),
# BF16 scales [4, 2], zero points packed along the rows I32 [1, 2], weight_shape I64 [2]
def ct_int_q(weights=None, **extra):
    w = {"num_bits": 4, "type": "int", "symmetric": False, "strategy": "group", "group_size": 8}
    w.update(weights or {})
    q = {"quant_method": "compressed-tensors", "format": "pack-quantized",
         "config_groups": {"group_0": {"targets": ["Linear"], "weights": w}}, "ignore": ["lm_head"]}
    q.update(extra)
    return q


CT_SCALES = [0x3C00, 0x3C80, 0x3D00, 0x3D80, 0x3E00, 0x3E80, 0x3F00, 0x3F80]  # BF16, row-major [4, 2]


def ct_int_tensors(scales=CT_SCALES, zero=le32s(0x00008888, 0x00009999), zero_dtype="I32", zero_shape=(1, 2),
                   shape=(4, 16), packed_cols=2, scale_shape=(4, 2), with_shape=True):
    ts = [(QP + ".weight_packed", "I32", [4, packed_cols], le32s(*[0x89ABCDEF] * (4 * packed_cols)))]
    if scales is not None:
        ts.append((QP + ".weight_scale", "BF16", list(scale_shape), le16s(*scales)))
    if zero is not None:
        ts.append((QP + ".weight_zero_point", zero_dtype, list(zero_shape), zero))
    if with_shape:
        ts.append((QP + ".weight_shape", "I64", [2], struct.pack("<2q", *shape)))
    return ts


# NVFP4, ModelOpt (weight U8 + weight_scale_2, hf_quant_config.json) and compressed-tensors
# (weight_packed U8 + weight_global_scale): [128, 64] so that the nvfp4 format holds it exactly
NV_N, NV_K = 128, 64
NV_CODES = bytes((17 * i + 3) & 0xFF for i in range(NV_N * NV_K // 2))
NV_SCALES = bytes(0x30 + (i % 16) for i in range(NV_N * NV_K // 16))
MO_HF = json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                                      "exclude_modules": ["lm_head"]}})
CT_NV_Q = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {
    "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "symmetric": True,
                                                  "strategy": "tensor_group", "group_size": 16}}}}


def nv_tensors(modelopt, scales=NV_SCALES, global_word=None, with_global=True):
    codes = QW if modelopt else QP + ".weight_packed"
    ts = [(codes, "U8", [NV_N, NV_K // 2], NV_CODES), (QP + ".weight_scale", "F8_E4M3", [NV_N, NV_K // 16], scales)]
    if with_global:
        if modelopt:
            ts.append((QP + ".weight_scale_2", "F32", [], le32s(0x3B800000 if global_word is None else global_word)))
        else:
            ts.append((QP + ".weight_global_scale", "F32", [1], le32s(0x44800000 if global_word is None else global_word)))
    return ts


# compressed-tensors FP8 per channel (F32 [4, 1]): imported exactly into fp8_e4m3fn_row_bf16
CT_FP8_Q = {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {
    "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                                  "strategy": "channel"}}}}
CT_FP8_CODES = bytes((0x20 + 5 * i) % 0x7E for i in range(64))


def ct_fp8_tensors(scale=le32s(0x3E800000, 0x3F000000, 0x3F800000, 0x40000000), codes=CT_FP8_CODES):
    return [(QW, "F8_E4M3", [4, 16], codes), (QP + ".weight_scale", "F32", [4, 1], scale)]


def with_byte(b, i, v):
    b = bytearray(b)
    b[i] = v
    return bytes(b)


def dialect_cases():
    def dcase(name, needles, tensors, config=None, hf=None, requantize=True, extra=None):
        files = {QF: qst(tensors)} if tensors is not None else {}
        if config is not None:
            files[QCFG] = config if isinstance(config, str) else qconfig(config)
        if hf is not None:
            files[QHF] = hf
        files.update(extra or {})
        args = ["ckpt", "-o", "{out}.ninfer", "--format", "fp32"] + (["--requantize"] if requantize else []) + \
               ["-j", "1", "--progress=never"]
        case("dialect_" + name, 1, needles, "ninfer-convert", args, files)

    SI = "tensor '%s_scale_inv'" % QW
    # ---- DeepSeek FP8: the scale
    dcase("ds_missing_scale", [QF, "tensor '%s'" % QW, "%s.weight_scale_inv is in no shard" % QP, QCFG],
          ds_tensors(scale=None), DS_Q)
    dcase("ds_scale_shape", [QF, SI, "shape [3,2] is not the [2,2] scales of block quantization"],
          ds_tensors(scale=le32s(*[0x3F000000] * 6), scale_shape=(3, 2)), DS_Q)
    dcase("ds_scale_dtype", [QF, SI, "dtype I32", "must be F32, BF16 or F16"],
          ds_tensors(scale=le32s(*[1] * 4), scale_dtype="I32"), DS_Q)
    blk = "block (1, 0) (rows 2..3, cols 0..3)"
    for what, word, why in (("nan", 0x7FC00000, "0x7FC00000 is NaN"), ("inf", 0x7F800000, "0x7F800000 is infinite"),
                            ("zero", 0x00000000, "0x00000000 is zero"), ("neg0", 0x80000000, "0x80000000 is -0"),
                            ("negative", 0xBF000000, "0xBF000000 is negative")):
        dcase("ds_scale_" + what, [QF, SI, blk, "scale " + why, "must be finite and > 0"],
              ds_tensors(scale=le32s(0x3F000000, 0x3F000000, word, 0x3F000000)), DS_Q)
    # ---- compressed-tensors int4 group 8: BF16 group scales (scale (2, 1) covers row 2, cols 8..15)
    grp = "block (2, 1) (rows 2..2, cols 8..15)"
    for what, word, why in (("nan", 0x7FC0, "0x7FC0 is NaN"), ("inf", 0xFF80, "0xFF80 is infinite"),
                            ("zero", 0x0000, "0x0000 is zero"), ("neg0", 0x8000, "0x8000 is -0"),
                            ("negative", 0xBF80, "0xBF80 is negative")):
        sc = list(CT_SCALES)
        sc[5] = word
        dcase("ct_group_scale_" + what, [QF, "tensor '%s.weight_scale'" % QP, grp, "scale " + why,
                                         "compressed_tensors_int scale must be finite and > 0"],
              ct_int_tensors(scales=sc), ct_int_q())
    # ---- NVFP4 E4M3 block scales, read as values (requantize) and as words (import)
    for mo in (True, False):
        tag = "modelopt" if mo else "ct"
        cfg = dict(hf=MO_HF) if mo else dict(config=CT_NV_Q)
        dname = "modelopt_nvfp4" if mo else "compressed_tensors_nvfp4"
        # block (37, 2): row 37, cols 32..47
        dcase("%s_nvfp4_scale_zero" % tag, [QF, "tensor '%s.weight_scale'" % QP, "block (37, 2) (rows 37..37, cols 32..47)",
                                            "scale 0x00 is zero", "a %s scale must be finite and > 0" % dname],
              nv_tensors(mo, scales=with_byte(NV_SCALES, 37 * 4 + 2, 0x00)), **cfg)
        dcase("%s_nvfp4_scale_nan" % tag, [QF, "tensor '%s.weight_scale'" % QP, "block (37, 2)", "scale 0x7F is NaN"],
              nv_tensors(mo, scales=with_byte(NV_SCALES, 37 * 4 + 2, 0x7F)), **cfg)
        dcase("%s_nvfp4_scale_negative" % tag, [QF, "tensor '%s.weight_scale'" % QP, "block (37, 2)",
                                                "scale 0xB8 is negative"],
              nv_tensors(mo, scales=with_byte(NV_SCALES, 37 * 4 + 2, 0xB8)), **cfg)
        # the import (nvfp4 holds these words): a NaN or -0 block scale word, named with the
        # checkpoint.  (A 0x00 block scale, refused above, is imported: the nvfp4 contract admits it.)
        dcase("%s_nvfp4_import_scale_nan" % tag, ["ckpt: %s.weight_scale: row 37 group 2 (cols 32..47)" % QP, "NVFP4 scale 0x7F is NaN"],
              nv_tensors(mo, scales=with_byte(NV_SCALES, 37 * 4 + 2, 0x7F)), requantize=False, **cfg)
        dcase("%s_nvfp4_import_scale_neg0" % tag, ["ckpt: %s.weight_scale: row 37 group 2 (cols 32..47)" % QP, "NVFP4 scale 0x80 is -0"],
              nv_tensors(mo, scales=with_byte(NV_SCALES, 37 * 4 + 2, 0x80)), requantize=False, **cfg)
    # ---- global scales (read when the plan is made)
    G2, GG = "tensor '%s.weight_scale_2'" % QP, "tensor '%s.weight_global_scale'" % QP
    for what, word, why in (("nan", 0x7FC00000, "NaN"), ("inf", 0x7F800000, "infinite"), ("zero", 0, "zero"),
                            ("neg0", 0x80000000, "zero"), ("negative", 0xC0000000, "negative")):
        dcase("modelopt_scale_2_" + what, [QF, G2, "weight_scale_2 0x%08X is %s" % (word, why), "finite and > 0"],
              nv_tensors(True, global_word=word), hf=MO_HF)
        dcase("ct_global_scale_" + what, [QF, GG, "weight_global_scale 0x%08X is %s" % (word, why), "finite and > 0"],
              nv_tensors(False, global_word=word), CT_NV_Q)
    dcase("modelopt_scale_2_missing", [QF, "tensor '%s'" % QW, "%s.weight_scale_2 is in no shard" % QP],
          nv_tensors(True, with_global=False), hf=MO_HF)
    dcase("ct_global_scale_missing", [QF, "tensor '%s.weight_packed'" % QP, "%s.weight_global_scale is in no shard" % QP],
          nv_tensors(False, with_global=False), CT_NV_Q)
    dcase("modelopt_scale_2_dtype", [QF, G2, "dtype BF16", "weight_scale_2 must be F32"],
          [t if not t[0].endswith("_scale_2") else (t[0], "BF16", [2], le16s(0x3F80, 0x3F80)) for t in nv_tensors(True)],
          hf=MO_HF)
    dcase("ct_global_scale_shape", [QF, GG, "shape [2]", "weight_global_scale is one value"],
          [t if not t[0].endswith("_global_scale") else (t[0], "F32", [2], le32s(0x44800000, 0x44800000))
           for t in nv_tensors(False)], CT_NV_Q)
    dcase("nvfp4_scale_dtype", [QF, "tensor '%s.weight_scale'" % QP, "dtype F32", "NVFP4 block scales are F8_E4M3"],
          [t if not t[0].endswith(".weight_scale") else (t[0], "F32", [NV_N, NV_K // 16], bytes(4 * len(NV_SCALES)))
           for t in nv_tensors(True)], hf=MO_HF)
    # ---- FP8 codes: NaN (E4M3 0x7F, 0xFF) and infinite (E5M2 0x7C), named with row and column
    dcase("ds_code_nan", [QF, "tensor '%s'" % QW, "row 3 col 5", "E4M3 code 0x7F is NaN"],
          ds_tensors(codes=with_byte(DS_CODES, 3 * 8 + 5, 0x7F)), DS_Q)
    dcase("ds_code_negative_nan", [QF, "tensor '%s'" % QW, "row 0 col 7", "E4M3 code 0xFF is NaN"],
          ds_tensors(codes=with_byte(DS_CODES, 7, 0xFF)), DS_Q)
    dcase("ds_code_e5m2_inf", [QF, "tensor '%s'" % QW, "row 2 col 1", "E5M2 code 0xFC is infinite"],
          ds_tensors(codes=with_byte(bytes(c & 0x7B for c in DS_CODES), 2 * 8 + 1, 0xFC), codes_dtype="F8_E5M2"),
          dict(DS_Q, fmt="e5m2"))
    dcase("ct_fp8_code_nan", [QF, "tensor '%s'" % QW, "row 1 col 9", "E4M3 code 0x7F is NaN"],
          ct_fp8_tensors(codes=with_byte(CT_FP8_CODES, 16 + 9, 0x7F)), CT_FP8_Q)
    # the same through the import into fp8_e4m3fn_row_bf16, and its per-row scales (named with
    # the checkpoint)
    dcase("ct_fp8_import_code_nan", ["ckpt: %s: row 1 col 9" % QW, "E4M3FN code 0x7F is NaN"],
          ct_fp8_tensors(codes=with_byte(CT_FP8_CODES, 16 + 9, 0x7F)), CT_FP8_Q, requantize=False)
    dcase("ct_fp8_import_scale_nan", ["ckpt: %s.weight_scale: row 2" % QP, "F32 scale 0x7FC00000 is NaN"],
          ct_fp8_tensors(scale=le32s(0x3E800000, 0x3F000000, 0x7FC00000, 0x40000000)), CT_FP8_Q, requantize=False)
    dcase("ct_fp8_import_scale_negative", ["ckpt: %s.weight_scale: row 3" % QP, "F32 scale 0xC0000000 is negative"],
          ct_fp8_tensors(scale=le32s(0x3E800000, 0x3F000000, 0x3F800000, 0xC0000000)), CT_FP8_Q, requantize=False)
    # ModelOpt FP8 per tensor: the one scale read as a value (requantize) and by the import when
    # the plan is made (named with the checkpoint; quick mode's rule positions are its own)
    mo8 = [(QW, "F8_E4M3", [4, 16], CT_FP8_CODES), (QP + ".weight_scale", "F32", [], le32s(0x7FC00000))]
    mo8_hf = json.dumps({"quantization": {"quant_algo": "FP8"}})
    dcase("modelopt_fp8_scale_nan", [QF, "tensor '%s.weight_scale'" % QP, "block (0, 0) (rows 0..3, cols 0..15)",
                                     "scale 0x7FC00000 is NaN"], mo8, hf=mo8_hf)
    dcase("modelopt_fp8_import_scale_nan", ["tensor '%s' (F8_E4M3)" % QW,
                                            "ckpt: %s.weight_scale: F32 scale 0x7FC00000 is NaN" % QP],
          mo8, hf=mo8_hf, requantize=False)
    dcase("ct_fp8_scale_zero", [QF, "tensor '%s.weight_scale'" % QP, "block (1, 0) (rows 1..1, cols 0..15)",
                                "scale 0x00000000 is zero"],
          ct_fp8_tensors(scale=le32s(0x3E800000, 0, 0x3F800000, 0x40000000)), CT_FP8_Q)
    # ---- a companion without its weight; a weight without its companions
    dcase("companion_alone", [QF, SI, "a companion of the weight '%s', which is in no shard" % QW],
          [(QW + "_scale_inv", "F32", [2, 2], le32s(*[0x3F000000] * 4)), ("model.norm.weight", "F32", [4], f32(1, 1, 1, 1))],
          DS_Q)
    dcase("companion_alone_undeclared", [QF, "tensor '%s.weight_zero_point'" % QP,
                                         "a companion of the weight '%s', which is in no shard" % QW],
          [(QP + ".weight_zero_point", "I32", [1, 2], le32s(0, 0))])
    # a companion of a weight whose dtype no dialect's codes have: the weight is there, but not codes
    dcase("bf16_weight_with_scale", [QF, "tensor '%s.weight_scale'" % QP, "a companion of the weight '%s'" % QW,
                                     "BF16", "no dialect's codes"],
          [(QW, "BF16", [4, 8], bytes(64)), (QP + ".weight_scale", "F32", [], le32s(0x3F800000))])
    dcase("f32_weight_with_scale_inv", [QF, SI, "a companion of the weight '%s'" % QW, "F32", "no dialect's codes"],
          [(QW, "F32", [4, 8], bytes(128)), (QW + "_scale_inv", "F32", [2, 2], le32s(*[0x3F000000] * 4))], DS_Q)
    dcase("packed_without_scale", [QF, "tensor '%s.weight_packed'" % QP, "packed codes without %s.weight_scale" % QP],
          ct_int_tensors(scales=None, zero=None, with_shape=False), ct_int_q())
    dcase("asymmetric_without_zero_point", [QF, "tensor '%s.weight_packed'" % QP, "group 'group_0' of " + QCFG,
                                            "declares asymmetric weights", "%s.weight_zero_point is in no shard" % QP],
          ct_int_tensors(zero=None), ct_int_q())
    # ---- sharded: the scale's shard is missing
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    idx = json.dumps({"metadata": {}, "weight_map": {QW: s1, "model.norm.weight": s1, QW + "_scale_inv": s2}})
    dcase("sharded_scale_shard_missing", ["ckpt/model.safetensors.index.json", s2, "missing"],
          None, DS_Q, extra={"ckpt/model.safetensors.index.json": idx,
                             "ckpt/" + s1: qst([t for t in ds_tensors() if not t[0].endswith("_scale_inv")])})
    # the scale in the second shard, with the wrong shape: named in its own file
    dcase("sharded_scale_shape", ["ckpt/" + s2, SI, "shape [1,2] is not the [2,2] scales"],
          None, DS_Q, extra={"ckpt/model.safetensors.index.json": idx,
                             "ckpt/" + s1: qst([t for t in ds_tensors() if not t[0].endswith("_scale_inv")]),
                             "ckpt/" + s2: qst([(QW + "_scale_inv", "F32", [1, 2], le32s(0x3F000000, 0x3F000000))])})
    dcase("sharded_scale_nan", ["ckpt/" + s2, SI, "block (0, 1) (rows 0..1, cols 4..7)", "scale 0x7FC00001 is NaN"],
          None, DS_Q, extra={"ckpt/model.safetensors.index.json": idx,
                             "ckpt/" + s1: qst([t for t in ds_tensors() if not t[0].endswith("_scale_inv")]),
                             "ckpt/" + s2: qst([(QW + "_scale_inv", "F32", [2, 2],
                                                 le32s(0x3F000000, 0x7FC00001, 0x3F000000, 0x3F000000))])})
    # ---- conflicting markers
    dcase("scale_and_scale_inv", [QF, SI, "'%s.weight_scale' scales the same weight" % QP, "conflicting dialect markers"],
          ds_tensors() + [(QP + ".weight_scale", "F32", [], le32s(0x3F000000))])
    dcase("weight_and_weight_packed", [QF, "tensor '%s'" % QW, "'%s.weight_packed' holds the codes of the same weight" % QP],
          [(QW, "U8", [NV_N, NV_K // 2], NV_CODES)] + nv_tensors(False), CT_NV_Q)
    dcase("ct_declared_scale_inv", [QF, SI, "the companions of a deepseek_fp8 weight", QCFG,
                                    "compressed-tensors", "conflicting dialect markers"],
          ds_tensors(), ct_int_q())
    dcase("deepseek_declared_weight_scale", [QF, "tensor '%s.weight_scale'" % QP, "compressed_tensors_fp8 weight", QCFG,
                                             "conflicting dialect markers"],
          ct_fp8_tensors(), DS_Q)
    dcase("hf_nvfp4_config_fp8", [QHF, QCFG, "ModelOpt's declaration", "fp8, block-scaled", "conflicting dialect markers"],
          nv_tensors(True), DS_Q, hf=MO_HF)
    dcase("modelopt_algos_differ", [QHF, "quantization.quant_algo", "NVFP4, but the other ModelOpt declaration says FP8",
                                    "conflicting dialect markers"],
          nv_tensors(True), {"quant_method": "modelopt", "quant_algo": "FP8"}, hf=MO_HF)
    dcase("nvfp4_under_modelopt_fp8", [QF, "tensor '%s'" % QW, "NVFP4 codes", "declares ModelOpt FP8",
                                       "conflicting dialect markers"],
          nv_tensors(True), hf=MO_HF.replace('"NVFP4", "group_size": 16', '"FP8"'))
    dcase("symmetric_with_zero_point", [QF, "tensor '%s.weight_zero_point'" % QP, "group 'group_0' of " + QCFG,
                                        "declares symmetric weights: a zero point contradicts it"],
          ct_int_tensors(), ct_int_q({"symmetric": True}))
    dcase("scheme_int_codes_fp8", [QF, "tensor '%s'" % QW, "FP8 codes, but group 'group_0' of " + QCFG,
                                   "declares int 8-bit weights"],
          ct_fp8_tensors(), ct_int_q({"num_bits": 8, "strategy": "channel", "symmetric": True}))
    dcase("scheme_float_codes_int", [QF, "tensor '%s.weight_packed'" % QP, "integer codes, but group 'group_0'",
                                     "declares float weights"],
          ct_int_tensors(), CT_FP8_Q)
    dcase("scheme_bits_nvfp4", [QF, "tensor '%s.weight_packed'" % QP, "NVFP4 codes, but group 'group_0'",
                                "declares float 8-bit weights"],
          nv_tensors(False), CT_FP8_Q)
    dcase("ignored_module_has_scale", [QF, "tensor '%s'" % QW, "module '%s' is left unquantized" % QP, QCFG,
                                       "ignore list", "conflicting dialect markers"],
          ct_fp8_tensors(), dict(CT_FP8_Q, ignore=["re:.*down_proj"]))
    dcase("ignored_module_has_scale_deepseek", [QF, "tensor '%s'" % QW, "module '%s' is left unquantized" % QP],
          ds_tensors(), dict(DS_Q, modules_to_not_convert=[QP]))
    dcase("no_scheme_targets_module", [QF, "tensor '%s'" % QW, "no group of " + QCFG, "targets module '%s'" % QP],
          ct_fp8_tensors(), {**CT_FP8_Q, "config_groups": {"group_0": {
              "targets": ["re:.*q_proj$"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}})
    dcase("deepseek_e5m2_without_fmt", [QF, "tensor '%s'" % QW, "dtype F8_E5M2", QCFG, "declares no fmt",
                                        "e4m3 unless fmt says e5m2"],
          ds_tensors(codes=bytes(c & 0x7B for c in DS_CODES), codes_dtype="F8_E5M2"),
          {k: v for k, v in DS_Q.items() if k != "fmt"})
    dcase("deepseek_fmt_contradicts", [QF, "tensor '%s'" % QW, "dtype F8_E5M2", "declares fmt e4m3"],
          ds_tensors(codes=bytes(c & 0x7B for c in DS_CODES), codes_dtype="F8_E5M2"), DS_Q)
    # ---- declarations
    dcase("quant_method_gptq", [QF, "weight_scale_inv", "companions of a deepseek_fp8 weight",
                                "declares config.json quantization_config (GPTQ, 4-bit, group 128",
                                "conflicting dialect markers"],
          ds_tensors(), {"quant_method": "gptq", "bits": 4, "group_size": 128})
    dcase("quant_method_missing", [QCFG, "quantization_config.quant_method", "missing"], ds_tensors(), {"bits": 4})
    dcase("quant_algo_w4a8_awq", [QHF, "quantization.quant_algo", "not an algorithm of a supported dialect", "W4A8_AWQ"],
          nv_tensors(True), hf=MO_HF.replace('"NVFP4"', '"W4A8_AWQ"'))
    dcase("config_quant_algo_w4a8_awq", [QCFG, "quantization_config.quant_algo", "W4A8_AWQ"],
          nv_tensors(True), {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"})
    dcase("num_bits_string", [QCFG, "quantization_config.config_groups.group_0.weights.num_bits",
                              "expected an integer from 1 to 8"],
          ct_int_tensors(), ct_int_q({"num_bits": "4"}))
    dcase("num_bits_missing", [QCFG, "quantization_config.config_groups.group_0.weights.num_bits", "missing"],
          ct_int_tensors(), {**ct_int_q(), "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "type": "int", "symmetric": False, "strategy": "group", "group_size": 8}}}})
    dcase("weight_block_size_zero", [QCFG, "quantization_config.weight_block_size", "expected two block sizes"],
          ds_tensors(), dict(DS_Q, weight_block_size=[0, 128]))
    dcase("weight_block_size_one", [QCFG, "quantization_config.weight_block_size", "expected a block size"],
          ds_tensors(), dict(DS_Q, weight_block_size=[128]))
    dcase("config_groups_empty", [QCFG, "quantization_config.config_groups", "expected at least one group"],
          ct_int_tensors(), ct_int_q(config_groups={}))
    dcase("strategy_unknown", [QCFG, "quantization_config.config_groups.group_0.weights.strategy", "row"],
          ct_int_tensors(), ct_int_q({"strategy": "row"}))
    dcase("group_size_missing", [QCFG, "quantization_config.config_groups.group_0.weights.group_size",
                                 "strategy group needs it"],
          ct_int_tensors(), {**ct_int_q(), "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "num_bits": 4, "type": "int", "symmetric": False, "strategy": "group"}}}})
    dcase("quantization_config_not_object", [QCFG, "quantization_config", "expected an object"],
          ds_tensors(), qconfig("fp8"))
    dcase("fmt_unknown", [QCFG, "quantization_config.fmt", "e3m4"], ds_tensors(), dict(DS_Q, fmt="e3m4"))
    dcase("ignore_not_list", [QCFG, "quantization_config.ignore", "expected a list of module names"],
          ct_int_tensors(), ct_int_q(ignore=7))
    dcase("hf_quantization_missing", [QHF, "quantization", "expected an object"], nv_tensors(True), hf='{"producer": {}}')
    dcase("hf_nvfp4_group_size", [QHF, "quantization.group_size", "NVFP4 blocks are 16 values"],
          nv_tensors(True), hf=MO_HF.replace('"group_size": 16', '"group_size": 32'))
    dcase("hf_not_json", [QHF], nv_tensors(True), hf='{"quantization": ')
    # ---- packed integers: width, weight_shape, zero points
    dcase("packed_width_unknown", [QF, "tensor '%s.weight_packed'" % QP, "packed integer codes of unknown width"],
          ct_int_tensors(zero=None, with_shape=False))
    # K = 4 fills one word at 4 bits and at 8 bits alike
    dcase("packed_width_ambiguous", [QF, "tensor '%s.weight_packed'" % QP, "does not tell 4 from 8 bits"],
          ct_int_tensors(zero=None, shape=(4, 4), packed_cols=1, scales=[0x3F80] * 4, scale_shape=(4, 1)))
    dcase("weight_shape_contradicts_columns", [QF, "tensor '%s.weight_packed'" % QP,
                                               "2 int32 words per row do not hold K = 100 4-bit codes"],
          ct_int_tensors(shape=(4, 100)), ct_int_q())
    dcase("weight_shape_rows", [QF, "tensor '%s.weight_shape'" % QP, "N = 5", "has 4 rows"],
          ct_int_tensors(shape=(5, 16)), ct_int_q())
    dcase("weight_shape_negative", [QF, "tensor '%s.weight_shape'" % QP, "dimension 1 is -16"],
          ct_int_tensors(shape=(4, -16)), ct_int_q())
    dcase("weight_shape_dtype", [QF, "tensor '%s.weight_shape'" % QP, "F32 [2]", "two integers"],
          [t if not t[0].endswith("weight_shape") else (t[0], "F32", [2], f32(4, 16)) for t in ct_int_tensors()],
          ct_int_q())
    # compressed-tensors NVFP4 with a weight_shape: it must be the codes' [N, 2 * bytes]
    dcase("ct_nvfp4_weight_shape", [QF, "tensor '%s.weight_shape'" % QP, "[128,100]",
                                    "'%s.weight_packed' holds [128,64]" % QP],
          nv_tensors(False) + [(QP + ".weight_shape", "I64", [2], struct.pack("<2q", 128, 100))], CT_NV_Q)
    dcase("zero_point_shape", [QF, "tensor '%s.weight_zero_point'" % QP, "I32 [2,2]",
                               "zero points of the [4,2] scale grid", "[1,2]"],
          ct_int_tensors(zero=le32s(0, 0, 0, 0), zero_shape=(2, 2)), ct_int_q())
    dcase("zero_point_dtype", [QF, "tensor '%s.weight_zero_point'" % QP, "F32 [1,2]"],
          ct_int_tensors(zero=f32(0, 0), zero_dtype="F32"), ct_int_q())
    dcase("group_scale_shape", [QF, "tensor '%s.weight_scale'" % QP, "shape [4,4] is not the [4,2] scales of group"],
          ct_int_tensors(scales=[0x3F80] * 16, scale_shape=(4, 4)), ct_int_q())
    dcase("scale_layout_undeclared", [QF, "tensor '%s.weight_scale'" % QP, "shape [4,3] fits no scale layout",
                                      "no declaration gives one"],
          ct_fp8_tensors(scale=le32s(*[0x3F800000] * 12))[:1] + [(QP + ".weight_scale", "F32", [4, 3],
                                                                  le32s(*[0x3F800000] * 12))])
    dcase("int_scale_dtype", [QF, "tensor '%s.weight_scale'" % QP, "dtype I8", "must be F32, BF16 or F16"],
          [t if not t[0].endswith("weight_scale") else (t[0], "I8", [4, 2], bytes(8)) for t in ct_int_tensors()],
          ct_int_q())
    dcase("codes_dtype_unknown", [QF, "tensor '%s.weight_packed'" % QP, "dtype I16", "packed codes are U8 (NVFP4) or I32"],
          [(QP + ".weight_packed", "I16", [4, 4], bytes(32)), (QP + ".weight_scale", "F32", [4, 1], f32(1, 1, 1, 1))])


# GPTQ and AWQ (docs/dialects.md, "GPTQ and AWQ"): a GPTQ linear [N 8, K 16] of 4-bit codes in
# groups of 8 (qweight [2, 8], qzeros [2, 1], scales F16 [2, 8], g_idx [16]), or AWQ GEMM's
# (qweight [16, 1], qzeros [2, 1], scales [2, 8]); each case breaks one thing.
GPTQ_Q = {"quant_method": "gptq", "bits": 4, "group_size": 8, "desc_act": False, "sym": False}


def gptq_tensors(qweight_rows=2, qzeros=(2, 1), scales=None, scale_dtype="F16", g_idx=None, with_zeros=True):
    sc = scales if scales is not None else le16s(*[0x3C00] * 16)
    gi = g_idx if g_idx is not None else [c // 8 for c in range(16)]
    ts = [(QP + ".qweight", "I32", [qweight_rows, 8], le32s(*[0x76543210] * (qweight_rows * 8))),
          (QP + ".scales", scale_dtype, [2, 8], sc), (QP + ".g_idx", "I32", [16], struct.pack("<16i", *gi))]
    if with_zeros:
        ts.append((QP + ".qzeros", "I32", list(qzeros), le32s(*[0x77777777] * (qzeros[0] * qzeros[1]))))
    return ts


def awq_tensors():
    return [(QP + ".qweight", "I32", [16, 1], le32s(*[0x76543210] * 16)), (QP + ".qzeros", "I32", [2, 1],
                                                                            le32s(0x88888888, 0x88888888)),
            (QP + ".scales", "F16", [2, 8], le16s(*[0x3C00] * 16))]


def mlx_tensors(words=8, groups=1, scale=0x4000, bias=0xBF80, with_biases=True):
    """MLX [2, 64] 4-bit in one group of 64 per row (BF16 scales and biases)."""
    ts = [(QW, "U32", [2, words], le32s(*[0x76543210] * (2 * words))),
          (QP + ".scales", "BF16", [2, groups], le16s(*[0x4000] * (2 * groups - 1) + [scale]))]
    if with_biases:
        ts.append((QP + ".biases", "BF16", [2, groups], le16s(*[0xBF80] * (2 * groups - 1) + [bias])))
    return ts


MLX_Q = {"group_size": 64, "bits": 4}


def packed_cases():
    def pcase(name, needles, tensors, config=None, extra=None):
        files = {QF: qst(tensors), QCFG: config if config is not None else qconfig(GPTQ_Q)}
        files.update(extra or {})
        case("packed_" + name, 1, needles, "ninfer-convert",
             ["ckpt", "-o", "{out}.ninfer", "--format", "fp32", "--requantize", "-j", "1", "--progress=never"], files)

    QQ, GI, SC = "tensor '%s.qweight'" % QP, "tensor '%s.g_idx'" % QP, "tensor '%s.scales'" % QP
    # g_idx: an entry that names no group, groups that do not hold `group` columns each
    gi = [c // 8 for c in range(16)]
    gi[5] = 2
    pcase("g_idx_out_of_range", [QF, GI, "entry 5 is 2: a group index of the 2 groups (0..1)"], gptq_tensors(g_idx=gi))
    gi[5] = -1
    pcase("g_idx_negative", [QF, GI, "entry 5 is -1"], gptq_tensors(g_idx=gi))
    pcase("g_idx_not_permutation", [QF, GI, "group 0 holds 16 columns, not 8", "not a permutation"],
          gptq_tensors(g_idx=[0] * 16))
    pcase("g_idx_dtype", [QF, QQ, "g_idx is I32 or I64 [K]"],
          [t if not t[0].endswith("g_idx") else (t[0], "F32", [16], f32(*[0.0] * 16)) for t in gptq_tensors()])
    # scales: zero, NaN, infinite, negative (row 1 col 3 of scales: group 1 of the weight's row 3)
    for what, word, why in (("zero", 0x0000, "0x0000 is zero"), ("nan", 0x7E00, "0x7E00 is NaN"),
                            ("inf", 0x7C00, "0x7C00 is infinite"), ("negative", 0xBC00, "0xBC00 is negative")):
        words = [0x3C00] * 16
        words[8 + 3] = word
        pcase("scale_" + what, [QF, SC, "row 1 col 3 (group 1 of the weight's row 3): scale " + why,
                                "a gptq scale must be finite and > 0"], gptq_tensors(scales=le16s(*words)))
    pcase("scale_dtype", [QF, SC, "dtype I16", "F16, BF16 or F32"],
          gptq_tensors(scales=bytes(32), scale_dtype="I16"))
    # an F32 scale near binary32's largest times q - z overflows
    big = [0x3F800000] * 16
    big[0] = 0x7F7FFFFF
    pcase("value_overflow", [QF, QQ, "row 0 col 0: integer code -8 (q - z)", "overflows binary32"],
          gptq_tensors(scales=le32s(*big), scale_dtype="F32"))
    # shapes against each other and the declaration
    pcase("qweight_truncated", [QF, QQ, "I32 [1,8]", "1 rows of words do not hold K = 16 4-bit codes"],
          gptq_tensors(qweight_rows=1))
    pcase("qzeros_missing", [QF, QQ, "%s.qzeros is in no shard" % QP], gptq_tensors(with_zeros=False))
    pcase("qzeros_shape", [QF, QQ, "qzeros I32 [2,3]", "hold no declared-width zero points of N = 8"],
          gptq_tensors(qzeros=(2, 3)))
    pcase("bits_declared_8", [QF, QQ, "hold no declared-width zero points"], gptq_tensors(),
          qconfig(dict(GPTQ_Q, bits=8)))
    pcase("group_declared_4", [QF, QQ, "scales' 2 rows are not the 4 groups of 4 columns of K = 16"], gptq_tensors(),
          qconfig(dict(GPTQ_Q, group_size=4)))
    pcase("bits_5", [QCFG, "quantization_config.bits", "GPTQ codes are 2, 3, 4 or 8 bits"], gptq_tensors(),
          qconfig(dict(GPTQ_Q, bits=5)))
    pcase("group_zero", [QCFG, "quantization_config.group_size", "or -1 for one group per row"], gptq_tensors(),
          qconfig(dict(GPTQ_Q, group_size=0)))
    pcase("awq_bits_8", [QCFG, "quantization_config.bits", "AWQ codes are 4 bits"], awq_tensors(),
          qconfig({"quant_method": "awq", "bits": 8, "group_size": 8, "version": "gemm"}))
    pcase("awq_declared_gemv", [QF, QQ, "AWQ GEMV's scales and qzeros have qweight's N = 16 rows"], awq_tensors(),
          qconfig({"quant_method": "awq", "bits": 4, "group_size": 8, "version": "gemv"}))
    pcase("awq_file_not_object", ["ckpt/quant_config.json", "not a JSON object"], awq_tensors(),
          json.dumps({"model_type": "llama"}), {"ckpt/quant_config.json": "[4]"})
    # undeclared: the shapes must tell one layout and one width (N = 8: one word of zero points
    # holds 2-, 3- or 4-bit ones)
    pcase("width_undeclared_ambiguous", [QF, QQ, "fit several code widths and no declaration gives bits"],
          gptq_tensors(), json.dumps({"model_type": "llama"}))
    # markers that conflict: GPTQ codes in a DeepSeek FP8 checkpoint; a companion alone
    pcase("conflict_fp8", [QF, QQ, "GPTQ or AWQ codes, but ckpt/config.json declares", "conflicting dialect markers"],
          gptq_tensors(), qconfig({"quant_method": "fp8", "weight_block_size": [128, 128]}))
    pcase("orphan_qzeros", [QF, "tensor 'model.layers.1.mlp.up_proj.qzeros'", "a GPTQ or AWQ companion"],
          gptq_tensors() + [("model.layers.1.mlp.up_proj.qzeros", "I32", [1, 1], le32s(0))])
    pcase("qweight_without_scales", [QF, "tensor 'model.layers.1.mlp.up_proj.qweight'",
                                     "model.layers.1.mlp.up_proj.scales is in no shard"],
          gptq_tensors() + [("model.layers.1.mlp.up_proj.qweight", "I32", [1, 1], le32s(0))])
    # ---- MLX (docs/dialects.md "MLX"): [2, 64] 4-bit, one group of 64 per row
    MW, MS, MB = "tensor '%s'" % QW, "tensor '%s.scales'" % QP, "tensor '%s.biases'" % QP
    mcfg = lambda q: json.dumps({"model_type": "llama", "quantization": q, "quantization_config": q})
    pcase("mlx_shapes_declared", [QF, MW, "U32 [2,8] with scales BF16 [2,2]: not 4-bit codes in groups of 64",
                                  "declares for module '%s'" % QP],
          mlx_tensors(groups=2), mcfg(MLX_Q))
    pcase("mlx_undeclared_ambiguous", [QF, MW, "fits several of MLX's code widths and group sizes"], mlx_tensors(),
          json.dumps({"model_type": "llama"}))
    pcase("mlx_scale_nan", [QF, MS, "row 1 col 0: scale 0x7FC0 is NaN: an mlx scale must be finite"],
          mlx_tensors(scale=0x7FC0), mcfg(MLX_Q))
    pcase("mlx_bias_inf", [QF, MB, "row 1 col 0: bias 0xFF80 is infinite"], mlx_tensors(bias=0xFF80), mcfg(MLX_Q))
    pcase("mlx_overflow", [QF, MW, "row 1 col 2: scale 3.38953139e+38 x code 2 + bias -1 overflows binary32"],
          mlx_tensors(scale=0x7F7F), mcfg(MLX_Q))
    pcase("mlx_biases_missing", [QF, MW, "U32 codes without biases beside them", "declares"],
          mlx_tensors(with_biases=False), mcfg(MLX_Q))
    pcase("mlx_left_unquantized", [QF, MW, "leaves module '%s' unquantized: conflicting dialect markers" % QP],
          mlx_tensors(), mcfg(dict(MLX_Q, **{QP: False})))
    pcase("mlx_bits_7", [QCFG, "quantization_config.bits", "MLX codes are 2, 3, 4, 5, 6 or 8 bits"], mlx_tensors(),
          qconfig({"group_size": 64, "bits": 7}))
    pcase("mlx_group_16", [QCFG, "quantization.group_size", "expected an integer from 32 to 128"], mlx_tensors(),
          json.dumps({"model_type": "llama", "quantization": {"group_size": 16, "bits": 4}}))
    pcase("mlx_module_bits", [QCFG, "quantization." + QP, "2, 3, 4, 5, 6 or 8 bits in groups of 32, 64 or 128"],
          mlx_tensors(), json.dumps({"model_type": "llama", "quantization": dict(MLX_Q, **{QP: {"bits": 7}})}))
    pcase("mlx_conflict_gptq", [QF, MW, "MLX codes, but ckpt/config.json declares", "conflicting dialect markers"],
          mlx_tensors(), qconfig(GPTQ_Q))


def oss_tensors(blocks_last=16, scales_shape=(1, 2, 1), scales_dtype="U8", scales=bytes([127, 127]), codes=bytes(32),
                with_scales=True):
    """gpt-oss MXFP4 (Hugging Face layout): one expert, [2, 32]."""
    p = "model.layers.0.mlp.experts.down_proj"
    ts = [(p + "_blocks", "U8", [1, 2, 1, blocks_last], codes[:2 * blocks_last])]
    if with_scales:
        ts.append((p + "_scales", scales_dtype, list(scales_shape), scales))
    return ts


def ct_mxfp4_tensors(extra=()):
    return [(QP + ".weight_packed", "U8", [2, 16], bytes(32)), (QP + ".weight_scale", "U8", [2, 1],
                                                                   bytes([127, 127]))] + list(extra)


def mxfp4_cases():
    OSS_Q = json.dumps({"model_type": "gpt_oss", "quantization_config": {"quant_method": "mxfp4"}})
    OB, OS = "tensor 'model.layers.0.mlp.experts.down_proj_blocks'", "tensor 'model.layers.0.mlp.experts.down_proj_scales'"

    def mcase(name, needles, tensors, config=OSS_Q, fmt=("--format", "fp32", "--requantize")):
        case("mxfp4_" + name, 1, needles, "ninfer-convert",
             ["ckpt", "-o", "{out}.ninfer"] + list(fmt) + ["-j", "1", "--progress=never"],
             {QF: qst(tensors), QCFG: config})

    mcase("e8m0_nan", [QF, OS, "block (1, 0) (rows 1..1, cols 0..31): scale 0xFF is NaN (E8M0 0xFF)",
                       "a gpt_oss_mxfp4 scale must be finite and > 0"], oss_tensors(scales=bytes([127, 255])))
    # the import's own reading of the scales (quick mode keeps MXFP4 in nvfp4) names it too
    mcase("e8m0_nan_import", [QF, "tensor 'model.layers.0.mlp.experts.down_proj_scales': row 1 block 0: E8M0 scale "
                              "0xFF is NaN"],
          [("model.layers.0.mlp.experts.down_proj_blocks", "U8", [1, 128, 2, 16], bytes(128 * 32)),
           ("model.layers.0.mlp.experts.down_proj_scales", "U8", [1, 128, 2], bytes([127, 127, 255] + [127] * 253))],
          fmt=("--format", "bf16"))
    mcase("overflow", [QF, OB, "row 0 col 1: E2M1 code 0x7", "overflows binary32"],
          oss_tensors(scales=bytes([254, 127]), codes=bytes([0x70] + [0] * 31)))
    mcase("blocks_shape", [QF, OB, "gpt-oss stores MXFP4 as [..., R, B, 16] bytes"], oss_tensors(blocks_last=8))
    mcase("scales_shape", [QF, OB, "with scales U8 [1,3,1]"], oss_tensors(scales_shape=(1, 3, 1), scales=bytes(3)))
    mcase("scales_dtype", [QF, OS, "dtype F16: MXFP4 block scales are E8M0"],
          oss_tensors(scales_dtype="F16", scales=bytes(4)))
    mcase("scales_missing", [QF, OB, "MXFP4 codes without their _scales beside them", "declares"],
          oss_tensors(with_scales=False))
    mcase("conflict_gptq", [QF, OB, "MXFP4 codes, but ckpt/config.json declares", "conflicting dialect markers"],
          oss_tensors(), qconfig(GPTQ_Q))
    ct = {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "group",
                                           "group_size": 16}}}}
    mcase("ct_group_16", [QF, "tensor '%s.weight_packed'" % QP, "MXFP4 codes, but group 'group_0'",
                          "in groups other than 32"], ct_mxfp4_tensors(), qconfig(ct))
    mcase("ct_global_scale", [QF, "tensor '%s.weight_global_scale'" % QP,
                              "a compressed_tensors_mxfp4 weight has no weight_global_scale"],
          ct_mxfp4_tensors([(QP + ".weight_global_scale", "F32", [1], f32(1.0))]), json.dumps({"model_type": "x"}))


def fbgemm_cases():
    """fbgemm FP8 (docs/dialects.md "fbgemm FP8"): Llama 4's stacked experts [E, H, C] with a scale
    per expert and column [E, 1, C]."""
    FB_Q = json.dumps({"model_type": "llama4", "quantization_config": {"quant_method": "fbgemm_fp8"}})
    x = "model.layers.0.feed_forward.experts.down_proj"
    XS = "tensor '%s_scale'" % x

    def fcase(name, needles, tensors, config=FB_Q):
        case("fbgemm_" + name, 1, needles, "ninfer-convert",
             ["ckpt", "-o", "{out}.ninfer", "--format", "fp32", "--requantize", "-j", "1", "--progress=never"],
             {QF: qst(tensors), QCFG: config})

    codes = (x, "F8_E4M3", [2, 4, 8], bytes([0x38] * 64))
    fcase("scale_shape", [QF, XS, "F32 [2,8,1] for experts F8_E4M3 [2,4,8]", "[E, 1, C]"],
          [codes, (x + "_scale", "F32", [2, 8, 1], f32(*[1.0] * 16))])
    fcase("scale_dtype", [QF, XS, "dtype F16: fbgemm's expert scales are F32"],
          [codes, (x + "_scale", "F16", [2, 1, 8], le16s(*[0x3C00] * 16))])
    nan = [1.0] * 16
    fcase("scale_nan", [QF, XS, "block (1, 3) (rows 4..7, cols 3..3): scale 0x7FC00000 is NaN"],
          [codes, (x + "_scale", "F32", [2, 1, 8], f32(*nan[:11]) + le32s(0x7FC00000) + f32(*nan[12:]))])
    fcase("conflict_gptq", [QF, "tensor '%s'" % x, "FP8 experts with a _scale, but ckpt/config.json declares",
                            "conflicting dialect markers"],
          [codes, (x + "_scale", "F32", [2, 1, 8], f32(*[1.0] * 16))], qconfig(GPTQ_Q))


def bnb_tensors(state=None, absmax=None, qtype="nf4", with_map=True, nested=False):
    """bitsandbytes 4-bit [4, 32] (two blocks of 64), as transformers saves it."""
    st = state if state is not None else {"quant_type": qtype, "blocksize": 64, "dtype": "bfloat16", "shape": [4, 32]}
    js = st if isinstance(st, bytes) else json.dumps(st).encode()
    ts = [(QW, "U8", [64, 1], bytes(range(64))), (QW + ".quant_state.bitsandbytes__" + qtype, "U8", [len(js)], js),
          (QW + ".absmax", "U8" if nested else "F32", [2 if nested else len(absmax or bytes(8)) // 4],
           bytes(2) if nested else (absmax or f32(0.5, 0.25)))]
    if with_map:
        ts.append((QW + ".quant_map", "F32", [16], f32(*[i / 8 - 1 for i in range(16)])))
    return ts


def bnb_cases():
    """bitsandbytes (docs/dialects.md "bitsandbytes")."""
    BQ = json.dumps({"model_type": "llama", "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}})
    QS = "tensor '%s.quant_state.bitsandbytes__nf4'" % QW

    def bcase(name, needles, tensors, config=BQ):
        case("bnb_" + name, 1, needles, "ninfer-convert",
             ["ckpt", "-o", "{out}.ninfer", "--format", "fp32", "--requantize", "-j", "1", "--progress=never"],
             {QF: qst(tensors), QCFG: config})

    good = {"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [4, 32]}
    bcase("state_shape_lies", [QF, "tensor '%s'" % QW, "64 bytes, but its state's shape [4,64] needs 128"],
          bnb_tensors(dict(good, shape=[4, 64])))
    bcase("state_not_json", [QF, QS, "not a JSON object"], bnb_tensors(b"{quant_type"))
    bcase("state_quant_type", [QF, QS, "quant_type is not the name's"], bnb_tensors(dict(good, quant_type="fp4")))
    bcase("state_blocksize", [QF, QS, "blocksize is not a power of two"], bnb_tensors(dict(good, blocksize=48)))
    bcase("state_dtype", [QF, QS, "dtype is not bfloat16, float16 or float32"], bnb_tensors(dict(good, dtype="int8")))
    bcase("absmax_nan", [QF, "tensor '%s.absmax'" % QW, "element 1: 0x7FC00000 is not finite"],
          bnb_tensors(absmax=f32(0.5) + le32s(0x7FC00000)))
    bcase("absmax_shape", [QF, "tensor '%s.absmax'" % QW, "needs 2 F32 absmax values"],
          bnb_tensors(absmax=f32(0.5, 0.25, 1.0)))
    bcase("quant_map_missing", [QF, "tensor '%s'" % QW, "its .quant_map (F32 [16], the code table) is in no shard"],
          bnb_tensors(with_map=False))
    bcase("nested_missing", [QF, "tensor '%s'" % QW, "double quantization needs .nested_absmax F32 [1]"],
          bnb_tensors(dict(good, nested_blocksize=256, nested_dtype="float32", nested_offset=0.01), nested=True))
    bcase("state_missing", [QF, "tensor '%s.absmax'" % QW, "a bitsandbytes 4-bit companion",
                            "quant_state.bitsandbytes__nf4 (or __fp4)"],
          [t for t in bnb_tensors() if "quant_state" not in t[0]])
    i8 = (QW, "I8", [2, 4], bytes([1, 2, 3, 4, 255, 254, 253, 252]))
    bcase("scb_shape", [QF, "tensor '%s.SCB'" % QP, "LLM.int8's SCB is F32 [N], N = 2"],
          [i8, (QP + ".SCB", "F32", [3], f32(1, 1, 1))])
    bcase("scb_nan", [QF, "tensor '%s.SCB'" % QP, "element 1: 0x7F800000 is not finite"],
          [i8, (QP + ".SCB", "F32", [2], f32(1) + le32s(0x7F800000))])
    bcase("weight_format_col32", [QF, "tensor '%s.weight_format'" % QP, "only format 0 (row-major) is read"],
          [i8, (QP + ".SCB", "F32", [2], f32(1, 1)), (QP + ".weight_format", "U8", [], bytes([1]))])
    bcase("conflict_gptq", [QF, "tensor '%s'" % QW, "bitsandbytes codes, but ckpt/config.json declares",
                            "conflicting dialect markers"], bnb_tensors(), qconfig(GPTQ_Q))


# Quantized checkpoints of producers no dialect reads (docs/dialects.md, "Quantized checkpoints
# not read yet"): refused before anything is planned, naming the file, the key or tensor, the
# format and what to do -- in quick mode and --dry-run alike (full layouts: tests/cli/gen_quantized.py).
def quantized_refusal_cases():
    def rcase(name, needles, tensors, files=None, dry=False):
        fs = {QF: qst(tensors), QCFG: json.dumps({"model_type": "llama"})}
        fs.update(files or {})
        args = ["ckpt", "-o", "{out}.ninfer", "--format", "q4_g64_fp16"] + (["--dry-run"] if dry else []) + \
               ["-j", "1", "--progress=never"]
        case("refuse_" + name, 1, needles + ["not read yet", "convert from the BF16 release"], "ninfer-convert", args, fs)

    rcase("exl2_tensors", [QF, "tensor '%s.q_" % QP, "EXL2 (exllamav2"],
          [(QP + ".q_weight", "I32", [2, 8], bytes(64)), (QP + ".q_invperm", "I16", [16], bytes(32)),
           (QP + ".q_scale", "I32", [1, 1], bytes(4))])
    mlx = mlx_tensors()
    rcase("mlx_mode_nvfp4", [QCFG, "quantization.mode: MLX nvfp4 (mlx-lm, 4-bit, group 16"], mlx,
          {QCFG: json.dumps({"model_type": "llama", "quantization": {"group_size": 16, "bits": 4, "mode": "nvfp4"}})},
          dry=True)
    rcase("hqq_tensors", [QF, "tensor '%s.W_q'" % QP, "HQQ"],
          [(QP + ".W_q", "U8", [2, 2], bytes(4)), (QP + ".zero", "F16", [2, 1], le16s(0, 0)),
           (QP + ".scale", "F16", [2, 1], le16s(0x3C00, 0x3C00))])
    rcase("unknown_quant_method", [QCFG, "an unknown quantization (quant_method 'w\\x01q'"], mlx,
          {QCFG: qconfig({"quant_method": "w\u0001q"})})
    ct = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 4, "type": "float", "symmetric": True, "strategy": "group", "group_size": 32}}}}
    # E8M0 scales per 32 values beside a ModelOpt-style <p>.weight: MXFP4 no dialect reads
    rcase("modelopt_mxfp4", [QF, "tensor '%s.weight_scale'" % QP, "MXFP4 (ModelOpt) (E2M1 codes, two per U8 "
                             "<p>.weight, with U8 E8M0 scales per 32 values"],
          [(QW, "U8", [2, 16], bytes(32)), (QP + ".weight_scale", "U8", [2, 1], bytes(2))])
    rcase("ct_sparse24", [QCFG, "quantization_config.sparsity_config: 2:4 sparse (compressed-tensors "
                          "sparse-24-bitmask"],
          [(QP + ".compressed", "BF16", [2, 2], bytes(8)), (QP + ".bitmask", "U8", [2, 1], bytes(2))],
          {QCFG: qconfig({"quant_method": "compressed-tensors", "sparsity_config": {"format": "sparse-24-bitmask"}})})
    rcase("sparsity_config_top", [QCFG, "sparse (compressed-tensors sparse-bitmask"],
          [(QP + ".compressed", "BF16", [2, 2], bytes(8)), (QP + ".bitmask", "U8", [2, 1], bytes(2))],
          {QCFG: json.dumps({"model_type": "llama", "sparsity_config": {"format": "sparse-bitmask"}})})


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    gguf_cases()
    st_cases()
    st_index_cases()
    container_cases()
    recipe_cases()
    quick_cases()
    art_cases()
    dialect_cases()
    packed_cases()
    mxfp4_cases()
    fbgemm_cases()
    bnb_cases()
    quantized_refusal_cases()
    with open(os.path.join(OUT, "cases.tsv"), "w") as f:
        for c in CASES:
            f.write("\t".join(c) + "\n")
    counts = {}
    for c in CASES:
        k = c[0].split("_")[0]
        counts[k] = counts.get(k, 0) + 1
    print("%d cases: %s" % (len(CASES), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))


main()
