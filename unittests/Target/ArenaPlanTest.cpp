//===- ArenaPlanTest.cpp - the static memory plan by hand -----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Bundle.h"

#include "gtest/gtest.h"

#include <limits>

using namespace memwall;

namespace {
BundleBuffer buffer(const char *name, int64_t bytes, int64_t first,
                    int64_t last) {
  BundleBuffer b;
  b.name = name;
  b.bytes = bytes;
  b.firstStep = first;
  b.lastStep = last;
  return b;
}

bool overlaps(const BundleBuffer &x, const BundleBuffer &y) {
  return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
}
} // namespace

TEST(ArenaPlanTest, AnArenaPastInt64IsRefusedNotWrapped) {
  // Two 2^62-byte buffers live together end at 2^63: the arena used to wrap
  // to 0 (a bundle its own runtime rejects).
  std::vector<BundleBuffer> together = {buffer("a", int64_t(1) << 62, 0, 1),
                                        buffer("b", int64_t(1) << 62, 1, 2)};
  EXPECT_EQ(planArena(together), std::nullopt);
  // Aligning a size just below 2^63 up to 256 bytes passes it.
  std::vector<BundleBuffer> unaligned = {
      buffer("c", std::numeric_limits<int64_t>::max() - 10, 0, 0)};
  EXPECT_EQ(planArena(unaligned), std::nullopt);
  // Apart in time they share their bytes and fit.
  std::vector<BundleBuffer> apart = {buffer("a", int64_t(1) << 62, 0, 1),
                                     buffer("b", int64_t(1) << 62, 2, 3)};
  EXPECT_EQ(planArena(apart), int64_t(1) << 62);
}

TEST(ArenaPlanTest, BuffersWithDisjointLifetimesShareBytes) {
  // a (1000 B) lives in steps 0-1, b (1000 B) in 2-3: b reuses a's bytes, so
  // the arena is one 256-aligned 1000 B slot = 1024 B.
  std::vector<BundleBuffer> buffers = {buffer("a", 1000, 0, 1),
                                       buffer("b", 1000, 2, 3)};
  EXPECT_EQ(planArena(buffers), 1024);
  EXPECT_EQ(buffers[0].offset, 0);
  EXPECT_EQ(buffers[1].offset, 0);
}

TEST(ArenaPlanTest, BuffersLiveAtOneStepNeverOverlap) {
  // A kernel reading x and writing y at step 1 needs both: 512 + 768.
  std::vector<BundleBuffer> buffers = {buffer("x", 512, 0, 1),
                                       buffer("y", 700, 1, 2)};
  EXPECT_EQ(planArena(buffers), 512 + 768);
  EXPECT_FALSE(overlaps(buffers[0], buffers[1]));
}

TEST(ArenaPlanTest, LargestFirstFillsTheGapsOfAChain) {
  // A chain t0 -> t1 -> t2 -> t3 where each tensor lives two steps: two
  // slots suffice, and the 4096 B tensors take them first.
  std::vector<BundleBuffer> buffers = {
      buffer("t0", 4096, 0, 1), buffer("t1", 4096, 1, 2),
      buffer("t2", 4096, 2, 3), buffer("t3", 256, 3, 4)};
  EXPECT_EQ(planArena(buffers), 8192);
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(buffers[i].offset % 256, 0);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      bool liveTogether = !(buffers[i].lastStep < buffers[j].firstStep ||
                            buffers[j].lastStep < buffers[i].firstStep);
      if (liveTogether) {
        EXPECT_FALSE(overlaps(buffers[i], buffers[j]))
            << buffers[i].name << " and " << buffers[j].name;
      }
    }
  }
}

TEST(ArenaPlanTest, ViewsTakeTheOffsetOfTheirSource) {
  std::vector<BundleBuffer> buffers = {buffer("pad", 256, 0, 9),
                                       buffer("x", 512, 0, 3),
                                       buffer("view", 512, 0, 3)};
  buffers[2].aliasOf = 1;
  EXPECT_EQ(planArena(buffers), 768);
  EXPECT_EQ(buffers[2].offset, buffers[1].offset);
}
