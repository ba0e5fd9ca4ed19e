#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the Debian 12 packages memwall builds and tests with. Idempotent.
set -euo pipefail

packages=(
  build-essential cmake ninja-build lld python3
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libgtest-dev coinor-libcbc-dev pkg-config
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "memwall: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
