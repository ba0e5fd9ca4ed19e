#!/usr/bin/env python3
"""Adds memwall's license header to every source file that lacks one, or
with --check lists the files that lack it (exit 1 if any).

C-family files (.cpp .h .c .td .inc.in) get LLVM's block after their title
line; CMake, Python and shell files get one SPDX comment line (after a
shebang). Test inputs (.mlir, .json, corpus files) and documentation carry
none, as in LLVM."""
import os
import subprocess
import sys

SPDX = "SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception"
C_BLOCK = [
    "//",
    "// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.",
    "// See the LICENSE file for license information.",
    "// " + SPDX,
    "//",
    "//===----------------------------------------------------------------------===//",
]
C_SUFFIXES = (".cpp", ".h", ".c", ".td")
HASH_SUFFIXES = (".py", ".sh", ".cmake")
SKIP_PREFIXES = ("test/Fuzz/corpus/",)


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], check=True,
                         capture_output=True, text=True).stdout
    return [f for f in out.splitlines() if not f.startswith(SKIP_PREFIXES)]


def wants_header(path):
    name = os.path.basename(path)
    return (path.endswith(C_SUFFIXES) or path.endswith(HASH_SUFFIXES) or
            name == "CMakeLists.txt" or path.startswith(".ci/"))


def add_header(text, path):
    lines = text.split("\n")
    if path.endswith(C_SUFFIXES):
        if lines and lines[0].startswith("//===-"):
            # A title line may wrap onto a second line ending in ===//.
            end = 1
            if not lines[0].rstrip().endswith("===//") and len(lines) > 1 \
                    and lines[1].rstrip().endswith("===//"):
                end = 2
            return "\n".join(lines[:end] + C_BLOCK + lines[end:])
        return "\n".join(["// " + SPDX, ""] + lines) if lines[0] else \
            "\n".join(["// " + SPDX] + lines)
    # Hash comments: after a shebang line, if any.
    at = 1 if lines and lines[0].startswith("#!") else 0
    return "\n".join(lines[:at] + ["# " + SPDX] + lines[at:])


def main():
    check = "--check" in sys.argv[1:]
    found = subprocess.run(["git", "rev-parse", "--show-toplevel"],
                           capture_output=True, text=True,
                           cwd=os.path.dirname(os.path.abspath(__file__)))
    if found.returncode != 0:
        # A source tree outside git (a tarball): nothing to list; ctest skip.
        print("not a git checkout: no tracked files to check")
        return 77
    root = found.stdout.strip()
    missing = []
    for path in tracked_files(root):
        if not wants_header(path):
            continue
        full = os.path.join(root, path)
        if not os.path.isfile(full):
            continue
        with open(full, encoding="utf-8") as f:
            text = f.read()
        if SPDX in text[:2000]:
            continue
        missing.append(path)
        if not check:
            with open(full, "w", encoding="utf-8") as f:
                f.write(add_header(text, path))
    for path in missing:
        print(("missing license header: " if check else "added: ") + path)
    return 1 if check and missing else 0


if __name__ == "__main__":
    sys.exit(main())
