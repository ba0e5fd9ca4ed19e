//===- CountingTest.cpp - counts that never wrap, cost queries in O(1) ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// CheckedInt (memwall/Support/CheckedInt.h), the one helper every shape,
// element, byte and FLOP count goes through; and the closed form of the
// tiled attention's visible key blocks against the loop over query blocks
// it replaced (kept here as the independent computation).
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <chrono>
#include <limits>

using namespace mlir;
using namespace memwall;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(CheckedIntTest, ArithmeticIsExactUntilItOverflows) {
  EXPECT_EQ((CheckedInt(6) * 7 + 8 - 10).get(), 40);
  EXPECT_EQ((CheckedInt(kMax - 1) + 1).get(), kMax);
  EXPECT_EQ((CheckedInt(kMin) + 0).get(), kMin);
  EXPECT_TRUE((CheckedInt(kMax) + 1).overflowed());
  EXPECT_TRUE((CheckedInt(kMin) - 1).overflowed());
  EXPECT_TRUE((CheckedInt(int64_t(1) << 32) * (int64_t(1) << 31)).overflowed());
  EXPECT_EQ((CheckedInt(int64_t(1) << 32) * (int64_t(1) << 30)).get(),
            int64_t(1) << 62);
  EXPECT_TRUE((CheckedInt(kMin) * -1).overflowed());
}

TEST(CheckedIntTest, AnOverflowStaysOverflowed) {
  // A later step that would bring the value back in range does not: the
  // formula's result is unknown.
  CheckedInt count = CheckedInt(kMax) + 1;
  count -= 2;
  count *= 0;
  EXPECT_TRUE(count.overflowed());
  EXPECT_EQ(count.get(), std::nullopt);
  EXPECT_EQ(count.saturated(), kUncountable);
  EXPECT_EQ(CheckedInt(5).saturated(), 5);
  EXPECT_TRUE(CheckedInt::overflow() == CheckedInt::overflow());
  EXPECT_TRUE(CheckedInt::overflow() != CheckedInt(kMax));
}

TEST(CheckedIntTest, ProductsOfShapes) {
  EXPECT_EQ(CheckedInt::product({}).get(), 1);
  EXPECT_EQ(CheckedInt::product({4, 0, int64_t(1) << 62}).get(), 0);
  EXPECT_EQ(CheckedInt::product({2, 3, 7}).get(), 42);
  // ShapedType::getNumElements wraps this to 0.
  EXPECT_TRUE(
      CheckedInt::product({int64_t(1) << 32, int64_t(1) << 32}).overflowed());
}

TEST(CheckedIntTest, SaturatedCountsStayUncountableInSums) {
  EXPECT_TRUE(CheckedInt::fromSaturated(kUncountable).overflowed());
  EXPECT_TRUE((CheckedInt::fromSaturated(kUncountable) + 0).overflowed());
  EXPECT_EQ(CheckedInt::fromSaturated(kMax - 1).get(), kMax - 1);
}

TEST(CheckedIntTest, DoublesBecomeCountsOnlyInRange) {
  EXPECT_EQ(CheckedInt::fromDouble(2.9).get(), 2); // truncated
  EXPECT_EQ(CheckedInt::fromDouble(-2.9).get(), -2);
  EXPECT_EQ(CheckedInt::fromDouble(9223372036854774784.0).get(),
            int64_t(9223372036854774784));
  EXPECT_TRUE(CheckedInt::fromDouble(9223372036854775808.0).overflowed());
  EXPECT_EQ(CheckedInt::fromDouble(-9223372036854775808.0).get(), kMin);
  EXPECT_TRUE(CheckedInt::fromDouble(1e300).overflowed());
  EXPECT_TRUE(CheckedInt::fromDouble(std::numeric_limits<double>::infinity())
                  .overflowed());
  EXPECT_TRUE(CheckedInt::fromDouble(std::numeric_limits<double>::quiet_NaN())
                  .overflowed());
}

TEST(TensorCountsTest, ElementsAndBytesAreExactOrUncountable) {
  MLIRContext context;
  auto tensor = [&](ArrayRef<int64_t> shape, Type element) {
    return RankedTensorType::get(shape, element);
  };
  Type f32 = Float32Type::get(&context);
  Type i4 = IntegerType::get(&context, 4);
  Type i1 = IntegerType::get(&context, 1);
  int64_t big = int64_t(1) << 62;
  EXPECT_EQ(countElements(tensor({big}, f32)).get(), big);
  EXPECT_TRUE(countTensorBytes(tensor({big}, f32)).overflowed());
  EXPECT_EQ(getTensorByteSize(tensor({big}, f32)), kUncountable);
  // i4 packs two to a byte: 2^62 elements are 2^61 bytes, though 2^62 x 4
  // bits would not fit.
  EXPECT_EQ(countTensorBytes(tensor({big}, i4)).get(), big / 2);
  EXPECT_EQ(countTensorBytes(tensor({3}, i4)).get(), 2);
  EXPECT_EQ(countTensorBytes(tensor({big}, i1)).get(), big);
  // ShapedType::getNumElements wraps 2^32 x 2^32 to 0.
  EXPECT_EQ(getNumElements(tensor({int64_t(1) << 32, int64_t(1) << 32}, f32)),
            kUncountable);
  EXPECT_EQ(getNumElements(tensor({4, 0, big}, f32)), 0);
}

/// The loop getVisibleKeyBlocksPerKVHead ran before its closed form (it took
/// Sq / block_q steps per cost query), verbatim.
int64_t visibleKeyBlocksByLoop(int64_t heads, int64_t kvHeads, int64_t sq,
                               int64_t sk, int64_t bq, int64_t bkv,
                               bool causal) {
  int64_t rows = heads / kvHeads * sq;
  int64_t allBlocks = (sk + bkv - 1) / bkv, total = 0;
  for (int64_t first = 0; first < rows; first += bq) {
    if (!causal) {
      total += allBlocks;
      continue;
    }
    int64_t last = std::min(first + bq, rows) - 1;
    int64_t maxQuery = last / sq != first / sq ? sq - 1 : last % sq;
    int64_t visible = maxQuery + (sk - sq) + 1;
    total += (visible + bkv - 1) / bkv;
  }
  return total;
}

class VisibleKeyBlocksTest : public ::testing::Test {
protected:
  VisibleKeyBlocksTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// A flash_attention of one batch element with head dimension 16.
  FlashAttentionOp parse(int64_t heads, int64_t kvHeads, int64_t sq, int64_t sk,
                         int64_t bq, int64_t bkv, bool causal) {
    std::string q = llvm::formatv("tensor<1x{0}x{1}x16xbf16>", heads, sq);
    std::string kv = llvm::formatv("tensor<1x{0}x{1}x16xbf16>", kvHeads, sk);
    std::string lse = llvm::formatv("tensor<1x{0}x{1}xf32>", heads, sq);
    module = parseSourceString<ModuleOp>(
        llvm::formatv(
            "func.func @f(%q: {0}, %kv: {1}) {{\n"
            "  %0:2 = memwall.flash_attention %q, %kv, %kv {2}scale 0.25 "
            "block_q {3} block_kv {4} splits 1 : ({0}, {1}, {1}) -> ({0}, "
            "{5})\n"
            "  return\n}",
            q, kv, causal ? "causal " : "", bq, bkv, lse)
            .str(),
        &context);
    FlashAttentionOp found;
    if (module)
      module->walk([&](FlashAttentionOp op) { found = op; });
    return found;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(VisibleKeyBlocksTest, ClosedFormEqualsTheLoopOnASweep) {
  int checked = 0;
  for (auto [heads, kvHeads] : {std::pair<int64_t, int64_t>{1, 1},
                                {2, 1},
                                {3, 1},
                                {4, 2},
                                {8, 2},
                                {7, 7},
                                {12, 4}})
    for (int64_t sq : {1, 2, 3, 5, 7, 15, 16, 17, 31, 33, 64, 100, 129, 300})
      for (int64_t extraKeys : {0, 1, 13, 64})
        for (int64_t bq : {1, 3, 16, 24, 64, 128})
          for (int64_t bkv : {1, 5, 16, 64, 128})
            for (bool causal : {false, true}) {
              int64_t sk = sq + extraKeys;
              FlashAttentionOp op =
                  parse(heads, kvHeads, sq, sk, bq, bkv, causal);
              ASSERT_TRUE(op);
              ASSERT_EQ(op.getVisibleKeyBlocksPerKVHead(),
                        visibleKeyBlocksByLoop(heads, kvHeads, sq, sk, bq, bkv,
                                               causal))
                  << "heads " << heads << "/" << kvHeads << ", Sq " << sq
                  << ", Sk " << sk << ", block_q " << bq << ", block_kv " << bkv
                  << (causal ? ", causal" : "");
              ++checked;
            }
  EXPECT_GT(checked, 10000);
}

TEST_F(VisibleKeyBlocksTest, HugeShapesAreAnsweredAtOnce) {
  // Sq = 2^40: the loop ran 2^33 steps per cost query.
  auto start = std::chrono::steady_clock::now();
  int64_t sq = int64_t(1) << 40;
  FlashAttentionOp op = parse(1, 1, sq, 16, 128, 64, /*causal=*/false);
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getVisibleKeyBlocksPerKVHead(), sq / 128);
  (void)cast<CostOpInterface>(op.getOperation()).getBytesRead();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // Causal with grouped heads whose rows do not align with the blocks:
  // group 2^10, Sq = Sk = 2^20 + 1, block_q 96 (the loop's 11M steps still
  // finish here). Per head the block ends form an arithmetic progression;
  // the closed form sums it per head residue.
  int64_t longSq = (int64_t(1) << 20) + 1;
  FlashAttentionOp causal =
      parse(1024, 1, longSq, longSq + 7, 96, 64, /*causal=*/true);
  ASSERT_TRUE(causal);
  EXPECT_EQ(causal.getVisibleKeyBlocksPerKVHead(),
            visibleKeyBlocksByLoop(1024, 1, longSq, longSq + 7, 96, 64, true));
}
} // namespace
