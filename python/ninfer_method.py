"""ninfer_method -- write a method program for ninfer-convert in Python.

A method program encodes the rows of the tensors a recipe gives it (docs/method-programs.md).
With this module a method is one function and one call:

    import ninfer_method

    def encode(rows, fmt, params):
        # rows: float32 array (n, fmt.cols), the chunk's rows of tensor fmt.tensor,
        #       from row fmt.first_row on; fmt.importance: float32 (fmt.cols,) or None
        ...
        return codes, scales

    ninfer_method.run(encode)

and the command line that names it:

    ninfer-convert -r recipe.yaml -o out.ninfer --method-program mine="python3 mine.py"

What encode returns, by fmt.category (the format's logical words, docs/method-programs.md 3.3):
  grouped   codes: int8 (n, cols) signed logical codes in [fmt.code_min, fmt.code_max];
            scales: (n, fmt.groups) binary16 words -- float16 values or uint16 words
  fp8_row   codes: uint8 (n, cols) E4M3FN words; scales: (n,) fmt.scale words: uint16
            (bf16_words() makes bf16 ones), or float16 values where fmt.scale is fp16
  nvfp4     codes: uint8 (n, cols) E2M1 words 0..15; scales: uint8 (n, cols // 16) E4M3FN
            words (the tensor's divisor word is fmt.divisor)
  gguf      blocks: uint8 (n, cols // fmt.block_values * fmt.block_bytes) ggml block bytes;
            scales: None
  direct    words: (n, cols) uint16 bf16 words (bf16_words()) or uint32 / float32 (fp32) /
            int32 words; None
Whatever it returns is checked by the converter against the format's contract.  Raise an
exception to refuse a chunk: its text is sent back and the conversion fails naming it.

The chunks of one tensor arrive in order on one program, so encode may carry state from row to
row (fmt.first_row == 0 starts a tensor).  One program serves one converter thread; keep no
state across tensors if the output must not depend on --threads.

Only the standard library and numpy are used.  Standard output belongs to the protocol: run()
sends print() to standard error, which the converter passes through.
"""

import json
import struct
import sys

import numpy as np

PROTOCOL = 1
_MAGIC = b"NFMP"
_HELLO, _TENSOR, _CHUNK, _ERROR = 1, 2, 3, 4
_HEADER = struct.Struct("<4sIQ")
_CHUNK_HEAD = struct.Struct("<QQQQ")


class ProtocolError(Exception):
    """The converter sent what this module does not understand."""


class Format:
    """The tensor and format of the chunks that follow (docs/method-programs.md 3.2)."""

    def __init__(self, doc):
        self.tensor = doc["tensor"]
        self.name = doc["format"]
        self.category = doc["category"]
        self.rows = int(doc["rows"])
        self.cols = int(doc["cols"])
        self.group_size = int(doc["group_size"])
        self.code_min = int(doc["code_min"])
        self.code_max = int(doc["code_max"])
        self.qmax = int(doc["qmax"])
        self.scale = doc["scale"]
        self.word_bytes = int(doc["word_bytes"])
        self.block_values = int(doc["block_values"])
        self.block_bytes = int(doc["block_bytes"])
        self.divisor = int(doc.get("divisor", 0))
        self.params = doc.get("params") or {}
        self.groups = -(-self.cols // self.group_size) if self.group_size else 0
        self.first_row = 0
        self.importance = None

    def __repr__(self):
        return "Format(%s, tensor=%r, %dx%d)" % (self.name, self.tensor, self.rows, self.cols)


def _read_exact(f, n):
    """n bytes (an uninitialized numpy buffer: no zero fill), None at the end of the input, or
    fewer when it ends inside them."""
    buf = np.empty(n, dtype=np.uint8)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            return None if got == 0 else buf[:got].tobytes()
        got += k
    return buf


def _words(a, dtype, shape, what, f16=False):
    """a as an array of dtype words of the given shape.  float16 values become their binary16
    words only where the words are binary16 (f16); integers become int8 codes only when they fit."""
    a = np.asarray(a)
    if dtype == np.uint16 and a.dtype == np.float16:
        if not f16:
            raise ValueError("%s: these words are not binary16: give uint16 words (bf16_words() makes bf16 ones)"
                             % what)
        a = a.view(np.uint16)
    if dtype == np.uint32 and a.dtype in (np.float32, np.int32):
        a = a.view(np.uint32)
    if dtype == np.int8 and a.dtype != np.int8:
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError("%s: expected integers, got %s" % (what, a.dtype))
        if a.size and (a.min() < -128 or a.max() > 127):
            raise ValueError("%s: %d does not fit a code (int8)" % (what, a.min() if a.min() < -128 else a.max()))
        a = a.astype(np.int8)
    if a.dtype != dtype:
        raise ValueError("%s: expected %s words, got %s" % (what, np.dtype(dtype).name, a.dtype))
    if a.size != int(np.prod(shape)):
        raise ValueError("%s: expected %s values, got shape %s" % (what, shape, a.shape))
    return np.ascontiguousarray(a.reshape(shape)).astype(a.dtype.newbyteorder("<"), copy=False)


def answer_bytes(fmt, n, result):
    """The words encode returned for n rows as the answer's bytes (checked shapes and types)."""
    first, second = result if isinstance(result, tuple) else (result, None)
    k = fmt.cols
    if fmt.category == "grouped":
        return [_words(first, np.int8, (n, k), "codes"), _words(second, np.uint16, (n, fmt.groups), "scales", True)]
    if fmt.category == "fp8_row":
        return [_words(first, np.uint8, (n, k), "codes"),
                _words(second, np.uint16, (n,), "scales", fmt.scale == "fp16")]
    if fmt.category == "nvfp4":
        return [_words(first, np.uint8, (n, k), "codes"), _words(second, np.uint8, (n, k // 16), "scales")]
    if fmt.category == "gguf":
        return [_words(first, np.uint8, (n, k // fmt.block_values * fmt.block_bytes), "blocks")]
    if fmt.category == "direct":
        return [_words(first, np.uint16 if fmt.word_bytes == 2 else np.uint32, (n, k), "words")]
    raise ValueError("unknown format category %r" % fmt.category)


def run(encode, stdin=None, stdout=None):
    """Serve the converter until it closes the program's standard input."""
    inp = stdin or sys.stdin.buffer.raw  # unbuffered: a chunk's values are read straight into place
    out = stdout or sys.stdout.buffer
    if stdout is None:
        sys.stdout = sys.stderr  # print() must not write into the protocol
    fmt = None
    params = {}
    while True:
        head = _read_exact(inp, _HEADER.size)
        if head is None:
            return 0
        if len(head) < _HEADER.size:
            raise ProtocolError("a frame header cut short")
        magic, kind, length = _HEADER.unpack(bytes(head))
        if magic != _MAGIC:
            raise ProtocolError("not a frame: %r" % bytes(head[:4]))
        if kind == _HELLO:
            doc = json.loads(bytes(_read_exact(inp, length)))
            if doc.get("protocol") != PROTOCOL:
                raise ProtocolError("protocol %r, this module speaks %d" % (doc.get("protocol"), PROTOCOL))
            out.write(_HEADER.pack(_MAGIC, _HELLO, 4) + struct.pack("<I", PROTOCOL))
            out.flush()
        elif kind == _TENSOR:
            fmt = Format(json.loads(bytes(_read_exact(inp, length))))
            params = fmt.params
        elif kind == _CHUNK:
            if fmt is None:
                raise ProtocolError("rows before a tensor header")
            first, n, k, has_imp = _CHUNK_HEAD.unpack(bytes(_read_exact(inp, _CHUNK_HEAD.size)))
            values = np.frombuffer(_read_exact(inp, n * k * 4), dtype="<f4").reshape(n, k)
            fmt.first_row = first
            fmt.importance = np.frombuffer(_read_exact(inp, k * 4), dtype="<f4") if has_imp else None
            try:
                parts = answer_bytes(fmt, n, encode(values, fmt, params))
            except Exception as e:  # refused: the converter names the tensor and rows
                text = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")[:4096]
                text = text.decode("utf-8", "ignore").encode("utf-8")  # no character cut in two
                out.write(_HEADER.pack(_MAGIC, _ERROR, len(text)) + text)
                out.flush()
                continue
            total = sum(p.nbytes for p in parts)
            out.write(_HEADER.pack(_MAGIC, _CHUNK, total))
            for p in parts:
                out.write(memoryview(p).cast("B"))
            out.flush()
        else:
            raise ProtocolError("unknown frame type %d" % kind)


# ---------------------------------------------------------------- helpers for encoders
def grouped_view(rows, group_size):
    """rows (n, k) as (n, groups, group_size), the last group padded with zeros."""
    n, k = rows.shape
    g = -(-k // group_size)
    if g * group_size != k:
        padded = np.zeros((n, g * group_size), dtype=np.float32)
        padded[:, :k] = rows
        rows = padded
    return rows.reshape(n, g, group_size)


def bf16_words(values):
    """Binary32 values as bf16 words (nearest, ties to even; NaN stays NaN), as uint16."""
    b = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((b >> 16) | 0x40).astype(np.uint16), r)


def f16_scales(values):
    """Binary32 scales rounded to binary16 (nearest, ties to even), as float16."""
    return np.asarray(values, dtype=np.float32).astype(np.float16)
