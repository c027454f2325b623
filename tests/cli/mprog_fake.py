#!/usr/bin/env python3
"""A method program that speaks docs/method-programs.md 3 with the standard library only, and
misbehaves as its first argument says (tests/cli/test_method_program.sh):
  zeros    valid words, all zero (any other mode not listed here too)
  order    valid words that depend on the row (code (row + col) % 3 - 1, scale 1.0): checks that
           a tensor's chunks come in order, from row 0, and refuses otherwise
  short    an answer one byte shorter than the words
  code     a grouped code out of the format's range
  nan      a NaN binary16 scale
  die      exits with status 3 at its second chunk
  segv     kills itself with SIGSEGV at its first chunk
  hang     sleeps at its first chunk
  flood    writes 3 MB on stderr at each chunk, then answers
  chatter  prints a line on standard output before its first answer
  refuse   answers an error frame
  version  answers the hello with protocol 2
  trailing writes a byte on standard output after its input ends
  exit1    exits with status 1 after its input ends
  params   refuses unless the tensor header's params are {"bits": 3, "note": "x"}
  imp      refuses unless every chunk brings an importance vector of cols values
  stream   valid words (zeros), the answer's header first, then each row's codes as soon as the
           row is read (an answer larger than a pipe, while the chunk is still coming)
  early    refuses a tensor right after its header, then waits (never reading the chunk)
  early_exit  the same, then exits 0
  noexit   valid words (zeros), and does not exit when its input ends
  late     refuses tensor lm_head.weight, valid words for the others; does not exit when its
           input ends (a worker's failure must not wait for another worker's program)
  linger   valid words (zeros), and a child of its own that keeps its stdout open for 10 minutes
  fds      refuses its hello if it was started with a descriptor open beyond 0, 1 and 2 (the
           converter's files are close-on-exec)"""
import json
import os
import signal
import struct
import sys
import time

mode = sys.argv[1]
inp, out = sys.stdin.buffer, sys.stdout.buffer


def read(n):
    b = b""
    while len(b) < n:
        k = inp.read(n - len(b))
        if not k:
            if mode in ("noexit", "late"):
                time.sleep(3600)
            if mode == "trailing":
                out.write(b"x")
                out.flush()
            sys.exit(1 if mode == "exit1" else 0)
        b += k
    return b


def send(kind, payload):
    out.write(b"NFMP" + struct.pack("<IQ", kind, len(payload)) + payload)
    out.flush()


if mode == "linger" and os.fork() == 0:  # the child: holds the pipes, does nothing
    time.sleep(600)
    os._exit(0)
fmt = None
chunks = 0
seen = 0
while True:
    magic, kind, length = struct.unpack("<4sIQ", read(16))
    if kind == 1:
        read(length)
        if mode == "fds":
            leaked = []
            for fd in sorted(int(x) for x in os.listdir("/proc/self/fd")):
                try:  # (the listing's own descriptor is closed by now)
                    leaked += [] if fd <= 2 else ["%d -> %s" % (fd, os.readlink("/proc/self/fd/%d" % fd))]
                except OSError:
                    pass
            if leaked:
                send(4, ("inherited descriptors: %s" % ", ".join(leaked)).encode())
                continue
        send(1, struct.pack("<I", 2 if mode == "version" else 1))
        continue
    if kind == 2:
        fmt = json.loads(read(length))
        seen = 0
        if mode in ("early", "early_exit"):
            send(4, b"no tensor for me")
            if mode == "early_exit":
                sys.exit(0)
            time.sleep(3600)
        if mode == "params" and fmt["params"] != {"bits": 3, "note": "x"}:
            send(4, ("params %r" % fmt["params"]).encode())
        continue
    first, n, k, has_imp = struct.unpack("<QQQQ", read(32))
    if mode == "stream" and fmt["category"] in ("grouped", "direct"):
        per = 1 if fmt["category"] == "grouped" else fmt["word_bytes"]
        g = (k + fmt["group_size"] - 1) // fmt["group_size"] if fmt["category"] == "grouped" else 0
        out.write(b"NFMP" + struct.pack("<IQ", 3, n * k * per + 2 * n * g))
        for r in range(n):
            read(k * 4)
            out.write(bytes(k * per))
            out.flush()
        out.write(bytes(2 * n * g))
        out.flush()
        if has_imp:
            read(k * 4)
        continue
    read(n * k * 4)
    if has_imp:
        read(k * 4)
    chunks += 1
    if mode == "late" and fmt["tensor"] == "lm_head.weight":
        send(4, b"late failure")
        continue
    if mode == "imp" and not has_imp:
        send(4, b"no importance vector")
        continue
    if mode == "die" and chunks == 2:
        sys.exit(3)
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "hang":
        time.sleep(3600)
    if mode == "flood":
        sys.stderr.write(("flood " * 170 + "\n") * 3000)
        sys.stderr.flush()
    if mode == "chatter":
        out.write(b"hello\n")
        out.flush()
    if mode == "refuse":
        send(4, b"not today\n(second line)")
        continue
    if mode == "order" and first != seen:
        send(4, ("rows from %d, expected %d" % (first, seen)).encode())
        continue
    seen = first + n
    cat = fmt["category"]
    if cat == "grouped":
        g = (k + fmt["group_size"] - 1) // fmt["group_size"]
        codes = bytes(((first + r + c) % 3 - 1) & 0xFF for r in range(n) for c in range(k)) if mode == "order" else bytes(n * k)
        scale = 0x3C00 if mode == "order" else 0
        if mode == "code":
            codes = bytes([fmt["code_max"] + 1]) + codes[1:]
            scale = 0x3C00
        if mode == "nan":
            scale = 0x7E00
        words = codes + struct.pack("<H", scale) * (n * g)
    elif cat == "fp8_row":
        words = bytes(n * k) + bytes(2 * n)
    elif cat == "nvfp4":
        words = bytes(n * k) + bytes(n * k // 16)
    elif cat == "gguf":
        words = bytes(n * (k // fmt["block_values"]) * fmt["block_bytes"])
    else:
        words = bytes(n * k * fmt["word_bytes"])
    if mode == "short":
        words = words[:-1]
    send(3, words)
