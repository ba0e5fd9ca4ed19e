# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Prints a bundle's manifest one line per buffer and step, for FileCheck,
after checking the invariants memwall-run relies on: every buffer 256-byte
aligned inside the arena, every step's buffers defined, and no two buffers
one step touches overlapping in the arena (unless one views the other)."""
import json
import sys

manifest = json.load(open(sys.argv[1]))
arena = manifest["arena_bytes"]
buffers = {b["name"]: b for b in manifest["buffers"]}
errors = []
for b in manifest["buffers"]:
    if b["offset"] % 256 or b["offset"] + b["bytes"] > arena:
        errors.append("buffer %s misplaced" % b["name"])

def touched(step):
    if step["kind"] == "kernel":
        return step["args"]
    return [step[k] for k in ("a", "b", "c", "bias", "d") if step[k]]

for step in manifest["steps"]:
    names = touched(step)
    for name in names:
        if name not in buffers:
            errors.append("step %s uses unknown buffer %s" % (step["name"], name))
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            bx, by = buffers[x], buffers[y]
            if x == y or (bx["offset"] == by["offset"] and bx["bytes"] == by["bytes"]):
                continue
            if bx["offset"] < by["offset"] + by["bytes"] and by["offset"] < bx["offset"] + bx["bytes"]:
                errors.append("step %s: %s and %s overlap" % (step["name"], x, y))
if errors:
    sys.exit("\n".join(errors))

print("bundle %s target=%s arch=%s arena=%d" % (manifest["model"], manifest["target"], manifest["arch"], arena))
# The operands of batched GEMMs: a stack's sources lie in it a pitch apart
# (buffers of its element shape at its pitches; others reuse its bytes at
# other times).
stacks = [buffers[s[k]] for s in manifest["steps"] if s["kind"] == "gemm" and s["batch"] > 1 for k in ("b", "d")]
def lies_in(b, stack):
    pitch = stack["bytes"] // stack["shape"][0]
    delta = b["offset"] - stack["offset"]
    return (b is not stack and b["dtype"] == stack["dtype"] and b["shape"] == stack["shape"][1:]
            and 0 <= delta < stack["bytes"] and delta % pitch == 0)
for b in manifest["buffers"]:
    line = "buffer %s %s %s %d %s" % (b["name"], b["dtype"], b["shape"], b["bytes"], b["role"])
    if "strides" in b:
        line += " strides=%s" % b["strides"]
    for o in stacks:
        if lies_in(b, o):
            line += " in=%s+%d" % (o["name"], b["offset"] - o["offset"])
    # Another buffer at the same bytes: a view of it (or it of this one).
    views = [o["name"] for o in manifest["buffers"] if o is not b and o["offset"] == b["offset"] and o["bytes"] == b["bytes"] and o["role"] != "intermediate" and b["role"] != "intermediate"]
    if views:
        line += " shares=%s" % ",".join(views)
    print(line)
for s in manifest["steps"]:
    if s["kind"] == "gemm":
        print("gemm %s a=%s b=%s c=%s bias=%s d=%s m=%d n=%d k=%d batch=%d trans_a=%s trans_b=%s dtype=%s epilogue=%s strides=%s" % (
            s["name"], s["a"], s["b"], s["c"], s["bias"], s["d"], s["m"], s["n"], s["k"], s["batch"],
            s["trans_a"], s["trans_b"], s["dtype"], s["epilogue"],
            [s["stride_a"], s["stride_b"], s["stride_c"], s["stride_d"]])
            + (" out_dtype=%s" % s["out_dtype"] if "out_dtype" in s else ""))
    else:
        shared = " shared=%d" % s["shared_bytes"] if s["shared_bytes"] else ""
        print("kernel %s grid=%s block=%s%s args=%s ops=%s" % (
            s["function"], s["grid"], s["block"], shared, ",".join(s["args"]),
            ",".join(s["ops"])))
for i in manifest["inputs"]:
    print("input %s buffer=%s value=%s" % (i["name"], i["buffer"], i["value"]))
for o in manifest["outputs"]:
    print("output %s buffer=%s value=%s" % (o["name"], o["buffer"], o["value"]))
print("reference %s" % " ".join(op["op"] for op in manifest["reference"]["ops"]))
