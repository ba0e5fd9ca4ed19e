//===- TargetAttrTest.cpp - #memwall.target round-trips every figure ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Predictions and kernel choices depend on every figure of the target, so a
// module's #memwall.target must print and parse back to the same target bit
// for bit: every built-in target, a calibration file's, and figures that
// have no short decimal form.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Registration.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir;
using namespace memwall;

namespace {

bool sameBits(double lhs, double rhs) {
  return std::memcmp(&lhs, &rhs, sizeof(double)) == 0;
}

/// Every field of `actual` equals `expected`'s, doubles bit for bit.
void expectSameTarget(const GPUTarget &expected, const GPUTarget &actual) {
  EXPECT_EQ(expected.name, actual.name);
  EXPECT_EQ(expected.description, actual.description);
  EXPECT_EQ(expected.smArch, actual.smArch);
  EXPECT_EQ(expected.launchMode, actual.launchMode);
  for (unsigned index = 0; index < kNumMathPrecisions; ++index)
    EXPECT_TRUE(sameBits(expected.peakFlops[index], actual.peakFlops[index]))
        << "peak " << index;
  EXPECT_TRUE(sameBits(expected.memoryBandwidth, actual.memoryBandwidth));
  EXPECT_EQ(expected.memoryCapacityBytes, actual.memoryCapacityBytes);
  EXPECT_EQ(expected.l2Bytes, actual.l2Bytes);
  EXPECT_EQ(expected.sharedMemoryPerSMBytes, actual.sharedMemoryPerSMBytes);
  EXPECT_EQ(expected.smCount, actual.smCount);
  EXPECT_TRUE(
      sameBits(expected.kernelLaunchSeconds, actual.kernelLaunchSeconds));
  EXPECT_TRUE(sameBits(expected.graphKernelLaunchSeconds,
                       actual.graphKernelLaunchSeconds));
  EXPECT_TRUE(sameBits(expected.achievable.memoryBandwidth,
                       actual.achievable.memoryBandwidth));
  for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
    EXPECT_TRUE(sameBits(expected.achievable.gemmEfficiency[index],
                         actual.achievable.gemmEfficiency[index]))
        << "gemm class " << index;
  EXPECT_TRUE(sameBits(expected.achievable.attentionEfficiency,
                       actual.achievable.attentionEfficiency));
  EXPECT_TRUE(sameBits(expected.interconnect.nvlinkBandwidth,
                       actual.interconnect.nvlinkBandwidth));
  EXPECT_TRUE(sameBits(expected.interconnect.pcieBandwidth,
                       actual.interconnect.pcieBandwidth));
  EXPECT_TRUE(sameBits(expected.interconnect.networkBandwidth,
                       actual.interconnect.networkBandwidth));
  EXPECT_EQ(expected.interconnect.gpusPerNode, actual.interconnect.gpusPerNode);
  EXPECT_EQ(expected.calibration, actual.calibration);
  EXPECT_EQ(expected.baseName, actual.baseName);
}

class TargetAttrTest : public ::testing::Test {
protected:
  TargetAttrTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// `target` printed as an attribute and parsed back.
  GPUTarget roundTrip(const GPUTarget &target) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << getTargetAttr(&context, target);
    auto parsed = dyn_cast_or_null<TargetAttr>(parseAttribute(text, &context));
    EXPECT_TRUE(parsed) << text;
    return parsed ? parsed.getTarget() : GPUTarget();
  }

  MLIRContext context;
};

TEST_F(TargetAttrTest, BuiltinTargetsRoundTripExactly) {
  for (const GPUTarget &target : getBuiltinGPUTargets()) {
    SCOPED_TRACE(target.name);
    expectSameTarget(target, roundTrip(target));
  }
}

TEST_F(TargetAttrTest, FiguresWithoutShortDecimalFormRoundTripExactly) {
  GPUTarget target = *lookupBuiltinGPUTarget(kDefaultGPUTargetName);
  target.name = "odd-figures";
  target.calibration = "measured \"today\"";
  target.baseName = "h100-sxm";
  target.launchMode = LaunchMode::Graph;
  target.memoryBandwidth = 3.35e12 / 3;
  target.achievable.memoryBandwidth = std::nextafter(3e12 / 7, 0.0);
  target.kernelLaunchSeconds = 1.0 / 3e5;
  target.achievable.gemmEfficiency[1] = 0.1 + 0.2;
  target.interconnect.nvlinkBandwidth = 0;
  ASSERT_FALSE(llvm::errorToBool(target.validate()));
  expectSameTarget(target, roundTrip(target));
}

TEST_F(TargetAttrTest, EqualTargetsAreTheSameAttribute) {
  const GPUTarget &h100 = *lookupBuiltinGPUTarget("h100-sxm");
  EXPECT_EQ(getTargetAttr(&context, h100), getTargetAttr(&context, h100));
  EXPECT_NE(getTargetAttr(&context, h100),
            getTargetAttr(&context, *lookupBuiltinGPUTarget("h200")));
}

TEST_F(TargetAttrTest, BuiltinNameAloneIsTheBuiltinTarget) {
  auto parsed = dyn_cast_or_null<TargetAttr>(
      parseAttribute("#memwall.target<\"a100-80gb\">", &context));
  ASSERT_TRUE(parsed);
  expectSameTarget(*lookupBuiltinGPUTarget("a100-80gb"), parsed.getTarget());
}

TEST_F(TargetAttrTest, GetTargetOfReadsTheNearestAncestor) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      R"mlir(module attributes {memwall.target = #memwall.target<"l4">} {
        func.func @f() { return }
      })mlir",
      &context);
  ASSERT_TRUE(module);
  Operation *function = &module->getBody()->front();
  FailureOr<GPUTarget> target = getTargetOf(function);
  ASSERT_TRUE(succeeded(target));
  EXPECT_EQ(target->name, "l4");
}

TEST_F(TargetAttrTest, GetTargetOfDefaultsToH100) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  FailureOr<GPUTarget> target = getTargetOf(*module);
  ASSERT_TRUE(succeeded(target));
  EXPECT_EQ(target->name, kDefaultGPUTargetName);
}

TEST_F(TargetAttrTest, GetTargetOfRejectsAnotherAttributeWithOneError) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  (*module)->setAttr(kTargetAttrName, StringAttr::get(&context, "h100-sxm"));
  int errors = 0;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    errors += diagnostic.getSeverity() == DiagnosticSeverity::Error;
    EXPECT_NE(diagnostic.str().find("must be a #memwall.target"),
              std::string::npos)
        << diagnostic.str();
  });
  EXPECT_TRUE(failed(getTargetOf(*module)));
  EXPECT_EQ(errors, 1);
}

} // namespace
