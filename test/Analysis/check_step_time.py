# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Compares a report's predicted step time with a measured one: prints the
ratio and the time by kernel kind; exits 1 when the prediction is off by more
than the given relative tolerance."""
import json
import sys

report = json.load(open(sys.argv[1]))
measured, tolerance = float(sys.argv[2]), float(sys.argv[3])
predicted = report["totals"]["time_s"] + sum(
    e["time_s"] for e in report["time_breakdown"] if e["category"] == "communication")
error = predicted / measured - 1
verdict = (f"within {tolerance:.0%}" if abs(error) <= tolerance
           else f"off by {error:+.1%}")
print(f"predicted {predicted * 1e3:.2f} ms vs measured {measured * 1e3:.2f} ms: {verdict}")
for e in report["time_breakdown"]:
    print(f"  {e['category']:12} {e['time_s'] * 1e3:8.2f} ms {e['fraction']:6.1%} {e['kernels']} kernels")
sys.exit(0 if abs(error) <= tolerance else 1)
