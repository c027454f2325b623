#!/usr/bin/env python3
"""A GPTQ-style quantizer of the grouped integer formats as a method program, with llama.cpp's
importance matrix (`with: {imatrix: NAME}`) as the diagonal of its Hessian.

GPTQ (Frantar et al., 2022) quantizes a row column by column and feeds each column's error
forward to the columns not yet quantized, through the inverse Hessian H^-1 of the layer's inputs:

    e_j = (w_j - q_j) / [H^-1]_jj          w_k -= e_j [H^-1]_jk   for k > j

and picks each group's scale by a least-error search over shrunken ranges (its quantizer's `mse`
option).  An importance matrix holds only the diagonal of H (the mean squared activation of each
input channel), so H^-1 is diagonal too and the update of the later columns is zero: what GPTQ
does with it is the search of each group's scale that makes the importance-weighted squared error
least, and rounding to nearest.  That is what this program does.  Without an imatrix every
channel weighs 1; its report then shows a smaller RMSE than grouped_absmax's, which takes the
largest magnitude's scale whatever the error.

Parameters (`with:`): imatrix (a source of the recipe), steps (candidate scales a group, default
24), shrink (the smallest range tried, as a fraction of the group's largest magnitude, default
0.5), damp (added to H's diagonal, times its mean, default 0.01).

    ninfer-convert ckpt/ -o out.ninfer --format q4_g64_fp16 --method gptq \\
        --method-program gptq="python3 examples/methods/gptq_diag.py"
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402

import ninfer_method  # noqa: E402


def group_search(g, h, qmax, code_min, code_max, steps, shrink):
    """g: (n, groups, size) values, h: (groups, size) weights.  The binary16 scale words and the
    codes of the least weighted squared error among `steps` ranges from amax down to shrink*amax."""
    amax = np.abs(g).max(axis=2)
    best_err = np.full(amax.shape, np.inf, dtype=np.float64)
    best_words = np.zeros(amax.shape, dtype=np.uint16)
    best_codes = np.zeros(g.shape, dtype=np.int8)
    for p in np.linspace(1.0, shrink, steps, dtype=np.float32):
        s16 = (amax * p / np.float32(qmax)).astype(np.float32).astype(np.float16)
        words = s16.view(np.uint16).copy()
        words[(words == 0) & (amax > 0)] = 1  # the smallest subnormal, never +0 over nonzero values
        s = words.view(np.float16).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(s[:, :, None] > 0, np.rint(g / s[:, :, None]), 0)
        q = np.clip(q, code_min, code_max)
        err = (((q * s[:, :, None] - g) ** 2) * h[None, :, :]).sum(axis=2, dtype=np.float64)
        better = err < best_err
        best_err = np.where(better, err, best_err)
        best_words = np.where(better, words, best_words)
        best_codes = np.where(better[:, :, None], q, best_codes).astype(np.int8)
    return best_words, best_codes


def encode(rows, fmt, params):
    if fmt.category != "grouped":
        raise ValueError("gptq_diag encodes the grouped formats, not %s" % fmt.name)
    if not np.isfinite(rows).all():
        r, c = np.argwhere(~np.isfinite(rows))[0]
        raise ValueError("row %d col %d is not finite" % (fmt.first_row + r, c))
    n, k = rows.shape
    size = fmt.group_size
    d = fmt.importance if fmt.importance is not None else np.ones(k, dtype=np.float32)
    d = d.astype(np.float64)
    d = d + float(params.get("damp", 0.01)) * d.mean()
    h = ninfer_method.grouped_view(d.astype(np.float32)[None, :], size)[0]  # padding columns weigh 0
    g = ninfer_method.grouped_view(rows, size)  # no column update: H^-1 is diagonal (above)
    words, codes = group_search(g, h, fmt.qmax, fmt.code_min, fmt.code_max, int(params.get("steps", 24)),
                                float(params.get("shrink", 0.5)))
    return codes.reshape(n, -1)[:, :k], words


if __name__ == "__main__":
    sys.exit(ninfer_method.run(encode))
