//===- TargetsTest.cpp - built-in targets of memwall-run --calibrate ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Targets.h"

#include "gtest/gtest.h"

using namespace memwall::runtime;

namespace {

TEST(Targets, DeviceNamesChooseTheBase) {
  EXPECT_EQ(builtinTargetForDevice("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA H100 SXM5 80GB"), "h100-sxm");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA H100 NVL"), "");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA H200"), "h200");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA A100-SXM4-40GB"), "a100-40gb");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA A100 80GB PCIe"), "a100-80gb");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA L4"), "l4");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA L40S"), "");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA GeForce RTX 4090"), "rtx-4090");
  EXPECT_EQ(builtinTargetForDevice("NVIDIA B200"), "b200");
  EXPECT_EQ(builtinTargetForDevice("Fake CUDA device"), "");
  for (const BuiltinTargetFigures &target : builtinTargetFigures())
    EXPECT_TRUE(isTargetName(target.name)) << target.name;
}

TEST(Targets, TargetNames) {
  EXPECT_TRUE(isTargetName("h100-sxm-measured"));
  EXPECT_FALSE(isTargetName(""));
  EXPECT_FALSE(isTargetName("H100"));
  EXPECT_FALSE(isTargetName("my_gpu"));
}

} // namespace
