# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Prints a function of COUNT independent AdamW updates of 64-element bf16
weights with fp32 master weights (five buffers each), for
fuse-horizontal.mlir."""
import sys

count = int(sys.argv[1])
weight = "{memwall.kind = #memwall.arg_kind<weight>}"
state = "{memwall.kind = #memwall.arg_kind<optimizer_state>}"
args, body, results, types = [], [], [], []
for i in range(count):
    args += [f"%p{i}: tensor<64xbf16> {weight}", f"%g{i}: tensor<64xbf16>"]
    args += [f"%{s}{i}: tensor<64xf32> {state}" for s in "mvw"]
    body.append(
        f"  %r{i}:4 = memwall.adamw %p{i}, %g{i}, %m{i}, %v{i} master %w{i} "
        "lr 1.0e-03 : (tensor<64xbf16>, tensor<64xbf16>, tensor<64xf32>, "
        "tensor<64xf32>, tensor<64xf32>) -> (tensor<64xbf16>, tensor<64xf32>, "
        "tensor<64xf32>, tensor<64xf32>)")
    results += [f"%r{i}#{k}" for k in range(4)]
    types += ["tensor<64xbf16>"] + ["tensor<64xf32>"] * 3
print(f"func.func @updates({', '.join(args)}) -> ({', '.join(types)}) {{")
print("\n".join(body))
print(f"  return {', '.join(results)} : {', '.join(types)}")
print("}")
