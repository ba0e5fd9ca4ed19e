//===- CostModelTest.cpp - every op's FLOPs and bytes by hand -------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each test parses small ops and compares CostOpInterface (FLOPs, bytes read,
// bytes written, math precision, whether a kernel is launched) against
// numbers worked out by hand in the test from the formulas of
// docs/cost-model.md, never by calling the helpers the implementation uses.
// The last tests hold estimateOpRoofline and buildRooflineReport (computeModuleCost) against a
// hand-built GPUTarget with round numbers.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Registration.h"
#include "memwall/Report/RooflineReport.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>

#include <set>
#include <string>

using namespace mlir;
using namespace memwall;

namespace {
/// What CostOpInterface should answer for one op.
struct Costs {
  int64_t flops;
  int64_t bytesRead;
  int64_t bytesWritten;
  MathPrecision precision;
  bool launchesKernel;
};

// Bytes per element.
constexpr int64_t kI1 = 1, kF8 = 1, kI8 = 1, kBF16 = 2, kF16 = 2, kF32 = 4,
                  kI32 = 4, kI64 = 8;

class CostModelTest : public ::testing::Test {
protected:
  CostModelTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `func.func @f(<args>) { <body>; return }` and returns the first
  /// memwall op. The module stays alive until the next call.
  CostOpInterface parseOp(StringRef args, StringRef body) {
    std::string source =
        ("func.func @f(" + args + ") {\n" + body + "\n  return\n}").str();
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    CostOpInterface found;
    if (module)
      module->walk<WalkOrder::PreOrder>([&](CostOpInterface op) {
        if (!found)
          found = op;
      });
    EXPECT_TRUE(found) << source;
    return found;
  }

  /// Checks all five answers of `op` against `expected`.
  static void expectCosts(CostOpInterface op, const Costs &expected) {
    ASSERT_TRUE(op);
    SCOPED_TRACE(op->getName().getStringRef().str());
    EXPECT_EQ(op.getFlops(), expected.flops);
    EXPECT_EQ(op.getBytesRead(), expected.bytesRead);
    EXPECT_EQ(op.getBytesWritten(), expected.bytesWritten);
    EXPECT_EQ(op.getMathPrecision(), expected.precision);
    EXPECT_EQ(op.launchesKernel(), expected.launchesKernel);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

constexpr MathPrecision kFP32 = MathPrecision::FP32;
} // namespace

//===----------------------------------------------------------------------===//
// One hand-computed case per op, and proof that no op is missing.
//===----------------------------------------------------------------------===//

TEST_F(CostModelTest, EveryRegisteredOpHasAHandComputedCase) {
  struct Case {
    const char *op;
    const char *args;
    const char *body;
    Costs costs;
  };
  const Case cases[] = {
      // [2,3,4] x [4,5] + [5], bf16: batch 2, M 3, N 5, K 4.
      // FLOPs 2*2*3*5*4 = 240 + bias 2*3*5 = 30. Read (24 + 20 + 5) * 2,
      // written 30 * 2.
      {"memwall.matmul",
       "%x: tensor<2x3x4xbf16>, %w: tensor<4x5xbf16>, %b: tensor<5xbf16>",
       "%0 = memwall.matmul %x, %w bias %b : tensor<2x3x4xbf16>, "
       "tensor<4x5xbf16>, tensor<5xbf16> -> tensor<2x3x5xbf16>",
       {270, 49 * kBF16, 30 * kBF16, MathPrecision::BF16, true}},
      // Causal, B 1, Hq 2, Hkv 1, Sq 3, Sk 5, D = Dv = 4, f16.
      // Pairs per head: Sq(Sk-Sq) + Sq(Sq+1)/2 = 6 + 6 = 12.
      // FLOPs 2*B*Hq*pairs*(D+Dv) = 2*1*2*12*8 = 384.
      // Scores B*Hq*Sq*Sk = 30 of 2 bytes = 60, read twice and written twice.
      // Read q 24 + k 20 + v 20 elements = 128 B + 120; written 48 + 120.
      {"memwall.attention",
       "%q: tensor<1x2x3x4xf16>, %k: tensor<1x1x5x4xf16>",
       "%0 = memwall.attention %q, %k, %k causal : tensor<1x2x3x4xf16>, "
       "tensor<1x1x5x4xf16>, tensor<1x1x5x4xf16> -> tensor<1x2x3x4xf16>",
       {384, 128 + 120, 48 + 120, MathPrecision::FP16, true}},
      // [3,4] + [4]: 12 adds; read 12 + 4 elements, write 12.
      {"memwall.add",
       "%a: tensor<3x4xf32>, %b: tensor<4xf32>",
       "%0 = memwall.add %a, %b : tensor<3x4xf32>, tensor<4xf32> -> "
       "tensor<3x4xf32>",
       {12, 16 * kF32, 12 * kF32, kFP32, true}},
      // [2,1] - [1,3] -> [2,3]: 6 subtractions; read 2 + 3, write 6.
      {"memwall.sub",
       "%a: tensor<2x1xf32>, %b: tensor<1x3xf32>",
       "%0 = memwall.sub %a, %b : tensor<2x1xf32>, tensor<1x3xf32> -> "
       "tensor<2x3xf32>",
       {6, 5 * kF32, 6 * kF32, kFP32, true}},
      // bf16 elementwise math still runs on the FP32 cores.
      {"memwall.mul",
       "%a: tensor<4xbf16>",
       "%0 = memwall.mul %a, %a : tensor<4xbf16>, tensor<4xbf16> -> "
       "tensor<4xbf16>",
       {4, 8 * kBF16, 4 * kBF16, kFP32, true}},
      // [2,2] / [1]: 4 divisions; read 4 + 1 f16.
      {"memwall.div",
       "%a: tensor<2x2xf16>, %b: tensor<1xf16>",
       "%0 = memwall.div %a, %b : tensor<2x2xf16>, tensor<1xf16> -> "
       "tensor<2x2xf16>",
       {4, 5 * kF16, 4 * kF16, kFP32, true}},
      {"memwall.scale",
       "%a: tensor<5xf32>",
       "%0 = memwall.scale %a by 3.0 : tensor<5xf32>",
       {5, 5 * kF32, 5 * kF32, kFP32, true}},
      // tanh form: 9 per element.
      {"memwall.gelu",
       "%a: tensor<5xf32>",
       "%0 = memwall.gelu %a tanh : tensor<5xf32>",
       {45, 5 * kF32, 5 * kF32, kFP32, true}},
      // 4 per element.
      {"memwall.silu",
       "%a: tensor<5xf32>",
       "%0 = memwall.silu %a : tensor<5xf32>",
       {20, 5 * kF32, 5 * kF32, kFP32, true}},
      {"memwall.relu",
       "%a: tensor<5xbf16>",
       "%0 = memwall.relu %a : tensor<5xbf16>",
       {5, 5 * kBF16, 5 * kBF16, kFP32, true}},
      {"memwall.tanh",
       "%a: tensor<5xf16>",
       "%0 = memwall.tanh %a : tensor<5xf16>",
       {5, 5 * kF16, 5 * kF16, kFP32, true}},
      // 5 per element; reads gate and up.
      {"memwall.swiglu",
       "%a: tensor<5xf32>",
       "%0 = memwall.swiglu %a, %a : tensor<5xf32>",
       {25, 10 * kF32, 5 * kF32, kFP32, true}},
      // 3 per element; the mask is regenerated, never read or written.
      {"memwall.dropout",
       "%a: tensor<5xf32>",
       "%0 = memwall.dropout %a rate 0.25 seed 9 : tensor<5xf32>",
       {15, 5 * kF32, 5 * kF32, kFP32, true}},
      // N 12, 3 rows of D 4, with bias: 7*12 + 4*3 = 96.
      // Read x 12 + weight 4 + bias 4.
      {"memwall.layer_norm",
       "%x: tensor<3x4xf32>, %g: tensor<4xf32>",
       "%0 = memwall.layer_norm %x, %g, %g : tensor<3x4xf32>, tensor<4xf32>, "
       "tensor<4xf32>",
       {96, 20 * kF32, 12 * kF32, kFP32, true}},
      // N 12, 3 rows: 4*12 + 3*3 = 57. bf16 input, f32 weight.
      {"memwall.rms_norm",
       "%x: tensor<3x4xbf16>, %g: tensor<4xf32>",
       "%0 = memwall.rms_norm %x, %g : tensor<3x4xbf16>, tensor<4xf32>",
       {57, 12 * kBF16 + 4 * kF32, 12 * kBF16, kFP32, true}},
      // Along axis 0 of [3,4]: 4 rows of length 3: 5*12 + 4 = 64.
      {"memwall.softmax",
       "%x: tensor<3x4xf32>",
       "%0 = memwall.softmax %x axis 0 : tensor<3x4xf32>",
       {64, 12 * kF32, 12 * kF32, kFP32, true}},
      // Mean over axis 1 of [3,4]: 12 adds + 3 divisions.
      {"memwall.reduce",
       "%x: tensor<3x4xf32>",
       "%0 = memwall.reduce mean %x axes [1] : tensor<3x4xf32> -> "
       "tensor<3xf32>",
       {15, 12 * kF32, 3 * kF32, kFP32, true}},
      // x [1,2,3,4], 3 positions, D 4: D/2 = 2 + 3*P*D/2 = 18 + 3*N = 72.
      {"memwall.rope",
       "%x: tensor<1x2x3x4xf32>, %p: tensor<3xi32>",
       "%0 = memwall.rope %x, %p : tensor<1x2x3x4xf32>, tensor<3xi32>",
       {92, 24 * kF32 + 3 * kI32, 24 * kF32, kFP32, true}},
      // 6 ids gather 6 rows of 4 from a 10-row table: the table is not read
      // whole.
      {"memwall.embedding",
       "%t: tensor<10x4xbf16>, %i: tensor<2x3xi32>",
       "%0 = memwall.embedding %t[%i] : tensor<10x4xbf16>, tensor<2x3xi32> "
       "-> tensor<2x3x4xbf16>",
       {0, 6 * kI32 + 24 * kBF16, 24 * kBF16, kFP32, true}},
      // Only the 1 new position of 2 heads x 4 features moves.
      {"memwall.kv_cache_append",
       "%c: tensor<1x2x5x4xbf16>, %u: tensor<1x2x1x4xbf16>",
       "%0 = memwall.kv_cache_append %c, %u : tensor<1x2x5x4xbf16>, "
       "tensor<1x2x1x4xbf16> -> tensor<1x2x6x4xbf16>",
       {0, 8 * kBF16, 8 * kBF16, kFP32, true}},
      // 3 positions of V 4: 3*(4*4 + 3) = 57, + 3 adds + 1 division (mean).
      {"memwall.cross_entropy",
       "%l: tensor<3x4xf32>, %y: tensor<3xi64>",
       "%0 = memwall.cross_entropy %l, %y : tensor<3x4xf32>, tensor<3xi64> "
       "-> tensor<f32>",
       {61, 12 * kF32 + 3 * kI64, kF32, kFP32, true}},
      // hidden [2,3,8] bf16 (N 6, D 8) times a [300, 8] weight (V 300):
      // chunks of 128 columns (300 / 8 = 38, rounded up to 128), 3 of them.
      // FLOPs 2*6*8*300 = 28800 + the loss 6*(4*300 + 3) = 7218 + mean 7.
      // Read: hidden once a chunk 3*96, weight 4800, labels 48, the logits
      // 6*300*2 = 3600 by the loss kernel; written: the logits 3600, loss 4,
      // lse 24.
      {"memwall.linear_cross_entropy",
       "%h: tensor<2x3x8xbf16>, %w: tensor<300x8xbf16>, %y: tensor<2x3xi64>",
       "%0, %1 = memwall.linear_cross_entropy %h, %w, %y transpose_weight : "
       "tensor<2x3x8xbf16>, tensor<300x8xbf16>, tensor<2x3xi64> -> "
       "tensor<f32>, tensor<2x3xf32>",
       {36025, 288 + 4800 + 48 + 3600, 3600 + 4 + 24, MathPrecision::BF16,
        true}},
      // A view: nothing at all.
      {"memwall.reshape",
       "%x: tensor<3x4xf32>",
       "%0 = memwall.reshape %x [12] : tensor<3x4xf32> -> tensor<12xf32>",
       {0, 0, 0, kFP32, false}},
      {"memwall.transpose",
       "%x: tensor<3x4xi64>",
       "%0 = memwall.transpose %x [1, 0] : tensor<3x4xi64> -> tensor<4x3xi64>",
       {0, 12 * kI64, 12 * kI64, kFP32, true}},
      // Rows 0, 2 and columns 1, 3: 4 of 12 elements are read.
      {"memwall.slice",
       "%x: tensor<3x4xf32>",
       "%0 = memwall.slice %x offsets [0, 1] sizes [2, 2] strides [2, 2] : "
       "tensor<3x4xf32> -> tensor<2x2xf32>",
       {0, 4 * kF32, 4 * kF32, kFP32, true}},
      {"memwall.concat",
       "%a: tensor<3x4xf32>, %b: tensor<1x4xf32>",
       "%0 = memwall.concat %a, %b axis 0 : tensor<3x4xf32>, tensor<1x4xf32> "
       "-> tensor<4x4xf32>",
       {0, 16 * kF32, 16 * kF32, kFP32, true}},
      // Read by no matmul, a dequantize is a kernel of one multiply per
      // element: 24 i8 and 3 bf16 scales in, 24 bf16 out.
      {"memwall.dequantize",
       "%q: tensor<4x6xi8>, %s: tensor<1x3xbf16>",
       "%0 = memwall.dequantize %q, %s : tensor<4x6xi8>, tensor<1x3xbf16> -> "
       "tensor<4x6xbf16>",
       {24, 24 * kI8 + 3 * kBF16, 24 * kBF16, kFP32, true}},
      // One conversion per element; 4 bytes in, 1 byte out.
      {"memwall.cast",
       "%x: tensor<3x4xf32>",
       "%0 = memwall.cast %x to f8E4M3FN : tensor<3x4xf32> -> "
       "tensor<3x4xf8E4M3FN>",
       {12, 12 * kF32, 12 * kF8, kFP32, true}},
      // Training ops. gelu_tanh' on 6 f32: (16 + 1) FLOPs each = 102; read
      // x and dy (2 * 6 * 4 B), write dx (24 B).
      {"memwall.activation_grad",
       "%x: tensor<2x3xf32>",
       "%0 = memwall.activation_grad gelu_tanh %x, %x : tensor<2x3xf32>",
       {102, 48, 24, kFP32, true}},
      // x, dy [2,4] f32, w [4], bias: 14 * 8 + 6 * 2 rows = 124 FLOPs; read
      // (8 + 4 + 8) * 4 B, write dx 8 + dw 4 + db 4 elements * 4 B.
      {"memwall.layer_norm_grad",
       "%x: tensor<2x4xf32>, %w: tensor<4xf32>",
       "%0:3 = memwall.layer_norm_grad %x, %w, %x has_bias : "
       "(tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> "
       "(tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)",
       {124, 80, 64, kFP32, true}},
      // 11 * 8 + 5 * 2 = 98 FLOPs; read 20 bf16, write dx 8 + dw 4 bf16.
      {"memwall.rms_norm_grad",
       "%x: tensor<2x4xbf16>, %w: tensor<4xbf16>",
       "%0:2 = memwall.rms_norm_grad %x, %w, %x : tensor<2x4xbf16>, "
       "tensor<4xbf16>",
       {98, 40, 24, MathPrecision::FP32, true}},
      // The forward's causal case (12 pairs a head, 2 heads): FLOPs
      // 2 * 2 * 12 * (3 * 4 + 2 * 4) = 960. Scores 30 f16 = 60 B: P and dS
      // written once (120 B) and read twice (240 B). Read q 24, k 20, v 20,
      // out 24, dout 24 elements = 224 B; write dq 24, dk 20, dv 20 = 128 B.
      {"memwall.attention_grad",
       "%q: tensor<1x2x3x4xf16>, %k: tensor<1x1x5x4xf16>",
       "%0:3 = memwall.attention_grad %q, %k, %k, %q, %q causal scale "
       "5.000000e-01 : (tensor<1x2x3x4xf16>, tensor<1x1x5x4xf16>, "
       "tensor<1x1x5x4xf16>, tensor<1x2x3x4xf16>, tensor<1x2x3x4xf16>) -> "
       "(tensor<1x2x3x4xf16>, tensor<1x1x5x4xf16>, tensor<1x1x5x4xf16>)",
       {960, 224 + 240, 128 + 120, MathPrecision::FP16, true}},
      // The forward's causal case tiled 2 x 2 (query x key blocks): FLOPs as
      // attention, 384. The KV head's 2 query heads x 3 queries = 6 rows
      // (row r: query r mod 3) in blocks of 2: rows 0-1 (queries 0, 1) see
      // keys 0..3 (2 key blocks); rows 2-3 (queries 2, 0) and rows 4-5
      // (queries 1, 2) reach query 2, keys 0..4 (3 blocks each): 8 blocks,
      // each 2 keys x (D + Dv = 8) x 2 B = 32 B: K/V 256 B. Q 24 x 2 = 48 B
      // read once. Written: out 24 x 2 = 48 B, lse 6 x 4 = 24 B.
      {"memwall.flash_attention",
       "%q: tensor<1x2x3x4xf16>, %k: tensor<1x1x5x4xf16>",
       "%0:2 = memwall.flash_attention %q, %k, %k causal scale 5.000000e-01 "
       "block_q 2 block_kv 2 splits 1 : (tensor<1x2x3x4xf16>, "
       "tensor<1x1x5x4xf16>, tensor<1x1x5x4xf16>) -> (tensor<1x2x3x4xf16>, "
       "tensor<1x2x3xf32>)",
       {384, 48 + 256, 48 + 24, MathPrecision::FP16, true}},
      // Its backward (no L2 reuse): FLOPs as attention_grad, 960. 6 query
      // rows; K and V read once (40 + 40 B); a pre-pass reads O and dO
      // (6 x 2 x 4 x 2 = 96 B). Key block j (keys 2j, 2j+1) is seen by the
      // queries i with i + 2 >= 2j: 3, 3 and 1 of the 3 per head, 14 rows in
      // all, each reading Q (8 B), dO (8 B), lse and the row sum (8 B) and
      // the fp32 dQ (16 B): 14 x 40 = 560 B; the post-pass reads dQ once
      // (6 x 16 = 96 B). Written: dq 48 + dk 40 + dv 40 B, the row sums
      // 24 B, and the fp32 dQ per visible row 14 x 16 = 224 B.
      {"memwall.flash_attention_grad",
       "%q: tensor<1x2x3x4xf16>, %k: tensor<1x1x5x4xf16>, "
       "%lse: tensor<1x2x3xf32>",
       "%0:3 = memwall.flash_attention_grad %q, %k, %k, %q, %q, %lse causal "
       "scale 5.000000e-01 block_q 2 block_kv 2 : (tensor<1x2x3x4xf16>, "
       "tensor<1x1x5x4xf16>, tensor<1x1x5x4xf16>, tensor<1x2x3x4xf16>, "
       "tensor<1x2x3x4xf16>, tensor<1x2x3xf32>) -> (tensor<1x2x3x4xf16>, "
       "tensor<1x1x5x4xf16>, tensor<1x1x5x4xf16>)",
       {960, 80 + 96 + 560 + 96, 128 + 24 + 224, MathPrecision::FP16, true}},
      // 24 gradient elements added into a [10, 4] f32 table; read 24 * 4 B
      // and 6 i64 indices, write the 40-element table.
      {"memwall.embedding_grad",
       "%dy: tensor<2x3x4xf32>, %i: tensor<2x3xi64>",
       "%0 = memwall.embedding_grad %dy[%i] : tensor<2x3x4xf32>, "
       "tensor<2x3xi64> -> tensor<10x4xf32>",
       {24, 96 + 48, 160, kFP32, true}},
      // 2 positions of 5 classes: 2 * (7 * 5 + 1) = 72 FLOPs; read logits
      // 40 B, labels 16 B, dloss 4 B; write 40 B.
      {"memwall.cross_entropy_grad",
       "%l: tensor<2x5xf32>, %y: tensor<2xi64>, %d: tensor<f32>",
       "%0 = memwall.cross_entropy_grad %l, %y, %d : tensor<2x5xf32>, "
       "tensor<2xi64>, tensor<f32>",
       {72, 60, 40, kFP32, true}},
      // The same head's backward: three GEMMs 3*28800, the gradient
      // 6*(3*300 + 1) = 5406, the fp32 dH adds of chunks 2 and 3: 2*6*8.
      // Read per chunk hidden twice (3*2*96) and labels + lse (3*72); the
      // weight twice (9600), dloss 4, the logits once and their gradient
      // twice (3*3600), the fp32 dH accumulator 3*192. Written: the logits
      // and their gradient (2*3600), the accumulator 3*192, dH 96, dW 4800.
      {"memwall.linear_cross_entropy_grad",
       "%h: tensor<2x3x8xbf16>, %w: tensor<300x8xbf16>, %y: tensor<2x3xi64>, "
       "%lse: tensor<2x3xf32>, %d: tensor<f32>",
       "%0, %1 = memwall.linear_cross_entropy_grad %h, %w, %y, %lse, %d "
       "transpose_weight : tensor<2x3x8xbf16>, tensor<300x8xbf16>, "
       "tensor<2x3xi64>, tensor<2x3xf32>, tensor<f32>",
       {91902, 576 + 216 + 9600 + 4 + 10800 + 576, 7200 + 576 + 96 + 4800,
        MathPrecision::BF16, true}},
      // Data movement only: read 3 f32, write 12.
      {"memwall.broadcast",
       "%x: tensor<3x1xf32>",
       "%0 = memwall.broadcast %x [3, 4] : tensor<3x1xf32> -> tensor<3x4xf32>",
       {0, 12, 48, kFP32, true}},
      // Read 6 bf16, write the padded 12.
      {"memwall.pad",
       "%x: tensor<2x3xbf16>",
       "%0 = memwall.pad %x low [0, 1] high [1, 0] : tensor<2x3xbf16> -> "
       "tensor<3x4xbf16>",
       {0, 12, 24, kFP32, true}},
      // 4 parameters x 16 FLOPs. Read param and grad (bf16, 2 * 8 B) and m,
      // v, master (f32, 3 * 16 B); write param 8 B and m, v, master 48 B.
      {"memwall.adamw",
       "%p: tensor<4xbf16>, %m: tensor<4xf32>",
       "%0:4 = memwall.adamw %p, %p, %m, %m master %m lr 1.000000e-03 : "
       "(tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, "
       "tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, "
       "tensor<4xf32>)",
       {64, 64, 56, kFP32, true}},
      // 12 elements x (negate, exp, add, divide).
      {"memwall.sigmoid",
       "%x: tensor<3x4xf32>",
       "%0 = memwall.sigmoid %x : tensor<3x4xf32>",
       {48, 12 * kF32, 12 * kF32, kFP32, true}},
      // 3 rows of E = 5, top 2, not renormalized: softmax 5 * 5 + 1, top-k
      // 2 * 5 = 36 a row. Read the logits; write the [3, 2] weights (f32)
      // and indices (i32).
      {"memwall.moe_gating",
       "%l: tensor<3x5xf32>",
       "%0:2 = memwall.moe_gating %l top 2 : tensor<3x5xf32> -> "
       "tensor<3x2xf32>, tensor<3x2xi32>",
       {108, 15 * kF32, 6 * kF32 + 6 * kI32, kFP32, true}},
      // Softmax again (26), 2k = 4 and 2E = 10: 40 a row.
      {"memwall.moe_gating_grad",
       "%dw: tensor<3x2xf32>, %l: tensor<3x5xf32>, %e: tensor<3x2xi32>",
       "%0 = memwall.moe_gating_grad %dw, %l, %e normalize : "
       "tensor<3x2xf32>, tensor<3x5xf32>, tensor<3x2xi32> -> "
       "tensor<3x5xf32>",
       {120, 6 * kF32 + 15 * kF32 + 6 * kI32, 15 * kF32, kFP32, true}},
      // 6 tokens, 1 slot each, 4 experts of [8, 16] bf16: 2 * 6 * 8 * 16
      // FLOPs. The experts hit in expectation, 4 (1 - (3/4)^6) =
      // 3.2880859375 of 256 B each = 841.75 -> 842 B, besides the input
      // (48 bf16) and the indices (6 i32); the [6, 1, 16] result written.
      {"memwall.expert_matmul",
       "%x: tensor<2x3x8xbf16>, %w: tensor<4x8x16xbf16>, "
       "%e: tensor<2x3x1xi32>",
       "%0 = memwall.expert_matmul %x, %w[%e] : tensor<2x3x8xbf16>, "
       "tensor<4x8x16xbf16>, tensor<2x3x1xi32> -> tensor<2x3x1x16xbf16>",
       {1536, 48 * kBF16 + 6 * kI32 + 842, 96 * kBF16, MathPrecision::BF16,
        true}},
      // The same contraction into every expert's [8, 16] (all written).
      {"memwall.expert_matmul_weight_grad",
       "%x: tensor<6x8xbf16>, %dy: tensor<6x1x16xbf16>, %e: tensor<6x1xi32>",
       "%0 = memwall.expert_matmul_weight_grad %x, %dy[%e] experts 4 : "
       "tensor<6x8xbf16>, tensor<6x1x16xbf16>, tensor<6x1xi32> -> "
       "tensor<4x8x16xbf16>",
       {1536, (48 + 96) * kBF16 + 6 * kI32, 512 * kBF16, MathPrecision::BF16,
        true}},
      // The fused kernel: 32 adds + 32 relus; x (32 f32) and b (8 f32) read
      // once, only the relu's 32 f32 written (the add's result stays in
      // registers).
      {"memwall.fusion",
       "%x: tensor<4x8xf32>, %b: tensor<8xf32>",
       "%0 = memwall.fusion elementwise (%x, %b) : (tensor<4x8xf32>, "
       "tensor<8xf32>) -> tensor<4x8xf32> {\n"
       "^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):\n"
       "  %1 = memwall.add %a, %c : tensor<4x8xf32>, tensor<8xf32> -> "
       "tensor<4x8xf32>\n"
       "  %2 = memwall.relu %1 : tensor<4x8xf32>\n"
       "  memwall.yield %2 : tensor<4x8xf32>\n}",
       {64, 40 * kF32, 32 * kF32, kFP32, true}},
  };

  std::set<std::string> covered;
  for (const Case &c : cases) {
    SCOPED_TRACE(c.body);
    CostOpInterface op = parseOp(c.args, c.body);
    ASSERT_TRUE(op);
    EXPECT_EQ(op->getName().getStringRef(), c.op);
    expectCosts(op, c.costs);
    covered.insert(c.op);
  }

  // Every memwall op the dialect registers implements CostOpInterface and
  // has a case above: a new op cannot go uncosted or untested.
  std::set<std::string> registered;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    // The fusion body's terminator does no work of its own; bundle steps on
    // buffers (MemWallHostOps.td) and ops inside generated kernels
    // (MemWallKernelOps.td) are codegen's output, not model ops.
    if (name.getDialectNamespace() != "memwall" ||
        name.getStringRef() == "memwall.yield" ||
        llvm::is_contained({"memwall.launch", "memwall.gemm",
                            "memwall.all_reduce", "memwall.view",
                            "memwall.stack_view",
                            "memwall.warpgroup_accumulate"},
                           name.getStringRef()))
      continue;
    registered.insert(name.getStringRef().str());
    EXPECT_TRUE(name.hasInterface<CostOpInterface>())
        << name.getStringRef().str() << " does not implement CostOpInterface";
  }
  EXPECT_EQ(registered, covered);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

TEST_F(CostModelTest, MatmulCountsTwoFlopsPerMultiplyAddPlusBias) {
  CostOpInterface op = parseOp(
      "%x: tensor<4x128x768xbf16>, %w: tensor<768x3072xbf16>, "
      "%b: tensor<3072xbf16>",
      "%0 = memwall.matmul %x, %w bias %b : tensor<4x128x768xbf16>, "
      "tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<4x128x3072xbf16>");
  // docs/cost-model.md's worked example. Batch 4, M 128, N 3072, K 768:
  // 2*4*128*3072*768 = 2415919104, plus one bias add per output
  // (4*128*3072 = 1572864). The rank-2 weight is read once, not per batch.
  expectCosts(op,
              {2415919104 + 1572864, (512 * 768 + 768 * 3072 + 3072) * kBF16,
               512 * 3072 * kBF16, MathPrecision::BF16, true});
}

TEST_F(CostModelTest, MatmulBroadcastBatchCountsEveryProductButReadsOnce) {
  // lhs [2,1,16,32] x rhs [3,32,8] broadcasts to 2*3 = 6 products of
  // 16x8x32: 6 * 2 * 16 * 8 * 32 = 49152. Each operand is read at its own
  // size; the [2,3,16,8] result is written.
  CostOpInterface op =
      parseOp("%a: tensor<2x1x16x32xf32>, %b: tensor<3x32x8xf32>",
              "%0 = memwall.matmul %a, %b : tensor<2x1x16x32xf32>, "
              "tensor<3x32x8xf32> -> tensor<2x3x16x8xf32>");
  expectCosts(op, {49152, (2 * 16 * 32 + 3 * 32 * 8) * kF32,
                   2 * 3 * 16 * 8 * kF32, kFP32, true});
}

TEST_F(CostModelTest, MatmulTransposeFlagsSwapTheLastTwoDimensions) {
  // transpose_lhs: lhs [3,32,8] is K x M, so M 8, K 32, N 8:
  // 3 * 2 * 8 * 8 * 32 = 12288.
  CostOpInterface lhs =
      parseOp("%b: tensor<3x32x8xf32>",
              "%0 = memwall.matmul %b, %b {transpose_lhs} : "
              "tensor<3x32x8xf32>, tensor<3x32x8xf32> -> tensor<3x8x8xf32>");
  expectCosts(lhs,
              {12288, 2 * 3 * 32 * 8 * kF32, 3 * 8 * 8 * kF32, kFP32, true});
  // Both: lhs [K 4, M 8], rhs [N 6, K 4]: 2 * 8 * 6 * 4 = 384.
  CostOpInterface both =
      parseOp("%a: tensor<4x8xf32>, %b: tensor<6x4xf32>",
              "%0 = memwall.matmul %a, %b {transpose_lhs, transpose_rhs} : "
              "tensor<4x8xf32>, tensor<6x4xf32> -> tensor<8x6xf32>");
  expectCosts(both, {384, (32 + 24) * kF32, 48 * kF32, kFP32, true});
}

TEST_F(CostModelTest, MatmulRunsOnTheTensorCoresOfItsOperandType) {
  // [16,32] x [32,8]: 2 * 16 * 8 * 32 = 8192 FLOPs at every precision.
  struct Case {
    const char *elt;
    const char *resultElt;
    int64_t inBytes, outBytes;
    MathPrecision precision;
  } cases[] = {
      {"f32", "f32", kF32, kF32, MathPrecision::FP32},
      {"bf16", "bf16", kBF16, kBF16, MathPrecision::BF16},
      {"f16", "f16", kF16, kF16, MathPrecision::FP16},
      // fp8 products come back as bf16, int8 products as i32.
      {"f8E4M3FN", "bf16", kF8, kBF16, MathPrecision::FP8},
      {"f8E5M2", "bf16", kF8, kBF16, MathPrecision::FP8},
      {"i8", "i32", kI8, kI32, MathPrecision::INT8},
  };
  for (const Case &c : cases) {
    std::string a = std::string("tensor<16x32x") + c.elt + ">";
    std::string b = std::string("tensor<32x8x") + c.elt + ">";
    std::string r = std::string("tensor<16x8x") + c.resultElt + ">";
    CostOpInterface op =
        parseOp("%a: " + a + ", %b: " + b,
                "%0 = memwall.matmul %a, %b : " + a + ", " + b + " -> " + r);
    SCOPED_TRACE(c.elt);
    expectCosts(op, {8192, (16 * 32 + 32 * 8) * c.inBytes, 16 * 8 * c.outBytes,
                     c.precision, true});
  }
}

// Guards MatmulOp::getDims against an empty M or N. Under UBSan/ASan builds
// this divides by zero (MatmulOps.cpp: dims.batch is computed as
// elements / (m * n) before the m * n == 0 check) and dies with SIGFPE.
TEST_F(CostModelTest, MatmulWithAnEmptyDimensionDoesNoWork) {
  // M = 0: no products; the [8,16] rhs is still read.
  CostOpInterface op = parseOp("%a: tensor<0x8xf32>, %b: tensor<8x16xf32>",
                               "%0 = memwall.matmul %a, %b : tensor<0x8xf32>, "
                               "tensor<8x16xf32> -> tensor<0x16xf32>");
  expectCosts(op, {0, 8 * 16 * kF32, 0, kFP32, true});
}

TEST_F(CostModelTest, CausalAttentionCountsOnlyUnmaskedPairs) {
  CostOpInterface op = parseOp(
      "%q: tensor<1x32x128x128xbf16>, %k: tensor<1x8x128x128xbf16>",
      "%0 = memwall.attention %q, %k, %k causal : tensor<1x32x128x128xbf16>, "
      "tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16> -> "
      "tensor<1x32x128x128xbf16>");
  // Sq = Sk = 128: 128*129/2 = 8256 pairs per head; 2 matmuls of 2*D FLOPs
  // per pair: 4 * 1 * 32 * 8256 * 128 = 135266304.
  // Reads q (32 heads), k and v (8 heads each), and the 32*128*128 score
  // matrix twice (softmax, P V); writes the output and the scores twice.
  int64_t scores = 32 * 128 * 128 * kBF16;
  expectCosts(op,
              {135266304, (32 + 8 + 8) * 128 * 128 * kBF16 + 2 * scores,
               32 * 128 * 128 * kBF16 + 2 * scores, MathPrecision::BF16, true});
}

TEST_F(CostModelTest, DecodeAttentionIsNotHalvedByTheCausalMask) {
  CostOpInterface op = parseOp(
      "%q: tensor<2x8x1x16xf16>, %k: tensor<2x1x64x16xf16>",
      "%0 = memwall.attention %q, %k, %k causal : tensor<2x8x1x16xf16>, "
      "tensor<2x1x64x16xf16>, tensor<2x1x64x16xf16> -> "
      "tensor<2x8x1x16xf16>");
  // MQA decode: one query sees all 64 keys: 4 * B * H * 1 * 64 * D =
  // 4*2*8*64*16 = 65536. Scores 2*8*1*64 = 1024 f16.
  int64_t scores = 1024 * kF16;
  expectCosts(op, {65536, (2 * 8 * 16 + 2 * 2 * 64 * 16) * kF16 + 2 * scores,
                   2 * 8 * 16 * kF16 + 2 * scores, MathPrecision::FP16, true});
}

TEST_F(CostModelTest, CausalPrefillOverACacheSeesTheWholeCache) {
  // Sq 4 new queries over Sk 10 keys: query i sees 6 + i + 1 keys, so
  // pairs = 7 + 8 + 9 + 10 = 34 = 4*(10-4) + 4*5/2.
  // FLOPs 4 * B 1 * H 2 * 34 * D 8 = 2176 (vs 4*2*40*8 = 2560 unmasked).
  CostOpInterface op =
      parseOp("%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x10x8xf32>",
              "%0 = memwall.attention %q, %k, %k causal : "
              "tensor<1x2x4x8xf32>, tensor<1x2x10x8xf32>, "
              "tensor<1x2x10x8xf32> -> tensor<1x2x4x8xf32>");
  int64_t scores = 2 * 4 * 10 * kF32;
  expectCosts(op, {2176, (64 + 160 + 160) * kF32 + 2 * scores,
                   64 * kF32 + 2 * scores, kFP32, true});
}

TEST_F(CostModelTest, NonCausalGroupedQueryAttentionWithMaskReadsTheMask) {
  // GQA 4 query heads over 2 KV heads, Sq = Sk = 4, D 8, i1 mask [1,1,4,4].
  // FLOPs 4 * 1 * 4 * (4*4) * 8 = 2048. Scores 4*4*4 = 64 f32 elements.
  CostOpInterface op = parseOp(
      "%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, "
      "%m: tensor<1x1x4x4xi1>",
      "%0 = memwall.attention %q, %k, %k mask %m : tensor<1x4x4x8xf32>, "
      "tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xi1> -> "
      "tensor<1x4x4x8xf32>");
  int64_t scores = 64 * kF32;
  expectCosts(op, {2048, (128 + 64 + 64) * kF32 + 16 * kI1 + 2 * scores,
                   128 * kF32 + 2 * scores, kFP32, true});
}

TEST_F(CostModelTest, AttentionWithAWiderValueCountsBothHeadDims) {
  // D 8 for Q K^T, Dv 16 for P V, 2 heads, Sq = Sk = 3, not causal:
  // 2*1*2*9*8 + 2*1*2*9*16 = 288 + 576 = 864. Float mask of the result type.
  CostOpInterface op = parseOp(
      "%q: tensor<1x2x3x8xbf16>, %v: tensor<1x2x3x16xbf16>, "
      "%m: tensor<1x2x3x3xbf16>",
      "%0 = memwall.attention %q, %q, %v mask %m scale 0.5 : "
      "tensor<1x2x3x8xbf16>, tensor<1x2x3x8xbf16>, tensor<1x2x3x16xbf16>, "
      "tensor<1x2x3x3xbf16> -> tensor<1x2x3x16xbf16>");
  int64_t scores = 2 * 3 * 3 * kBF16;
  expectCosts(op, {864, (48 + 48 + 96 + 18) * kBF16 + 2 * scores,
                   96 * kBF16 + 2 * scores, MathPrecision::BF16, true});
}

TEST_F(CostModelTest, Fp8AttentionKeepsItsScoresInTheBf16Result) {
  // fp8 inputs (1 byte) give a bf16 result, and the materialized scores are
  // at the result's 2 bytes. B 1, H 2, S 4, D 16: FLOPs 4*2*16*16 = 2048.
  CostOpInterface op =
      parseOp("%q: tensor<1x2x4x16xf8E4M3FN>",
              "%0 = memwall.attention %q, %q, %q : tensor<1x2x4x16xf8E4M3FN>, "
              "tensor<1x2x4x16xf8E4M3FN>, tensor<1x2x4x16xf8E4M3FN> -> "
              "tensor<1x2x4x16xbf16>");
  int64_t scores = 2 * 4 * 4 * kBF16;
  expectCosts(op, {2048, 3 * 128 * kF8 + 2 * scores, 128 * kBF16 + 2 * scores,
                   MathPrecision::FP8, true});
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST_F(CostModelTest, BroadcastArithmeticCountsResultElementsAndOwnBytes) {
  CostOpInterface op = parseOp(
      "%x: tensor<4x128x768xbf16>, %g: tensor<768xbf16>",
      "%0 = memwall.add %x, %g : tensor<4x128x768xbf16>, tensor<768xbf16> -> "
      "tensor<4x128x768xbf16>");
  // The broadcast operand is read once, at its own size.
  expectCosts(op, {4 * 128 * 768, (4 * 128 * 768 + 768) * kBF16,
                   4 * 128 * 768 * kBF16, kFP32, true});
  // Two-sided: [4,1] * [1,8] -> 32 products from 4 + 8 elements read.
  CostOpInterface outer =
      parseOp("%a: tensor<4x1xf32>, %b: tensor<1x8xf32>",
              "%0 = memwall.mul %a, %b : tensor<4x1xf32>, tensor<1x8xf32> -> "
              "tensor<4x8xf32>");
  expectCosts(outer, {32, 12 * kF32, 32 * kF32, kFP32, true});
}

TEST_F(CostModelTest, ActivationsUseTheirDocumentedPerElementCounts) {
  const int64_t n = 6 * 10;
  struct Case {
    const char *body;
    int64_t flopsPerElement;
    int64_t operandsRead;
  } cases[] = {
      {"%0 = memwall.relu %x : tensor<6x10xf32>", 1, 1},
      {"%0 = memwall.tanh %x : tensor<6x10xf32>", 1, 1},
      {"%0 = memwall.scale %x by 2.0 : tensor<6x10xf32>", 1, 1},
      {"%0 = memwall.silu %x : tensor<6x10xf32>", 4, 1},
      // erf (the default): mul, erf, add, mul, mul.
      {"%0 = memwall.gelu %x : tensor<6x10xf32>", 5, 1},
      {"%0 = memwall.gelu %x erf : tensor<6x10xf32>", 5, 1},
      // tanh: 2 mul (x^3), mul c, add x, mul k, tanh, add 1, mul x, mul 0.5.
      {"%0 = memwall.gelu %x tanh : tensor<6x10xf32>", 9, 1},
      {"%0 = memwall.dropout %x rate 0.1 : tensor<6x10xf32>", 3, 1},
      {"%0 = memwall.swiglu %x, %x : tensor<6x10xf32>", 5, 2},
      {"%0 = memwall.add %x, %x : tensor<6x10xf32>, tensor<6x10xf32> -> "
       "tensor<6x10xf32>",
       1, 2},
      {"%0 = memwall.sub %x, %x : tensor<6x10xf32>, tensor<6x10xf32> -> "
       "tensor<6x10xf32>",
       1, 2},
      {"%0 = memwall.mul %x, %x : tensor<6x10xf32>, tensor<6x10xf32> -> "
       "tensor<6x10xf32>",
       1, 2},
      {"%0 = memwall.div %x, %x : tensor<6x10xf32>, tensor<6x10xf32> -> "
       "tensor<6x10xf32>",
       1, 2},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.body);
    CostOpInterface op = parseOp("%x: tensor<6x10xf32>", c.body);
    expectCosts(op, {c.flopsPerElement * n, c.operandsRead * n * kF32, n * kF32,
                     kFP32, true});
  }
}

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

TEST_F(CostModelTest, NormsCountPerElementAndPerRowWork) {
  // 4 rows of D = 768 (N = 3072). fp32 parameters under a bf16 input are
  // read at 4 bytes.
  CostOpInterface ln =
      parseOp("%x: tensor<4x768xbf16>, %g: tensor<768xf32>",
              "%0 = memwall.layer_norm %x, %g, %g : tensor<4x768xbf16>, "
              "tensor<768xf32>, tensor<768xf32>");
  // 7 per element + 4 per row.
  expectCosts(ln, {7 * 3072 + 4 * 4, 3072 * kBF16 + 2 * 768 * kF32,
                   3072 * kBF16, kFP32, true});
  CostOpInterface lnNoBias = parseOp(
      "%x: tensor<4x768xbf16>, %g: tensor<768xbf16>",
      "%0 = memwall.layer_norm %x, %g : tensor<4x768xbf16>, tensor<768xbf16>");
  // 6 per element + 4 per row.
  expectCosts(lnNoBias, {6 * 3072 + 4 * 4, (3072 + 768) * kBF16, 3072 * kBF16,
                         kFP32, true});
  CostOpInterface rms = parseOp(
      "%x: tensor<4x768xbf16>, %g: tensor<768xbf16>",
      "%0 = memwall.rms_norm %x, %g : tensor<4x768xbf16>, tensor<768xbf16>");
  // 4 per element + 3 per row.
  expectCosts(
      rms, {4 * 3072 + 3 * 4, (3072 + 768) * kBF16, 3072 * kBF16, kFP32, true});
}

TEST_F(CostModelTest, SoftmaxRowsFollowTheAxis) {
  // [4, 8, 16], N = 512: 5 * N + one reciprocal per row.
  struct Case {
    const char *axis;
    int64_t rows;
  } cases[] = {
      {" axis 1", 4 * 16},  // rows of length 8
      {" axis -2", 4 * 16}, // the same axis counted from the end
      {" axis 0", 8 * 16},  // rows of length 4
      {"", 4 * 8},          // default: the last axis, rows of length 16
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.axis);
    CostOpInterface op = parseOp("%x: tensor<4x8x16xf32>",
                                 std::string("%0 = memwall.softmax %x") +
                                     c.axis + " : tensor<4x8x16xf32>");
    expectCosts(op, {5 * 512 + c.rows, 512 * kF32, 512 * kF32, kFP32, true});
  }
}

TEST_F(CostModelTest, ReductionsCountInputsAndMeanDividesPerOutput) {
  // 512 inputs; sum and max combine each once.
  CostOpInterface sum =
      parseOp("%x: tensor<4x8x16xf32>",
              "%0 = memwall.reduce sum %x axes [2] : tensor<4x8x16xf32> -> "
              "tensor<4x8xf32>");
  expectCosts(sum, {512, 512 * kF32, 32 * kF32, kFP32, true});
  CostOpInterface max = parseOp("%x: tensor<4x8x16xbf16>",
                                "%0 = memwall.reduce max %x axes [0, 1, 2] : "
                                "tensor<4x8x16xbf16> -> tensor<bf16>");
  expectCosts(max, {512, 512 * kBF16, kBF16, kFP32, true});
  // Mean adds one division per output: 8 outputs.
  CostOpInterface mean =
      parseOp("%x: tensor<4x8x16xf32>",
              "%0 = memwall.reduce mean %x axes [0, 2] keep_dims : "
              "tensor<4x8x16xf32> -> tensor<1x8x1xf32>");
  expectCosts(mean, {512 + 8, 512 * kF32, 8 * kF32, kFP32, true});
}

TEST_F(CostModelTest, CrossEntropyCountsLogSumExpPerPosition) {
  // 2*4 = 8 positions of V = 10 classes: 8 * (4*10 + 3) = 344.
  const char *args = "%l: tensor<2x4x10xf32>, %y: tensor<2x4xi64>";
  const int64_t read = 80 * kF32 + 8 * kI64;
  CostOpInterface mean =
      parseOp(args, "%0 = memwall.cross_entropy %l, %y : tensor<2x4x10xf32>, "
                    "tensor<2x4xi64> -> tensor<f32>");
  // mean: sum 8 losses, divide once.
  expectCosts(mean, {344 + 8 + 1, read, kF32, kFP32, true});
  CostOpInterface sum = parseOp(
      args, "%0 = memwall.cross_entropy %l, %y sum : tensor<2x4x10xf32>, "
            "tensor<2x4xi64> -> tensor<f32>");
  expectCosts(sum, {344 + 8, read, kF32, kFP32, true});
  CostOpInterface none = parseOp(
      args, "%0 = memwall.cross_entropy %l, %y none : tensor<2x4x10xf32>, "
            "tensor<2x4xi64> -> tensor<2x4xf32>");
  expectCosts(none, {344, read, 8 * kF32, kFP32, true});
  // ignore_index changes what is computed, not the count.
  CostOpInterface ignore =
      parseOp(args, "%0 = memwall.cross_entropy %l, %y ignore_index -100 : "
                    "tensor<2x4x10xf32>, tensor<2x4xi64> -> tensor<f32>");
  expectCosts(ignore, {344 + 8 + 1, read, kF32, kFP32, true});
}

TEST_F(CostModelTest, LinearCrossEntropyHoldsOneLogitsChunkNotTheLogits) {
  // GPT-2-medium's head at batch 16 x 1024: N 16384, D 1024, V 50257. A
  // chunk is 50257 / 8 = 6283 columns rounded up to 6400, 8 chunks; its
  // bf16 logits are 16384 * 6400 * 2 bytes, where the whole logits would be
  // 16384 * 50257 * 2 = 1.65 GB.
  StringRef args = "%h: tensor<16x1024x1024xbf16>, "
                   "%w: tensor<50257x1024xbf16>, %y: tensor<16x1024xi64>, "
                   "%lse: tensor<16x1024xf32>, %d: tensor<f32>";
  CostOpInterface forward = parseOp(
      args, "%0, %1 = memwall.linear_cross_entropy %h, %w, %y "
            "transpose_weight : tensor<16x1024x1024xbf16>, "
            "tensor<50257x1024xbf16>, tensor<16x1024xi64> -> tensor<f32>, "
            "tensor<16x1024xf32>");
  ASSERT_TRUE(forward);
  EXPECT_EQ(forward.getWorkspaceBytes(), 16384LL * 6400 * 2);
  // A GEMM and a loss kernel per chunk: 16 launches.
  const GPUTarget &h100 = *lookupBuiltinGPUTarget("h100-sxm");
  KernelWork work = forward.getKernelWork(h100);
  EXPECT_EQ(work.unit, ComputeUnit::Gemm);
  EXPECT_EQ(work.extraLaunches, 15);
  CostOpInterface backward = parseOp(
      args, "%0, %1 = memwall.linear_cross_entropy_grad %h, %w, %y, %lse, %d "
            "transpose_weight : tensor<16x1024x1024xbf16>, "
            "tensor<50257x1024xbf16>, tensor<16x1024xi64>, "
            "tensor<16x1024xf32>, tensor<f32>");
  ASSERT_TRUE(backward);
  // The chunk's logits and the fp32 [N, D] dH accumulator.
  EXPECT_EQ(backward.getWorkspaceBytes(),
            16384LL * 6400 * 2 + 16384LL * 1024 * 4);
  // Four launches per chunk and dH's cast: 33.
  EXPECT_EQ(backward.getKernelWork(h100).extraLaunches, 32);
}

//===----------------------------------------------------------------------===//
// Positions and gathers
//===----------------------------------------------------------------------===//

TEST_F(CostModelTest, RopeCountsFrequenciesAnglesAndRotation) {
  // x [1, 4, 8, 16] (N = 512), 8 positions, D = 16:
  // D/2 = 8 pows + 3 * 8 * 8 = 192 angle ops + 3 * 512 = 1536 rotation ops.
  CostOpInterface op =
      parseOp("%x: tensor<1x4x8x16xf32>, %p: tensor<8xi64>",
              "%0 = memwall.rope %x, %p : tensor<1x4x8x16xf32>, tensor<8xi64>");
  expectCosts(op,
              {8 + 192 + 1536, 512 * kF32 + 8 * kI64, 512 * kF32, kFP32, true});
  // Per-batch positions [2, 8]: P = 16 angles per frequency.
  // x [2, 4, 8, 16] (N = 1024): 8 + 3 * 16 * 8 + 3 * 1024 = 3464.
  CostOpInterface perBatch = parseOp(
      "%x: tensor<2x4x8x16xbf16>, %p: tensor<2x8xi32>",
      "%0 = memwall.rope %x, %p : tensor<2x4x8x16xbf16>, tensor<2x8xi32>");
  expectCosts(perBatch,
              {3464, 1024 * kBF16 + 16 * kI32, 1024 * kBF16, kFP32, true});
}

TEST_F(CostModelTest, EmbeddingReadsOnlyTheGatheredRows) {
  CostOpInterface op =
      parseOp("%t: tensor<50257x768xbf16>, %i: tensor<4x128xi64>",
              "%0 = memwall.embedding %t[%i] : tensor<50257x768xbf16>, "
              "tensor<4x128xi64> -> tensor<4x128x768xbf16>");
  // 512 ids and 512 rows of 768, not the 50257-row table.
  expectCosts(
      op, {0, 512 * kI64 + 512 * 768 * kBF16, 512 * 768 * kBF16, kFP32, true});
}

TEST_F(CostModelTest, KVCacheAppendMovesOnlyTheNewPositions) {
  CostOpInterface op = parseOp(
      "%c: tensor<1x8x4096x128xbf16>, %u: tensor<1x8x1x128xbf16>",
      "%0 = memwall.kv_cache_append %c, %u : tensor<1x8x4096x128xbf16>, "
      "tensor<1x8x1x128xbf16> -> tensor<1x8x4097x128xbf16>");
  // 8 heads x 128 features of one new token, in and out; the 4096 cached
  // positions stay where they are.
  expectCosts(op, {0, 8 * 128 * kBF16, 8 * 128 * kBF16, kFP32, true});
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TEST_F(CostModelTest, DataMovementMovesBytesWithoutFlops) {
  CostOpInterface reshape =
      parseOp("%x: tensor<4x6xf32>",
              "%0 = memwall.reshape %x [2, 3, 4] : tensor<4x6xf32> -> "
              "tensor<2x3x4xf32>");
  expectCosts(reshape, {0, 0, 0, kFP32, false});

  CostOpInterface transpose = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.transpose %x [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>");
  expectCosts(transpose, {0, 24 * kF32, 24 * kF32, kFP32, true});

  // Every other row of 2 columns: 2 x 2 elements read and written.
  CostOpInterface slice = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.slice %x offsets [0, 1] sizes [2, 2] strides [2, 1] : "
      "tensor<4x6xf32> -> tensor<2x2xf32>");
  expectCosts(slice, {0, 4 * kF32, 4 * kF32, kFP32, true});

  CostOpInterface concat =
      parseOp("%x: tensor<4x6xf32>, %y: tensor<4x2xf32>",
              "%0 = memwall.concat %x, %y, %x axis 1 : tensor<4x6xf32>, "
              "tensor<4x2xf32>, tensor<4x6xf32> -> tensor<4x14xf32>");
  expectCosts(concat, {0, 56 * kF32, 56 * kF32, kFP32, true});

  // Converting f32 -> bf16: 1 FLOP per element, 4 bytes in, 2 bytes out;
  // i1 -> f32 reads 1 byte per element.
  CostOpInterface cast = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.cast %x to bf16 : tensor<4x6xf32> -> tensor<4x6xbf16>");
  expectCosts(cast, {24, 24 * kF32, 24 * kBF16, kFP32, true});
  CostOpInterface fromBits = parseOp(
      "%x: tensor<4x6xi1>",
      "%0 = memwall.cast %x to f32 : tensor<4x6xi1> -> tensor<4x6xf32>");
  expectCosts(fromBits, {24, 24 * kI1, 24 * kF32, kFP32, true});
}

//===----------------------------------------------------------------------===//
// Roofline of ops and modules on a hand-built target
//===----------------------------------------------------------------------===//

namespace {
/// A made-up GPU with round numbers: FP32 1 TFLOP/s, TF32 2, BF16 8,
/// FP16 4 TFLOP/s, no FP8 or INT8; 100 GB/s; 1 us per launch; kernels reach
/// the peaks (the efficiencies have their own tests in RooflineTest).
GPUTarget handTarget() {
  GPUTarget target;
  target.name = "hand";
  target.peakFlops = {1e12, 2e12, 8e12, 4e12, 0, 0};
  target.memoryBandwidth = 1e11;
  target.memoryCapacityBytes = 1 << 30;
  target.l2Bytes = 1 << 20;
  target.sharedMemoryPerSMBytes = 1 << 16;
  target.smCount = 1;
  target.kernelLaunchSeconds = 1e-6;
  target.achievable.memoryBandwidth = 1e11;
  target.achievable.gemmEfficiency = {1, 1, 1};
  target.achievable.generatedGemmEfficiency = {1, 1, 1};
  target.achievable.attentionEfficiency = 1;
  return target;
}

/// The soft roofline (c^4 + m^4)^(1/4), written out here.
double soft(double c, double m) {
  return std::pow(std::pow(c, 4) + std::pow(m, 4), 0.25);
}

/// [256,256] x [256,256] of `elt` giving `resultElt`.
std::string squareMatmul(StringRef elt, StringRef resultElt) {
  return ("%0 = memwall.matmul %a, %a : tensor<256x256x" + elt +
          ">, tensor<256x256x" + elt + "> -> tensor<256x256x" + resultElt + ">")
      .str();
}
} // namespace

TEST_F(CostModelTest, RooflineOfABf16MatmulUsesTheBf16Roof) {
  CostOpInterface op =
      parseOp("%a: tensor<256x256xbf16>", squareMatmul("bf16", "bf16"));
  ASSERT_TRUE(op);
  RooflineEstimate estimate = estimateOpRoofline(op, handTarget());
  // 2*256^3 = 33554432 FLOP / 8e12 = 4.194304 us; 3 * 65536 * 2 = 393216 B /
  // 1e11 = 3.93216 us: compute-bound; the soft roofline of the two (4.84
  // us, close to the ridge) + 1 us launch.
  EXPECT_DOUBLE_EQ(estimate.computeSeconds, 4.194304e-6);
  EXPECT_DOUBLE_EQ(estimate.memorySeconds, 3.93216e-6);
  EXPECT_DOUBLE_EQ(estimate.launchSeconds, 1e-6);
  EXPECT_NEAR(estimate.timeSeconds, soft(4.194304e-6, 3.93216e-6) + 1e-6,
              1e-18);
  EXPECT_NEAR(estimate.timeSeconds, 5.8396e-6, 1e-9);
  EXPECT_DOUBLE_EQ(estimate.intensity, 33554432.0 / 393216.0);
  EXPECT_FALSE(estimate.memoryBound);
}

TEST_F(CostModelTest, RooflineOfAnF32MatmulUsesStrictFp32NotTf32) {
  CostOpInterface op =
      parseOp("%a: tensor<256x256xf32>", squareMatmul("f32", "f32"));
  ASSERT_TRUE(op);
  RooflineEstimate estimate = estimateOpRoofline(op, handTarget());
  // 33554432 / 1e12 = 33.554432 us (TF32 would give half); 786432 B = 7.86 us.
  EXPECT_DOUBLE_EQ(estimate.computeSeconds, 3.3554432e-5);
  EXPECT_DOUBLE_EQ(estimate.memorySeconds, 7.86432e-6);
  EXPECT_NEAR(estimate.timeSeconds, soft(3.3554432e-5, 7.86432e-6) + 1e-6,
              1e-18);
  EXPECT_FALSE(estimate.memoryBound);
}

TEST_F(CostModelTest, RooflineOfNarrowMatmulsFallsBackToFp16OnOlderGPUs) {
  // The target has no FP8 or INT8 roof: both run at the FP16 rate 4e12,
  // 33554432 / 4e12 = 8.388608 us.
  CostOpInterface fp8 =
      parseOp("%a: tensor<256x256xf8E4M3FN>", squareMatmul("f8E4M3FN", "bf16"));
  ASSERT_TRUE(fp8);
  RooflineEstimate fp8Estimate = estimateOpRoofline(fp8, handTarget());
  EXPECT_DOUBLE_EQ(fp8Estimate.computeSeconds, 8.388608e-6);
  // 2 * 65536 fp8 bytes in + 65536 bf16 out = 262144 B = 2.62144 us.
  EXPECT_DOUBLE_EQ(fp8Estimate.memorySeconds, 2.62144e-6);
  EXPECT_NEAR(fp8Estimate.timeSeconds, soft(8.388608e-6, 2.62144e-6) + 1e-6,
              1e-18);
  EXPECT_FALSE(fp8Estimate.memoryBound);

  CostOpInterface int8 =
      parseOp("%a: tensor<256x256xi8>", squareMatmul("i8", "i32"));
  ASSERT_TRUE(int8);
  RooflineEstimate int8Estimate = estimateOpRoofline(int8, handTarget());
  EXPECT_DOUBLE_EQ(int8Estimate.computeSeconds, 8.388608e-6);
  // 2 * 65536 i8 in + 65536 i32 out = 393216 B.
  EXPECT_DOUBLE_EQ(int8Estimate.memorySeconds, 3.93216e-6);

  // Without FP16 either, fp8 falls further back to BF16 (8e12): 4.194304 us.
  GPUTarget noHalf = handTarget();
  noHalf.peakFlops[static_cast<unsigned>(MathPrecision::FP16)] = 0;
  CostOpInterface again =
      parseOp("%a: tensor<256x256xf8E4M3FN>", squareMatmul("f8E4M3FN", "bf16"));
  ASSERT_TRUE(again);
  EXPECT_DOUBLE_EQ(estimateOpRoofline(again, noHalf).computeSeconds,
                   4.194304e-6);
}

TEST_F(CostModelTest, RooflineOfElementwiseOpsIsTheMemoryRoofPlusLaunch) {
  CostOpInterface op = parseOp("%x: tensor<1000xf32>",
                               "%0 = memwall.relu %x : tensor<1000xf32>");
  ASSERT_TRUE(op);
  RooflineEstimate estimate = estimateOpRoofline(op, handTarget());
  // 1000 FLOP / 1e12 = 1 ns; 8000 B / 1e11 = 80 ns; + 1 us.
  EXPECT_DOUBLE_EQ(estimate.computeSeconds, 1e-9);
  EXPECT_DOUBLE_EQ(estimate.memorySeconds, 8e-8);
  EXPECT_NEAR(estimate.timeSeconds, soft(1e-9, 8e-8) + 1e-6, 1e-18);
  EXPECT_NEAR(estimate.timeSeconds, 1.08e-6, 1e-15);
  EXPECT_DOUBLE_EQ(estimate.intensity, 0.125);
  EXPECT_TRUE(estimate.memoryBound);
}

TEST_F(CostModelTest, RooflineOfAViewIsFreeAndCountsAsMemoryBound) {
  CostOpInterface op = parseOp(
      "%x: tensor<4x6xf32>",
      "%0 = memwall.reshape %x [24] : tensor<4x6xf32> -> tensor<24xf32>");
  ASSERT_TRUE(op);
  RooflineEstimate estimate = estimateOpRoofline(op, handTarget());
  EXPECT_EQ(estimate.launchSeconds, 0);
  EXPECT_EQ(estimate.timeSeconds, 0);
  EXPECT_EQ(estimate.intensity, 0);
  EXPECT_TRUE(estimate.memoryBound);
}

TEST_F(CostModelTest, RooflineTieBetweenComputeAndMemoryIsMemoryBound) {
  // relu on f32 does 1 FLOP per 8 bytes: with FP32 at 1e11 FLOP/s and 8e11
  // B/s both times are N / 1e11 exactly.
  GPUTarget target = handTarget();
  target.peakFlops[static_cast<unsigned>(MathPrecision::FP32)] = 1e11;
  target.memoryBandwidth = 8e11;
  target.achievable.memoryBandwidth = 8e11;
  CostOpInterface op = parseOp("%x: tensor<1000xf32>",
                               "%0 = memwall.relu %x : tensor<1000xf32>");
  ASSERT_TRUE(op);
  RooflineEstimate estimate = estimateOpRoofline(op, target);
  EXPECT_EQ(estimate.computeSeconds, estimate.memorySeconds);
  // At the tie the soft roofline is 2^(1/4) x 10 ns.
  EXPECT_NEAR(estimate.timeSeconds, std::pow(2.0, 0.25) * 1e-8 + 1e-6, 1e-18);
  EXPECT_TRUE(estimate.memoryBound);
}

TEST_F(CostModelTest, ReportOfAModuleListsOpsInProgramOrderWithParams) {
  // Two functions; only weight arguments count as parameters; func.call and
  // func.return are not memwall ops and are not in the report.
  const char *source = R"mlir(
module {
  func.func @embed(%t: tensor<100x8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                   %ids: tensor<4xi32> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<4x8xf32> {
    %0 = memwall.embedding %t[%ids] : tensor<100x8xf32>, tensor<4xi32> -> tensor<4x8xf32> loc("embed")
    return %0 : tensor<4x8xf32>
  }
  func.func @block(%x: tensor<256x256xbf16> {memwall.kind = #memwall.arg_kind<input>},
                   %w: tensor<256x256xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                   %c: tensor<1x1x8x8xbf16> {memwall.kind = #memwall.arg_kind<kv_cache>},
                   %t: tensor<100x8xf32>, %ids: tensor<4xi32>) {
    %e = func.call @embed(%t, %ids) : (tensor<100x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
    %0 = memwall.matmul %x, %w : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16> loc("proj")
    %1 = memwall.relu %0 : tensor<256x256xbf16> loc(fused["act", "block"])
    %2 = memwall.reshape %1 [65536] : tensor<256x256xbf16> -> tensor<65536xbf16> loc(unknown)
    return
  }
}
)mlir";
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(parsed);
  RooflineReport report = buildRooflineReport(
      handTarget(), computeModuleCost(*parsed, handTarget()));

  EXPECT_EQ(report.target.name, "hand");
  // An unnamed module: the tool fills in the file name, the analysis doesn't.
  EXPECT_EQ(report.modelName, "");
  // Table 100*8 f32 + w 256*256 bf16; the input and the kv cache don't count.
  EXPECT_EQ(report.params, 800 + 65536);
  EXPECT_EQ(report.paramBytes, 800 * kF32 + 65536 * kBF16);

  ASSERT_EQ(report.ops.size(), 4u);
  const char *names[] = {"memwall.embedding", "memwall.matmul", "memwall.relu",
                         "memwall.reshape"};
  const char *locs[] = {"embed", "proj", "act+block", "?"};
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(report.ops[i].id, i);
    EXPECT_EQ(report.ops[i].op, names[i]);
    EXPECT_EQ(report.ops[i].loc, locs[i]);
  }

  // embedding: read 4 ids * 4 + 32 * 4 = 144 B, write 128 B: 272 B / 1e11 =
  // 2.72 ns + 1 us; memory-bound.
  const OpRecord &embed = report.ops[0];
  EXPECT_EQ(embed.flops, 0);
  EXPECT_EQ(embed.bytesRead, 144);
  EXPECT_EQ(embed.bytesWritten, 128);
  EXPECT_TRUE(embed.estimate.memoryBound);
  EXPECT_DOUBLE_EQ(embed.estimate.timeSeconds, 1.00272e-6);
  // matmul: compute-bound at the BF16 roof, 4.194304 us + 1 us.
  const OpRecord &proj = report.ops[1];
  EXPECT_EQ(proj.flops, 33554432);
  EXPECT_EQ(proj.precision, MathPrecision::BF16);
  EXPECT_FALSE(proj.estimate.memoryBound);
  double projTime = soft(4.194304e-6, 3.93216e-6) + 1e-6;
  EXPECT_NEAR(proj.estimate.timeSeconds, projTime, 1e-18);
  // relu on 65536 bf16: 65536 FLOP / 1e12 = 65.5 ns vs 262144 B / 1e11 =
  // 2.62144 us: memory-bound, 3.62144 us.
  const OpRecord &act = report.ops[2];
  EXPECT_EQ(act.precision, MathPrecision::FP32);
  EXPECT_TRUE(act.estimate.memoryBound);
  double actTime = soft(65536 / 1e12, 2.62144e-6) + 1e-6;
  EXPECT_NEAR(act.estimate.timeSeconds, actTime, 1e-18);
  EXPECT_NEAR(actTime, 3.62144e-6, 1e-12);
  // reshape: free.
  EXPECT_EQ(report.ops[3].estimate.timeSeconds, 0);

  RooflineTotals totals = report.computeTotals();
  EXPECT_EQ(totals.numOps, 4u);
  EXPECT_EQ(totals.numMemoryBoundOps, 3u);
  EXPECT_EQ(totals.flops, 33554432 + 65536);
  EXPECT_EQ(totals.bytesRead, 144 + 2 * 65536 * kBF16 + 65536 * kBF16);
  EXPECT_EQ(totals.bytesWritten, 128 + 65536 * kBF16 + 65536 * kBF16);
  // The embedding, the relu and the reshape are memory-bound.
  EXPECT_NEAR(totals.timeSeconds, 1.00272e-6 + projTime + actTime, 1e-15);
  EXPECT_NEAR(totals.memoryBoundSeconds, 1.00272e-6 + actTime, 1e-15);
  EXPECT_NEAR(totals.memoryBoundTimeFraction,
              (1.00272e-6 + actTime) / (1.00272e-6 + projTime + actTime),
              1e-12);
}

TEST_F(CostModelTest, ReportOfAModuleWithoutOpsIsEmptyAndNamed) {
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(
      "module @empty { func.func @f(%w: tensor<3xf16> {memwall.kind = "
      "#memwall.arg_kind<weight>}) { return } }",
      &context);
  ASSERT_TRUE(parsed);
  RooflineReport report = buildRooflineReport(
      handTarget(), computeModuleCost(*parsed, handTarget()));
  EXPECT_EQ(report.modelName, "empty");
  EXPECT_EQ(report.params, 3);
  EXPECT_EQ(report.paramBytes, 3 * kF16);
  EXPECT_TRUE(report.ops.empty());
  RooflineTotals totals = report.computeTotals();
  EXPECT_EQ(totals.timeSeconds, 0);
  // No time at all: the fraction is 0, not NaN.
  EXPECT_EQ(totals.memoryBoundTimeFraction, 0);
}
