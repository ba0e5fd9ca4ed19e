//===- Targets.h - Datasheet figures of the built-in targets ----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-run --calibrate divides what it measures by the datasheet figures
// of the calibration's base target. Those live in lib/Hardware/GPUTarget.cpp,
// which needs LLVM; the runtime cannot link it, so this table mirrors them
// (unittests/Hardware/RuntimeTargetsTest.cpp checks that they agree).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_TARGETS_H
#define MEMWALL_RUNTIME_TARGETS_H

#include <cstdint>
#include <string>
#include <vector>

namespace memwall::runtime {

struct BuiltinTargetFigures {
  const char *name;
  double bf16PeakFlops, fp16PeakFlops; // dense FLOP/s
  double memoryBandwidth;              // datasheet, bytes/s
};

/// Every built-in target, in GPUTarget.cpp's order.
const std::vector<BuiltinTargetFigures> &builtinTargetFigures();
const BuiltinTargetFigures *findBuiltinTarget(const std::string &name);
/// "a100-40gb, a100-80gb, ...".
std::string builtinTargetNames();

/// A valid target name (what users type after --target=): lowercase letters,
/// digits and dashes, as GPUTarget::validate requires.
bool isTargetName(const std::string &name);

/// The built-in target a device of this name (cuDeviceGetName) is, or ""
/// when memwall has none for it.
std::string builtinTargetForDevice(const std::string &deviceName);

/// GemmShapeClass of lib/Hardware (classifyGemm in Roofline.cpp), mirrored
/// for the same reason: "skinny" when M or N <= 64, else "small" under 2^30
/// multiply-adds, else "large".
const char *gemmShapeClass(int64_t batch, int64_t m, int64_t n, int64_t k);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_TARGETS_H
