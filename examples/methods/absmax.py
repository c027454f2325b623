#!/usr/bin/env python3
"""grouped_absmax as a method program: ninfer-convert's built-in reference encoder of the grouped
integer formats (docs/methods.md, grouped_absmax), written again in numpy.  Its artifact is byte
for byte the built-in method's (tests/cli/test_method_program.sh checks it), which is what shows
that the protocol carries every value and word exactly.

    ninfer-convert ckpt/ -o out.ninfer --format q4_g64_fp16 --method absmax \\
        --method-program absmax="python3 examples/methods/absmax.py"
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402

import ninfer_method  # noqa: E402


def encode(rows, fmt, params):
    if fmt.category != "grouped":
        raise ValueError("absmax encodes the grouped formats, not %s" % fmt.name)
    bad = ~np.isfinite(rows)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError("row %d col %d is not finite" % (fmt.first_row + r, c))
    n, k = rows.shape
    g = ninfer_method.grouped_view(rows, fmt.group_size)  # (n, groups, size)
    amax = np.abs(g).max(axis=2)  # binary32
    scale = (amax / np.float32(fmt.qmax)).astype(np.float32).astype(np.float16)  # binary32, then binary16
    if not np.isfinite(scale).all():
        raise ValueError("a scale overflows binary16")
    words = scale.view(np.uint16).copy()
    words[(words == 0) & (amax > 0)] = 1  # a nonzero scale that rounds to zero: the smallest subnormal
    s32 = words.view(np.float16).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(s32 > 0, np.float32(1) / s32, np.float32(0)).astype(np.float32)
    q = np.rint(np.clip((g * inv[:, :, None]).astype(np.float32), fmt.code_min, fmt.code_max))
    codes = q.reshape(n, -1)[:, :k].astype(np.int8)
    return codes, words


if __name__ == "__main__":
    sys.exit(ninfer_method.run(encode))
