//===- Targets.cpp - Datasheet figures of the built-in targets ------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Targets.h"

#include <algorithm>

namespace memwall::runtime {

const std::vector<BuiltinTargetFigures> &builtinTargetFigures() {
  // Mirrors builtinTargets() in lib/Hardware/GPUTarget.cpp (docs/targets.md,
  // "Built-in targets"); a unit test keeps them equal.
  static const std::vector<BuiltinTargetFigures> figures = {
      {"a100-40gb", 312e12, 312e12, 1555e9},
      {"a100-80gb", 312e12, 312e12, 2039e9},
      {"h100-sxm", 989.4e12, 989.4e12, 3350e9},
      {"h100-pcie", 756e12, 756e12, 2000e9},
      {"h200", 989.4e12, 989.4e12, 4800e9},
      {"b200", 2250e12, 2250e12, 8000e9},
      {"l4", 121e12, 121e12, 300e9},
      {"rtx-4090", 165.2e12, 165.2e12, 1008e9},
  };
  return figures;
}

const BuiltinTargetFigures *findBuiltinTarget(const std::string &name) {
  for (const BuiltinTargetFigures &target : builtinTargetFigures())
    if (name == target.name)
      return &target;
  return nullptr;
}

std::string builtinTargetNames() {
  std::string names;
  for (const BuiltinTargetFigures &target : builtinTargetFigures())
    names += (names.empty() ? "" : ", ") + std::string(target.name);
  return names;
}

bool isTargetName(const std::string &name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string builtinTargetForDevice(const std::string &deviceName) {
  auto has = [&](const char *part) {
    return deviceName.find(part) != std::string::npos;
  };
  // cuDeviceGetName: "NVIDIA H100 80GB HBM3" (SXM), "NVIDIA H100 PCIe",
  // "NVIDIA H100 NVL" (no built-in), "NVIDIA A100-SXM4-40GB",
  // "NVIDIA A100 80GB PCIe", "NVIDIA GeForce RTX 4090", ...
  if (has("H100"))
    return has("PCIe")                 ? "h100-pcie"
           : has("HBM3") || has("SXM") ? "h100-sxm"
                                       : "";
  if (has("H200"))
    return "h200";
  if (has("B200"))
    return "b200";
  if (has("A100"))
    return has("80GB") ? "a100-80gb" : has("40GB") ? "a100-40gb" : "";
  if (has("L4") && !has("L40"))
    return "l4";
  if (has("4090"))
    return "rtx-4090";
  return "";
}

const char *gemmShapeClass(int64_t batch, int64_t m, int64_t n, int64_t k) {
  if (std::min(m, n) <= 64)
    return "skinny";
  double macs = static_cast<double>(batch) * static_cast<double>(m) *
                static_cast<double>(n) * static_cast<double>(k);
  return macs < 1073741824.0 ? "small" : "large";
}

} // namespace memwall::runtime
