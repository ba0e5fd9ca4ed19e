//===- ByteSizeTest.cpp - --budget size parsing ----------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Support/ByteSize.h"

#include <gtest/gtest.h>

using namespace memwall;

namespace {

int64_t parse(const char *text) {
  llvm::Expected<int64_t> bytes = parseByteSize(text);
  if (!bytes) {
    ADD_FAILURE() << text << ": " << llvm::toString(bytes.takeError());
    return -1;
  }
  return *bytes;
}

std::string error(const char *text) {
  llvm::Expected<int64_t> bytes = parseByteSize(text);
  if (bytes) {
    ADD_FAILURE() << text << " parsed as " << *bytes;
    return "";
  }
  return llvm::toString(bytes.takeError());
}

TEST(ByteSize, DecimalUnitsArePowersOfAThousand) {
  EXPECT_EQ(parse("1B"), 1);
  EXPECT_EQ(parse("3KB"), 3000);
  EXPECT_EQ(parse("5MB"), 5000000);
  EXPECT_EQ(parse("40GB"), 40000000000);
  EXPECT_EQ(parse("2TB"), 2000000000000);
}

TEST(ByteSize, BinaryUnitsArePowersOf1024) {
  EXPECT_EQ(parse("1KiB"), 1024);
  EXPECT_EQ(parse("1MiB"), 1048576);
  EXPECT_EQ(parse("80GiB"), 85899345920);
  EXPECT_EQ(parse("1TiB"), 1099511627776);
}

TEST(ByteSize, PrefixesAreAcceptedInTheCaseReportsPrintThem) {
  // Reports print kB; people write KB. Both are 1000 bytes.
  EXPECT_EQ(parse("500kB"), 500000);
  EXPECT_EQ(parse("500KB"), 500000);
  EXPECT_EQ(parse("1kiB"), 1024);
  EXPECT_EQ(parse("2PB"), 2000000000000000);
  EXPECT_EQ(parse("1PiB"), 1125899906842624);
}

TEST(ByteSize, FractionsRoundToTheNearestByte) {
  EXPECT_EQ(parse("1.5GiB"), 1610612736);
  EXPECT_EQ(parse("0.5KB"), 500);
  EXPECT_EQ(parse(" 40GB "), 40000000000);
  EXPECT_EQ(parse("40 GB"), 40000000000);
}

TEST(ByteSize, RejectsUnknownMissingOrWronglyCasedUnits) {
  EXPECT_NE(error("40XB").find("unknown unit 'XB'"), std::string::npos);
  EXPECT_NE(error("40gb").find("unknown unit 'gb'"), std::string::npos);
  EXPECT_NE(error("40G").find("unknown unit 'G'"), std::string::npos);
  EXPECT_NE(error("40").find("no unit"), std::string::npos);
  EXPECT_NE(error("GB").find("no number"), std::string::npos);
  EXPECT_NE(error("").find("no number"), std::string::npos);
}

TEST(ByteSize, RejectsZeroNegativeAndHugeSizes) {
  EXPECT_NE(error("0GB").find("at least one byte"), std::string::npos);
  EXPECT_NE(error("0.1B").find("at least one byte"), std::string::npos);
  EXPECT_NE(error("-5GB").find("must be positive"), std::string::npos);
  EXPECT_NE(error("99999999TiB").find("too large"), std::string::npos);
  EXPECT_NE(error("1.2.3GB").find("unknown unit"), std::string::npos);
}

} // namespace
