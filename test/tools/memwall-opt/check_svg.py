# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks that a report SVG is well-formed XML with one point per op that
does arithmetic (argv[2] is the expected count)."""
import sys
import xml.etree.ElementTree as ElementTree

ns = "{http://www.w3.org/2000/svg}"
root = ElementTree.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
points = [c for c in root.iter(ns + "circle") if c.get("class") == "op"]
assert len(points) == int(sys.argv[2]), (len(points), sys.argv[2])
texts = "".join(t.text or "" for t in root.iter(ns + "text"))
assert "ridge" in texts and "memory" in texts, texts
print("svg ok:", len(points), "points")
