#!/usr/bin/env python3
"""python/ninfer_method.py against docs/method-programs.md 3 (run by test_method_program.sh with an
interpreter that has numpy): the frames it answers, what encode is given, what it may return for
each format category, refusals as error frames, and print() kept off the protocol.
usage: test_ninfer_method.py REPO"""
import io
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "python"))
import numpy as np  # noqa: E402

import ninfer_method  # noqa: E402

failed = 0


def check(cond, what):
    global failed
    if not cond:
        failed += 1
        print("FAIL", what)


def frame(kind, payload):
    return b"NFMP" + struct.pack("<IQ", kind, len(payload)) + payload


def tensor(category, fmt_name, rows, cols, **kw):
    doc = {"tensor": "t", "format": fmt_name, "category": category, "rows": rows, "cols": cols, "group_size": 0,
           "code_min": 0, "code_max": 0, "qmax": 0, "scale": "none", "word_bytes": 0, "block_values": 0,
           "block_bytes": 0, "params": {"p": 1}}
    doc.update(kw)
    return frame(2, json.dumps(doc).encode())


def chunk(first, values, importance=None):
    n, k = values.shape
    body = struct.pack("<QQQQ", first, n, k, 1 if importance is not None else 0) + values.astype("<f4").tobytes()
    if importance is not None:
        body += importance.astype("<f4").tobytes()
    return frame(3, body)


def frames(data):
    out, i = [], 0
    while i < len(data):
        magic, kind, n = struct.unpack("<4sIQ", data[i:i + 16])
        assert magic == b"NFMP", data[i:i + 16]
        out.append((kind, data[i + 16:i + 16 + n]))
        i += 16 + n
    return out


def serve(encode, stream):
    out = io.BytesIO()
    ninfer_method.run(encode, io.BufferedReader(io.BytesIO(stream)), out)
    return frames(out.getvalue())


hello = frame(1, json.dumps({"protocol": 1, "method": "m"}).encode())
x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
seen = []


def grouped(rows, fmt, params):
    seen.append((fmt.tensor, fmt.first_row, rows.copy(), None if fmt.importance is None else fmt.importance.copy(),
                 params, fmt.groups))
    return np.clip(rows, -2, 1).astype(np.int64), np.full((rows.shape[0], fmt.groups), 0.5, dtype=np.float16)


imp = np.array([1, 2, 3, 4], dtype=np.float32)
got = serve(grouped, hello + tensor("grouped", "q2_g64_fp16", 5, 4, group_size=64, code_min=-1, code_max=2) +
            chunk(0, x) + chunk(3, x[:2], imp))
check(got[0] == (1, struct.pack("<I", 1)), "hello answer %r" % (got[0],))
want = np.clip(x, -2, 1).astype(np.int8).tobytes() + struct.pack("<3H", 0x3800, 0x3800, 0x3800)
check(got[1] == (3, want), "grouped answer %r" % (got[1],))
check(len(got) == 3 and got[2][0] == 3 and len(got[2][1]) == 8 + 4, "second chunk's answer")
check(seen[0][0] == "t" and seen[0][1] == 0 and np.array_equal(seen[0][2], x) and seen[0][3] is None, "first chunk")
check(seen[1][1] == 3 and np.array_equal(seen[1][3], imp) and seen[1][4] == {"p": 1} and seen[1][5] == 1,
      "second chunk: first_row, importance, params, groups")

# what each category takes
cases = [
    ("fp8_row", "fp8_e4m3fn_row_bf16", {}, lambda r: (np.zeros(r.shape, np.uint8), np.full(r.shape[0], 0x3F80, np.uint16)),
     3 * 4 + 3 * 2),
    ("nvfp4", "nvfp4", {}, lambda r: (np.zeros((3, 32), np.uint8), np.zeros((3, 2), np.uint8)), 3 * 32 + 3 * 2),
    ("gguf", "gguf_q8_0", {"block_values": 32, "block_bytes": 34}, lambda r: (np.zeros((3, 34), np.uint8), None),
     3 * 34),
    ("direct", "fp32", {"word_bytes": 4}, lambda r: (r.astype(np.float32), None), 3 * 4 * 4),
    ("direct", "bf16", {"word_bytes": 2}, lambda r: ((r.view(np.uint32) >> 16).astype(np.uint16), None), 3 * 4 * 2),
]
for cat, name, kw, fn, size in cases:
    cols = 32 if cat in ("nvfp4", "gguf") else 4
    v = np.ones((3, cols), dtype=np.float32)
    got = serve(lambda r, f, p: fn(r), hello + tensor(cat, name, 3, cols, **kw) + chunk(0, v))
    check(got[1][0] == 3 and len(got[1][1]) == size, "%s: %d answer bytes, want %d" % (name, len(got[1][1]), size))
got = serve(lambda r, f, p: (r.astype(np.float32), None), hello + tensor("direct", "fp32", 3, 4, word_bytes=4) +
            chunk(0, x))
check(got[1][1] == x.astype("<f4").tobytes(), "fp32 words are the values' bits")

# bf16 words: nearest, ties to even; a float16 array where the words are bf16 is refused
check(ninfer_method.bf16_words(np.array([1.0, 1.00390625, 1.01171875, -2.5], np.float32)).tolist() ==
      [0x3F80, 0x3F80, 0x3F82, 0xC020], "bf16_words rounding")
got = serve(lambda r, f, p: (np.zeros(r.shape, np.uint8), np.ones(r.shape[0], np.float16)),
            hello + tensor("fp8_row", "fp8_e4m3fn_row_bf16", 3, 4, scale="bf16") + chunk(0, x))
check(got[1][0] == 4 and b"not binary16" in got[1][1], "float16 scales of a bf16 format refused: %r" % (got[1],))
got = serve(lambda r, f, p: (np.full(r.shape, 200), np.zeros((3, 1), np.float16)),
            hello + tensor("grouped", "q8_g32_fp16", 3, 4, group_size=32) + chunk(0, x))
check(got[1][0] == 4 and b"200 does not fit a code" in got[1][1], "code 200 refused, not wrapped: %r" % (got[1],))
got = serve(lambda r, f, p: (_ for _ in ()).throw(ValueError("\u00e9" * 3000)),
            hello + tensor("grouped", "q4_g64_fp16", 3, 4, group_size=64) + chunk(0, x))
check(got[1][0] == 4 and len(got[1][1]) <= 4096, "error text bounded")
got[1][1].decode("utf-8")  # whole characters only (raises otherwise)

# refusals: error frames, and serving goes on
got = serve(lambda r, f, p: (np.zeros((3, 4), np.int8), np.zeros((3, 2), np.float16)),
            hello + tensor("grouped", "q4_g64_fp16", 3, 4, group_size=64) + chunk(0, x) + chunk(0, x))
check(got[1][0] == 4 and b"scales: expected (3, 1) values" in got[1][1], "wrong shape: %r" % (got[1],))
check(len(got) == 3 and got[2][0] == 4, "still serving after a refusal")


def boom(rows, fmt, params):
    raise ValueError("cannot do row %d" % fmt.first_row)


got = serve(boom, hello + tensor("grouped", "q4_g64_fp16", 3, 4, group_size=64) + chunk(7, x))
check(got[1] == (4, b"ValueError: cannot do row 7"), "exception text %r" % (got[1],))
got = serve(lambda r, f, p: (np.zeros((3, 4), np.float32), np.zeros((3, 1), np.float16)),
            hello + tensor("grouped", "q4_g64_fp16", 3, 4, group_size=64) + chunk(0, x))
check(got[1][0] == 4 and b"codes: expected integers" in got[1][1], "float codes refused: %r" % (got[1],))

# a real process: print() goes to stderr, stdout holds frames only
prog = ("import sys; sys.path.insert(0, %r); import numpy as np, ninfer_method\n"
        "def enc(r, f, p):\n    print('hello from encode')\n"
        "    return np.zeros(r.shape, np.int8), np.zeros((r.shape[0], f.groups), np.uint16)\n"
        "ninfer_method.run(enc)\n") % os.path.join(sys.argv[1], "python")
p = subprocess.run([sys.executable, "-c", prog], input=hello + tensor("grouped", "q4_g64_fp16", 3, 4, group_size=64) +
                   chunk(0, x), capture_output=True)
check(p.returncode == 0, "helper process exit %d: %s" % (p.returncode, p.stderr[-300:]))
check(b"hello from encode" in p.stderr, "print() reaches stderr")
check([k for k, _ in frames(p.stdout)] == [1, 3], "stdout holds the frames only: %r" % p.stdout[:80])

print("ninfer_method: %s" % ("ok" if not failed else "%d failed" % failed))
sys.exit(1 if failed else 0)
