#!/usr/bin/env python3
"""A checkpoint of one long BF16 tensor for the bounded-memory tests (test_long_rows.sh,
test_diff.sh): DIR/model.safetensors holding NAME [ROWS, COLS] and an empty DIR/config.json.

usage: gen_long_rows.py DIR NAME ROWS COLS

The values are a cheap pattern of normal bf16 numbers near 1, varied per block of 4096, so that
encoders and statistics see more than one value without the generator costing seconds."""
import json
import os
import struct
import sys

d, name, rows, cols = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
os.makedirs(d)
data = bytearray(rows * cols * 2)
x = 12345
for i in range(0, rows * cols, 4096):
    x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    w = 0x3C00 + (x & 0x3FF) | ((x >> 10) & 1) << 15
    data[2 * i:2 * i + 8192] = struct.pack('<H', w) * 4096
hdr = json.dumps({name: {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [0, len(data)]}}).encode()
hdr += b' ' * (-len(hdr) % 8)
with open(os.path.join(d, 'model.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(hdr)) + hdr + data)
with open(os.path.join(d, 'config.json'), 'w') as f:
    f.write('{}')
