//===- CostModelTest.cpp - every op's FLOPs and bytes by hand -------------===//
//
// Each test parses one op and compares CostOpInterface against numbers worked
// out by hand in the test from the formulas in docs/cost-model.md.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace memwall;

namespace {
class CostModelTest : public ::testing::Test {
protected:
  CostModelTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `func.func @f(<args>) { <body>; return }` and returns the first
  /// memwall op.
  CostOpInterface parseOp(StringRef args, StringRef body) {
    std::string source =
        ("func.func @f(" + args + ") {\n" + body + "\n  return\n}").str();
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    CostOpInterface found;
    if (module)
      module->walk([&](CostOpInterface op) {
        if (!found)
          found = op;
      });
    EXPECT_TRUE(found) << source;
    return found;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

constexpr int64_t kBF16 = 2, kF32 = 4, kI64 = 8;
} // namespace

TEST_F(CostModelTest, MatmulCountsTwoFlopsPerMultiplyAddPlusBias) {
  CostOpInterface op = parseOp(
      "%x: tensor<4x128x768xbf16>, %w: tensor<768x3072xbf16>, "
      "%b: tensor<3072xbf16>",
      "%0 = memwall.matmul %x, %w bias %b : tensor<4x128x768xbf16>, "
      "tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<4x128x3072xbf16>");
  // M = 4*128 = 512 rows, N = 3072, K = 768: 2*512*3072*768 = 2415919104,
  // plus one bias add per output (512*3072 = 1572864).
  EXPECT_EQ(op.getFlops(), 2415919104 + 1572864);
  EXPECT_EQ(op.getBytesRead(), (512 * 768 + 768 * 3072 + 3072) * kBF16);
  EXPECT_EQ(op.getBytesWritten(), 512 * 3072 * kBF16);
  EXPECT_EQ(op.getMathPrecision(), MathPrecision::BF16);
  EXPECT_TRUE(op.launchesKernel());
}

TEST_F(CostModelTest, MatmulBroadcastBatchAndTransposeCountEveryBatch) {
  // lhs [2,1,16,32] x rhs [3,32,8] broadcasts to 2*3 = 6 products of
  // 16x8x32: 6 * 2 * 16 * 8 * 32 = 49152; f32 runs at the FP32 roof.
  CostOpInterface op =
      parseOp("%a: tensor<2x1x16x32xf32>, %b: tensor<3x32x8xf32>",
              "%0 = memwall.matmul %a, %b : tensor<2x1x16x32xf32>, "
              "tensor<3x32x8xf32> -> tensor<2x3x16x8xf32>");
  EXPECT_EQ(op.getFlops(), 49152);
  EXPECT_EQ(op.getBytesRead(), (2 * 16 * 32 + 3 * 32 * 8) * kF32);
  EXPECT_EQ(op.getMathPrecision(), MathPrecision::FP32);

  // transpose_lhs: lhs [3,32,8] is K x M, so M = 8, K = 32, N = 8:
  // 3 * 2 * 8 * 8 * 32 = 12288.
  op = parseOp("%b: tensor<3x32x8xf32>",
               "%0 = memwall.matmul %b, %b {transpose_lhs} : "
               "tensor<3x32x8xf32>, tensor<3x32x8xf32> -> tensor<3x8x8xf32>");
  EXPECT_EQ(op.getFlops(), 12288);
}

TEST_F(CostModelTest, NarrowMatmulsRunOnTheirTensorCores) {
  CostOpInterface fp8 =
      parseOp("%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>",
              "%0 = memwall.matmul %a, %b : tensor<16x32xf8E4M3FN>, "
              "tensor<32x8xf8E4M3FN> -> tensor<16x8xbf16>");
  EXPECT_EQ(fp8.getMathPrecision(), MathPrecision::FP8);
  // 1-byte inputs, a 2-byte bf16 result.
  EXPECT_EQ(fp8.getBytesRead(), 16 * 32 + 32 * 8);
  EXPECT_EQ(fp8.getBytesWritten(), 16 * 8 * 2);
  CostOpInterface int8 =
      parseOp("%a: tensor<16x32xi8>",
              "%0 = memwall.matmul %a, %a {transpose_rhs} : tensor<16x32xi8>, "
              "tensor<16x32xi8> -> tensor<16x16xi32>");
  EXPECT_EQ(int8.getMathPrecision(), MathPrecision::INT8);
  EXPECT_EQ(int8.getBytesWritten(), 16 * 16 * 4);
  EXPECT_EQ(int8.getFlops(), 2 * 16 * 16 * 32);
}

TEST_F(CostModelTest, CausalAttentionCountsOnlyUnmaskedPairs) {
  CostOpInterface op = parseOp(
      "%q: tensor<1x32x128x128xbf16>, %k: tensor<1x8x128x128xbf16>",
      "%0 = memwall.attention %q, %k, %k causal : tensor<1x32x128x128xbf16>, "
      "tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16> -> "
      "tensor<1x32x128x128xbf16>");
  // Sq = Sk = 128: 128*129/2 = 8256 pairs per head; 2 matmuls of 2*D FLOPs
  // per pair: 4 * 1 * 32 * 8256 * 128 = 135266304.
  EXPECT_EQ(op.getFlops(), 135266304);
  // Reads q (32 heads), k and v (8 heads each), and the 32*128*128 score
  // matrix twice (softmax, P V); writes the output and the scores twice.
  int64_t scores = 32 * 128 * 128 * kBF16;
  EXPECT_EQ(op.getBytesRead(), (32 + 8 + 8) * 128 * 128 * kBF16 + 2 * scores);
  EXPECT_EQ(op.getBytesWritten(), 32 * 128 * 128 * kBF16 + 2 * scores);
  EXPECT_EQ(op.getMathPrecision(), MathPrecision::BF16);
}

TEST_F(CostModelTest, DecodeAttentionIsNotHalvedByTheCausalMask) {
  CostOpInterface op = parseOp(
      "%q: tensor<2x8x1x16xf16>, %k: tensor<2x1x64x16xf16>",
      "%0 = memwall.attention %q, %k, %k causal : tensor<2x8x1x16xf16>, "
      "tensor<2x1x64x16xf16>, tensor<2x1x64x16xf16> -> "
      "tensor<2x8x1x16xf16>");
  // One query sees all 64 keys: 4 * B * H * 1 * 64 * D = 4*2*8*64*16.
  EXPECT_EQ(op.getFlops(), 65536);
  EXPECT_EQ(op.getMathPrecision(), MathPrecision::FP16);
}

TEST_F(CostModelTest, NonCausalAttentionWithMaskReadsTheMask) {
  CostOpInterface op = parseOp(
      "%q: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xi1>",
      "%0 = memwall.attention %q, %q, %q mask %m : tensor<1x2x4x8xf32>, "
      "tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xi1> -> "
      "tensor<1x2x4x8xf32>");
  // 4 * 1 * 2 * (4*4) * 8 = 1024.
  EXPECT_EQ(op.getFlops(), 1024);
  int64_t scores = 2 * 4 * 4 * kF32;
  EXPECT_EQ(op.getBytesRead(), 3 * 64 * kF32 + 16 + 2 * scores);
}

TEST_F(CostModelTest, BroadcastArithmeticCountsResultElementsAndOwnBytes) {
  CostOpInterface op = parseOp(
      "%x: tensor<4x128x768xbf16>, %g: tensor<768xbf16>",
      "%0 = memwall.add %x, %g : tensor<4x128x768xbf16>, tensor<768xbf16> -> "
      "tensor<4x128x768xbf16>");
  EXPECT_EQ(op.getFlops(), 4 * 128 * 768);
  // The broadcast operand is read once, at its own size.
  EXPECT_EQ(op.getBytesRead(), (4 * 128 * 768 + 768) * kBF16);
  EXPECT_EQ(op.getBytesWritten(), 4 * 128 * 768 * kBF16);
  EXPECT_EQ(op.getMathPrecision(), MathPrecision::FP32);
}

TEST_F(CostModelTest, ActivationsUseTheirDocumentedPerElementCounts) {
  const int64_t n = 6 * 10;
  struct Case {
    const char *body;
    int64_t flopsPerElement;
  } cases[] = {
      {"%0 = memwall.relu %x : tensor<6x10xf32>", 1},
      {"%0 = memwall.tanh %x : tensor<6x10xf32>", 1},
      {"%0 = memwall.scale %x by 2.0 : tensor<6x10xf32>", 1},
      {"%0 = memwall.silu %x : tensor<6x10xf32>", 4},
      {"%0 = memwall.gelu %x : tensor<6x10xf32>", 5},
      {"%0 = memwall.gelu %x tanh : tensor<6x10xf32>", 9},
      {"%0 = memwall.dropout %x rate 0.1 : tensor<6x10xf32>", 3},
      {"%0 = memwall.sub %x, %x : tensor<6x10xf32>, tensor<6x10xf32> -> "
       "tensor<6x10xf32>",
       1},
      {"%0 = memwall.mul %x, %x : tensor<6x10xf32>, tensor<6x10xf32> -> "
       "tensor<6x10xf32>",
       1},
      {"%0 = memwall.div %x, %x : tensor<6x10xf32>, tensor<6x10xf32> -> "
       "tensor<6x10xf32>",
       1},
  };
  for (const Case &c : cases) {
    CostOpInterface op = parseOp("%x: tensor<6x10xf32>", c.body);
    EXPECT_EQ(op.getFlops(), c.flopsPerElement * n) << c.body;
    EXPECT_EQ(op.getBytesWritten(), n * kF32) << c.body;
  }
  CostOpInterface swiglu = parseOp(
      "%x: tensor<6x10xf32>", "%0 = memwall.swiglu %x, %x : tensor<6x10xf32>");
  EXPECT_EQ(swiglu.getFlops(), 5 * n);
  EXPECT_EQ(swiglu.getBytesRead(), 2 * n * kF32);
}

TEST_F(CostModelTest, NormsCountPerElementAndPerRowWork) {
  // 4 rows of D = 768 (N = 3072).
  CostOpInterface ln =
      parseOp("%x: tensor<4x768xbf16>, %g: tensor<768xf32>",
              "%0 = memwall.layer_norm %x, %g, %g : tensor<4x768xbf16>, "
              "tensor<768xf32>, tensor<768xf32>");
  // 7 per element + 4 per row.
  EXPECT_EQ(ln.getFlops(), 7 * 3072 + 4 * 4);
  EXPECT_EQ(ln.getBytesRead(), 3072 * kBF16 + 2 * 768 * kF32);
  CostOpInterface lnNoBias = parseOp(
      "%x: tensor<4x768xbf16>, %g: tensor<768xbf16>",
      "%0 = memwall.layer_norm %x, %g : tensor<4x768xbf16>, tensor<768xbf16>");
  EXPECT_EQ(lnNoBias.getFlops(), 6 * 3072 + 4 * 4);
  CostOpInterface rms = parseOp(
      "%x: tensor<4x768xbf16>, %g: tensor<768xbf16>",
      "%0 = memwall.rms_norm %x, %g : tensor<4x768xbf16>, tensor<768xbf16>");
  EXPECT_EQ(rms.getFlops(), 4 * 3072 + 3 * 4);
}

TEST_F(CostModelTest, SoftmaxRowsFollowTheAxis) {
  // axis 1 of [4, 8, 16]: rows of length 8, 4 * 16 = 64 of them.
  CostOpInterface op =
      parseOp("%x: tensor<4x8x16xf32>",
              "%0 = memwall.softmax %x axis 1 : tensor<4x8x16xf32>");
  EXPECT_EQ(op.getFlops(), 5 * 512 + 64);
  CostOpInterface last = parseOp(
      "%x: tensor<4x8x16xf32>", "%0 = memwall.softmax %x : tensor<4x8x16xf32>");
  EXPECT_EQ(last.getFlops(), 5 * 512 + 32);
}

TEST_F(CostModelTest, ReductionsCountInputsAndMeanDividesPerOutput) {
  CostOpInterface sum =
      parseOp("%x: tensor<4x8x16xf32>",
              "%0 = memwall.reduce sum %x axes [2] : tensor<4x8x16xf32> -> "
              "tensor<4x8xf32>");
  EXPECT_EQ(sum.getFlops(), 512);
  EXPECT_EQ(sum.getBytesWritten(), 32 * kF32);
  CostOpInterface mean =
      parseOp("%x: tensor<4x8x16xf32>",
              "%0 = memwall.reduce mean %x axes [0, 2] keep_dims : "
              "tensor<4x8x16xf32> -> tensor<1x8x1xf32>");
  EXPECT_EQ(mean.getFlops(), 512 + 8);
}

TEST_F(CostModelTest, CrossEntropyCountsLogSumExpPerPosition) {
  // 2*4 = 8 positions of V = 10 classes: 8 * (4*10 + 3) = 344.
  const char *args = "%l: tensor<2x4x10xf32>, %y: tensor<2x4xi64>";
  CostOpInterface mean =
      parseOp(args, "%0 = memwall.cross_entropy %l, %y : tensor<2x4x10xf32>, "
                    "tensor<2x4xi64> -> tensor<f32>");
  EXPECT_EQ(mean.getFlops(), 344 + 8 + 1);
  EXPECT_EQ(mean.getBytesRead(), 80 * kF32 + 8 * kI64);
  EXPECT_EQ(mean.getBytesWritten(), kF32);
  CostOpInterface sum = parseOp(
      args, "%0 = memwall.cross_entropy %l, %y sum : tensor<2x4x10xf32>, "
            "tensor<2x4xi64> -> tensor<f32>");
  EXPECT_EQ(sum.getFlops(), 344 + 8);
  CostOpInterface none = parseOp(
      args, "%0 = memwall.cross_entropy %l, %y none : tensor<2x4x10xf32>, "
            "tensor<2x4xi64> -> tensor<2x4xf32>");
  EXPECT_EQ(none.getFlops(), 344);
  EXPECT_EQ(none.getBytesWritten(), 8 * kF32);
}

TEST_F(CostModelTest, RopeCountsFrequenciesAnglesAndRotation) {
  // x [1, 4, 8, 16] (N = 512), 8 positions, D = 16:
  // D/2 = 8 pows + 3 * 8 * 8 = 192 angle ops + 3 * 512 = 1536 rotation ops.
  CostOpInterface op =
      parseOp("%x: tensor<1x4x8x16xf32>, %p: tensor<8xi64>",
              "%0 = memwall.rope %x, %p : tensor<1x4x8x16xf32>, tensor<8xi64>");
  EXPECT_EQ(op.getFlops(), 8 + 192 + 1536);
  EXPECT_EQ(op.getBytesRead(), 512 * kF32 + 8 * kI64);
}

TEST_F(CostModelTest, EmbeddingReadsOnlyTheGatheredRows) {
  CostOpInterface op =
      parseOp("%t: tensor<50257x768xbf16>, %i: tensor<4x128xi64>",
              "%0 = memwall.embedding %t[%i] : tensor<50257x768xbf16>, "
              "tensor<4x128xi64> -> tensor<4x128x768xbf16>");
  EXPECT_EQ(op.getFlops(), 0);
  // 512 ids and 512 rows of 768, not the 50257-row table.
  EXPECT_EQ(op.getBytesRead(), 512 * kI64 + 512 * 768 * kBF16);
  EXPECT_EQ(op.getBytesWritten(), 512 * 768 * kBF16);
}

TEST_F(CostModelTest, DataMovementMovesBytesWithoutFlops) {
  CostOpInterface reshape = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.reshape %x [24] : tensor<4x6xf32> -> tensor<24xf32>");
  EXPECT_EQ(reshape.getFlops(), 0);
  EXPECT_EQ(reshape.getBytesRead(), 0);
  EXPECT_EQ(reshape.getBytesWritten(), 0);
  EXPECT_FALSE(reshape.launchesKernel());

  CostOpInterface transpose = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.transpose %x [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>");
  EXPECT_EQ(transpose.getFlops(), 0);
  EXPECT_EQ(transpose.getBytesRead(), 24 * kF32);
  EXPECT_EQ(transpose.getBytesWritten(), 24 * kF32);

  // Every other row of 2 columns: 2 x 2 elements read and written.
  CostOpInterface slice = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.slice %x offsets [0, 1] sizes [2, 2] strides [2, 1] : "
      "tensor<4x6xf32> -> tensor<2x2xf32>");
  EXPECT_EQ(slice.getBytesRead(), 4 * kF32);
  EXPECT_EQ(slice.getBytesWritten(), 4 * kF32);

  CostOpInterface concat = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.concat %x, %x axis 0 : tensor<4x6xf32>, tensor<4x6xf32> "
      "-> tensor<8x6xf32>");
  EXPECT_EQ(concat.getBytesRead(), 48 * kF32);
  EXPECT_EQ(concat.getBytesWritten(), 48 * kF32);

  // Converting f32 -> bf16: 1 FLOP per element, 4 bytes in, 2 bytes out.
  CostOpInterface cast = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.cast %x to bf16 : tensor<4x6xf32> -> tensor<4x6xbf16>");
  EXPECT_EQ(cast.getFlops(), 24);
  EXPECT_EQ(cast.getBytesRead(), 24 * kF32);
  EXPECT_EQ(cast.getBytesWritten(), 24 * kBF16);
}

TEST_F(CostModelTest, KVCacheAppendWritesOnlyTheNewPositions) {
  CostOpInterface op = parseOp(
      "%c: tensor<1x8x4096x128xbf16>, %u: tensor<1x8x1x128xbf16>",
      "%0 = memwall.kv_cache_append %c, %u : tensor<1x8x4096x128xbf16>, "
      "tensor<1x8x1x128xbf16> -> tensor<1x8x4097x128xbf16>");
  EXPECT_EQ(op.getBytesRead(), 8 * 128 * kBF16);
  EXPECT_EQ(op.getBytesWritten(), 8 * 128 * kBF16);
  EXPECT_EQ(op.getFlops(), 0);
}
