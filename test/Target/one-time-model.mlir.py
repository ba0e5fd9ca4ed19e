# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Prints, for every bundle step, its predicted time beside the report's for
the op running the same ops; exits 1 on any disagreement."""
import json
import sys

manifest = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
by_loc = {op["loc"]: op["time_s"] for op in report["ops"]}
ok = 0
for step in manifest["steps"]:
    loc = "+".join(step["ops"])
    predicted = step["predicted_time_s"]
    expected = by_loc[loc]
    same = abs(predicted - expected) <= 1e-9 * max(predicted, expected)
    print(f"{loc}: bundle {predicted * 1e6:.2f} us, report {expected * 1e6:.2f} us: "
          + ("equal" if same else "DIFFERENT"))
    ok += same
print(f"{ok} kernels agree")
sys.exit(0 if ok == len(manifest["steps"]) else 1)
