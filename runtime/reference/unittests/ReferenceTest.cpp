//===- ReferenceTest.cpp - CPU reference interpreter tests ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every expected value is computed by hand (or with a calculator) from the op
// definitions in MemWallOps.td, independently of the interpreter.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Reference.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

using namespace memwall::reference;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

Tensor tensor(DType type, std::vector<int64_t> shape,
              std::vector<double> data) {
  Tensor t;
  t.dtype = type;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

/// A one-op graph over named inputs; the result is "out" of `outType`.
struct OneOp {
  Graph graph;
  std::map<std::string, Tensor> values;

  OneOp(const std::string &name, std::vector<std::pair<std::string, Tensor>> in,
        DType outType, std::vector<int64_t> outShape,
        std::map<std::string, Attr> attrs = {}) {
    Op op;
    op.op = name;
    op.loc = "test." + name;
    for (auto &[n, t] : in) {
      graph.values.push_back({n, t.dtype, t.shape});
      op.operands.push_back(n);
      values[n] = t;
    }
    graph.values.push_back({"out", outType, outShape});
    op.results = {"out"};
    op.attrs = std::move(attrs);
    graph.ops.push_back(op);
  }

  std::string run() { return evaluate(graph, values); }
  const Tensor &out() { return values.at("out"); }
};

void expectData(const Tensor &t, const std::vector<double> &expected,
                double tol = 0) {
  ASSERT_EQ(t.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.data[i], expected[i], tol) << "element " << i;
}

/// Runs `op` and checks shape and values.
void expectOp(OneOp &g, const std::vector<int64_t> &shape,
              const std::vector<double> &expected, double tol = 0) {
  ASSERT_EQ(g.run(), "");
  EXPECT_EQ(g.out().shape, shape);
  expectData(g.out(), expected, tol);
}

//===----------------------------------------------------------------------===//
// Rounding and encoding
//===----------------------------------------------------------------------===//

TEST(RoundToDType, BF16RoundsToNearestTiesToEven) {
  // bf16 keeps 7 fraction bits: the ulp of [1, 2) is 2^-7.
  EXPECT_EQ(roundToDType(1 + std::ldexp(1, -8), DType::BF16), 1.0);
  EXPECT_EQ(roundToDType(1 + 3 * std::ldexp(1, -8), DType::BF16),
            1 + std::ldexp(1, -6));
  EXPECT_EQ(
      roundToDType(1 + std::ldexp(1, -8) + std::ldexp(1, -20), DType::BF16),
      1 + std::ldexp(1, -7));
  EXPECT_EQ(roundToDType(-1 - std::ldexp(1, -8), DType::BF16), -1.0);
  // Not exactly a float: a direct rounding, no double rounding via f32.
  EXPECT_EQ(
      roundToDType(1 + std::ldexp(1, -8) + std::ldexp(1, -40), DType::BF16),
      1 + std::ldexp(1, -7));
}

TEST(RoundToDType, BF16OverflowsToInfinity) {
  EXPECT_EQ(roundToDType(3.3895313892515355e38, DType::BF16),
            3.3895313892515355e38);
  EXPECT_EQ(roundToDType(3.4e38, DType::BF16), kInf);
  EXPECT_TRUE(std::isnan(roundToDType(std::nan(""), DType::BF16)));
}

TEST(RoundToDType, F16TiesToEvenOverflowAndSubnormals) {
  EXPECT_EQ(roundToDType(1 + std::ldexp(1, -11), DType::F16), 1.0);
  EXPECT_EQ(roundToDType(1 + 3 * std::ldexp(1, -11), DType::F16),
            1 + std::ldexp(1, -9));
  EXPECT_EQ(roundToDType(65504, DType::F16), 65504);
  EXPECT_EQ(roundToDType(65519, DType::F16), 65504);
  // 65520 is the midpoint to 2^16 and 65504's last bit is odd: rounds to inf.
  EXPECT_EQ(roundToDType(65520, DType::F16), kInf);
  EXPECT_EQ(roundToDType(-1e6, DType::F16), -kInf);
  EXPECT_EQ(roundToDType(std::ldexp(1, -24), DType::F16), std::ldexp(1, -24));
  EXPECT_EQ(roundToDType(std::ldexp(1, -25), DType::F16), 0.0);
  EXPECT_EQ(roundToDType(3 * std::ldexp(1, -26), DType::F16),
            std::ldexp(1, -24));
}

TEST(RoundToDType, Fp8Saturates) {
  EXPECT_EQ(roundToDType(448, DType::F8E4M3FN), 448);
  EXPECT_EQ(roundToDType(460, DType::F8E4M3FN), 448);
  EXPECT_EQ(roundToDType(1000, DType::F8E4M3FN), 448);
  EXPECT_EQ(roundToDType(-1e9, DType::F8E4M3FN), -448);
  EXPECT_EQ(roundToDType(kInf, DType::F8E4M3FN), 448);
  // 0.3 = 9.6 * 2^-5 (e4m3 ulp at 2^-2) -> 10 * 2^-5.
  EXPECT_EQ(roundToDType(0.3, DType::F8E4M3FN), 0.3125);
  EXPECT_EQ(roundToDType(1e6, DType::F8E5M2), 57344);
  EXPECT_EQ(roundToDType(-kInf, DType::F8E5M2), -57344);
  // 0.3 = 4.8 * 2^-4 (e5m2 ulp at 2^-2) -> 5 * 2^-4.
  EXPECT_EQ(roundToDType(0.3, DType::F8E5M2), 0.3125);
}

TEST(RoundToDType, IntegersTruncateTowardZeroAndWrap) {
  EXPECT_EQ(roundToDType(3.7, DType::I8), 3);
  EXPECT_EQ(roundToDType(-3.7, DType::I8), -3);
  EXPECT_EQ(roundToDType(200, DType::I8), -56);
  EXPECT_EQ(roundToDType(-2.5, DType::I32), -2);
  EXPECT_EQ(roundToDType(4294967297.0, DType::I32), 1);
  EXPECT_EQ(roundToDType(1e10 + 0.5, DType::I64), 1e10);
  EXPECT_EQ(roundToDType(0.5, DType::I1), 1);
  EXPECT_EQ(roundToDType(0, DType::I1), 0);
  EXPECT_EQ(roundToDType(0.1f, DType::F32), static_cast<double>(0.1f));
}

TEST(DTypes, NamesAndSizes) {
  EXPECT_EQ(parseDType("f8e4m3fn"), DType::F8E4M3FN);
  EXPECT_EQ(parseDType("bf16"), DType::BF16);
  EXPECT_FALSE(parseDType("f64"));
  EXPECT_STREQ(dtypeName(DType::I1), "i1");
  EXPECT_EQ(dtypeBytes(DType::BF16), 2);
  EXPECT_EQ(dtypeBytes(DType::I1), 1);
  EXPECT_EQ(dtypeBytes(DType::I64), 8);
  EXPECT_TRUE(isFloat(DType::F8E5M2));
  EXPECT_FALSE(isFloat(DType::I8));
}

TEST(TensorBytes, EncodesEveryDTypeLittleEndian) {
  auto bytes = [](DType type, double v) {
    return tensor(type, {1}, {v}).toBytes();
  };
  using B = std::vector<uint8_t>;
  EXPECT_EQ(bytes(DType::F32, 1.0), (B{0x00, 0x00, 0x80, 0x3F}));
  EXPECT_EQ(bytes(DType::BF16, 1.0), (B{0x80, 0x3F}));
  EXPECT_EQ(bytes(DType::BF16, -2.0), (B{0x00, 0xC0}));
  EXPECT_EQ(bytes(DType::F16, 1.0), (B{0x00, 0x3C}));
  EXPECT_EQ(bytes(DType::F16, std::ldexp(1, -24)), (B{0x01, 0x00}));
  EXPECT_EQ(bytes(DType::F16, -kInf), (B{0x00, 0xFC}));
  EXPECT_EQ(bytes(DType::F8E4M3FN, 448), (B{0x7E}));
  EXPECT_EQ(bytes(DType::F8E4M3FN, -1.0), (B{0xB8}));
  EXPECT_EQ(bytes(DType::F8E4M3FN, std::ldexp(1, -9)), (B{0x01}));
  EXPECT_EQ(bytes(DType::F8E5M2, 57344), (B{0x7B}));
  EXPECT_EQ(bytes(DType::F8E5M2, -2.0), (B{0xC0}));
  EXPECT_EQ(bytes(DType::I8, -1), (B{0xFF}));
  EXPECT_EQ(bytes(DType::I32, -2), (B{0xFE, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(bytes(DType::I64, 258), (B{0x02, 0x01, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(bytes(DType::I1, 1), (B{0x01}));
}

// i4 packs two values a byte, the even element in the low nibble, in two's
// complement: [-8, 7]; an odd count leaves the last high nibble 0.
TEST(TensorBytes, PacksI4TwoAByteLowNibbleFirst) {
  using B = std::vector<uint8_t>;
  EXPECT_EQ(dtypeStorageBytes(DType::I4, 5), 3);
  EXPECT_EQ(dtypeStorageBytes(DType::I4, 4), 2);
  EXPECT_EQ(dtypeStorageBytes(DType::BF16, 5), 10);
  EXPECT_EQ(dtypeStorageBytes(DType::I64, int64_t(1) << 61), -1);
  EXPECT_EQ(parseDType("i4"), DType::I4);
  EXPECT_STREQ(dtypeName(DType::I4), "i4");
  Tensor t = tensor(DType::I4, {5}, {1, -1, 7, -8, 3});
  EXPECT_EQ(t.toBytes(), (B{0xF1, 0x87, 0x03}));
  const uint8_t packed[] = {0xF1, 0x87, 0x03};
  Tensor back = Tensor::fromBytes(DType::I4, {5}, packed, 3);
  EXPECT_EQ(back.data, (std::vector<double>{1, -1, 7, -8, 3}));
  // Wraps as 4-bit two's complement, as i8 does in 8 bits.
  EXPECT_EQ(roundToDType(9, DType::I4), -7);
  EXPECT_EQ(roundToDType(-3.7, DType::I4), -3);
}

TEST(TensorBytes, DecodesSpecialValuesAndRoundTrips) {
  const uint8_t e4m3[] = {0x7F, 0x7E, 0x01, 0xB8};
  Tensor t = Tensor::fromBytes(DType::F8E4M3FN, {4}, e4m3, 4);
  EXPECT_TRUE(std::isnan(t.data[0]));
  EXPECT_EQ(t.data[1], 448);
  EXPECT_EQ(t.data[2], std::ldexp(1, -9));
  EXPECT_EQ(t.data[3], -1);
  const uint8_t e5m2[] = {0x7C, 0x7E};
  Tensor u = Tensor::fromBytes(DType::F8E5M2, {2}, e5m2, 2);
  EXPECT_EQ(u.data[0], kInf);
  EXPECT_TRUE(std::isnan(u.data[1]));

  for (DType type :
       {DType::F32, DType::BF16, DType::F16, DType::F8E4M3FN, DType::F8E5M2,
        DType::I8, DType::I32, DType::I64, DType::I1}) {
    Tensor src = tensor(type, {2, 2}, {0, 1, -2, 0.5});
    for (double &v : src.data)
      v = roundToDType(v, type);
    std::vector<uint8_t> b = src.toBytes();
    ASSERT_EQ(static_cast<int64_t>(b.size()), 4 * dtypeBytes(type));
    Tensor back = Tensor::fromBytes(type, {2, 2}, b.data(), b.size());
    EXPECT_EQ(back.data, src.data) << dtypeName(type);
    EXPECT_EQ(back.shape, src.shape);
  }
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

TEST(Matmul, TransposedOperandsWithBias) {
  // A = [[1,2,3],[4,5,6]] stored as A^T; B = [[1,0],[0,1],[1,1]] stored as
  // B^T. A B = [[4,5],[10,11]], plus bias [10, 20].
  OneOp g("matmul",
          {{"a", tensor(DType::F32, {3, 2}, {1, 4, 2, 5, 3, 6})},
           {"b", tensor(DType::F32, {2, 3}, {1, 0, 1, 0, 1, 1})},
           {"bias", tensor(DType::F32, {2}, {10, 20})}},
          DType::F32, {2, 2},
          {{"transpose_lhs", Attr::ofBool(true)},
           {"transpose_rhs", Attr::ofBool(true)}});
  expectOp(g, {2, 2}, {14, 25, 20, 31});
}

TEST(Matmul, BatchDimensionsBroadcast) {
  // lhs batch b is (b+1) I; rhs batch c is diag(c, c+1): result (b+1) B_c.
  std::vector<double> lhs, rhs;
  for (int b = 0; b < 2; ++b)
    lhs.insert(lhs.end(), {double(b + 1), 0, 0, double(b + 1)});
  for (int c = 0; c < 3; ++c)
    rhs.insert(rhs.end(), {double(c), 0, 0, double(c + 1)});
  OneOp g("matmul",
          {{"a", tensor(DType::F32, {2, 1, 2, 2}, lhs)},
           {"b", tensor(DType::F32, {3, 2, 2}, rhs)}},
          DType::F32, {2, 3, 2, 2});
  std::vector<double> expected;
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 3; ++c)
      expected.insert(expected.end(),
                      {double((b + 1) * c), 0, 0, double((b + 1) * (c + 1))});
  expectOp(g, {2, 3, 2, 2}, expected);
}

TEST(Matmul, RankThreeActivationTimesWeightAcrossTiles) {
  // Shapes that are not multiples of the blocking and K > one k block.
  int64_t M = 5, N = 17, K = 300;
  std::vector<double> a(2 * M * K, 1.0), b(K * N, 1.0);
  a[0] = 3; // row 0 of batch 0 sums 302
  OneOp g("matmul",
          {{"a", tensor(DType::BF16, {2, M, K}, a)},
           {"b", tensor(DType::BF16, {K, N}, b)}},
          DType::BF16, {2, M, N});
  ASSERT_EQ(g.run(), "");
  for (size_t i = 0; i < g.out().data.size(); ++i)
    ASSERT_EQ(g.out().data[i], i < size_t(N) ? 302 : 300) << i;
}

TEST(Matmul, ResultIsRoundedToBF16) {
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even gives 1.
  OneOp g("matmul",
          {{"a", tensor(DType::BF16, {1, 2}, {1, 1})},
           {"b", tensor(DType::BF16, {2, 1}, {1, std::ldexp(1, -8)})}},
          DType::BF16, {1, 1});
  expectOp(g, {1, 1}, {1});
}

TEST(Matmul, Int8GivesInt32AndFp8GivesBF16) {
  OneOp i8("matmul",
           {{"a", tensor(DType::I8, {1, 2}, {100, -100})},
            {"b", tensor(DType::I8, {2, 1}, {100, -100})}},
           DType::I32, {1, 1});
  expectOp(i8, {1, 1}, {20000});
  OneOp f8("matmul",
           {{"a", tensor(DType::F8E4M3FN, {1, 2}, {448, 448})},
            {"b", tensor(DType::F8E4M3FN, {2, 1}, {448, 1})}},
           DType::BF16, {1, 1});
  // 448 * 449 = 201152 = 196.4375 * 1024 -> bf16 (ulp 1024) -> 200704.
  expectOp(f8, {1, 1}, {200704});
  OneOp wrong("matmul",
              {{"a", tensor(DType::I8, {1, 1}, {1})},
               {"b", tensor(DType::I8, {1, 1}, {1})}},
              DType::I8, {1, 1});
  EXPECT_NE(wrong.run().find("gives i32"), std::string::npos);
}

TEST(Matmul, MismatchedContractionIsAnError) {
  OneOp g("matmul",
          {{"a", tensor(DType::F32, {2, 3}, std::vector<double>(6))},
           {"b", tensor(DType::F32, {2, 2}, std::vector<double>(4))}},
          DType::F32, {2, 2});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.matmul: ", 0), 0u) << err;
  EXPECT_NE(err.find("K = 3 and 2"), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST(Elementwise, AddBroadcastsLikeNumPy) {
  OneOp g("add",
          {{"x", tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})},
           {"b", tensor(DType::F32, {3}, {10, 20, 30})}},
          DType::F32, {2, 3});
  expectOp(g, {2, 3}, {11, 22, 33, 14, 25, 36});
  OneOp outer("add",
              {{"x", tensor(DType::F32, {2, 1}, {1, 2})},
               {"y", tensor(DType::F32, {1, 3}, {10, 20, 30})}},
              DType::F32, {2, 3});
  expectOp(outer, {2, 3}, {11, 21, 31, 12, 22, 32});
}

TEST(Elementwise, ResultRoundsToBF16) {
  OneOp g("add",
          {{"x", tensor(DType::BF16, {2}, {1, 1})},
           {"y", tensor(DType::BF16, {2},
                        {std::ldexp(1, -8), 3 * std::ldexp(1, -8)})}},
          DType::BF16, {2});
  expectOp(g, {2}, {1, 1 + std::ldexp(1, -6)});
}

TEST(Elementwise, SubMulDivScale) {
  auto x = tensor(DType::F32, {2}, {6, -3});
  auto y = tensor(DType::F32, {2}, {2, 4});
  OneOp sub("sub", {{"x", x}, {"y", y}}, DType::F32, {2});
  expectOp(sub, {2}, {4, -7});
  OneOp mul("mul", {{"x", x}, {"y", y}}, DType::F32, {2});
  expectOp(mul, {2}, {12, -12});
  OneOp div("div", {{"x", x}, {"y", y}}, DType::F32, {2});
  expectOp(div, {2}, {3, -0.75});
  OneOp scale("scale", {{"x", x}}, DType::F32, {2},
              {{"factor", Attr::ofNumber(0.5)}});
  expectOp(scale, {2}, {3, -1.5});
}

TEST(Elementwise, GeluErfAndTanhValues) {
  auto x = tensor(DType::F32, {3}, {1, -1, 2});
  OneOp erf("gelu", {{"x", x}}, DType::F32, {3},
            {{"approximation", Attr::ofString("erf")}});
  expectOp(erf, {3},
           {0.8413447460685429, -0.15865525393145707, 1.9544997361036416},
           1e-6);
  OneOp tanh("gelu", {{"x", x}}, DType::F32, {3},
             {{"approximation", Attr::ofString("tanh")}});
  expectOp(tanh, {3},
           {0.8411919906082768, -0.15880800939172324, 1.954597694087775}, 1e-6);
  OneOp byDefault("gelu", {{"x", x}}, DType::F32, {3});
  expectOp(byDefault, {3},
           {0.8413447460685429, -0.15865525393145707, 1.9544997361036416},
           1e-6);
}

TEST(Elementwise, SiluReluTanhSwiglu) {
  auto x = tensor(DType::F32, {2}, {1, -2});
  OneOp silu("silu", {{"x", x}}, DType::F32, {2});
  expectOp(silu, {2}, {0.7310585786300049, -0.2384058440442351}, 1e-6);
  OneOp relu("relu", {{"x", x}}, DType::F32, {2});
  expectOp(relu, {2}, {1, 0});
  OneOp tanh("tanh", {{"x", tensor(DType::F32, {1}, {0.5})}}, DType::F32, {1});
  expectOp(tanh, {1}, {0.46211715726000974}, 1e-7);
  OneOp swiglu("swiglu", {{"g", x}, {"u", tensor(DType::F32, {2}, {2, 3})}},
               DType::F32, {2});
  expectOp(swiglu, {2}, {2 * 0.7310585786300049, 3 * -0.2384058440442351},
           1e-6);
}

TEST(Elementwise, SigmoidAtZeroAndPlusMinusTwo) {
  // 1 / (1 + e^0) = 0.5; 1 / (1 + e^-2) = 0.8807970780; 1 / (1 + e^2) =
  // 0.1192029220.
  OneOp g("sigmoid", {{"x", tensor(DType::F32, {3}, {0, 2, -2})}}, DType::F32,
          {3});
  expectOp(g, {3}, {0.5, 0.8807970779778823, 0.11920292202211755}, 1e-7);
}

TEST(Philox, MatchesRandom123KnownAnswers) {
  // Random123's tests/kat_vectors, the three "philox4x32 10" lines.
  using Words = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32x10({0, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32x10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32x10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Elementwise, DropoutKeepsByPhiloxAndScalesSurvivors) {
  // Element i is kept when word 0 of Philox(counter {i, 0, 0, 0}, key
  // {seed, 0}) >= floor(rate * 2^32).
  auto x = tensor(DType::F32, {64}, std::vector<double>(64, 1.5));
  OneOp zero("dropout", {{"x", x}}, DType::F32, {64},
             {{"rate", Attr::ofNumber(0)}, {"seed", Attr::ofNumber(7)}});
  expectOp(zero, {64}, std::vector<double>(64, 1.5));
  OneOp some("dropout", {{"x", x}}, DType::F32, {64},
             {{"rate", Attr::ofNumber(0.25)}, {"seed", Attr::ofNumber(7)}});
  ASSERT_EQ(some.run(), "");
  std::vector<double> expected;
  for (uint32_t i = 0; i < 64; ++i) {
    bool keep = philox4x32x10({i, 0, 0, 0}, {7, 0})[0] >= 0x40000000u;
    expected.push_back(keep ? 2.0 : 0.0); // 1.5 / 0.75
  }
  expectData(some.out(), expected);
}

TEST(Elementwise, DropoutDropsAboutRateOfTheElements) {
  int64_t kept = 0, n = 1 << 16;
  for (int64_t i = 0; i < n; ++i)
    kept += dropoutKeeps(/*seed=*/3, i, 0.1);
  // 65536 draws: the standard deviation of the kept fraction is 0.0012.
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.006);
  // Another seed draws another mask.
  int64_t same = 0;
  for (int64_t i = 0; i < 1024; ++i)
    same += dropoutKeeps(3, i, 0.5) == dropoutKeeps(4, i, 0.5);
  EXPECT_LT(same, 600);
  EXPECT_GT(same, 424);
}

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

TEST(Norms, LayerNormUsesBiasedVariance) {
  // mean 2.5, biased var 1.25: x_hat = (x - 2.5) / sqrt(1.25).
  OneOp g("layer_norm",
          {{"x", tensor(DType::F32, {1, 4}, {1, 2, 3, 4})},
           {"w", tensor(DType::F32, {4}, {1, 1, 2, 2})},
           {"b", tensor(DType::F32, {4}, {0, 0, 0, 1})}},
          DType::F32, {1, 4}, {{"epsilon", Attr::ofNumber(0)}});
  expectOp(g, {1, 4}, {-1.3416407865, -0.4472135955, 0.894427191, 3.683281573},
           1e-6);
}

TEST(Norms, RmsNorm) {
  // mean(x^2) = 12.5, rms = 3.5355339.
  OneOp g("rms_norm",
          {{"x", tensor(DType::F32, {1, 2}, {3, 4})},
           {"w", tensor(DType::F32, {2}, {1, 2})}},
          DType::F32, {1, 2}, {{"epsilon", Attr::ofNumber(0)}});
  expectOp(g, {1, 2}, {0.8485281374, 2.2627416998}, 1e-6);
}

TEST(Norms, SoftmaxAlongNonLastAxis) {
  OneOp g("softmax", {{"x", tensor(DType::F32, {2, 2}, {0, 1, 0, 0})}},
          DType::F32, {2, 2}, {{"axis", Attr::ofNumber(0)}});
  expectOp(g, {2, 2}, {0.5, 0.7310585786, 0.5, 0.2689414214}, 1e-7);
}

TEST(Reduce, SumKeepDimsMaxAndMean) {
  auto x = tensor(DType::F32, {2, 3}, {1, 5, 3, 4, 2, 6});
  OneOp sum("reduce", {{"x", x}}, DType::F32, {2, 1},
            {{"kind", Attr::ofString("sum")},
             {"axes", Attr::ofInts({1})},
             {"keep_dims", Attr::ofBool(true)}});
  expectOp(sum, {2, 1}, {9, 12});
  OneOp max("reduce", {{"x", x}}, DType::F32, {3},
            {{"kind", Attr::ofString("max")}, {"axes", Attr::ofInts({0})}});
  expectOp(max, {3}, {4, 5, 6});
  OneOp mean(
      "reduce",
      {{"x", tensor(DType::F32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}},
      DType::F32, {2},
      {{"kind", Attr::ofString("mean")}, {"axes", Attr::ofInts({0, 2})}});
  // Over (i, k) for j = 0: {1, 2, 5, 6}; j = 1: {3, 4, 7, 8}.
  expectOp(mean, {2}, {3.5, 5.5});
}

//===----------------------------------------------------------------------===//
// Positions, embeddings, attention, loss
//===----------------------------------------------------------------------===//

TEST(Rope, RotatesHalvesByPositionTimesInverseFrequency) {
  // D = 4, theta = 100: frequencies 1 and 100^-0.5 = 0.1. Position 0 is the
  // identity; position 1 rotates (x0, x2) by 1 rad and (x1, x3) by 0.1 rad.
  OneOp g("rope",
          {{"x", tensor(DType::F32, {1, 1, 2, 4}, {1, 2, 3, 4, 1, 2, 3, 4})},
           {"pos", tensor(DType::I64, {2}, {0, 1})}},
          DType::F32, {1, 1, 2, 4}, {{"theta", Attr::ofNumber(100)}});
  expectOp(g, {1, 1, 2, 4},
           {1, 2, 3, 4, -1.9841106485555495, 1.590674663968739,
            2.4623779024123156, 4.17968349440576},
           1e-6);
}

TEST(Rope, PerBatchPositions) {
  OneOp g("rope",
          {{"x", tensor(DType::F32, {2, 1, 1, 2}, {1, 0, 1, 0})},
           {"pos", tensor(DType::I32, {2, 1}, {0, 1})}},
          DType::F32, {2, 1, 1, 2});
  // D = 2: one frequency, 1. Batch 1 rotates (1, 0) by 1 rad.
  expectOp(g, {2, 1, 1, 2}, {1, 0, 0.5403023059, 0.8414709848}, 1e-7);
}

TEST(Rope, Llama3ScalingInterpolatesMediumWavelengths) {
  // D = 4, theta 100: frequencies 1 and 0.1, wavelengths 2π and 20π. With
  // original context 100, low 1, high 4: wavelengths under 25 are kept,
  // over 100 divided by the factor 8, between interpolated: 20π gives
  // smooth = (100 / 20π - 1) / 3 and frequency (1 - smooth) · 0.1 / 8 +
  // smooth · 0.1 = 0.0297535. Position 10 rotates pair (x1, x3) = (1, 0)
  // by 0.297535 rad; pair 0 (frequency 1) is zero.
  auto scaled = [](double original) {
    return std::map<std::string, Attr>{
        {"theta", Attr::ofNumber(100)},
        {"llama3_factor", Attr::ofNumber(8)},
        {"llama3_low_freq_factor", Attr::ofNumber(1)},
        {"llama3_high_freq_factor", Attr::ofNumber(4)},
        {"llama3_original_context", Attr::ofNumber(original)}};
  };
  std::vector<std::pair<std::string, Tensor>> inputs = {
      {"x", tensor(DType::F32, {1, 1, 1, 4}, {0, 1, 0, 0})},
      {"pos", tensor(DType::I64, {1}, {10})}};
  OneOp medium("rope", inputs, DType::F32, {1, 1, 1, 4}, scaled(100));
  expectOp(medium, {1, 1, 1, 4}, {0, 0.9560619697871952, 0, 0.2931646464473988},
           1e-7);
  // Original context 20: 20π is past 20 / 1, so the frequency is 0.1 / 8.
  OneOp low("rope", inputs, DType::F32, {1, 1, 1, 4}, scaled(20));
  expectOp(low, {1, 1, 1, 4}, {0, 0.992197667229329, 0, 0.12467473338522769},
           1e-7);
  auto bad = scaled(100);
  bad["llama3_high_freq_factor"] = Attr::ofNumber(0.5);
  OneOp refused("rope", inputs, DType::F32, {1, 1, 1, 4}, bad);
  EXPECT_NE(refused.run().find("llama3 RoPE scaling"), std::string::npos);
}

TEST(Embedding, GathersRowsAndRejectsOutOfRangeIds) {
  auto table = tensor(DType::F32, {3, 2}, {0, 1, 10, 11, 20, 21});
  OneOp g("embedding",
          {{"t", table}, {"i", tensor(DType::I32, {2, 2}, {2, 0, 1, 1})}},
          DType::F32, {2, 2, 2});
  expectOp(g, {2, 2, 2}, {20, 21, 0, 1, 10, 11, 10, 11});
  OneOp bad("embedding", {{"t", table}, {"i", tensor(DType::I64, {1}, {3})}},
            DType::F32, {1, 2});
  EXPECT_NE(bad.run().find("index 3"), std::string::npos);
}

// q = [1, 0], keys k_j = [j, 0], scale 1: scores are [0, 1, 2].
std::vector<std::pair<std::string, Tensor>> decodeInputs(int64_t sq) {
  std::vector<double> q;
  for (int64_t i = 0; i < sq; ++i)
    q.insert(q.end(), {1, 0});
  return {{"q", tensor(DType::F32, {1, 1, sq, 2}, q)},
          {"k", tensor(DType::F32, {1, 1, 3, 2}, {0, 0, 1, 0, 2, 0})},
          {"v", tensor(DType::F32, {1, 1, 3, 1}, {1, 2, 3})}};
}

TEST(Attention, CausalDecodeSeesEveryCachedKey) {
  // Sq = 1: bottom-right alignment lets the query see keys 0..2.
  OneOp g("attention", decodeInputs(1), DType::F32, {1, 1, 1, 1},
          {{"causal", Attr::ofBool(true)}, {"scale", Attr::ofNumber(1)}});
  // sum_j (j+1) e^j / sum_j e^j.
  expectOp(g, {1, 1, 1, 1}, {2.5752103826044412}, 1e-6);
}

TEST(Attention, CausalMaskIsAlignedBottomRight) {
  // Sq = 2, Sk = 3: query 0 sees keys 0..1, query 1 sees 0..2.
  OneOp g("attention", decodeInputs(2), DType::F32, {1, 1, 2, 1},
          {{"causal", Attr::ofBool(true)}, {"scale", Attr::ofNumber(1)}});
  expectOp(g, {1, 1, 2, 1}, {1 + 0.7310585786300049, 2.5752103826044412}, 1e-6);
}

TEST(Attention, SlidingWindowSeesTheLastKeysUpToTheDiagonal) {
  // Sq = 2, Sk = 3, window 2: query 0 sees keys 0..1, query 1 keys 1..2:
  // (1 + 2e) / (1 + e) and (2e + 3e^2) / (e + e^2).
  OneOp g("attention", decodeInputs(2), DType::F32, {1, 1, 2, 1},
          {{"causal", Attr::ofBool(true)},
           {"window", Attr::ofNumber(2)},
           {"scale", Attr::ofNumber(1)}});
  expectOp(g, {1, 1, 2, 1}, {1 + 0.7310585786300049, 2 + 0.7310585786300049},
           1e-6);
  // A window of one key is the diagonal alone: the value of key i + 1.
  OneOp diagonal("attention", decodeInputs(2), DType::F32, {1, 1, 2, 1},
                 {{"causal", Attr::ofBool(true)},
                  {"window", Attr::ofNumber(1)},
                  {"scale", Attr::ofNumber(1)}});
  expectOp(diagonal, {1, 1, 2, 1}, {2, 3}, 1e-12);
  // Without causal, or not a whole positive count: refused.
  OneOp notCausal("attention", decodeInputs(2), DType::F32, {1, 1, 2, 1},
                  {{"window", Attr::ofNumber(2)}});
  EXPECT_NE(notCausal.run().find("sliding window"), std::string::npos);
  OneOp fraction(
      "attention", decodeInputs(2), DType::F32, {1, 1, 2, 1},
      {{"causal", Attr::ofBool(true)}, {"window", Attr::ofNumber(1.5)}});
  EXPECT_NE(fraction.run().find("sliding window"), std::string::npos);
}

TEST(Attention, BoolAndFloatMasks) {
  auto in = decodeInputs(1);
  in.push_back({"m", tensor(DType::I1, {3}, {1, 0, 1})});
  OneOp boolMask("attention", in, DType::F32, {1, 1, 1, 1},
                 {{"scale", Attr::ofNumber(1)}});
  // Keys 0 and 2: p = [1, e^2] / (1 + e^2).
  expectOp(boolMask, {1, 1, 1, 1}, {1 + 2 * 0.8807970779778823}, 1e-6);
  in.back().second = tensor(DType::F32, {1, 1, 3}, {0, 0, -1000});
  OneOp floatMask("attention", in, DType::F32, {1, 1, 1, 1},
                  {{"scale", Attr::ofNumber(1)}});
  expectOp(floatMask, {1, 1, 1, 1}, {1 + 0.7310585786300049}, 1e-6);
}

TEST(Attention, GroupedQueryHeadsShareKVHeads) {
  // Hq = 4, Hkv = 2, Sk = 1: query heads 0, 1 read KV head 0 and 2, 3 head 1.
  OneOp g("attention",
          {{"q", tensor(DType::F32, {1, 4, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
           {"k", tensor(DType::F32, {1, 2, 1, 2}, {1, 1, 1, 1})},
           {"v", tensor(DType::F32, {1, 2, 1, 1}, {5, 7})}},
          DType::F32, {1, 4, 1, 1});
  expectOp(g, {1, 4, 1, 1}, {5, 5, 7, 7});
}

TEST(Attention, DefaultScaleIsInverseSqrtD) {
  // D = 4: q.k = 4 for key 1, 0 for key 0; scaled by 1/2 gives [0, 2].
  OneOp g("attention",
          {{"q", tensor(DType::F32, {1, 1, 1, 4}, {1, 1, 1, 1})},
           {"k", tensor(DType::F32, {1, 1, 2, 4}, {0, 0, 0, 0, 1, 1, 1, 1})},
           {"v", tensor(DType::F32, {1, 1, 2, 1}, {1, 3})}},
          DType::F32, {1, 1, 1, 1});
  expectOp(g, {1, 1, 1, 1}, {1 + 2 * 0.8807970779778823}, 1e-6);
}

TEST(CrossEntropy, IgnoreIndexAndReductions) {
  // Row 0: ln 2. Row 1: logsumexp(1, 0) - 0 = 1 + ln(1 + e^-1). Row 2 ignored.
  auto in = [] {
    return std::vector<std::pair<std::string, Tensor>>{
        {"l", tensor(DType::F32, {3, 2}, {0, 0, 1, 0, 5, 5})},
        {"y", tensor(DType::I64, {3}, {0, 1, -100})}};
  };
  auto attrs = [](const char *r) {
    return std::map<std::string, Attr>{{"reduction", Attr::ofString(r)},
                                       {"ignore_index", Attr::ofNumber(-100)}};
  };
  OneOp mean("cross_entropy", in(), DType::F32, {}, attrs("mean"));
  expectOp(mean, {}, {1.0032044340390842}, 1e-6);
  OneOp sum("cross_entropy", in(), DType::F32, {}, attrs("sum"));
  expectOp(sum, {}, {2.0064088680781684}, 1e-6);
  OneOp none("cross_entropy", in(), DType::F32, {3}, attrs("none"));
  expectOp(none, {3}, {0.6931471805599453, 1.3132616875182228, 0}, 1e-6);
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// moe_gating of `logits` picking k experts: results "out" (the weights,
/// f32) and "idx" (the experts, `indexType`), both [..., k].
OneOp gating(const Tensor &logits, int64_t k, bool normalize,
             DType indexType = DType::I32) {
  std::vector<int64_t> shape = logits.shape;
  shape.back() = k;
  OneOp g("moe_gating", {{"logits", logits}}, DType::F32, shape,
          {{"experts_per_token", Attr::ofNumber(static_cast<double>(k))},
           {"normalize", Attr::ofBool(normalize)}});
  g.graph.values.push_back({"idx", indexType, shape});
  g.graph.ops[0].results.push_back("idx");
  return g;
}

std::map<std::string, Attr> normalizeAttr(bool normalize) {
  return {{"normalize", Attr::ofBool(normalize)}};
}

TEST(MoeGating, PicksTopKByProbabilityWithAndWithoutNormalize) {
  // Row 0 [1, 3, 2, 0]: less the max 3, p = [e^-2, 1, e^-1, e^-3] / Z with
  // Z = 1 + e^-1 + e^-2 + e^-3 = 1.5530017928: experts 1 and 2, p = 1 / Z =
  // 0.6439142599 and e^-1 / Z = 0.2368828181. Row 1 [0, 1, 2, 3] is the same
  // probabilities reversed: experts 3 and 2. Normalized, both rows give
  // 1 / (1 + e^-1) = 0.7310585786 and e^-1 / (1 + e^-1) = 0.2689414214.
  Tensor logits = tensor(DType::F32, {2, 4}, {1, 3, 2, 0, 0, 1, 2, 3});
  OneOp plain = gating(logits, 2, false);
  expectOp(plain, {2, 2},
           {0.6439142598879724, 0.23688281808991013, 0.6439142598879724,
            0.23688281808991013},
           1e-7);
  EXPECT_EQ(plain.values.at("idx").dtype, DType::I32);
  EXPECT_EQ(plain.values.at("idx").shape, (std::vector<int64_t>{2, 2}));
  expectData(plain.values.at("idx"), {1, 2, 3, 2});
  OneOp normalized = gating(logits, 2, true);
  expectOp(normalized, {2, 2},
           {0.7310585786300049, 0.2689414213699951, 0.7310585786300049,
            0.2689414213699951},
           1e-7);
  expectData(normalized.values.at("idx"), {1, 2, 3, 2});
}

TEST(MoeGating, EqualProbabilitiesGoToTheLowerExpertFirst) {
  // Row 0 [2, 0, 2, 1], k = 3: experts 0 and 2 tie, then 3; Z = 2 + e^-1 +
  // e^-2, p = 1 / Z = 0.3994863047 (twice) and e^-1 / Z = 0.1469627985.
  // Row 1 [1, 2, 1, 2]: 1 and 3 tie, then 0 (before 2); Z = 2 + 2 e^-1,
  // 1 / Z = 0.3655292893 and e^-1 / Z = 0.1344707107.
  Tensor logits = tensor(DType::F32, {2, 4}, {2, 0, 2, 1, 1, 2, 1, 2});
  OneOp g = gating(logits, 3, false, DType::I64);
  expectOp(g, {2, 3},
           {0.39948630465030277, 0.39948630465030277, 0.14696279851039795,
            0.36552928931500245, 0.36552928931500245, 0.13447071068499755},
           1e-7);
  expectData(g.values.at("idx"), {0, 2, 3, 1, 3, 0});
  // Normalized, the tied pair of row 0 with k = 2 is exactly one half each.
  OneOp pair = gating(tensor(DType::F32, {1, 4}, {2, 0, 2, 1}), 2, true);
  expectOp(pair, {1, 2}, {0.5, 0.5}, 1e-7);
  expectData(pair.values.at("idx"), {0, 2});
}

TEST(MoeGating, KEqualToEOrdersEveryExpertAndNormalizingChangesNothing) {
  // [0, 3, 1]: Z = 1 + e^3 + e = 23.8038187; p = [0.0420100661,
  // 0.8437947345, 0.1141951994], in order experts 1, 2, 0; they sum to 1.
  Tensor logits = tensor(DType::F32, {3}, {0, 3, 1});
  std::vector<double> expected = {0.8437947344813396, 0.1141951993845945,
                                  0.04201006613406606};
  for (bool normalize : {false, true}) {
    OneOp g = gating(logits, 3, normalize);
    expectOp(g, {3}, expected, 1e-7);
    expectData(g.values.at("idx"), {1, 2, 0});
  }
}

TEST(MoeGating, KOutsideOneToEAndNonFloatLogitsAreErrors) {
  Tensor logits = tensor(DType::F32, {2, 4}, std::vector<double>(8));
  std::string tooMany = gating(logits, 5, false).run();
  EXPECT_EQ(tooMany.rfind("test.moe_gating: ", 0), 0u) << tooMany;
  EXPECT_NE(tooMany.find("experts_per_token 5 must be in [1, E] for E = 4"),
            std::string::npos)
      << tooMany;
  std::string none = gating(logits, 0, false).run();
  EXPECT_NE(none.find("experts_per_token 0"), std::string::npos) << none;
  std::string ints =
      gating(tensor(DType::I32, {2, 4}, std::vector<double>(8)), 2, false)
          .run();
  EXPECT_NE(ints.find("logits must have a float element type"),
            std::string::npos)
      << ints;
  std::string floatIndices = gating(logits, 2, false, DType::F32).run();
  EXPECT_NE(floatIndices.find("indices must have an integer element type"),
            std::string::npos)
      << floatIndices;
  // i4 holds experts up to 7: E = 9 does not fit.
  std::string narrow = gating(tensor(DType::F32, {9}, std::vector<double>(9)),
                              2, false, DType::I4)
                           .run();
  EXPECT_NE(narrow.find("cannot hold expert 8"), std::string::npos) << narrow;
}

TEST(MoeGatingGrad, HandValuesWithAndWithoutNormalize) {
  // logits [ln 1, ln 2, ln 5]: p = [1/8, 2/8, 5/8]; k = 2 picks experts
  // [2, 1]. dw = [1, 3].
  // Without normalize: w = [5/8, 1/4], s = 1 * 5/8 + 3 * 1/4 = 11/8,
  //   g = [0, 3, 1]; dlogits = p_c (g_c - s) = [1/8 (-11/8), 1/4 (13/8),
  //   5/8 (-3/8)] = [-11/64, 13/32, -15/64] (summing to 0).
  // Normalize: S = 7/8, w = [5/7, 2/7], s = 5/7 + 6/7 = 11/7; expert 2 gets
  //   5/7 (1 - 11/7) = -20/49, expert 1 2/7 (3 - 11/7) = 20/49, expert 0 0.
  Tensor logits = tensor(DType::F32, {1, 3},
                         {0, static_cast<float>(std::log(2.0)),
                          static_cast<float>(std::log(5.0))});
  OneOp forward = gating(logits, 2, false);
  expectOp(forward, {1, 2}, {0.625, 0.25}, 1e-7);
  expectData(forward.values.at("idx"), {2, 1});
  auto grad = [&](bool normalize) {
    return OneOp("moe_gating_grad",
                 {{"dw", tensor(DType::F32, {1, 2}, {1, 3})},
                  {"logits", logits},
                  {"idx", tensor(DType::I32, {1, 2}, {2, 1})}},
                 DType::F32, {1, 3}, normalizeAttr(normalize));
  };
  OneOp plain = grad(false);
  expectOp(plain, {1, 3}, {-11.0 / 64, 13.0 / 32, -15.0 / 64}, 1e-6);
  OneOp normalized = grad(true);
  expectOp(normalized, {1, 3}, {0, 20.0 / 49, -20.0 / 49}, 1e-6);
}

/// moe_gating_grad of dw against central differences of sum(dw * weights)
/// over the logits, the weights recomputed by moe_gating each time.
void checkGatingGradByFiniteDifferences(bool normalize) {
  // [2, 2] tokens of E = 5, k = 2; each row's third-largest logit is at
  // least 0.2 below its second, so steps of 0.01 keep the selection.
  std::vector<int64_t> shape = {2, 2, 5}, slots = {2, 2, 2};
  std::vector<double> logits = {0.3,  -1.2, 1.1, 0.5,  -0.4, 2.0, 0.1,
                                -0.7, 1.4,  0.9, -0.5, 0.6,  0.2, -1.5,
                                1.3,  0.8,  1.6, -0.2, 0.0,  1.0};
  std::vector<double> dw = {0.7, -1.3, 0.4, 0.9, -0.6, 1.1, 1.5, -0.2};
  OneOp base = gating(tensor(DType::F32, shape, logits), 2, normalize);
  ASSERT_EQ(base.run(), "");
  const Tensor indices = base.values.at("idx");
  auto loss = [&](const std::vector<double> &x) {
    OneOp g = gating(tensor(DType::F32, shape, x), 2, normalize);
    EXPECT_EQ(g.run(), "");
    EXPECT_EQ(g.values.at("idx").data, indices.data) << "selection changed";
    double l = 0;
    for (size_t i = 0; i < dw.size(); ++i)
      l += dw[i] * g.out().data[i];
    return l;
  };
  OneOp grad("moe_gating_grad",
             {{"dw", tensor(DType::F32, slots, dw)},
              {"logits", tensor(DType::F32, shape, logits)},
              {"idx", indices}},
             DType::F32, shape, normalizeAttr(normalize));
  ASSERT_EQ(grad.run(), "");
  ASSERT_EQ(grad.out().data.size(), logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    std::vector<double> plus = logits, minus = logits;
    plus[i] = static_cast<float>(logits[i] + 1e-2);
    minus[i] = static_cast<float>(logits[i] - 1e-2);
    double fd = (loss(plus) - loss(minus)) / (plus[i] - minus[i]);
    EXPECT_NEAR(grad.out().data[i], fd, 5e-4) << "logit " << i;
  }
}

TEST(MoeGatingGrad, NormalizedMatchesFiniteDifferencesOfTheForward) {
  checkGatingGradByFiniteDifferences(true);
}

TEST(MoeGatingGrad, UnnormalizedMatchesFiniteDifferencesOfTheForward) {
  checkGatingGradByFiniteDifferences(false);
}

TEST(MoeGatingGrad, MismatchedShapesAndOutOfRangeIndicesAreErrors) {
  auto run = [](std::vector<int64_t> dwShape, std::vector<int64_t> logitShape,
                std::vector<int64_t> idxShape, std::vector<double> idx) {
    int64_t nd = 1, nl = 1;
    for (int64_t d : dwShape)
      nd *= d;
    for (int64_t d : logitShape)
      nl *= d;
    OneOp g(
        "moe_gating_grad",
        {{"dw", tensor(DType::F32, dwShape, std::vector<double>(nd, 1))},
         {"logits", tensor(DType::F32, logitShape, std::vector<double>(nl, 0))},
         {"idx", tensor(DType::I32, idxShape, std::move(idx))}},
        DType::F32, logitShape, normalizeAttr(true));
    return g.run();
  };
  // Leading dimensions 2 and 3 differ.
  std::string leading = run({2, 2}, {3, 4}, {2, 2}, {0, 1, 2, 3});
  EXPECT_EQ(leading.rfind("test.moe_gating_grad: ", 0), 0u) << leading;
  EXPECT_NE(leading.find("same leading dimensions"), std::string::npos)
      << leading;
  // dweights [2, 3] against indices [2, 2].
  EXPECT_NE(run({2, 3}, {2, 4}, {2, 2}, {0, 1, 2, 3}).find("logits [2, 4]"),
            std::string::npos);
  std::string range = run({2, 2}, {2, 4}, {2, 2}, {0, 1, 4, 3});
  EXPECT_NE(range.find("expert index 4 is outside [0, E) for E = 4"),
            std::string::npos)
      << range;
  EXPECT_NE(run({1, 2}, {1, 4}, {1, 2}, {-1, 0}).find("expert index -1"),
            std::string::npos);
}

// Three experts of K = N = 2: W0 = I, W1 = [[1, 2], [3, 4]], W2 = [[0, 1],
// [1, 0]] (swaps), as [E, K, N] and as [E, N, K] (each transposed).
Tensor expertWeights(bool transposed) {
  return tensor(DType::F32, {3, 2, 2},
                transposed
                    ? std::vector<double>{1, 0, 0, 1, 1, 3, 2, 4, 0, 1, 1, 0}
                    : std::vector<double>{1, 0, 0, 1, 1, 2, 3, 4, 0, 1, 1, 0});
}

std::map<std::string, Attr> transposeAttr(bool transposed) {
  return {{"transpose_weight", Attr::ofBool(transposed)}};
}

TEST(ExpertMatmul, SharedInputRowFeedsEveryOneOfItsSlots) {
  // Token 0 x = [1, 2] picks experts [1, 0]: x W1 = [1 + 6, 2 + 8] = [7, 10],
  // x W0 = [1, 2]. Token 1 x = [3, -1] picks [2, 1]: x W2 = [-1, 3],
  // x W1 = [3 - 3, 6 - 4] = [0, 2]. The transposed weight gives the same.
  for (bool transposed : {false, true}) {
    OneOp g("expert_matmul",
            {{"x", tensor(DType::F32, {2, 2}, {1, 2, 3, -1})},
             {"w", expertWeights(transposed)},
             {"idx", tensor(DType::I32, {2, 2}, {1, 0, 2, 1})}},
            DType::F32, {2, 2, 2}, transposeAttr(transposed));
    expectOp(g, {2, 2, 2}, {7, 10, 1, 2, -1, 3, 0, 2});
  }
}

TEST(ExpertMatmul, PerSlotInputRowsWithLeadingDimensions) {
  // L = [1, 2], k = 2: slot rows [1, 2] -> W1 = [7, 10]; [0, 1] -> W0 =
  // [0, 1]; [1, 1] -> W2 = [1, 1]; [2, 0] -> W1 = [2, 4].
  for (bool transposed : {false, true}) {
    OneOp g("expert_matmul",
            {{"x", tensor(DType::F32, {1, 2, 2, 2}, {1, 2, 0, 1, 1, 1, 2, 0})},
             {"w", expertWeights(transposed)},
             {"idx", tensor(DType::I64, {1, 2, 2}, {1, 0, 2, 1})}},
            DType::F32, {1, 2, 2, 2}, transposeAttr(transposed));
    expectOp(g, {1, 2, 2, 2}, {7, 10, 0, 1, 1, 1, 2, 4});
  }
}

TEST(ExpertMatmul, IndexOutsideTheExpertsIsAnError) {
  for (double bad : {3.0, -1.0}) {
    OneOp g("expert_matmul",
            {{"x", tensor(DType::F32, {2, 2}, {1, 2, 3, -1})},
             {"w", expertWeights(false)},
             {"idx", tensor(DType::I32, {2, 2}, {1, 0, bad, 1})}},
            DType::F32, {2, 2, 2}, transposeAttr(false));
    std::string err = g.run();
    EXPECT_EQ(err.rfind("test.expert_matmul: ", 0), 0u) << err;
    EXPECT_NE(err.find("expert index " + std::to_string(int(bad)) +
                       " is outside [0, E) for E = 3"),
              std::string::npos)
        << err;
  }
}

TEST(ExpertMatmul, MismatchedShapesAndFloatIndicesAreErrors) {
  auto run = [](Tensor x, Tensor idx, std::vector<int64_t> outShape) {
    OneOp g("expert_matmul",
            {{"x", std::move(x)}, {"w", expertWeights(false)}, {"idx", idx}},
            DType::F32, outShape, transposeAttr(false));
    return g.run();
  };
  Tensor idx = tensor(DType::I32, {2, 2}, {1, 0, 2, 1});
  // Three tokens of input for two of indices.
  std::string leading =
      run(tensor(DType::F32, {3, 2}, std::vector<double>(6)), idx, {2, 2, 2});
  EXPECT_NE(leading.find("input [3, 2] must be [2, K] (one row per token) or "
                         "[2, 2, K] (one row per slot) for indices [2, 2]"),
            std::string::npos)
      << leading;
  // Rank 4 is neither shared nor per slot for rank-2 indices.
  EXPECT_NE(run(tensor(DType::F32, {2, 2, 1, 2}, std::vector<double>(8)), idx,
                {2, 2, 2})
                .find("one row per slot"),
            std::string::npos);
  // K = 3 against the weight's 2.
  EXPECT_NE(
      run(tensor(DType::F32, {2, 3}, std::vector<double>(6)), idx, {2, 2, 2})
          .find("give K = 3 and 2"),
      std::string::npos);
  std::string floats = run(tensor(DType::F32, {2, 2}, {1, 2, 3, 4}),
                           tensor(DType::F32, {2, 2}, {1, 0, 2, 1}), {2, 2, 2});
  EXPECT_NE(floats.find("indices must have an integer element type, got f32"),
            std::string::npos)
      << floats;
  // The result shape is checked against the declaration before allocating.
  EXPECT_NE(run(tensor(DType::F32, {2, 2}, {1, 2, 3, 4}), idx, {2, 2, 3})
                .find("computes shape [2, 2, 2]"),
            std::string::npos);
}

TEST(ExpertMatmulWeightGrad, SumsTheSlotsOfEachExpertAndZerosTheUnchosen) {
  // Shared rows x0 = [1, 2], x1 = [3, -1]; experts [[1, 0], [0, 3]] of E =
  // 4; grad rows g00 = [1, 0], g01 = [0, 1], g10 = [2, 1], g11 = [1, -1].
  //   expert 0 (twice): x0^T g01 + x1^T g10 = [[0, 1], [0, 2]] + [[6, 3],
  //     [-2, -1]] = [[6, 4], [-2, 1]];
  //   expert 1: x0^T g00 = [[1, 0], [2, 0]]; expert 2 (nobody): zeros;
  //   expert 3: x1^T g11 = [[3, -3], [-1, 1]].
  // Transposed, each expert's 2 x 2 block is transposed.
  for (bool transposed : {false, true}) {
    OneOp g("expert_matmul_weight_grad",
            {{"x", tensor(DType::F32, {2, 2}, {1, 2, 3, -1})},
             {"g", tensor(DType::F32, {2, 2, 2}, {1, 0, 0, 1, 2, 1, 1, -1})},
             {"idx", tensor(DType::I32, {2, 2}, {1, 0, 0, 3})}},
            DType::F32, {4, 2, 2},
            {{"experts", Attr::ofNumber(4)},
             {"transpose_weight", Attr::ofBool(transposed)}});
    if (transposed)
      expectOp(g, {4, 2, 2},
               {6, -2, 4, 1, 1, 2, 0, 0, 0, 0, 0, 0, 3, -1, -3, 1});
    else
      expectOp(g, {4, 2, 2},
               {6, 4, -2, 1, 1, 0, 2, 0, 0, 0, 0, 0, 3, -3, -1, 1});
  }
}

TEST(ExpertMatmulWeightGrad, IsTheGradientOfExpertMatmulDottedWithGrad) {
  // sum(G * expert_matmul(X, W)) is linear in W with gradient dW, so it equals
  // sum(W * dW). Per-slot X [2, 2, 3] (K = 3), N = 2, E = 3; small integers
  // keep every product and sum exact in f32.
  Tensor x =
      tensor(DType::F32, {2, 2, 3}, {1, -2, 0, 3, 1, 2, -1, 0, 4, 2, 2, -3});
  Tensor grad = tensor(DType::F32, {2, 2, 2}, {1, 2, -1, 3, 0, -2, 4, 1});
  Tensor idx = tensor(DType::I32, {2, 2}, {2, 0, 2, 1});
  std::vector<double> w = {1, 0, -1, 2,  3, 1, 0, -2, 1,
                           1, 2, 0,  -1, 3, 1, 0, 2,  -2};
  for (bool transposed : {false, true}) {
    std::vector<int64_t> wShape = transposed ? std::vector<int64_t>{3, 2, 3}
                                             : std::vector<int64_t>{3, 3, 2};
    OneOp y("expert_matmul",
            {{"x", x}, {"w", tensor(DType::F32, wShape, w)}, {"idx", idx}},
            DType::F32, {2, 2, 2}, transposeAttr(transposed));
    ASSERT_EQ(y.run(), "");
    OneOp dw("expert_matmul_weight_grad", {{"x", x}, {"g", grad}, {"idx", idx}},
             DType::F32, wShape,
             {{"experts", Attr::ofNumber(3)},
              {"transpose_weight", Attr::ofBool(transposed)}});
    ASSERT_EQ(dw.run(), "");
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < grad.data.size(); ++i)
      lhs += grad.data[i] * y.out().data[i];
    for (size_t i = 0; i < w.size(); ++i)
      rhs += w[i] * dw.out().data[i];
    EXPECT_EQ(lhs, rhs) << (transposed ? "transposed" : "plain");
    // Expert 1 is chosen only by slot (1, 1): x = [2, 2, -3], g = [4, 1].
    std::vector<double> e1(dw.out().data.begin() + 6,
                           dw.out().data.begin() + 12);
    EXPECT_EQ(e1, (transposed ? std::vector<double>{8, 8, -12, 2, 2, -3}
                              : std::vector<double>{8, 2, 8, 2, -12, -3}));
  }
}

TEST(ExpertMatmulWeightGrad, MalformedOperandsAreErrors) {
  auto run = [](Tensor x, Tensor g, Tensor idx, double experts,
                std::vector<int64_t> outShape) {
    OneOp op("expert_matmul_weight_grad",
             {{"x", std::move(x)}, {"g", std::move(g)}, {"idx", idx}},
             DType::F32, outShape,
             {{"experts", Attr::ofNumber(experts)},
              {"transpose_weight", Attr::ofBool(false)}});
    return op.run();
  };
  Tensor x = tensor(DType::F32, {2, 2}, {1, 2, 3, -1});
  Tensor g = tensor(DType::F32, {2, 2, 2}, std::vector<double>(8, 1));
  Tensor idx = tensor(DType::I32, {2, 2}, {1, 0, 0, 3});
  EXPECT_EQ(run(x, g, idx, 4, {4, 2, 2}), "");
  std::string grad =
      run(x, tensor(DType::F32, {3, 2, 2}, std::vector<double>(12)), idx, 4,
          {4, 2, 2});
  EXPECT_NE(grad.find("grad [3, 2, 2] must be [2, 2, N]"), std::string::npos)
      << grad;
  EXPECT_NE(run(x, g, idx, 3, {3, 2, 2}).find("expert index 3"),
            std::string::npos);
  EXPECT_NE(run(x, g, idx, 0, {0, 2, 2}).find("experts 0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(run(x, g, idx, 4, {5, 2, 2}).find("computes shape [4, 2, 2]"),
            std::string::npos);
  EXPECT_NE(run(tensor(DType::F32, {3, 2}, std::vector<double>(6)), g, idx, 4,
                {4, 2, 2})
                .find("input [3, 2] must be"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TEST(DataMovement, ReshapeKeepsRowMajorOrder) {
  OneOp g("reshape", {{"x", tensor(DType::I32, {2, 3}, {0, 1, 2, 3, 4, 5})}},
          DType::I32, {3, 2}, {{"shape", Attr::ofInts({3, 2})}});
  expectOp(g, {3, 2}, {0, 1, 2, 3, 4, 5});
}

TEST(DataMovement, Transpose) {
  OneOp g("transpose", {{"x", tensor(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5})}},
          DType::F32, {3, 2}, {{"permutation", Attr::ofInts({1, 0})}});
  expectOp(g, {3, 2}, {0, 3, 1, 4, 2, 5});
  // [2, 2, 2] -> permutation [2, 0, 1]: out[a][b][c] = in[b][c][a].
  OneOp g3("transpose",
           {{"x", tensor(DType::F32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}},
           DType::F32, {2, 2, 2}, {{"permutation", Attr::ofInts({2, 0, 1})}});
  expectOp(g3, {2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
}

TEST(DataMovement, StridedSlice) {
  std::vector<double> x;
  for (int i = 0; i < 12; ++i)
    x.push_back(i);
  OneOp g("slice", {{"x", tensor(DType::F32, {3, 4}, x)}}, DType::F32, {2, 2},
          {{"offsets", Attr::ofInts({1, 0})},
           {"sizes", Attr::ofInts({2, 2})},
           {"strides", Attr::ofInts({1, 3})}});
  expectOp(g, {2, 2}, {4, 7, 8, 11});
  OneOp oob(
      "slice", {{"x", tensor(DType::F32, {3, 4}, x)}}, DType::F32, {2, 2},
      {{"offsets", Attr::ofInts({2, 0})}, {"sizes", Attr::ofInts({2, 2})}});
  EXPECT_NE(oob.run().find("out of bounds"), std::string::npos);
}

TEST(DataMovement, ConcatAndKVCacheAppend) {
  OneOp g("concat",
          {{"a", tensor(DType::F32, {2, 1}, {1, 2})},
           {"b", tensor(DType::F32, {2, 2}, {3, 4, 5, 6})}},
          DType::F32, {2, 3}, {{"axis", Attr::ofNumber(1)}});
  expectOp(g, {2, 3}, {1, 3, 4, 2, 5, 6});
  OneOp kv("kv_cache_append",
           {{"c", tensor(DType::BF16, {1, 2, 1, 1}, {1, 2})},
            {"u", tensor(DType::BF16, {1, 2, 1, 1}, {3, 4})}},
           DType::BF16, {1, 2, 2, 1});
  expectOp(kv, {1, 2, 2, 1}, {1, 3, 2, 4});
}

TEST(DataMovement, CastRoundsAndTruncates) {
  auto x = tensor(DType::F32, {3}, {-2.75, 1 + std::ldexp(1, -8), 300});
  OneOp toI8("cast", {{"x", x}}, DType::I8, {3},
             {{"element_type", Attr::ofString("i8")}});
  expectOp(toI8, {3}, {-2, 1, 44});
  OneOp toBF16("cast", {{"x", x}}, DType::BF16, {3},
               {{"element_type", Attr::ofString("bf16")}});
  expectOp(toBF16, {3}, {-2.75, 1, 300});
  OneOp toE4M3("cast", {{"x", x}}, DType::F8E4M3FN, {3},
               {{"element_type", Attr::ofString("f8e4m3fn")}});
  // -2.75 = -1.375 * 2: exact in e4m3; 300 -> 288 (ulp 32 at 2^8).
  expectOp(toE4M3, {3}, {-2.75, 1, 288});
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

TEST(AllReduce, GroupOfOneIsItsInput) {
  // The sum over one device: the values exactly, in the input's dtype.
  OneOp f32("all_reduce",
            {{"x", tensor(DType::F32, {2, 2}, {1.5, -2, 0.375, 0x1p127})}},
            DType::F32, {2, 2}, {{"group_size", Attr::ofNumber(1)}});
  expectOp(f32, {2, 2}, {1.5, -2, 0.375, 0x1p127});
  OneOp bf16(
      "all_reduce",
      {{"x", tensor(DType::BF16, {3}, {1 + std::ldexp(1, -7), -0.5, 65536})}},
      DType::BF16, {3}, {{"group_size", Attr::ofNumber(1)}});
  expectOp(bf16, {3}, {1 + std::ldexp(1, -7), -0.5, 65536});
}

TEST(AllReduce, LargerGroupNeedsTheOtherDevices) {
  OneOp g("all_reduce", {{"x", tensor(DType::F32, {2}, {1, 2})}}, DType::F32,
          {2}, {{"group_size", Attr::ofNumber(2)}});
  EXPECT_EQ(g.run(), "test.all_reduce: 'all_reduce' sums over a group of 2 "
                     "devices, but the reference interpreter evaluates one "
                     "device: an all-reduce over 2 devices needs the other "
                     "devices' partial sums");
}

TEST(AllReduce, GroupSizeIsARequiredPositiveInteger) {
  auto x = tensor(DType::F32, {2}, {1, 2});
  OneOp missing("all_reduce", {{"x", x}}, DType::F32, {2});
  EXPECT_EQ(missing.run(),
            "test.all_reduce: 'all_reduce' needs attribute 'group_size'");
  OneOp zero("all_reduce", {{"x", x}}, DType::F32, {2},
             {{"group_size", Attr::ofNumber(0)}});
  EXPECT_EQ(zero.run(), "test.all_reduce: 'all_reduce' has group_size 0, "
                        "expected at least 1");
  OneOp fraction("all_reduce", {{"x", x}}, DType::F32, {2},
                 {{"group_size", Attr::ofNumber(1.5)}});
  EXPECT_EQ(fraction.run(), "test.all_reduce: 'all_reduce' attribute "
                            "'group_size' must be an integer");
  OneOp cast("all_reduce", {{"x", x}}, DType::BF16, {2},
             {{"group_size", Attr::ofNumber(1)}});
  EXPECT_EQ(cast.run(), "test.all_reduce: 'all_reduce' input has element "
                        "type f32 but the result is bf16");
}

//===----------------------------------------------------------------------===//
// Graphs and errors
//===----------------------------------------------------------------------===//

TEST(Evaluate, ChainsOpsThroughNamedValues) {
  Graph graph;
  graph.values = {
      {"x", DType::F32, {2}}, {"t", DType::F32, {2}}, {"y", DType::BF16, {2}}};
  Op relu;
  relu.op = "relu";
  relu.loc = "r";
  relu.operands = {"x"};
  relu.results = {"t"};
  Op cast;
  cast.op = "cast";
  cast.loc = "c";
  cast.operands = {"t"};
  cast.results = {"y"};
  cast.attrs["element_type"] = Attr::ofString("bf16");
  graph.ops = {relu, cast};
  std::map<std::string, Tensor> values;
  values["x"] = tensor(DType::F32, {2}, {-1, 1 + std::ldexp(1, -8)});
  ASSERT_EQ(evaluate(graph, values), "");
  expectData(values.at("t"), {0, 1 + std::ldexp(1, -8)});
  expectData(values.at("y"), {0, 1});
}

TEST(Evaluate, F32PrecisionRoundsNoIntermediateToItsStorageType) {
  // bf16: t = x + y, s = cast<bf16>(t), z = t * 3, k = reshape(i32 ids).
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: declared rounds it to
  // 1 (even), f32 keeps it; 3 x (1 + 2^-8) = 3.01171875, bf16 3 or 3.015625.
  Graph graph;
  for (const char *name : {"x", "y", "t", "s", "three", "z"})
    graph.values.push_back({name, DType::BF16, {1}});
  graph.values.push_back({"ids", DType::I32, {1}});
  graph.values.push_back({"k", DType::I32, {1}});
  Op add;
  add.op = "add";
  add.operands = {"x", "y"};
  add.results = {"t"};
  Op cast;
  cast.op = "cast";
  cast.operands = {"t"};
  cast.results = {"s"};
  cast.attrs["element_type"] = Attr::ofString("bf16");
  Op three;
  three.op = "constant";
  three.results = {"three"};
  three.attrs["value"] = Attr::ofNumber(3);
  Op mul;
  mul.op = "mul";
  mul.operands = {"t", "three"};
  mul.results = {"z"};
  Op reshape;
  reshape.op = "reshape";
  reshape.operands = {"ids"};
  reshape.results = {"k"};
  reshape.attrs["shape"] = Attr::ofInts({1});
  graph.ops = {add, cast, three, mul, reshape};
  auto inputs = [] {
    std::map<std::string, Tensor> values;
    values["x"] = tensor(DType::BF16, {1}, {1});
    values["y"] = tensor(DType::BF16, {1}, {std::ldexp(1, -8)});
    values["ids"] = tensor(DType::I32, {1}, {7});
    return values;
  };

  std::map<std::string, Tensor> declared = inputs();
  ASSERT_EQ(evaluate(graph, declared), "");
  EXPECT_EQ(declared.at("t").dtype, DType::BF16);
  expectData(declared.at("t"), {1});
  expectData(declared.at("z"), {3});

  std::map<std::string, Tensor> f32 = inputs();
  ASSERT_EQ(evaluate(graph, f32, Precision::F32), "");
  for (const char *name : {"x", "y", "t", "s", "z"})
    EXPECT_EQ(f32.at(name).dtype, DType::F32) << name;
  EXPECT_EQ(f32.at("k").dtype, DType::I32);
  expectData(f32.at("t"), {1 + std::ldexp(1, -8)});
  expectData(f32.at("s"), {1 + std::ldexp(1, -8)}); // not rounded to bf16
  expectData(f32.at("z"), {3.01171875});
  expectData(f32.at("k"), {7});
}

TEST(Evaluate, UnknownOpIsNamed) {
  OneOp g("fancy", {{"x", tensor(DType::F32, {1}, {1})}}, DType::F32, {1});
  EXPECT_EQ(g.run(),
            "test.fancy: the reference interpreter does not support 'fancy'");
}

TEST(Evaluate, MissingOperandIsNamed) {
  OneOp g("relu", {{"x", tensor(DType::F32, {1}, {1})}}, DType::F32, {1});
  g.values.erase("x");
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.relu: operand 'x'", 0), 0u) << err;
}

TEST(Evaluate, ResultShapeMismatchNamesTheOp) {
  OneOp g("add",
          {{"x", tensor(DType::F32, {2}, {1, 2})},
           {"y", tensor(DType::F32, {2}, {1, 2})}},
          DType::F32, {3});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.add: ", 0), 0u) << err;
  EXPECT_NE(err.find("[2]"), std::string::npos) << err;
  EXPECT_NE(err.find("[3]"), std::string::npos) << err;
}

TEST(Evaluate, InputNotMatchingItsDeclarationIsAnError) {
  OneOp g("relu", {{"x", tensor(DType::F32, {2}, {1, 2})}}, DType::F32, {2});
  g.values["x"] = tensor(DType::BF16, {2}, {1, 2});
  EXPECT_NE(g.run().find("operand 'x' is [2] bf16"), std::string::npos);
}

TEST(Evaluate, IncompatibleBroadcastIsAnError) {
  OneOp g("mul",
          {{"x", tensor(DType::F32, {2}, {1, 2})},
           {"y", tensor(DType::F32, {3}, {1, 2, 3})}},
          DType::F32, {3});
  EXPECT_NE(g.run().find("cannot broadcast [2] with [3]"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// compare()
//===----------------------------------------------------------------------===//

TEST(Compare, BF16ToleranceBoundaryScaledByMagnitudeOrRms) {
  // rms([2, 0]) = sqrt(2): element 0 scales by |2|, element 1 by sqrt(2).
  Tensor ref = tensor(DType::BF16, {2}, {2, 0});
  Comparison in = compare(tensor(DType::BF16, {2}, {2 * 1.0099, 0}), ref);
  EXPECT_TRUE(in.passed);
  EXPECT_EQ(in.tolerance, 1e-2);
  EXPECT_NEAR(in.maxRelError, 0.0099, 1e-12);
  EXPECT_NEAR(in.maxAbsError, 2 * 0.0099, 1e-12);
  EXPECT_FALSE(compare(tensor(DType::BF16, {2}, {2 * 1.0101, 0}), ref).passed);
  EXPECT_TRUE(
      compare(tensor(DType::BF16, {2}, {2, 0.0099 * std::sqrt(2.0)}), ref)
          .passed);
  EXPECT_FALSE(
      compare(tensor(DType::BF16, {2}, {2, 0.0101 * std::sqrt(2.0)}), ref)
          .passed);
}

TEST(Compare, F32ToleranceBoundary) {
  Tensor ref = tensor(DType::F32, {1}, {4});
  Comparison in = compare(tensor(DType::F32, {1}, {4 + 4 * 0.99e-5}), ref);
  EXPECT_TRUE(in.passed);
  EXPECT_EQ(in.tolerance, 1e-5);
  EXPECT_FALSE(compare(tensor(DType::F32, {1}, {4 + 4 * 1.01e-5}), ref).passed);
}

TEST(Compare, IntegersMustMatchExactly) {
  Tensor ref = tensor(DType::I32, {2}, {1000000, 0});
  EXPECT_TRUE(compare(ref, ref).passed);
  EXPECT_FALSE(compare(tensor(DType::I32, {2}, {1000001, 0}), ref).passed);
}

TEST(Compare, NaNShapeAndAllZeroReference) {
  Tensor ref = tensor(DType::F32, {2}, {1, 2});
  EXPECT_FALSE(compare(tensor(DType::F32, {2}, {1, std::nan("")}), ref).passed);
  EXPECT_FALSE(compare(tensor(DType::F32, {1, 2}, {1, 2}), ref).passed);
  Tensor nanRef = tensor(DType::F32, {1}, {std::nan("")});
  EXPECT_TRUE(compare(nanRef, nanRef).passed);
  // An all-zero reference scales by 1.
  Tensor zeros = tensor(DType::BF16, {2}, {0, 0});
  EXPECT_TRUE(compare(tensor(DType::BF16, {2}, {0.0099, 0}), zeros).passed);
  EXPECT_FALSE(compare(tensor(DType::BF16, {2}, {0.0101, 0}), zeros).passed);
}

} // namespace

TEST(Compare, Fp8ChecksAllowOneUlpOfTheirFormat) {
  // By hand: e4m3 keeps 3 mantissa bits (ulp 2^-3 of the leading power of
  // two), e5m2 2 (2^-2); one rounding flip is one ulp.
  EXPECT_EQ(checkTolerance(DType::F8E4M3FN, 0), 0.125);
  EXPECT_EQ(checkTolerance(DType::F8E5M2, 0.02), 0.25);
  EXPECT_EQ(checkTolerance(DType::F8E4M3FN, 0.3), 0.3);
  // Other types keep what was asked.
  EXPECT_EQ(checkTolerance(DType::BF16, 0.02), 0.02);
  EXPECT_EQ(checkTolerance(DType::BF16, 0), 1e-2);
  EXPECT_EQ(checkTolerance(DType::I32, 0), 0);
}
