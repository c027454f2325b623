#!/usr/bin/env python3
"""Stand-ins for the tasks of a plan (docs/scale-out.md), so that `ninfer-convert --plan P
--assemble` can be measured at the scale of 10^5 objects and terabytes without converting them
(bench/README.md, "Scale-out at 1T weights").  For every part (file >= 1) without a receipt it
writes what a task would leave: the part as a sparse file of the planned size whose 32-byte header
is this artifact's part header (magic, index, artifact id; the payload a hole), then its receipt
with the plan's fingerprint, the file, its size, a digest and every object with bytes in the file.

The entry (file 0) is not faked: run the real `--task` of file 0 first -- its staged entry holds
the exact header and directory the assembler checks.  Objects that file 0's receipt (or any receipt
already there) lists keep the checksum and statistics recorded there, since two receipts listing
an object must agree; the others get made-up checksums and statistics.  The artifact that comes
out is well-formed only in its directory: its payload is holes, so never use it for anything but
the timing.

usage: scaleout_standins.py PLAN.json
"""
import hashlib
import json
import os
import sys

MAGIC_PART = b"NINPRT\0\3"


def receipt_path(output, f):
    return output + ".entry.receipt.json" if f["file"] == 0 else f["path"] + ".receipt.json"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    plan_path = sys.argv[1]
    with open(plan_path) as fh:
        plan = json.load(fh)
    os.chdir(plan["cwd"])
    output, fp = plan["output"], plan["fingerprint"]
    art = bytes.fromhex(plan["artifact_id"])
    task_of = {}
    for t in plan["tasks"]:
        for i in t["files"]:
            task_of[i] = t["task"]
    # what receipts already there say about their objects
    known = {}
    have = set()
    for f in plan["files"]:
        rp = receipt_path(output, f)
        if os.path.exists(rp):
            have.add(f["file"])
            with open(rp) as fh:
                for o in json.load(fh)["objects"]:
                    known[o["object"]] = o
    if 0 not in have:
        sys.exit("scaleout_standins.py: no receipt of the entry (file 0): run its task first, "
                 "ninfer-convert --plan %s --task %d" % (plan_path, task_of[0]))
    # the plan's inputs as the real receipts bind them (docs/scale-out.md, "What a receipt binds")
    with open(receipt_path(output, plan["files"][0])) as fh:
        inputs = json.load(fh)["inputs"]
    zero = "0x0p+0"
    written = 0
    for f in plan["files"]:
        i = f["file"]
        if i in have:
            continue
        with open(f["path"], "wb") as part:
            part.write(MAGIC_PART + i.to_bytes(8, "little") + art)
            part.truncate(f["bytes"])
        objs = []
        for oid in f["objects"]:
            if oid not in known:
                known[oid] = {"object": oid, "checksum": hashlib.md5(oid.encode()).hexdigest(),
                              "stats": {"count": 1, "skipped": 0, "max_abs": zero, "sse": zero,
                                        "ssx": zero, "rmse": zero, "snr_db": "inf"}}
            objs.append(known[oid])
        r = {"ninfer_receipt": 1, "plan": fp, "inputs": inputs, "task": task_of[i], "file": i, "path": f["path"],
             "bytes": f["bytes"], "digest": hashlib.md5(f["path"].encode()).hexdigest(),
             "objects": objs}
        with open(receipt_path(output, f), "w") as fh:
            json.dump(r, fh, separators=(",", ":"))
        written += 1
    print("wrote %d stand-in parts and their receipts" % written)


if __name__ == "__main__":
    main()
