# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks the communication section of a report against its own parts
(times = bytes / link bandwidth, step = compute + exposed) and prints the
figures for FileCheck, bytes exactly and times in microseconds."""
import json
import sys

report = json.load(open(sys.argv[1]))
c = report["communication"]
collective = c["all_reduce_bytes"] + c["reduce_scatter_bytes"] + \
    c["all_gather_bytes"]
if c["link_bytes_per_s"] > 0:
    expected = collective / c["link_bytes_per_s"]
    assert abs(c["collective_time_s"] - expected) <= 1e-9 * max(1, expected), (
        c["collective_time_s"], expected)
step = c["compute_time_s"] + c["exposed_time_s"]
assert abs(c["step_time_s"] - step) <= 1e-12 + 1e-9 * step, (c["step_time_s"],
                                                            step)
assert c["exposed_time_s"] >= 0
print("communication: devices=%d stage=%d offload=%s link=%s at %.0f GB/s" % (
    c["devices"], c["zero_stage"], c["offload"], c["link"],
    c["link_bytes_per_s"] / 1e9))
print("bytes: all-reduce=%d reduce-scatter=%d all-gather=%d offload=%d" % (
    c["all_reduce_bytes"], c["reduce_scatter_bytes"], c["all_gather_bytes"],
    c["offload_bytes"]))
print("times: collectives=%.1fus exposed=%.1fus step = compute + exposed" % (
    1e6 * c["collective_time_s"], 1e6 * c["exposed_time_s"]))
print("exposed %s" % ("none" if c["exposed_time_s"] == 0 else "some"))
if "budget" in report:
    # The fixes' time factors are relative to the same step time.
    for fix in report["budget"]["fixes"]:
        base = fix["time_s"] / fix["time_factor"]
        assert abs(base - c["step_time_s"]) <= 1e-9 * base, (fix["name"], base,
                                                             c["step_time_s"])
    print("fixes: " + " ".join(f["name"] for f in report["budget"]["fixes"]))
