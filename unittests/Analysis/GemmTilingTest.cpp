//===- GemmTilingTest.cpp - tiles of the generated GEMM -------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// getGemmProblem's reading of a memwall.matmul and chooseGemmTiling's choice,
// against hand computations on the round test target (100 SMs of 228 KiB).
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/GemmTiling.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Registration.h"

#include "TestTargets.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace memwall;

namespace {
using memwall::testing::roundTarget;

class GemmTilingTest : public ::testing::Test {
protected:
  GemmTilingTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// The matmul `%lhs, %rhs <attributes> : <lhsType>, <rhsType> -> <result>`.
  MatmulOp parseMatmul(StringRef lhsType, StringRef rhsType,
                       StringRef resultType, StringRef attributes = "") {
    std::string source =
        ("func.func @f(%a: " + lhsType + ", %b: " + rhsType + ") -> " +
         resultType + " {\n  %r = memwall.matmul %a, %b " + attributes + " : " +
         lhsType + ", " + rhsType + " -> " + resultType +
         "\n  return %r : " + resultType + "\n}")
            .str();
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    MatmulOp matmul;
    if (module)
      module->walk([&](MatmulOp op) { matmul = op; });
    return matmul;
  }

  GemmProblem bf16Problem(int64_t m, int64_t n, int64_t k) {
    GemmProblem problem;
    problem.m = m;
    problem.n = n;
    problem.k = k;
    problem.elementType = BFloat16Type::get(&context);
    problem.transposeRhs = true;
    return problem;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  GPUTarget target = roundTarget();
};
} // namespace

TEST_F(GemmTilingTest, LinearLayerFoldsLhsBatchIntoRows) {
  MatmulOp matmul = parseMatmul("tensor<4x37x40xbf16>", "tensor<72x40xbf16>",
                                "tensor<4x37x72xbf16>", "{transpose_rhs}");
  FailureOr<GemmProblem> problem = getGemmProblem(matmul);
  ASSERT_TRUE(succeeded(problem));
  EXPECT_EQ(problem->batch, 1);
  EXPECT_EQ(problem->m, 148);
  EXPECT_EQ(problem->n, 72);
  EXPECT_EQ(problem->k, 40);
  EXPECT_TRUE(problem->elementType.isBF16());
  EXPECT_TRUE(problem->transposeRhs);
  EXPECT_FALSE(problem->transposeLhs);
}

TEST_F(GemmTilingTest, BatchedOperandsGetStrides) {
  MatmulOp matmul = parseMatmul("tensor<3x16x40xf16>", "tensor<3x40x24xf16>",
                                "tensor<3x16x24xf16>");
  FailureOr<GemmProblem> problem = getGemmProblem(matmul);
  ASSERT_TRUE(succeeded(problem));
  EXPECT_EQ(problem->batch, 3);
  EXPECT_EQ(problem->m, 16);
  EXPECT_EQ(problem->lhsBatchStride, 16 * 40);
  EXPECT_EQ(problem->rhsBatchStride, 40 * 24);
}

TEST_F(GemmTilingTest, Rank2LhsIsBroadcastOverRhsBatch) {
  MatmulOp matmul = parseMatmul("tensor<16x40xbf16>", "tensor<2x40x24xbf16>",
                                "tensor<2x16x24xbf16>");
  FailureOr<GemmProblem> problem = getGemmProblem(matmul);
  ASSERT_TRUE(succeeded(problem));
  EXPECT_EQ(problem->batch, 2);
  EXPECT_EQ(problem->lhsBatchStride, 0);
  EXPECT_EQ(problem->rhsBatchStride, 40 * 24);
}

TEST_F(GemmTilingTest, KNotMultipleOf8IsRefused) {
  MatmulOp matmul = parseMatmul("tensor<16x20xbf16>", "tensor<20x24xbf16>",
                                "tensor<16x24xbf16>");
  std::string why;
  EXPECT_TRUE(failed(getGemmProblem(matmul, &why)));
  EXPECT_EQ(why, "the generated GEMM: needs K a multiple of 8, got 20");
}

TEST_F(GemmTilingTest, IntegerOperandsAreRefused) {
  MatmulOp matmul =
      parseMatmul("tensor<16x32xi8>", "tensor<32x24xi8>", "tensor<16x24xi32>");
  std::string why;
  EXPECT_TRUE(failed(getGemmProblem(matmul, &why)));
  EXPECT_EQ(why, "the generated GEMM: takes bf16, f16, f32, f8E4M3FN or f8E5M2 "
                 "operands, got i8");
}

// f32 runs on the FFMA kernel, which loads single elements: any K.
TEST_F(GemmTilingTest, F32OperandsTakeTheFfmaTile) {
  MatmulOp matmul = parseMatmul("tensor<16x20xf32>", "tensor<20x24xf32>",
                                "tensor<16x24xf32>");
  FailureOr<GemmProblem> problem = getGemmProblem(matmul);
  ASSERT_TRUE(succeeded(problem));
  FailureOr<GemmTiling> tiling = chooseGemmTiling(*problem, target, 1);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->blockM, 64);
  EXPECT_EQ(tiling->blockN, 64);
  EXPECT_EQ(tiling->blockK, 16);
  EXPECT_EQ(tiling->threads, 256);
  EXPECT_EQ(tiling->stages, 1);
  // The 64 x (64 + 8) f32 accumulator tile outweighs the two K-major
  // 16 x 65 operand tiles (8320 bytes).
  EXPECT_EQ(tiling->sharedBytes, 18432);
  // 16 outputs + 8 operands + 40.
  EXPECT_EQ(tiling->registersPerThread, 64);
  EXPECT_EQ(tiling->grid, (std::array<int64_t, 3>{1, 1, 1}));
}

TEST_F(GemmTilingTest, RowMajorRhsNeedsAlignedRows) {
  MatmulOp matmul = parseMatmul("tensor<16x32xbf16>", "tensor<32x66xbf16>",
                                "tensor<16x66xbf16>");
  std::string why;
  EXPECT_TRUE(failed(getGemmProblem(matmul, &why)));
  EXPECT_EQ(why, "the generated GEMM: needs N a multiple of 8 for an rhs "
                 "stored [K, N], got 66");
}

TEST_F(GemmTilingTest, BroadcastingBatchDimsAreRefused) {
  MatmulOp matmul =
      parseMatmul("tensor<2x1x16x32xbf16>", "tensor<1x3x32x24xbf16>",
                  "tensor<2x3x16x24xbf16>");
  EXPECT_TRUE(failed(getGemmProblem(matmul)));
}

// 4096^3 on 100 SMs. Per SM: ceil(tiles / 100) tiles x bm bn / efficiency,
// efficiency = r / (r + 16), r = bm bn / (bm + bn):
//   128x256: 512 tiles -> 6 x 32768 / 0.842 = 233472
//   128x128: 1024 -> 11 x 16384 / 0.8 = 225280 (least)
//   128x64, 64x128: 2048 -> 21 x 8192 / 0.727 = 236544
//   64x64: 4096 -> 41 x 4096 / 0.667 = 251904
// K = 4096 is 128 k-steps; 4 stages (81920 B) keep 2 CTAs per SM like 3
// stages (the 64x64 warp tile's 232 registers x 128 threads allow 2).
TEST_F(GemmTilingTest, LargeSquareTakes128x128WithFourStages) {
  FailureOr<GemmTiling> tiling =
      chooseGemmTiling(bf16Problem(4096, 4096, 4096), target, 1);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->blockM, 128);
  EXPECT_EQ(tiling->blockN, 128);
  EXPECT_EQ(tiling->blockK, 32);
  EXPECT_EQ(tiling->warpsM, 2);
  EXPECT_EQ(tiling->warpsN, 2);
  EXPECT_EQ(tiling->stages, 4);
  EXPECT_EQ(tiling->threads, 128);
  // 4 x (128 + 128) rows x 40 padded elements x 2 bytes, more than the
  // accumulator tile's 128 x 136 x 4.
  EXPECT_EQ(tiling->sharedBytes, 81920);
  // 128 accumulators + 2 k16 steps x (16 A + 16 B fragment registers) + 40.
  EXPECT_EQ(tiling->registersPerThread, 232);
  EXPECT_EQ(tiling->ctasPerSM, 2);
  EXPECT_EQ(tiling->grid, (std::array<int64_t, 3>{32, 32, 1}));
  EXPECT_DOUBLE_EQ(tiling->occupancy, 256.0 / 2048);
  // 1024 tiles in 6 waves of 200.
  EXPECT_DOUBLE_EQ(tiling->waveEfficiency, 1024.0 / 1200);
}

// M = 64: 128-row tiles leave half of every tile empty and few tiles: 64x64
// gives 16 tiles, 1 per SM, cost 4096 / 0.667 = 6144 against 11264 (128x64)
// and 20480 (128x128). K = 64 is 2 k-steps: 3 stages.
TEST_F(GemmTilingTest, SkinnyShapeTakesSmallTile) {
  FailureOr<GemmTiling> tiling =
      chooseGemmTiling(bf16Problem(64, 1024, 64), target, 1);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->blockM, 64);
  EXPECT_EQ(tiling->blockN, 64);
  EXPECT_EQ(tiling->stages, 3);
  EXPECT_EQ(tiling->grid, (std::array<int64_t, 3>{16, 1, 1}));
  // 3 x 128 rows x 40 x 2 bytes.
  EXPECT_EQ(tiling->sharedBytes, 30720);
  // 32 accumulators + 2 x (8 + 8) + 40 = 104 registers:
  // 65536 / (104 x 128) = 4 CTAs.
  EXPECT_EQ(tiling->registersPerThread, 104);
  EXPECT_EQ(tiling->ctasPerSM, 4);
}

TEST_F(GemmTilingTest, BatchIsOnGridZ) {
  GemmProblem problem = bf16Problem(37, 72, 40);
  problem.batch = 3;
  FailureOr<GemmTiling> tiling = chooseGemmTiling(problem, target, 1);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->grid[2], 3);
  EXPECT_EQ(tiling->grid[0], llvm::divideCeil(72, tiling->blockN));
  EXPECT_EQ(tiling->grid[1], llvm::divideCeil(37, tiling->blockM));
}

// A norm in the epilogue: only tiles as wide as N. N = 200 leaves 128x256.
TEST_F(GemmTilingTest, WholeRowsTakeATileAsWideAsN) {
  FailureOr<GemmTiling> tiling =
      chooseGemmTiling(bf16Problem(4096, 200, 256), target, 1, nullptr,
                       /*wholeRows=*/true);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->blockN, 256);
  EXPECT_EQ(tiling->grid[0], 1);
  EXPECT_EQ(tiling->rowChunks, 1);
  EXPECT_EQ(tiling->rowBufferBytes, 0);
}

// N = 300 exceeds every tile: every shape row-chunked. 64 row tiles on 100
// SMs put one CTA on the busiest SM whatever the shape, so the least work
// per CTA wins: 64x64 (5 chunks of reuse 32, 64·64·5 / (32/48) = 30720)
// over 64x128 (3 chunks, 33792). Shared memory: its 3-stage ring (3 x
// (64 + 64) x 40 x 2 = 30720 bytes) and the row buffer, 64 x (304 + 8)
// bf16 = 39936 (rows rounded up to 8 columns).
TEST_F(GemmTilingTest, WholeRowsWiderThanEveryTileRunRowChunked) {
  FailureOr<GemmTiling> tiling =
      chooseGemmTiling(bf16Problem(4096, 300, 256), target, 1, nullptr,
                       /*wholeRows=*/true);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->blockM, 64);
  EXPECT_EQ(tiling->blockN, 64);
  EXPECT_EQ(tiling->stages, 3);
  EXPECT_EQ(tiling->rowChunks, 5);
  EXPECT_EQ(tiling->grid, (std::array<int64_t, 3>{1, 64, 1}));
  // 64 rows of 300 columns rounded up to 304, + 8 of padding, bf16.
  EXPECT_EQ(tiling->rowBufferBytes, 64 * 312 * 2);
  EXPECT_EQ(tiling->sharedBytes, 30720 + 64 * 312 * 2);
  // An f32 norm input takes twice the row buffer.
  FailureOr<GemmTiling> wide =
      chooseGemmTiling(bf16Problem(4096, 300, 256), target, 1, nullptr,
                       /*wholeRows=*/true, /*rowBufferElementBytes=*/4);
  ASSERT_TRUE(succeeded(wide));
  EXPECT_EQ(wide->rowBufferBytes, wide->blockM * 312 * 4);
}

// N = 4096 bf16: even the smallest tile's row buffer, 64 x (4096 + 8) x 2 =
// 525312 bytes, is beyond a CTA's shared memory.
TEST_F(GemmTilingTest, RowBufferBeyondSharedMemoryIsRefused) {
  std::string why;
  EXPECT_TRUE(failed(chooseGemmTiling(bf16Problem(16384, 4096, 4096), target,
                                      1, &why, /*wholeRows=*/true)));
  EXPECT_EQ(why, "the generated GEMM has no tile that fits: a norm over N = "
                 "4096 needs whole rows in one CTA, and a 64x64 tile needs "
                 "556032 bytes of shared memory (525312 of them the row "
                 "buffer of 64 rows of N = 4096), more than the 232448 a CTA "
                 "can have");
}

TEST_F(GemmTilingTest, TooLittleSharedMemoryIsRefused) {
  target.sharedMemoryPerSMBytes = 16 * 1024;
  std::string why;
  EXPECT_TRUE(
      failed(chooseGemmTiling(bf16Problem(4096, 4096, 4096), target, 1, &why)));
  EXPECT_EQ(why, "the generated GEMM has no tile that fits: a 128x256 tile "
                 "needs 135168 bytes of shared memory, more than the 15360 a "
                 "CTA can have");
}

TEST_F(GemmTilingTest, EpilogueBeyondRegistersIsRefused) {
  // 40 + 30 values x 8 elements = 280 registers.
  std::string why;
  EXPECT_TRUE(failed(chooseGemmTiling(bf16Problem(256, 256, 64), target,
                                      /*epilogueValues=*/30, &why)));
  EXPECT_NE(why.find("280 registers per thread"), std::string::npos) << why;
}

TEST_F(GemmTilingTest, TransposedOperandTilesAreStoredAsInMemory) {
  GemmProblem problem = bf16Problem(128, 128, 32);
  // lhs [M, K]: 128 rows of 32 + 8; rhs [N, K]: 128 rows of 40.
  EXPECT_EQ(getGemmStageBytes(problem, 128, 128, 32), (128 + 128) * 40 * 2);
  // lhs [K, M]: 32 rows of 128 + 8; rhs [K, N]: 32 rows of 136.
  problem.transposeLhs = true;
  problem.transposeRhs = false;
  EXPECT_EQ(getGemmStageBytes(problem, 128, 128, 32), 2 * 32 * 136 * 2);
}

// The wgmma kernel has no chunk loop: asked for, it refuses a norm over
// N = 300 (beyond every tile), naming why, and the rows run row-chunked on
// mma.sync as without it.
TEST_F(GemmTilingTest, WarpSpecializedRefusesRowChunksAndWgmmaRunsThem) {
  target.smArch = "sm_90a";
  GemmProblem problem = bf16Problem(4096, 300, 256);
  problem.wgmmaRequested = true;
  problem.warpSpecializedRequested = true;
  std::string why;
  EXPECT_TRUE(failed(getGemmTiling(problem, target, 1,
                                   getGemmWarpSpecializedTileShapes().front(),
                                   &why, /*rowBufferElementBytes=*/2)));
  EXPECT_EQ(why, "the warp-specialized kernel has no row-chunk loop: a norm "
                 "over N = 300 needs whole rows in one 128x256 tile");
  FailureOr<GemmTiling> tiling =
      chooseGemmTiling(problem, target, 1, nullptr, /*wholeRows=*/true);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->variant, GemmVariant::Wgmma);
  EXPECT_GT(tiling->rowBufferBytes, 0);
}

// How whole rows split over a cluster, by hand: N = 300 over 2 CTAs of
// 64x128 tiles: 150 columns each, rounded up to 2 chunks of 128, so each
// buffer row holds 256 (+ 8 padding) bf16; alone, 3 chunks and all 300,
// rounded up to 304 (the padding, where the row's statistics go, stays
// 16-byte aligned).
TEST_F(GemmTilingTest, RowChunkingSplitsColumnsOverTheCluster) {
  GemmRowChunking two = getGemmRowChunking(300, 64, 128, 2, 2);
  EXPECT_EQ(two.rowChunks, 2);
  EXPECT_EQ(two.bufferColumns, 256);
  EXPECT_EQ(two.rowBufferBytes, 64 * 264 * 2);
  GemmRowChunking one = getGemmRowChunking(300, 64, 128, 1, 2);
  EXPECT_EQ(one.rowChunks, 3);
  EXPECT_EQ(one.bufferColumns, 304);
  EXPECT_EQ(one.rowBufferBytes, 64 * 312 * 2);
}

// The seed workload's fc2 + LayerNorm (M 16384, N = K = 4096, bf16) on the
// round target as sm_90a: no tile holds a 4096-wide row buffer alone (64
// rows: 525,312 bytes), so the row spreads over a cluster. Busiest SM's
// work, by hand (perSM x chunks x bm·bn / efficiency, efficiency = r / (r +
// 16), r = bm·bn / (bm + bn)): 4 CTAs of 64x128 (1024 columns each, 8
// chunks; 1024 CTAs, 11 per SM): 11·8·8192 / (8/11) = 991,232; 8 CTAs of
// 64x256 (512 columns, 2 chunks; 2048 CTAs, 21 per SM): 21·2·16384 /
// (16/21) = 903,168, the least of those that fit (8 of 128x64 and 64x128:
// 991,232 and 946,176). 8 of 128x128 (901,120) would need 232,448 bytes,
// a CTA's whole limit, with no room for the ring's mbarriers. The 4-stage
// ring fits beside the row buffer: 1,024 alignment + 4 x 320 x 128 + 64 x
// 520 x 2 = 231,424 bytes.
TEST_F(GemmTilingTest, RowsWiderThanACtaSpreadOverAClusterOnHopper) {
  target.smArch = "sm_90a";
  GemmProblem problem = bf16Problem(16384, 4096, 4096);
  problem.wgmmaRequested = true;
  FailureOr<GemmTiling> tiling =
      chooseGemmTiling(problem, target, 1, nullptr, /*wholeRows=*/true);
  ASSERT_TRUE(succeeded(tiling));
  EXPECT_EQ(tiling->variant, GemmVariant::Wgmma);
  EXPECT_EQ(tiling->clusterN, 8);
  EXPECT_EQ(tiling->blockM, 64);
  EXPECT_EQ(tiling->blockN, 256);
  EXPECT_EQ(tiling->stages, 4);
  EXPECT_EQ(tiling->rowChunks, 2);
  EXPECT_EQ(tiling->grid, (std::array<int64_t, 3>{8, 256, 1}));
  EXPECT_EQ(tiling->rowBufferBytes, 64 * 520 * 2);
  EXPECT_EQ(tiling->sharedBytes, 231424);
  EXPECT_DOUBLE_EQ(getGemmTilingCost(*tiling, problem, target), 903168);
  GemmTileShape square = getGemmWgmmaTileShapes().front();
  square.clusterN = 8;
  std::string why;
  EXPECT_TRUE(failed(getGemmTiling(problem, target, 1, square, &why, 2)));
  EXPECT_NE(why.find("needs 232448 bytes"), std::string::npos) << why;

  // Without clusters (sm_80) nothing fits; the refusal names the smallest
  // tile's bytes.
  target.smArch = "sm_80";
  EXPECT_TRUE(
      failed(chooseGemmTiling(problem, target, 1, &why, /*wholeRows=*/true)));
  EXPECT_NE(why.find("needs whole rows in one CTA, and a 64x64 tile needs"),
            std::string::npos)
      << why;
}

TEST_F(GemmTilingTest, ClusterNeedsSm90AndColumnsForEveryCta) {
  GemmProblem problem = bf16Problem(256, 300, 256);
  GemmTileShape shape{64, 128, 2, 2, 3};
  shape.clusterN = 2;
  std::string why;
  EXPECT_TRUE(failed(getGemmTiling(problem, target, 1, shape, &why, 2)));
  EXPECT_EQ(why, "clusters of 2 CTAs need sm_90 or later (at most 8), the "
                 "target is " +
                     target.smArch);
  target.smArch = "sm_90a";
  FailureOr<GemmTiling> two = getGemmTiling(problem, target, 1, shape, &why, 2);
  ASSERT_TRUE(succeeded(two));
  EXPECT_EQ(two->grid, (std::array<int64_t, 3>{2, 4, 1}));
  // 4 CTAs: 75 columns each round up to one 128-wide chunk, and the fourth
  // would start at 384 > 300.
  shape.clusterN = 4;
  EXPECT_TRUE(failed(getGemmTiling(problem, target, 1, shape, &why, 2)));
  EXPECT_EQ(why, "a cluster of 4 CTAs leaves one without columns of N = 300");
  // Rows a tile holds whole need no cluster.
  problem.n = 128;
  shape.clusterN = 2;
  EXPECT_TRUE(failed(getGemmTiling(problem, target, 1, shape, &why, 2)));
  EXPECT_EQ(why, "only a row-chunked tiling runs in a cluster");
}

// The chooser's work counts a dual's 2·blockN output columns in the tile's
// reuse and a row-chunked CTA's rowChunks tiles: one 64x64 CTA of 5 chunks
// on the busiest SM is 64·64·5 / (32/48) = 30720; as a dual, reuse
// 64·128/192 = 128/3, 64·128·5 / ((128/3) / (128/3 + 16)) = 56320.
TEST_F(GemmTilingTest, TilingCostWeighsDualColumnsAndRowChunks) {
  GemmTiling tiling;
  tiling.blockM = tiling.blockN = 64;
  tiling.grid = {1, 64, 1};
  tiling.rowChunks = 5;
  GemmProblem problem = bf16Problem(4096, 300, 256);
  EXPECT_DOUBLE_EQ(getGemmTilingCost(tiling, problem, target), 30720);
  problem.rhsOperands = 2;
  EXPECT_DOUBLE_EQ(getGemmTilingCost(tiling, problem, target), 56320);
}

// On sm_90a the wgmma kernel is the default: a matmul may take it unless it
// or an enclosing op sets memwall.gemm_wgmma = false (the unit attribute
// and true say yes).
TEST_F(GemmTilingTest, WgmmaIsTheDefaultUnlessAnOpSaysFalse) {
  MatmulOp plain = parseMatmul("tensor<64x32xbf16>", "tensor<32x16xbf16>",
                               "tensor<64x16xbf16>");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(isGemmWgmmaRequested(plain));
  module->getOperation()->setAttr(kGemmWgmmaAttrName,
                                  BoolAttr::get(&context, false));
  EXPECT_FALSE(isGemmWgmmaRequested(plain));
  // The nearest op that says decides.
  plain->setAttr(kGemmWgmmaAttrName, UnitAttr::get(&context));
  EXPECT_TRUE(isGemmWgmmaRequested(plain));
  plain->setAttr(kGemmWgmmaAttrName, BoolAttr::get(&context, false));
  module->getOperation()->setAttr(kGemmWgmmaAttrName,
                                  BoolAttr::get(&context, true));
  EXPECT_FALSE(isGemmWgmmaRequested(plain));
}

// The warp-specialized kernel is opt-in: off unless the nearest op that says
// (the unit attribute or true) asks for it; false below an ancestor that
// asked turns it off again.
TEST_F(GemmTilingTest, WarpSpecializedIsOptInAndTheNearestOpDecides) {
  MatmulOp plain = parseMatmul("tensor<64x32xbf16>", "tensor<32x16xbf16>",
                               "tensor<64x16xbf16>");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(isGemmWarpSpecializedRequested(plain));
  module->getOperation()->setAttr(kGemmWarpSpecializedAttrName,
                                  UnitAttr::get(&context));
  EXPECT_TRUE(isGemmWarpSpecializedRequested(plain));
  plain->setAttr(kGemmWarpSpecializedAttrName, BoolAttr::get(&context, false));
  EXPECT_FALSE(isGemmWarpSpecializedRequested(plain));
  EXPECT_TRUE(getGemmProblem(plain)->wgmmaRequested);
  EXPECT_FALSE(getGemmProblem(plain)->warpSpecializedRequested);
}

// fp8 promotion is the default; fast accumulation is asked for as the
// warp-specialized kernel is, by the nearest op that says.
TEST_F(GemmTilingTest, Fp8FastAccumulationIsOptInAndTheNearestOpDecides) {
  MatmulOp matmul =
      parseMatmul("tensor<64x32xf8E4M3FN>", "tensor<16x32xf8E4M3FN>",
                  "tensor<64x16xbf16>", "{transpose_rhs}");
  ASSERT_TRUE(matmul);
  FailureOr<GemmProblem> problem = getGemmProblem(matmul);
  ASSERT_TRUE(succeeded(problem));
  EXPECT_FALSE(problem->fp8FastAccumulation);
  EXPECT_TRUE(isGemmFp8Promoted(*problem));
  EXPECT_EQ(getGemmAccumulatorSets(*problem), 2);
  module->getOperation()->setAttr(kGemmFp8FastAccumulationAttrName,
                                  UnitAttr::get(&context));
  problem = getGemmProblem(matmul);
  EXPECT_TRUE(problem->fp8FastAccumulation);
  EXPECT_EQ(getGemmAccumulatorSets(*problem), 1);
  matmul->setAttr(kGemmFp8FastAccumulationAttrName,
                  BoolAttr::get(&context, false));
  EXPECT_FALSE(getGemmProblem(matmul)->fp8FastAccumulation);
  // 16-bit operands have nothing to promote.
  GemmProblem bf16 = bf16Problem(64, 64, 64);
  EXPECT_FALSE(isGemmFp8Promoted(bf16));
  EXPECT_EQ(getGemmAccumulatorSets(bf16), 1);
}

// A promoted fp8 GEMM holds two accumulator sets: per thread, by hand, the
// plain kernel's 128x128 tile is 2 x 128 x 128 / 128 = 256 f32 registers
// (+ 40), past 255, so 128x64 and 64x128 (128 + 40) remain; the
// warp-specialized 128x256 is 2 x 128 x 256 / 256 = 256 (+ 40) past the
// consumers' 232, so 128x128 (128 + 40) remains. Fast accumulation keeps
// the large tiles.
TEST_F(GemmTilingTest, PromotedFp8TakesTilesThatHoldTwoAccumulatorSets) {
  target.smArch = "sm_90a";
  GemmProblem problem = bf16Problem(8192, 8192, 8192);
  problem.elementType = Float8E4M3FNType::get(&context);
  problem.wgmmaRequested = true;
  std::string why;
  GemmTileShape large = getGemmWgmmaTileShapes().front();
  ASSERT_EQ(large.blockM * large.blockN, 128 * 128);
  EXPECT_TRUE(failed(getGemmTiling(problem, target, 1, large, &why)));
  EXPECT_EQ(why, "a 128x128 tile holds 2 accumulator sets in an estimated "
                 "296 registers per thread (at most 255)");
  FailureOr<GemmTiling> tiling = chooseGemmTiling(problem, target, 1, &why);
  ASSERT_TRUE(succeeded(tiling)) << why;
  EXPECT_EQ(tiling->blockM * tiling->blockN, 128 * 64);
  EXPECT_EQ(tiling->registersPerThread, 168);

  problem.warpSpecializedRequested = true;
  GemmTileShape wide = getGemmWarpSpecializedTileShapes().front();
  ASSERT_EQ(wide.blockN, 256);
  EXPECT_TRUE(failed(getGemmTiling(problem, target, 1, wide, &why)));
  EXPECT_EQ(why, "a warp-specialized 128x256 tile needs an estimated 296 "
                 "registers per consumer thread (at most 232)");
  tiling = chooseGemmTiling(problem, target, 1, &why);
  ASSERT_TRUE(succeeded(tiling)) << why;
  EXPECT_EQ(tiling->variant, GemmVariant::WgmmaWarpSpecialized);
  EXPECT_EQ(tiling->blockN, 128);

  problem.fp8FastAccumulation = true;
  tiling = chooseGemmTiling(problem, target, 1, &why);
  ASSERT_TRUE(succeeded(tiling)) << why;
  EXPECT_EQ(tiling->blockN, 256);
}

// Split K's buffers: [splitK, rhsOperands, M, N] f32 partials and one
// arrival counter per tile (grid.x x grid.y, whatever grid.z), and each
// split's k-steps.
TEST_F(GemmTilingTest, SplitKHasPartialsPerSplitAndACounterPerTile) {
  GemmTiling split;
  split.variant = GemmVariant::Wgmma;
  split.blockM = 128;
  split.blockN = 64;
  split.threads = 128;
  split.splitK = 3;
  split.grid = {64, 2, 3};
  GemmProblem problem = bf16Problem(1, 4096, 4096);
  EXPECT_EQ(getGemmSplitKCounters(split), 128);
  EXPECT_EQ(getGemmSplitKPartialElements(split, problem), 3 * 1 * 4096);
  problem.rhsOperands = 2;
  EXPECT_EQ(getGemmSplitKPartialElements(split, problem), 3 * 2 * 4096);
  // ceil(ceil(4096 / 64) / 3) = 22 k-steps per split.
  split.blockK = 64;
  EXPECT_EQ(getGemmKStepsPerSplit(split, problem), 22);
}

// The generated GEMM's efficiency is the preferred kernel's: on sm_90+ the
// mma.sync kernel runs at the measured 0.68 of the wgmma kernel's rate; on
// Ampere mma.sync is the preferred kernel.
TEST_F(GemmTilingTest, MmaSyncOnHopperRunsAtItsMeasuredShareOfWgmma) {
  GemmTiling mmaSync, wgmma;
  wgmma.variant = GemmVariant::Wgmma;
  target.smArch = "sm_90a";
  EXPECT_EQ(getGemmVariantRelativeRate(mmaSync, target), 0.68);
  EXPECT_EQ(getGemmVariantRelativeRate(wgmma, target), 1);
  target.smArch = "sm_100a";
  EXPECT_EQ(getGemmVariantRelativeRate(mmaSync, target), 0.68);
  target.smArch = "sm_80";
  EXPECT_EQ(getGemmVariantRelativeRate(mmaSync, target), 1);
  target.smArch = "";
  EXPECT_EQ(getGemmVariantRelativeRate(mmaSync, target), 1);
}
