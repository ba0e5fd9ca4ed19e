//===- ExpandFp8ConversionsTest.cpp - fp8 conversions as integer math -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-expand-fp8-conversions against the formats' definitions: a kernel
// widening every fp8 byte and one narrowing f32 values chosen at every
// rounding boundary run in the SIMT interpreter, once as written (the
// interpreter's own conversion) and once expanded (the integer arithmetic
// the GPU runs); both must equal a decoder and a round-to-nearest-even
// encoder written here from the formats' fields.
//
//===----------------------------------------------------------------------===//

#include "memwall/Simulator/SimtInterpreter.h"
#include "memwall/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace mlir;
using namespace memwall;

namespace {

struct Format {
  const char *type;
  int mantissaBits, bias;
  bool ieee; // e5m2: infinities and IEEE NaNs; e4m3fn: NaN 0x7F only
  double largest;
};
const Format kE4M3 = {"f8E4M3FN", 3, 7, false, 448};
const Format kE5M2 = {"f8E5M2", 2, 15, true, 57344};

/// A byte's value by the format's definition.
double decode(uint8_t byte, const Format &f) {
  int magnitude = byte & 0x7F;
  int exponent = magnitude >> f.mantissaBits;
  int mantissa = magnitude & ((1 << f.mantissaBits) - 1);
  double sign = byte & 0x80 ? -1 : 1;
  if (!f.ieee && magnitude == 0x7F)
    return std::numeric_limits<double>::quiet_NaN();
  if (f.ieee && exponent == 31)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0)
    return sign * std::ldexp(mantissa, 1 - f.bias - f.mantissaBits);
  return sign * std::ldexp((1 << f.mantissaBits) + mantissa,
                           exponent - f.bias - f.mantissaBits);
}

/// The byte of `x`: the nearest finite value, ties to the even code,
/// beyond the largest finite value the largest (satfinite); NaN 0x7F.
uint8_t encode(float x, const Format &f) {
  if (std::isnan(x))
    return 0x7F;
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::fabs(x) >= f.largest)
    return sign | (f.ieee ? 0x7B : 0x7E);
  double best = -1;
  int bestCode = 0;
  for (int code = 0; code < 0x80; ++code) {
    double v = decode(static_cast<uint8_t>(code), f);
    if (!std::isfinite(v))
      continue;
    double distance = std::fabs(std::fabs(static_cast<double>(x)) - v);
    if (best < 0 || distance < best || (distance == best && code % 2 == 0)) {
      best = distance;
      bestCode = code;
    }
  }
  return sign | static_cast<uint8_t>(bestCode);
}

class ExpandFp8ConversionsTest : public ::testing::Test {
protected:
  ExpandFp8ConversionsTest() : context(simt::createContext()) {}

  /// The kernel `body` (one element per thread of 256 x blocks), as
  /// written or expanded by the pass.
  gpu::GPUFuncOp load(const std::string &body, bool expand) {
    std::string source = "module attributes {gpu.container_module} {\n"
                         "gpu.module @m {\n" +
                         body + "\n}\n}\n";
    modules.push_back(simt::parseModule(*context, source));
    ModuleOp module = *modules.back();
    EXPECT_TRUE(module);
    if (expand) {
      PassManager pm(context.get());
      pm.nest<gpu::GPUModuleOp>().addPass(createExpandFp8Conversions());
      EXPECT_TRUE(succeeded(pm.run(module)));
      // Nothing of fp8 arithmetic is left: only the bitcasts of bytes.
      module.walk([](Operation *op) {
        EXPECT_FALSE((isa<arith::ExtFOp, arith::TruncFOp>(op) &&
                      (isa<Float8E4M3FNType, Float8E5M2Type>(
                           op->getOperand(0).getType()) ||
                       isa<Float8E4M3FNType, Float8E5M2Type>(
                           op->getResult(0).getType()))))
            << "an fp8 conversion survived the expansion";
      });
    }
    return simt::findKernel(module, "k");
  }

  void run(gpu::GPUFuncOp kernel, int64_t elements,
           std::vector<llvm::MutableArrayRef<uint8_t>> args) {
    simt::LaunchConfig launch;
    launch.block = {256, 1, 1};
    launch.grid = {elements / 256, 1, 1};
    llvm::Error error = simt::runKernel(kernel, launch, args);
    EXPECT_FALSE(error) << llvm::toString(std::move(error));
  }

  /// Widens all 256 bytes of `f` to `out` ("f32" or "bf16" bits).
  void checkWidening(const Format &f) {
    std::string body = llvm::formatv(R"(
  gpu.func @k(%in: memref<256x{0}>, %out: memref<256xf32>) kernel {
    %t = gpu.thread_id x
    %x = memref.load %in[%t] : memref<256x{0}>
    %y = arith.extf %x : {0} to f32
    memref.store %y, %out[%t] : memref<256xf32>
    gpu.return
  })",
                                     f.type)
                           .str();
    for (bool expand : {false, true}) {
      std::vector<uint8_t> bytes(256);
      for (int i = 0; i < 256; ++i)
        bytes[i] = static_cast<uint8_t>(i);
      std::vector<float> out(256, -1);
      run(load(body, expand), 256,
          {bytes, {reinterpret_cast<uint8_t *>(out.data()), 256 * 4}});
      for (int i = 0; i < 256; ++i) {
        double want = decode(static_cast<uint8_t>(i), f);
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(out[i])) << f.type << " byte " << i;
        else
          EXPECT_EQ(out[i], want)
              << f.type << " byte " << i << (expand ? " (expanded)" : "");
      }
    }
  }

  /// Narrows values at every boundary of `f`: each finite value, the
  /// midpoints between neighbours (ties), one f32 ulp either side of them,
  /// past the largest value, infinities, NaN, f32 denormals, random values.
  void checkNarrowing(const Format &f) {
    std::vector<float> values;
    std::vector<double> finite;
    for (int code = 0; code < 0x80; ++code)
      if (double v = decode(static_cast<uint8_t>(code), f); std::isfinite(v))
        finite.push_back(v);
    for (size_t i = 0; i < finite.size(); ++i) {
      float v = static_cast<float>(finite[i]);
      values.push_back(v);
      double next = i + 1 < finite.size() ? finite[i + 1] : 2 * f.largest;
      float mid = static_cast<float>((finite[i] + next) / 2);
      values.push_back(mid);
      values.push_back(std::nextafter(mid, 0.0f));
      values.push_back(std::nextafter(mid, INFINITY));
    }
    float inf = std::numeric_limits<float>::infinity();
    for (float v : {static_cast<float>(f.largest) * 1.5f, 1e30f, inf,
                    std::numeric_limits<float>::denorm_min(), 1e-40f})
      values.push_back(v);
    uint32_t seed = 7;
    while (values.size() % 256 != 255) {
      seed = seed * 1664525u + 1013904223u;
      values.push_back(std::ldexp(static_cast<float>(seed >> 8) / (1 << 24),
                                  static_cast<int>(seed % 40) - 24));
    }
    values.push_back(std::numeric_limits<float>::quiet_NaN());
    size_t positive = values.size();
    for (size_t i = 0; i < positive; ++i)
      values.push_back(-values[i]);
    int64_t n = static_cast<int64_t>(values.size());
    std::string body = llvm::formatv(R"(
  gpu.func @k(%in: memref<{1}xf32>, %out: memref<{1}x{0}>) kernel {
    %b = gpu.block_id x
    %d = gpu.block_dim x
    %t = gpu.thread_id x
    %bd = arith.muli %b, %d : index
    %i = arith.addi %bd, %t : index
    %x = memref.load %in[%i] : memref<{1}xf32>
    %y = arith.truncf %x : f32 to {0}
    memref.store %y, %out[%i] : memref<{1}x{0}>
    gpu.return
  })",
                                     f.type, n)
                           .str();
    for (bool expand : {false, true}) {
      std::vector<uint8_t> out(n, 0xAA);
      run(load(body, expand), n,
          {{reinterpret_cast<uint8_t *>(values.data()),
            static_cast<size_t>(n) * 4},
           out});
      int64_t mismatches = 0;
      for (int64_t i = 0; i < n; ++i) {
        uint8_t want = encode(values[i], f);
        uint8_t got = out[i];
        // Any NaN code of the format.
        if (std::isnan(values[i]) && std::isnan(decode(got, f)))
          continue;
        if (got != want && mismatches++ < 5)
          ADD_FAILURE() << f.type << (expand ? " expanded" : " as written")
                        << ": " << values[i] << " gave 0x" << std::hex
                        << int(got) << ", want 0x" << int(want);
      }
      EXPECT_EQ(mismatches, 0);
    }
  }

  std::unique_ptr<MLIRContext> context;
  std::vector<OwningOpRef<ModuleOp>> modules;
};

TEST_F(ExpandFp8ConversionsTest, WideningEveryE4M3ByteMatchesItsDefinition) {
  checkWidening(kE4M3);
}

TEST_F(ExpandFp8ConversionsTest, WideningEveryE5M2ByteMatchesItsDefinition) {
  checkWidening(kE5M2);
}

TEST_F(ExpandFp8ConversionsTest,
       NarrowingToE4M3RoundsToNearestEvenAndSaturates) {
  checkNarrowing(kE4M3);
}

TEST_F(ExpandFp8ConversionsTest,
       NarrowingToE5M2RoundsToNearestEvenAndSaturates) {
  checkNarrowing(kE5M2);
}

TEST_F(ExpandFp8ConversionsTest, VectorConversionsAreRefusedWithADiagnostic) {
  std::string source = R"(
module attributes {gpu.container_module} {
gpu.module @m {
  gpu.func @k(%x: vector<4xf32>) kernel {
    %y = arith.truncf %x : vector<4xf32> to vector<4xf8E4M3FN>
    gpu.return
  }
}
})";
  OwningOpRef<ModuleOp> module = simt::parseModule(*context, source);
  ASSERT_TRUE(module);
  std::string diagnostic;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
    diagnostic = d.str();
    return success();
  });
  PassManager pm(context.get());
  pm.nest<gpu::GPUModuleOp>().addPass(createExpandFp8Conversions());
  EXPECT_TRUE(failed(pm.run(*module)));
  EXPECT_NE(diagnostic.find("only scalar fp8 conversions"), std::string::npos)
      << diagnostic;
}

} // namespace
