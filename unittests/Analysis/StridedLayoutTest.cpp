//===- StridedLayoutTest.cpp - layout ops as strided views ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// StridedLayout against hand-computed offsets and against a brute-force
// model: a tensor whose elements are their own buffer offsets, moved by
// plain loops as the ops define reshape, transpose and slice.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/StridedLayout.h"

#include "gtest/gtest.h"

#include <numeric>
#include <vector>

using namespace memwall;

namespace {
/// A row-major tensor of buffer offsets.
struct OffsetTensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;

  static OffsetTensor iota(std::vector<int64_t> shape) {
    OffsetTensor t{shape, {}};
    t.values.resize(count(shape));
    std::iota(t.values.begin(), t.values.end(), 0);
    return t;
  }
  static int64_t count(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  /// The multi-index of flat element `flat`.
  std::vector<int64_t> unflatten(int64_t flat) const {
    std::vector<int64_t> index(shape.size());
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      index[d] = flat % shape[d];
      flat /= shape[d];
    }
    return index;
  }
  int64_t flatten(const std::vector<int64_t> &index) const {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      flat = flat * shape[d] + index[d];
    return flat;
  }
  OffsetTensor reshape(std::vector<int64_t> newShape) const {
    return {newShape, values};
  }
  OffsetTensor transpose(const std::vector<int64_t> &permutation) const {
    OffsetTensor t;
    for (int64_t from : permutation)
      t.shape.push_back(shape[from]);
    t.values.resize(values.size());
    for (int64_t flat = 0; flat < static_cast<int64_t>(values.size()); ++flat) {
      std::vector<int64_t> out = t.unflatten(flat), in(shape.size());
      for (size_t i = 0; i < permutation.size(); ++i)
        in[permutation[i]] = out[i];
      t.values[flat] = values[flatten(in)];
    }
    return t;
  }
  OffsetTensor slice(const std::vector<int64_t> &offsets,
                     const std::vector<int64_t> &sizes,
                     const std::vector<int64_t> &steps) const {
    OffsetTensor t{sizes, {}};
    t.values.resize(count(sizes));
    for (int64_t flat = 0; flat < static_cast<int64_t>(t.values.size());
         ++flat) {
      std::vector<int64_t> out = t.unflatten(flat), in(shape.size());
      for (size_t d = 0; d < shape.size(); ++d)
        in[d] = offsets[d] + out[d] * steps[d];
      t.values[flat] = values[flatten(in)];
    }
    return t;
  }
};

/// Every element of `t` lies where `layout` says.
void expectSameOffsets(const OffsetTensor &t, const StridedLayout &layout) {
  ASSERT_EQ(std::vector<int64_t>(layout.shape.begin(), layout.shape.end()),
            t.shape);
  for (int64_t flat = 0; flat < static_cast<int64_t>(t.values.size()); ++flat)
    ASSERT_EQ(layout.offsetOf(t.unflatten(flat)), t.values[flat])
        << "element " << flat;
}

TEST(StridedLayoutTest, PackedQkvSliceSplitAndTransposeIsAView) {
  // GPT-2's c_attn output [B=2, S=3, 3E] with E = 2 heads x 4: k is columns
  // [8, 16), split into heads and transposed to [B, H, S, D].
  StridedLayout k =
      StridedLayout::contiguous({2, 3, 24}).sliced({0, 0, 8}, {2, 3, 8}, {});
  std::optional<StridedLayout> split = k.reshaped({2, 3, 2, 4});
  ASSERT_TRUE(split);
  StridedLayout heads = split->transposed({0, 2, 1, 3});
  EXPECT_EQ(heads.offset, 8);
  EXPECT_EQ(std::vector<int64_t>(heads.strides.begin(), heads.strides.end()),
            (std::vector<int64_t>{72, 4, 24, 1}));
  // (b 1, h 1, s 2, d 3) is column 8 + 1 * 4 + 3 of token (1, 2).
  EXPECT_EQ(heads.offsetOf({1, 1, 2, 3}), 1 * 72 + 2 * 24 + 15);
  expectSameOffsets(OffsetTensor::iota({2, 3, 24})
                        .slice({0, 0, 8}, {2, 3, 8}, {1, 1, 1})
                        .reshape({2, 3, 2, 4})
                        .transpose({0, 2, 1, 3}),
                    heads);
  EXPECT_FALSE(heads.isContiguous());
}

TEST(StridedLayoutTest, MergingTransposedHeadsAndPositionsIsNoView) {
  StridedLayout heads =
      StridedLayout::contiguous({2, 3, 2, 4}).transposed({0, 2, 1, 3});
  // [B, H, S, D] -> [B, H * S, D]: heads are 4 apart, positions 8.
  EXPECT_FALSE(heads.reshaped({2, 6, 4}));
  // Splitting D again is fine.
  std::optional<StridedLayout> split = heads.reshaped({2, 2, 3, 2, 2});
  ASSERT_TRUE(split);
  expectSameOffsets(OffsetTensor::iota({2, 3, 2, 4})
                        .transpose({0, 2, 1, 3})
                        .reshape({2, 2, 3, 2, 2}),
                    *split);
}

TEST(StridedLayoutTest, WritingThroughAHeadsMergeRunsItBackwards) {
  // Attention's output [B, H, S, D] = [2, 2, 3, 4] as a consumer of
  // transpose [0, 2, 1, 3] + reshape [2, 3, 8] sees it: the kernel writes
  // element (b, h, s, d) at row (b, s), column h * 4 + d of [2, 3, 8].
  StridedLayout merged = StridedLayout::contiguous({2, 3, 8});
  std::optional<StridedLayout> split = merged.reshaped({2, 3, 2, 4});
  ASSERT_TRUE(split);
  StridedLayout heads = split->transposed({0, 2, 1, 3});
  EXPECT_EQ(heads.offsetOf({1, 1, 2, 3}), 1 * 24 + 2 * 8 + 1 * 4 + 3);
  // untransposed runs a transpose backwards: a [3, 2, 4, 2] result of
  // permutation [1, 2, 3, 0] over a row-major [2, 3, 2, 4] input.
  std::vector<int64_t> permutation{1, 2, 3, 0};
  StridedLayout result = StridedLayout::contiguous({3, 2, 4, 2});
  StridedLayout input = result.untransposed(permutation);
  EXPECT_EQ(input.shape, (llvm::SmallVector<int64_t, 4>{2, 3, 2, 4}));
  // The input element (a, b, c, d) is result element (b, c, d, a).
  OffsetTensor written =
      OffsetTensor::iota({3, 2, 4, 2}).transpose({3, 0, 1, 2});
  expectSameOffsets(written, input);
  // And forwards again gives the result's layout back.
  StridedLayout again = input.transposed(permutation);
  EXPECT_EQ(again.strides, result.strides);
}

TEST(StridedLayoutTest, PermutingOnlyUnitDimsStaysContiguous) {
  // A decode step's heads split: [1, 1, 32, 128] -> [1, 32, 1, 128] moves
  // no element.
  StridedLayout decode =
      StridedLayout::contiguous({1, 1, 32, 128}).transposed({0, 2, 1, 3});
  EXPECT_TRUE(decode.isContiguous());
  EXPECT_FALSE(StridedLayout::contiguous({1, 2, 32, 128})
                   .transposed({0, 2, 1, 3})
                   .isContiguous());
}

TEST(StridedLayoutTest, StepsAndOffsetsOfSlicesCompose) {
  OffsetTensor t = OffsetTensor::iota({4, 6, 10});
  StridedLayout layout = StridedLayout::contiguous({4, 6, 10})
                             .sliced({1, 0, 2}, {3, 3, 4}, {1, 2, 2});
  expectSameOffsets(t.slice({1, 0, 2}, {3, 3, 4}, {1, 2, 2}), layout);
  // Stepped columns cannot merge with rows, but rows 2 apart can merge with
  // nothing else either; a split of the stepped dim is a view.
  EXPECT_FALSE(layout.reshaped({3, 12}));
  std::optional<StridedLayout> split = layout.reshaped({3, 3, 2, 2});
  ASSERT_TRUE(split);
  expectSameOffsets(
      t.slice({1, 0, 2}, {3, 3, 4}, {1, 2, 2}).reshape({3, 3, 2, 2}), *split);
}

TEST(StridedLayoutTest, ReshapesOfViewsMatchTheBruteForceModel) {
  // Every reshape of a sliced and transposed value that the no-copy rule
  // accepts addresses the elements the data movement would produce.
  OffsetTensor base = OffsetTensor::iota({2, 6, 4});
  OffsetTensor moved =
      base.transpose({1, 0, 2}).slice({0, 0, 0}, {6, 2, 2}, {1, 1, 1});
  StridedLayout layout =
      StridedLayout::contiguous({2, 6, 4}).transposed({1, 0, 2}).sliced(
          {0, 0, 0}, {6, 2, 2}, {});
  expectSameOffsets(moved, layout);
  int accepted = 0;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{24},
                                     {6, 4},
                                     {12, 2},
                                     {3, 2, 2, 2},
                                     {6, 1, 2, 2},
                                     {2, 3, 4},
                                     {1, 6, 2, 2, 1},
                                     {3, 8},
                                     {6, 2, 2}}) {
    std::optional<StridedLayout> reshaped = layout.reshaped(shape);
    if (!reshaped)
      continue;
    ++accepted;
    expectSameOffsets(moved.reshape(shape), *reshaped);
  }
  // [6, 2, 2] itself, its unit-dim variants and the splits of the first dim
  // are views; merging the transposed dims is not.
  EXPECT_EQ(accepted, 4);
  EXPECT_FALSE(layout.reshaped({24}));
  EXPECT_FALSE(layout.reshaped({6, 4}));
}
} // namespace
