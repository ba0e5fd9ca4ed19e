#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Runs the shell blocks of a document that are marked for testing.

A block is marked by an HTML comment on the line before its fence:

    <!-- test: NAME -->
    ```sh
    build/bin/memwall-opt ...
    ```

The named blocks run in order, each under `bash -euo pipefail`, in WORK, a
fresh directory that looks like the repository root: every top-level entry
of SRC is linked into it and `build` links to BUILD, so the commands run as
written in the document (from the root, with the build in build/). Fails
when a block is missing or a command fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys


def find_blocks(text):
    blocks = {}
    pattern = re.compile(r"<!-- test: ([\w-]+) -->\n```sh\n(.*?)\n```", re.S)
    for match in pattern.finditer(text):
        blocks[match.group(1)] = match.group(2)
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("doc")
    parser.add_argument("blocks", nargs="+")
    parser.add_argument("--src", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()

    with open(args.doc) as f:
        blocks = find_blocks(f.read())
    missing = [name for name in args.blocks if name not in blocks]
    if missing:
        sys.exit(f"{args.doc}: no block marked <!-- test: {missing[0]} -->")

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    for entry in os.listdir(args.src):
        if entry != "build" and not entry.startswith(("build-", ".")):
            os.symlink(os.path.join(os.path.abspath(args.src), entry),
                       os.path.join(args.work, entry))
    os.symlink(os.path.abspath(args.build), os.path.join(args.work, "build"))

    for name in args.blocks:
        print(f"=== {name}", flush=True)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c",
                                 blocks[name]], cwd=args.work)
        if result.returncode != 0:
            sys.exit(f"block '{name}' of {args.doc} failed "
                     f"(exit {result.returncode})")
    print("=== all blocks passed", flush=True)


if __name__ == "__main__":
    main()
