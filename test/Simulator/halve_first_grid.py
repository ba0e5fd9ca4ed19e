# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Halves the grid of the first kernel step of a bundle manifest (a broken
launch for memwall-simulate to catch)."""
import json
import sys

path = sys.argv[1]
with open(path) as f:
    manifest = json.load(f)
for step in manifest["steps"]:
    if step["kind"] == "kernel":
        step["grid"][0] = max(1, step["grid"][0] // 2)
        break
with open(path, "w") as f:
    json.dump(manifest, f, indent=2)
