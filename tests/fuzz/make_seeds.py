#!/usr/bin/env python3
"""Regenerate the seed corpora of tests/fuzz/corpus/<target>/ (docs/security.md).

    python3 tests/fuzz/make_seeds.py                 # from the repository root or anywhere
    python3 tests/fuzz/make_seeds.py --bin build/bin # also re-convert the converted_* seeds

Seeds are small valid inputs the fuzzers start from; they are committed, so this script only
documents where each comes from and rebuilds them deterministically:
  container_directory  the JSON text of upstream artifacts (entry bytes [32, 32 + json_bytes),
                       padding stripped)
  container_artifact   small upstream artifacts; split.ninfer with its parts appended after the
                       "\\xffNFPART:<name>\\n" markers fuzz_container_artifact.c understands;
                       converted_*: artifacts written by our own ninfer-convert (metadata.checksums,
                       provenance, every native format, a split one) from a generated checkpoint
                       (kept as committed unless --bin names the programs to rebuild them with)
  safetensors          generated: every convertible dtype, sub-byte dtypes, a scalar, an empty
                       tensor, __metadata__, a space-padded header
  safetensors_index    index JSON texts naming the two fixed shards fuzz_safetensors_index.c writes
  gguf                 the smallest ggml-written fixtures of tests/data/gguf, plus generated files
                       holding every KV type (arrays, strings, alignment) and the float/int types,
                       and ggml's blocks of every type read as values (tests/data/gguf/more)
  recipe               recipes/*.yaml plus generated recipes using every section
  recipe_resolve       the same recipes after a first line spelling a tensor list
                       (fuzz_recipe_resolve.c), plus recipes of many globs and regular expressions
  config_json          generated config.json texts: Llama- and Qwen-like, nested, every JSON
                       type, escapes
  imatrix              generated llama-imatrix GGUF files (T.in_sum2 / T.counts)
  torch                torch.save zip archives as tests/cli/gen_torch.py lays them out
  dialects             quantized checkpoints framed as fuzz_dialects.c reads them (config.json,
                       "\xffHF\n" hf_quant_config.json, "\xffST\n" safetensors): a small valid one
                       of every dialect and strategy in tests/cli/gen_dialects.py's byte layouts,
                       declared and undeclared, plus broken ones (a NaN scale or code, a missing
                       or doubled scale, conflicting or unsupported declarations), and GPTQ, AWQ,
                       MLX, MXFP4, fbgemm FP8 and bitsandbytes checkpoints as tests/cli/gen_packed.py packs them
Nothing here is random: the same tree gives the same bytes.

Files named fuzz-<sha1> are not generated here: they are small inputs the fuzzers found (mostly
malformed ones reaching distinct error paths), chosen by a libFuzzer merge of `make fuzz`'s
working corpus limited to small sizes, e.g.
    build-fuzz/fuzz/fuzz_gguf -merge=1 -max_len=2048 NEW_DIR build-fuzz/corpus/gguf
and renamed fuzz-<sha1>.  They make the replays in `make test` / `make test-sanitize` walk those
error paths too; this script keeps them.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
UPSTREAM = os.path.join(ROOT, "tests", "data", "upstream")
GGUF_DATA = os.path.join(ROOT, "tests", "data", "gguf")


def out(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def reset(target):
    """Empty a corpus directory of generated seeds; fuzz-* files (inputs the fuzzers found, see
    below) and real_* files (written by the producer itself and copied by hand, e.g.
    tests/cli/gen_torch_real.py's) are kept."""
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith("fuzz-") and not f.startswith("real_"):
            os.remove(os.path.join(d, f))


# ---------------------------------------------------------------- container
ARTIFACTS = ["container_small", "direct", "fp8_row", "gguf", "model", "nvfp4", "row_split"]


def bf16_bytes(values):
    out = b""
    for x in values:
        b = struct.unpack("<I", struct.pack("<f", x))[0]
        out += struct.pack("<H", (b + 0x7FFF + ((b >> 16) & 1)) >> 16)
    return out


def wave(n, seed):
    return [math.sin(seed * 0.37 + i * 0.91) * (1 + 0.3 * math.cos(i * 0.13)) for i in range(n)]


CONVERT_RECIPE = """recipe: 1
sources:
  base: ./ckpt
output:
  name: fuzz-seed
components:
  text:
    config: {from: base}
    resources: {tokenizer.json: base/tokenizer.json}
defaults: {format: bf16}
rules:
  - match: model.embed_tokens.weight
    format: fp8_e4m3fn_row_bf16
  - match: lm_head.weight
    format: fp8_e4m3fn_row_fp16
  - match: model.layers.0.self_attn.q_proj.weight
    format: q4_g64_fp16
    method: grouped_search
  - match: model.layers.0.self_attn.k_proj.weight
    format: q5_g64_fp16
  - match: model.layers.0.mlp.down_proj.weight
    format: q8_g32_fp16
  - match: model.layers.0.mlp.up_proj.weight
    format: q6_g64_fp16
  - match: "*norm*"
    format: fp32
  - match: model.position_ids
    format: int32
groups:
  - id: model.layers.0.mlp.gate_up.weight
    members: [model.layers.0.mlp.gate_proj.weight]
"""


def converted(bindir):
    """Artifacts written by our own writer: {seed name: bytes}."""
    seeds = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "ckpt"))
        shapes = [("model.embed_tokens.weight", [8, 64]), ("model.layers.0.self_attn.q_proj.weight", [4, 130]),
                  ("model.layers.0.self_attn.k_proj.weight", [2, 130]), ("model.layers.0.mlp.down_proj.weight", [3, 64]),
                  ("model.layers.0.mlp.up_proj.weight", [2, 64]), ("model.layers.0.mlp.gate_proj.weight", [2, 128]),
                  ("lm_head.weight", [4, 64])]
        tensors = [(n, "BF16", s, bf16_bytes(wave(s[0] * s[1], i + 1))) for i, (n, s) in enumerate(shapes)]
        tensors.append(("model.norm.weight", "F32", [64], f32(*[1.0 + i / 64 for i in range(64)])))
        tensors.append(("model.position_ids", "I32", [3], struct.pack("<3i", 0, 1, -2)))
        with open(os.path.join(tmp, "ckpt", "model.safetensors"), "wb") as f:
            f.write(safetensors(tensors))
        with open(os.path.join(tmp, "ckpt", "config.json"), "w") as f:
            f.write('{"architectures":["LlamaForCausalLM"],"hidden_size":64}')
        with open(os.path.join(tmp, "ckpt", "tokenizer.json"), "w") as f:
            f.write('{"model":{"type":"BPE","vocab":{"a":0}}}')
        with open(os.path.join(tmp, "r.yaml"), "w") as f:
            f.write(CONVERT_RECIPE)
        conv = os.path.join(os.path.abspath(bindir), "ninfer-convert")
        common = ["-r", "r.yaml", "--no-report", "--force", "-j", "1", "-q"]
        subprocess.run([conv, *common, "-o", "one.ninfer", "--artifact-id", "00112233445566778899aabbccddeeff"],
                       cwd=tmp, check=True)
        subprocess.run([conv, *common, "-o", "split.ninfer", "--max-file-bytes", "12288",
                        "--artifact-id", "00112233445566778899aabbccddef00"], cwd=tmp, check=True)
        seeds["converted_checksums.ninfer"] = open(os.path.join(tmp, "one.ninfer"), "rb").read()
        data = open(os.path.join(tmp, "split.ninfer"), "rb").read()
        for part in sorted(p for p in os.listdir(tmp) if p.startswith("split.ninfer.part-")):
            data += b"\xffNFPART:" + part.encode() + b"\n" + open(os.path.join(tmp, part), "rb").read()
        seeds["converted_split.ninfer+parts"] = data
    return seeds


def container(bindir):
    kept = {}
    adir = os.path.join(CORPUS, "container_artifact")
    if os.path.isdir(adir):
        kept = {f: open(os.path.join(adir, f), "rb").read() for f in os.listdir(adir) if f.startswith("converted_")}
    if bindir:
        kept = converted(bindir)
    reset("container_directory")
    reset("container_artifact")
    for name, data in sorted(kept.items()):
        out("container_artifact", name, data)
        jb = struct.unpack("<Q", data[8:16])[0]
        out("container_directory", name.split(".")[0] + ".json", data[32:32 + jb].rstrip(b" "))
    for name in ARTIFACTS + ["split", "wide_directory"]:
        b = open(os.path.join(UPSTREAM, name + ".ninfer"), "rb").read()
        jb = struct.unpack("<Q", b[8:16])[0]
        out("container_directory", name + ".json", b[32:32 + jb].rstrip(b" "))
    for name in ARTIFACTS:
        shutil.copyfile(os.path.join(UPSTREAM, name + ".ninfer"),
                        os.path.join(CORPUS, "container_artifact", name + ".ninfer"))
    data = open(os.path.join(UPSTREAM, "split.ninfer"), "rb").read()
    for i in range(1, 5):
        part = "split.ninfer.part-%04d" % i
        data += b"\xffNFPART:" + part.encode() + b"\n" + open(os.path.join(UPSTREAM, part), "rb").read()
    out("container_artifact", "split.ninfer+parts", data)


# ---------------------------------------------------------------- safetensors
def safetensors(tensors, metadata=None, pad=0):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    body = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    h = json.dumps(header, separators=(",", ":")).encode() + b" " * pad
    return struct.pack("<Q", len(h)) + h + body


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def st():
    reset("safetensors")
    out("safetensors", "floats.safetensors", safetensors([
        ("a.f32", "F32", [2, 3], f32(1.0, -2.0, 0.5, float("inf"), -0.0, 3.25)),
        ("b.bf16", "BF16", [2, 4], struct.pack("<8H", 0x3F80, 0xBF80, 0x7F80, 0x7FC0, 0, 0x8000, 1, 0x4000)),
        ("c.f16", "F16", [4], struct.pack("<4H", 0x3C00, 0xFC00, 0x0001, 0x7E00)),
        ("d.f64", "F64", [2], struct.pack("<2d", 1e300, -1.0 / 3)),
    ], metadata={"format": "pt", "note": "fuzz seed"}))
    out("safetensors", "ints.safetensors", safetensors([
        ("i8", "I8", [4], bytes([0, 1, 0x7F, 0x80])),
        ("u8", "U8", [2, 2], bytes([0, 1, 2, 255])),
        ("i16", "I16", [2], struct.pack("<2h", -32768, 7)),
        ("i32", "I32", [2], struct.pack("<2i", 16777217, -5)),
        ("i64", "I64", [1, 2], struct.pack("<2q", -(1 << 62), 123)),
        ("bool", "BOOL", [3], bytes([0, 1, 1])),
    ]))
    out("safetensors", "fp8.safetensors", safetensors([
        ("model.layers.0.mlp.down_proj.weight", "F8_E4M3", [2, 4], bytes([0x00, 0x38, 0xB8, 0x7E, 0x01, 0x80, 0x40, 0x7F])),
        ("model.layers.0.mlp.down_proj.weight_scale", "F32", [], f32(0.5)),
        ("e5m2", "F8_E5M2", [4], bytes([0x3C, 0xBC, 0x7C, 0x01])),
        ("e8m0", "F8_E8M0", [2], bytes([127, 128])),
    ]))
    out("safetensors", "subbyte.safetensors", safetensors([
        ("packed", "U8", [2, 8], bytes(range(16))),
        ("f4", "F4", [2, 4], bytes([0x12, 0x34, 0x56, 0x78])),
        ("f6", "F6_E2M3", [4], bytes([1, 2, 3])),
        ("u16", "U16", [2], struct.pack("<2H", 1, 65535)),
        ("c64", "C64", [1], f32(1.0, 2.0)),
    ]))
    out("safetensors", "edge.safetensors", safetensors([
        ("empty", "F32", [0, 4], b""),
        ("scalar", "BF16", [], struct.pack("<H", 0x3F80)),
        ("rank4", "F16", [1, 2, 1, 2], struct.pack("<4H", 1, 2, 3, 4)),
    ], metadata={}, pad=13))
    out("safetensors", "minimal.safetensors", safetensors([]))


def st_index():
    reset("safetensors_index")
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    full = {"model.embed_tokens.weight": s1, "model.norm.weight": s1, "lm_head.weight": s2,
            "model.layers.0.mlp.down_proj.weight": s2}
    out("safetensors_index", "full.json",
        json.dumps({"metadata": {"total_size": 48}, "weight_map": full}, indent=2).encode())
    out("safetensors_index", "compact.json", json.dumps({"weight_map": full}, separators=(",", ":")).encode())
    out("safetensors_index", "one_shard.json", json.dumps({"weight_map": {
        "model.embed_tokens.weight": s1, "model.norm.weight": s1}}).encode())
    out("safetensors_index", "missing_shard.json", json.dumps({"weight_map": {
        "model.embed_tokens.weight": s1, "model.norm.weight": s1, "x": "model-00003-of-00003.safetensors"}}).encode())


# ---------------------------------------------------------------- GGUF
GG_U8, GG_I8, GG_U16, GG_I16, GG_U32, GG_I32, GG_F32, GG_BOOL, GG_STR, GG_ARR, GG_U64, GG_I64, GG_F64 = range(13)
SCALAR_FMT = {GG_U8: "<B", GG_I8: "<b", GG_U16: "<H", GG_I16: "<h", GG_U32: "<I", GG_I32: "<i",
              GG_F32: "<f", GG_BOOL: "<B", GG_U64: "<Q", GG_I64: "<q", GG_F64: "<d"}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gval(t, v):
    if t == GG_STR:
        return gstr(v)
    return struct.pack(SCALAR_FMT[t], v)


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: list of (key, type, value) with value (elem_type, [items]) for arrays;
    tensors: list of (name, ne list, ggml type, raw bytes)."""
    b = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, t, v in kvs:
        b += gstr(key) + struct.pack("<I", t)
        if t == GG_ARR:
            et, items = v
            b += struct.pack("<IQ", et, len(items)) + b"".join(gval(et, x) for x in items)
        else:
            b += gval(t, v)
    offset = 0
    for name, ne, gt, raw in tensors:
        b += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        b += struct.pack("<IQ", gt, offset)
        offset += (len(raw) + alignment - 1) // alignment * alignment
    b += b"\0" * ((-len(b)) % alignment)
    for i, (_, _, _, raw) in enumerate(tensors):
        b += raw
        if i + 1 < len(tensors):
            b += b"\0" * ((-len(raw)) % alignment)
    return b


def imatrix_file(entries, chunks=4):
    kvs = [("general.type", GG_STR, "imatrix"), ("imatrix.datasets", GG_ARR, (GG_STR, ["wiki.train.raw"])),
           ("imatrix.chunk_count", GG_U32, chunks), ("imatrix.chunk_size", GG_U32, 512)]
    tensors = []
    for name, values, count in entries:
        tensors.append((name + ".in_sum2", [len(values)], 0, f32(*values)))
        tensors.append((name + ".counts", [1], 0, f32(count)))
    return gguf(kvs, tensors)


def gg():
    reset("gguf")
    sizes = sorted((os.path.getsize(os.path.join(GGUF_DATA, f)), f) for f in os.listdir(GGUF_DATA)
                   if f.endswith(".gguf") and f != "all_types.gguf")
    for _, f in sizes[:3]:
        shutil.copyfile(os.path.join(GGUF_DATA, f), os.path.join(CORPUS, "gguf", f))
    for f in ("q4_k.gguf", "q8_0.gguf", "q2_0.gguf"):
        shutil.copyfile(os.path.join(GGUF_DATA, f), os.path.join(CORPUS, "gguf", f))
    kvs = [("general.architecture", GG_STR, "llama"), ("general.name", GG_STR, b"nul\0inside"),
           ("general.alignment", GG_U32, 64),
           ("u8", GG_U8, 255), ("i8", GG_I8, -128), ("u16", GG_U16, 65535), ("i16", GG_I16, -2),
           ("u32", GG_U32, 1 << 31), ("i32", GG_I32, -7), ("f32", GG_F32, 1.5), ("bool", GG_BOOL, 1),
           ("u64", GG_U64, (1 << 64) - 1), ("i64", GG_I64, -(1 << 63)), ("f64", GG_F64, -0.0),
           ("tokenizer.ggml.tokens", GG_ARR, (GG_STR, ["<s>", "</s>", "a", ""])),
           ("tokenizer.ggml.scores", GG_ARR, (GG_F32, [0.0, -1.0, 2.5])),
           ("tokenizer.ggml.token_type", GG_ARR, (GG_I32, [1, 3, -1])),
           ("bools", GG_ARR, (GG_BOOL, [0, 1, 2])), ("u64s", GG_ARR, (GG_U64, [0, 1 << 63])),
           ("empty", GG_ARR, (GG_U8, []))]
    tensors = [("token_embd.weight", [4, 2], 0, f32(1, 2, 3, 4, 5, 6, 7, 8)),
               ("f16", [4], 1, struct.pack("<4H", 0x3C00, 0xC000, 0x7C00, 0x0001)),
               ("bf16", [2, 1, 1, 1], 30, struct.pack("<2H", 0x3F80, 0xFF80)),
               ("i8", [3], 24, bytes([1, 0x80, 0x7F])), ("i16", [1], 25, struct.pack("<h", -9)),
               ("i32", [2], 26, struct.pack("<2i", 1 << 30, -1)), ("i64", [1], 27, struct.pack("<q", 5)),
               ("f64", [1], 28, struct.pack("<d", 0.1)), ("scalar", [], 0, f32(42.0)),
               ("q4_1", [32], 3, bytes(20)), ("pq2", [128], 142, struct.pack("<H", 0x3C00) + bytes([0x55] * 32))]
    out("gguf", "kv_types.gguf", gguf(kvs, tensors, alignment=64))
    out("gguf", "v2_empty.gguf", gguf([("general.architecture", GG_STR, "x")], [], version=2))
    # the block types read as values (docs/formats.md 8.5): two rows of each, ggml's own blocks
    more = []
    for stem, ty, qk, bb in (("q4_1", 3, 32, 20), ("q5_1", 7, 32, 24), ("q8_1", 9, 32, 36), ("q8_k", 15, 256, 292),
                             ("tq1_0", 34, 256, 54), ("tq2_0", 35, 256, 66), ("mxfp4", 39, 32, 17),
                             ("nvfp4", 40, 64, 36), ("q1_0", 41, 128, 18)):
        with open(os.path.join(GGUF_DATA, "more", stem + ".rand.qbytes"), "rb") as f:
            more.append((stem, [qk, 2], ty, f.read(2 * bb)))  # ne: a row of one block, two rows
    out("gguf", "values_types.gguf", gguf([("general.architecture", GG_STR, "llama")], more))
    out("gguf", "imatrix.gguf", imatrix_file([("blk.0.attn_q.weight", [1.0, 2.0, 0.0, 4.0], 4.0)]))


def imatrix():
    reset("imatrix")
    out("imatrix", "one.gguf", imatrix_file([("blk.0.attn_q.weight", [1.0, 2.0, 0.0, 4.0], 4.0)]))
    out("imatrix", "llama.gguf", imatrix_file([
        ("blk.0.attn_q.weight", [float(i) for i in range(32)], 8.0),
        ("blk.0.attn_k.weight", [0.5] * 32, 0.0),
        ("blk.0.ffn_down.weight", [1.0] * 64, 2.0),
        ("output.weight", [3.0] * 32, 1.0),
        ("model.layers.1.mlp.down_proj.weight", [0.25] * 64, 16.0),
    ]))


# ---------------------------------------------------------------- recipes
EXTRA_RECIPES = {
    "every_section.yaml": """recipe: 1
sources:
  base: ./checkpoint
  imatrix: ./checkpoint/imatrix.gguf
output:
  name: fuzz-model
  max_file_bytes: 1048576
components:
  text:
    config: {from: base}
    resources:
      tokenizer.json: base/tokenizer.json
      chat_template.jinja: ./template.jinja
  vision:
    config: {hidden_size: 8, layers: [1, 2], act: "gelu", scale: 0.5, tied: true, none: null}
defaults: {format: bf16, method: cast_direct}
rules:
  - match: "model.layers.*.self_attn.q_proj.weight"
    format: q4_g64_fp16
    layout: row_split_k128_v1
    method: grouped_search
    with: {imatrix: imatrix, negative_scales: true}
  - match: ["re:model\\\\.layers\\\\.[0-9]+\\\\.mlp\\\\.(up|gate)_proj\\\\.weight", lm_head.weight]
    when: {rank: 2, dtype: BF16, min_elements: 64}
    format: q8_g32_fp16
    layout: auto
  - match: "*norm*"
    when: {rank: 1}
    format: fp32
  - match: model.embed_tokens.weight
    format: fp8_e4m3fn_row_bf16
  - match: "blk.*"
    when: {dtype: Q4_K}
    format: gguf_q4_k
    method: import_encoded
  - match: model.scale
    skip: true
  - match: does.not.exist
    optional: true
    format: int32
groups:
  - id: model.layers.0.self_attn.kv_proj.weight
    members: [model.layers.0.self_attn.k_proj.weight, model.layers.0.self_attn.v_proj.weight]
""",
    "flow_style.yaml": """{recipe: 1, sources: {base: "${HOME}/ckpt"}, defaults: {format: q6_g64_fp16},
 rules: [{match: "*", format: nvfp4, with: {}}, {match: [model.norm.weight], format: bf16}]}
""",
    "minimal.yaml": "recipe: 1\n",
    "block_scalars.yaml": """# comments, block scalars, quoted keys
recipe: 1
"sources":
  base: |
    /models/llama
output:
  name: >-
    folded
    name
rules:
  - match: 'model.layers.?.mlp.down_proj.weight'
    format: t2_g128_fp16
  - match: "model.layers.[01].*"
    format: q2_g64_fp16
    method: import_encoded
""",
}


def recipes():
    reset("recipe")
    rdir = os.path.join(ROOT, "recipes")
    for f in sorted(os.listdir(rdir)):
        if f.endswith(".yaml"):
            shutil.copyfile(os.path.join(rdir, f), os.path.join(CORPUS, "recipe", f))
    for name, text in EXTRA_RECIPES.items():
        out("recipe", name, text.encode())


# ---------------------------------------------------------------- resolution (F9)
TENSOR_LINES = [
    "model.embed_tokens.weight model.layers.#.self_attn.q_proj.weight*4 model.layers.#.self_attn.k_proj.weight*4 "
    "model.layers.#.self_attn.v_proj.weight*4 model.layers.#.mlp.down_proj.weight*4 model.layers.#.input_layernorm.weight*4 "
    "model.norm.weight lm_head.weight",
    "token_embd.weight blk.#.attn_q.weight*6 blk.#.ffn_up_exps.weight*6 blk.#.ffn_gate.weight*6 output_norm.weight",
    "model.layers.0.mlp.experts.#.gate_proj.weight*64 model.layers.0.mlp.experts.#.up_proj.weight_scale*64",
    "a*1 a[b] a.b.c weird?name [x]*3 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa#*8",
]

RESOLVE_RECIPES = {
    # single-quoted YAML: a backslash is itself there
    "globs.yaml": r"""recipe: 1
rules:
  - match: ['model.layers.*.self_attn.*_proj.weight', 'blk.?.attn_*', '*[!a-z]norm*', '[[:alpha:]]*.weight']
    format: q8_g32_fp16
    optional: true
  - match: ['*.weight', 'model.layers.[0-3].mlp.*', '\[x\]*', 'a[b]', '*a*a*a*a*b']
    format: bf16
    optional: true
""",
    "regexes.yaml": r"""recipe: 1
rules:
  - match: ['re:blk\.[0-9]+\.ffn_(gate|up)(_exps)?\.weight', 're:.*\.(q|k|v)_proj\.weight']
    format: q4_g64_fp16
    optional: true
  - match: ['re:model\.layers\.[0-9]{1,2}\..*', 're:^a+$', 're:[^.]*\.b\.c', 're:(a|ab)(c|bcd)?x?']
    format: bf16
    optional: true
  - match: 're:.*a.{20}'
    skip: true
    optional: true
""",
}


def recipe_resolve():
    reset("recipe_resolve")
    texts = dict(RESOLVE_RECIPES)
    rdir = os.path.join(ROOT, "recipes")
    for f in sorted(os.listdir(rdir)):
        if f.endswith(".yaml"):
            texts[f] = open(os.path.join(rdir, f)).read()
    for name, text in EXTRA_RECIPES.items():
        texts[name] = text
    for i, (name, text) in enumerate(sorted(texts.items())):
        line = TENSOR_LINES[i % len(TENSOR_LINES)]
        out("recipe_resolve", name, (line + "\n" + text).encode())


# ---------------------------------------------------------------- config.json (F14)
CONFIGS = {
    "llama.json": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
                   "num_attention_heads": 32, "num_hidden_layers": 32, "rms_norm_eps": 1e-05,
                   "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
                   "torch_dtype": "bfloat16", "vocab_size": 32000},
    "qwen_moe.json": {"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 128, "mlp_only_layers": [],
                      "quantization_config": {"quant_method": "modelopt", "config_groups": {
                          "group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}},
                          "ignore": ["lm_head", "model.layers.0.mlp.gate"]},
                      "rope_scaling": {"type": "yarn", "factor": 4.0}},
    "types.json": {"s": "\u00e9\u4e2d\ud83d\ude00 \"q\" \\ \n", "i": -9223372036854775808, "f": -0.0,
                   "e": 1.5e300, "t": True, "n": None, "a": [[], {}, [1, [2, [3]]]], "o": {"": {"x": 0}}},
}


def config_json():
    reset("config_json")
    for name, obj in CONFIGS.items():
        out("config_json", name, json.dumps(obj, indent=2, ensure_ascii=(name == "types.json")).encode())
    out("config_json", "compact.json", b'{"a":[1,2,3],"b":{"c":"d"}}')
    out("config_json", "padded.json", b' \n\t{ "a" : [ true , false ] }\r\n')


# ---------------------------------------------------------------- quantized checkpoints
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.dont_write_bytecode = True  # gen_dialects is imported from the tree: leave no __pycache__ there


def dialect_seed(config=None, hf=None, tensors=None):
    """The framing of fuzz_dialects.c: CONFIG ["\xffHF\n" HF] "\xffST\n" SAFETENSORS."""
    import gen_dialects as gd
    b = json.dumps(config).encode() if config is not None else b""
    if hf is not None:
        b += b"\xffHF\n" + json.dumps(hf).encode()
    if tensors is not None:
        b += b"\xffST\n" + gd.st_bytes(tensors)
    return b


def dialects():
    import random
    import gen_dialects as gd
    reset("dialects")
    rnd = random.Random(7)
    P = "model.layers.0.mlp.down_proj"
    ds_q = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [8, 16]}
    # DeepSeek: 8x16 blocks with partial edge blocks, an F32 scale grid [3, 3]
    codes, scales, (sr, sc), _ = gd.fp8_case(rnd, 20, 40, 8, 16)
    ds = [(P + ".weight", "F8_E4M3", [20, 40], codes), (P + ".weight_scale_inv", "F32", [sr, sc], scales),
          gd.bf16_tensor("model.norm.weight", 1, 8, rnd)]
    out("dialects", "deepseek.bin", dialect_seed({"quantization_config": ds_q}, tensors=ds))
    # undeclared weight_scale_inv: the default 128x128 blocks; E5M2 under fmt e5m2
    codes, scales, (sr, sc), _ = gd.fp8_case(rnd, 9, 24, 128, 128)
    out("dialects", "deepseek_undeclared.bin",
        dialect_seed(tensors=[(P + ".weight", "F8_E4M3", [9, 24], codes), (P + ".weight_scale_inv", "F32", [sr, sc], scales)]))
    codes, scales, (sr, sc), _ = gd.fp8_case(rnd, 16, 16, 8, 16, e5m2=True)
    out("dialects", "deepseek_e5m2.bin", dialect_seed({"quantization_config": dict(ds_q, fmt="e5m2")}, tensors=[
        (P + ".weight", "F8_E5M2", [16, 16], codes), (P + ".weight_scale_inv", "F32", [sr, sc], scales)]))
    # compressed-tensors FP8: channel (with input_scale), tensor (BF16), group 8 (F16), block 4x8
    groups, ts = {}, []
    for i, (p, n, k, strat, br, bc, sdt) in enumerate([
            ("model.layers.0.mlp.gate_proj", 6, 16, "channel", 1, 16, "F32"),
            ("model.layers.0.mlp.up_proj", 5, 16, "tensor", 5, 16, "BF16"),
            ("model.layers.0.mlp.down_proj", 3, 24, "group", 1, 8, "F16"),
            ("model.layers.0.self_attn.q_proj", 10, 20, "block", 4, 8, "F32")]):
        codes, scales, (sr, sc), _ = gd.fp8_case(rnd, n, k, br, bc, sdt)
        ts += [(p + ".weight", "F8_E4M3", [n, k], codes), (p + ".weight_scale", sdt, [] if strat == "tensor" else [sr, sc], scales)]
        if strat == "channel":
            ts.append((p + ".input_scale", "F32", [1], struct.pack("<f", 0.25)))
        w = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": strat}
        if strat == "group":
            w["group_size"] = 8
        if strat == "block":
            w["block_structure"] = [4, 8]
        groups["group_%d" % i] = {"targets": ["re:.*" + p.split(".")[-1] + "$"], "weights": w}
    ts.append(gd.bf16_tensor("lm_head.weight", 2, 8, rnd))
    ct_fp8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": groups,
              "ignore": ["lm_head"]}
    out("dialects", "ct_fp8.bin", dialect_seed({"quantization_config": ct_fp8}, tensors=ts))
    # without the declaration the scale shapes tell the strategy (4x8 blocks they cannot)
    out("dialects", "ct_fp8_undeclared.bin", dialect_seed(tensors=[t for t in ts if "q_proj" not in t[0]]))
    # compressed-tensors packed int4 asymmetric group 8 (K = 20: padded words, an edge group,
    # zero points packed along the rows), int8 symmetric channel, an I8 weight with I8 zero points
    n, k, g = 6, 20, 8
    G = -(-k // g)
    q = [rnd.randrange(-8, 8) for _ in range(n * k)]
    z = [rnd.randrange(-8, 8) for _ in range(n * G)]
    sc = [gd.bf16_bits(rnd.uniform(0.01, 0.1)) for _ in range(n * G)]
    packed, wpr = gd.pack_rows(q, n, k, 4)
    zp, zrows = gd.pack_cols_dim0(z, n, G, 4)
    ts = [(P + ".weight_packed", "I32", [n, wpr], packed), (P + ".weight_scale", "BF16", [n, G], struct.pack("<%dH" % len(sc), *sc)),
          (P + ".weight_zero_point", "I32", [zrows, G], zp), (P + ".weight_shape", "I64", [2], struct.pack("<2q", n, k))]
    q8 = [rnd.randrange(-128, 128) for _ in range(4 * 12)]
    packed8, wpr8 = gd.pack_rows(q8, 4, 12, 8)
    U = "model.layers.0.mlp.up_proj"
    ts += [(U + ".weight_packed", "I32", [4, wpr8], packed8), (U + ".weight_scale", "F32", [4, 1], f32(0.01, 0.02, 0.03, 0.04)),
           (U + ".weight_shape", "I64", [2], struct.pack("<2q", 4, 12))]
    Q = "model.layers.0.self_attn.q_proj"
    ts += [(Q + ".weight", "I8", [3, 8], bytes(rnd.randrange(256) for _ in range(24))),
           (Q + ".weight_scale", "F32", [3, 1], f32(0.5, 0.25, 0.125)),
           (Q + ".weight_zero_point", "I8", [3, 1], bytes([1, 0xFF, 3]))]
    ct_int = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {
        "group_0": {"targets": ["re:.*down_proj$"], "weights": {"num_bits": 4, "type": "int", "symmetric": False,
                                                              "strategy": "group", "group_size": g}},
        "group_1": {"targets": ["re:.*up_proj$"], "weights": {"num_bits": 8, "type": "int", "symmetric": True,
                                                            "strategy": "channel"}},
        "group_2": {"targets": [Q], "weights": {"num_bits": 8, "type": "int", "symmetric": False, "strategy": "channel"}}},
        "ignore": ["lm_head", "re:.*vision.*"]}
    out("dialects", "ct_int.bin", dialect_seed({"quantization_config": ct_int}, tensors=ts))
    # undeclared: weight_shape tells the packed width (8 bits: 3 words for K = 12), the I8 weight
    out("dialects", "ct_int_undeclared.bin", dialect_seed(tensors=ts[4:]))
    # NVFP4: ModelOpt (hf_quant_config.json, weight_scale_2) and compressed-tensors (weight_global_scale)
    n, k = 8, 32
    nib = [rnd.randrange(16) for _ in range(n * k)]
    codes = bytes(nib[2 * i] | nib[2 * i + 1] << 4 for i in range(n * k // 2))
    bs = bytes(gd.e4m3_nearest_code(rnd.uniform(0.05, 2.0)) for _ in range(n * k // 16))
    mo = [(P + ".weight", "U8", [n, k // 2], codes), (P + ".weight_scale", "F8_E4M3", [n, k // 16], bs),
          (P + ".weight_scale_2", "F32", [], struct.pack("<f", 0.003)), (P + ".input_scale", "F32", [], struct.pack("<f", 0.125))]
    mo_hf = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                                "exclude_modules": ["lm_head"]}}
    out("dialects", "modelopt_nvfp4.bin", dialect_seed({"model_type": "llama"}, mo_hf, mo))
    out("dialects", "modelopt_nvfp4_undeclared.bin", dialect_seed(tensors=mo))
    ctn = [(P + ".weight_packed", "U8", [n, k // 2], codes), (P + ".weight_scale", "F8_E4M3", [n, k // 16], bs),
           (P + ".weight_global_scale", "F32", [1], struct.pack("<f", 448.0)),
           (P + ".input_global_scale", "F32", [1], struct.pack("<f", 300.0))]
    ct_nv = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "symmetric": True,
                                                      "strategy": "tensor_group", "group_size": 16}}}}
    out("dialects", "ct_nvfp4.bin", dialect_seed({"quantization_config": ct_nv}, tensors=ctn))
    # ModelOpt FP8: per tensor (hf_quant_config.json), per channel and 128x128 blocks (config.json)
    codes, scales, _, _ = gd.fp8_case(rnd, 6, 16, 6, 16)
    mo8 = [(P + ".weight", "F8_E4M3", [6, 16], codes), (P + ".weight_scale", "F32", [], scales),
           (P + ".input_scale", "F32", [], struct.pack("<f", 0.5))]
    out("dialects", "modelopt_fp8.bin", dialect_seed(None, {"quantization": {"quant_algo": "FP8"}}, mo8))
    codes, scales, (sr, sc), _ = gd.fp8_case(rnd, 6, 16, 1, 16)
    out("dialects", "modelopt_fp8_channel.bin", dialect_seed(
        {"quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8_PER_CHANNEL_PER_TOKEN"}},
        tensors=[(P + ".weight", "F8_E4M3", [6, 16], codes), (P + ".weight_scale", "F32", [sr, sc], scales)]))
    codes, scales, (sr, sc), _ = gd.fp8_case(rnd, 6, 16, 128, 128)
    out("dialects", "modelopt_fp8_pb_wo.bin", dialect_seed(
        {"quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8_PB_WO", "ignore": ["*lm_head*"]}},
        tensors=[(P + ".weight", "F8_E4M3", [6, 16], codes), (P + ".weight_scale", "F32", [sr, sc], scales)]))
    # broken: a NaN block scale, a NaN code, a missing scale, two scales of one weight, a companion
    # alone, gptq, ModelOpt's declaration against an fp8 one, config.json alone, nothing at all
    nan_scale = list(ds)
    nan_scale[1] = (nan_scale[1][0], "F32", [3, 3], nan_scale[1][3][:16] + struct.pack("<I", 0x7FC00000) + nan_scale[1][3][20:])
    out("dialects", "bad_nan_scale.bin", dialect_seed({"quantization_config": ds_q}, tensors=nan_scale))
    nan_code = list(ds)
    nan_code[0] = (P + ".weight", "F8_E4M3", [20, 40], ds[0][3][:333] + b"" + ds[0][3][334:])
    out("dialects", "bad_nan_code.bin", dialect_seed({"quantization_config": ds_q}, tensors=nan_code))
    out("dialects", "bad_missing_scale.bin", dialect_seed({"quantization_config": ds_q}, tensors=[ds[0], ds[2]]))
    out("dialects", "bad_two_scales.bin", dialect_seed(tensors=ds + [(P + ".weight_scale", "F32", [], f32(1.0))]))
    out("dialects", "bad_companion_alone.bin", dialect_seed({"quantization_config": ds_q}, tensors=ds[1:]))
    out("dialects", "bad_gptq.bin", dialect_seed({"quantization_config": {"quant_method": "gptq", "bits": 4}}, tensors=ds))
    out("dialects", "bad_markers.bin", dialect_seed({"quantization_config": ds_q}, mo_hf, mo))
    out("dialects", "config_only.bin", dialect_seed({"quantization_config": ct_int}))
    out("dialects", "empty.bin", b"")
    # quantized checkpoints no dialect reads (docs/dialects.md, "Quantized checkpoints not read
    # yet"): declared (MLX without quant_method, a compressed-tensors sparsity_config) or by tensors
    gptq = [(P + ".qweight", "I32", [2, 8], bytes(64)), (P + ".scales", "F16", [1, 8], bytes(16)),
            (P + ".g_idx", "I32", [16], bytes(64))]
    out("dialects", "refused_gptq_tensors.bin", dialect_seed(tensors=gptq))
    mlx = [(P + ".weight", "U32", [2, 2], bytes(16)), (P + ".scales", "BF16", [2, 1], bytes(4)),
           (P + ".biases", "BF16", [2, 1], bytes(4))]
    out("dialects", "refused_mlx.bin", dialect_seed({"quantization_config": {"group_size": 64, "bits": 4}}, tensors=mlx))
    out("dialects", "refused_mlx_tensors.bin", dialect_seed(tensors=mlx))
    out("dialects", "refused_ct_sparse.bin", dialect_seed({"quantization_config": {
        "quant_method": "compressed-tensors", "sparsity_config": {"format": "sparse-24-bitmask"}}}, tensors=mlx))
    # GPTQ, AWQ, MLX and MXFP4 as their producers write them (tests/cli/gen_packed.py), config.json
    # and the one safetensors file framed as above
    import gen_packed
    with tempfile.TemporaryDirectory() as tmp:
        gen_packed.cases(tmp, random.Random(11))
        for c in ("gptq4", "gptq3_act", "gptq2_v2", "awq_gemm", "awq_gemv", "mlx4", "mlx3_old", "mlx_mixed",
                  "gpt_oss_hf", "gpt_oss_orig", "ct_mxfp4", "fbgemm", "bnb_nf4", "bnb_fp4", "bnb_int8"):
            d = os.path.join(tmp, c)
            st_name = [f for f in sorted(os.listdir(d)) if f.endswith(".safetensors")][0]
            cfg = open(os.path.join(d, "config.json"), "rb").read()
            out("dialects", c + ".bin", cfg + b"\xffST\n" + open(os.path.join(d, st_name), "rb").read())


def torch_seeds():
    """torch.save's zip as tests/cli/gen_torch.py lays it out: small state dicts (a shared storage,
    views at offsets, every storage class, a strided view), deflated members, the legacy stream;
    beside them real_*.bin, written by torch itself (tests/cli/gen_torch_real.py)."""
    reset("torch")
    import collections
    import gen_torch as g
    with tempfile.TemporaryDirectory() as tmp:
        vals = [(i % 7 - 3) / 4.0 for i in range(64)]
        f32 = g.Storage("0", "FloatStorage", vals)
        states = {
            "views.bin": collections.OrderedDict([("a.weight", g.Tensor(f32, 0, (2, 8), (8, 1))),
                                                   ("b.weight", g.Tensor(f32, 16, (4, 8), (8, 1))),
                                                   ("tied.weight", g.Tensor(f32, 0, (2, 8), (8, 1)))]),
            "classes.bin": collections.OrderedDict(
                [(c, g.Tensor(g.Storage(str(i), c, [1] * 8 if c != "BoolStorage" else [True] * 8), 0, (2, 4),
                              (4, 1)))
                 for i, c in enumerate(["FloatStorage", "HalfStorage", "BFloat16Storage", "DoubleStorage",
                                        "LongStorage", "IntStorage", "ShortStorage", "CharStorage", "ByteStorage",
                                        "BoolStorage"])]),
            "strided.bin": collections.OrderedDict([("w", g.Tensor(f32, 0, (8, 8), (1, 8)))]),
        }
        for name, state in states.items():
            g.save(os.path.join(tmp, name), state)
            out("torch", name, open(os.path.join(tmp, name), "rb").read())
        # every member deflated; the legacy stream before PyTorch 1.6
        g.save(os.path.join(tmp, "deflated.bin"), states["views.bin"], deflate=True)
        out("torch", "deflated.bin", open(os.path.join(tmp, "deflated.bin"), "rb").read())
        legacy = collections.OrderedDict((n, g.LegacyTensor(t.storage, t.offset, t.size, t.stride))
                                         for n, t in states["views.bin"].items())
        legacy["t"] = g.LegacyTensor(f32, 0, (8, 8), (1, 8))
        g.save_legacy(os.path.join(tmp, "legacy.bin"), legacy)
        out("torch", "legacy.bin", open(os.path.join(tmp, "legacy.bin"), "rb").read())


if __name__ == "__main__":
    bindir = sys.argv[sys.argv.index("--bin") + 1] if "--bin" in sys.argv else None
    container(bindir)
    st()
    st_index()
    gg()
    imatrix()
    recipes()
    recipe_resolve()
    config_json()
    dialects()
    torch_seeds()
    total = 0
    for d, _, files in os.walk(CORPUS):
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    print("corpus: %d bytes" % total)
