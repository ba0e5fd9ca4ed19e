//===- GradientOpsTest.cpp - reference backward and optimizer ops ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each gradient op is checked against an independent computation: central
// finite differences of the forward op the interpreter already has (loss =
// sum(forward(x) * r) for a fixed random r, so the op's incoming gradient is
// r). Data movement and AdamW are checked against values worked by hand.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>

using namespace memwall::reference;

namespace {

using Shape = std::vector<int64_t>;
using Data = std::vector<double>;

Tensor tensor(DType type, Shape shape, Data data) {
  Tensor t;
  t.dtype = type;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

Tensor f32(Shape shape, Data data) {
  return tensor(DType::F32, std::move(shape), std::move(data));
}

int64_t count(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Uniform values in [lo, hi), rounded to f32, from a fixed seed.
Data randomData(int64_t n, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Data d(n);
  for (double &v : d)
    v = static_cast<float>(dist(gen));
  return d;
}

/// A one-op graph with any number of results.
struct OneOp {
  Graph graph;
  std::map<std::string, Tensor> values;

  OneOp(const std::string &name, std::vector<std::pair<std::string, Tensor>> in,
        std::vector<ValueInfo> results, std::map<std::string, Attr> attrs = {}) {
    Op op;
    op.op = name;
    op.loc = "test." + name;
    for (auto &[n, t] : in) {
      graph.values.push_back({n, t.dtype, t.shape});
      op.operands.push_back(n);
      values[n] = t;
    }
    for (const ValueInfo &r : results) {
      graph.values.push_back(r);
      op.results.push_back(r.name);
    }
    op.attrs = std::move(attrs);
    graph.ops.push_back(op);
  }

  std::string run() { return evaluate(graph, values); }
  const Tensor &at(const std::string &name) { return values.at(name); }
};

/// Runs a single-result op and returns its result (empty on failure).
Tensor runOne(const std::string &name,
              std::vector<std::pair<std::string, Tensor>> in, DType type,
              Shape shape, std::map<std::string, Attr> attrs = {}) {
  OneOp g(name, std::move(in), {{"out", type, shape}}, std::move(attrs));
  std::string err = g.run();
  EXPECT_EQ(err, "");
  if (!err.empty())
    return Tensor();
  return g.at("out");
}

double dot(const Data &a, const Data &b) {
  EXPECT_EQ(a.size(), b.size());
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// Central differences of `loss` at `x`, step h; each perturbed value is
/// rounded to f32 (the operands are f32) and divided by the actual step.
Data finiteDifferences(const Data &x,
                       const std::function<double(const Data &)> &loss,
                       double h = 1e-2) {
  Data grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    Data xp = x, xm = x;
    xp[i] = static_cast<float>(x[i] + h);
    xm[i] = static_cast<float>(x[i] - h);
    grad[i] = (loss(xp) - loss(xm)) / (xp[i] - xm[i]);
  }
  return grad;
}

/// |got - want| <= rel * max(|want|, rms(want)) + 1e-6, element by element.
void expectClose(const Data &got, const Data &want, double rel = 2e-3,
                 const std::string &what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  double sq = 0;
  for (double w : want)
    sq += w * w;
  double rms = want.empty() ? 0 : std::sqrt(sq / want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_LE(std::fabs(got[i] - want[i]),
              rel * std::max(std::fabs(want[i]), rms) + 1e-6)
        << what << " element " << i << ": got " << got[i] << ", want "
        << want[i];
}

//===----------------------------------------------------------------------===//
// Pointwise activations
//===----------------------------------------------------------------------===//

TEST(ActivationGrad, EveryActivationMatchesFiniteDifferencesOfItsForward) {
  Shape shape = {2, 7};
  Data x = randomData(14, 1, -3, 3);
  for (double &v : x) // keep relu's kink away from the step
    if (std::fabs(v) < 0.1)
      v = 0.5;
  Data r = randomData(14, 2);
  struct Case {
    const char *grad, *forward;
    std::map<std::string, Attr> attrs;
  };
  std::vector<Case> cases = {
      {"gelu_erf", "gelu", {{"approximation", Attr::ofString("erf")}}},
      {"gelu_tanh", "gelu", {{"approximation", Attr::ofString("tanh")}}},
      {"silu", "silu", {}},
      {"relu", "relu", {}},
      {"tanh", "tanh", {}}};
  for (const Case &c : cases) {
    auto loss = [&](const Data &xs) {
      return dot(runOne(c.forward, {{"x", f32(shape, xs)}}, DType::F32, shape,
                        c.attrs)
                     .data,
                 r);
    };
    Tensor dx = runOne(
        "activation_grad", {{"x", f32(shape, x)}, {"dy", f32(shape, r)}},
        DType::F32, shape, {{"activation", Attr::ofString(c.grad)}});
    expectClose(dx.data, finiteDifferences(x, loss), 2e-3, c.grad);
  }
}

TEST(ActivationGrad, ReluAndTanhExactValues) {
  // relu' = [x > 0]; tanh'(0) = 1, so dx = dy there.
  Tensor dx = runOne("activation_grad",
                     {{"x", f32({3}, {-1, 0, 2})}, {"dy", f32({3}, {5, 6, 7})}},
                     DType::F32, {3}, {{"activation", Attr::ofString("relu")}});
  EXPECT_EQ(dx.data, (Data{0, 0, 7}));
  dx = runOne("activation_grad",
              {{"x", f32({1}, {0})}, {"dy", f32({1}, {3})}}, DType::F32, {1},
              {{"activation", Attr::ofString("tanh")}});
  EXPECT_EQ(dx.data, (Data{3}));
}

TEST(ActivationGrad, UnknownActivationIsAnError) {
  OneOp g("activation_grad",
          {{"x", f32({2}, {1, 2})}, {"dy", f32({2}, {1, 1})}},
          {{"out", DType::F32, {2}}},
          {{"activation", Attr::ofString("softplus")}});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.activation_grad: ", 0), 0u) << err;
  EXPECT_NE(err.find("softplus"), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

TEST(LayerNormGrad, InputWeightAndBiasGradsMatchFiniteDifferences) {
  const int64_t R = 3, D = 5;
  Shape xs = {R, D}, ws = {D};
  Data x = randomData(R * D, 3, -2, 2), w = randomData(D, 4, 0.5, 1.5),
       b = randomData(D, 5), r = randomData(R * D, 6);
  std::map<std::string, Attr> eps = {{"epsilon", Attr::ofNumber(1e-3)}};
  auto forward = [&](const Data &xv, const Data &wv, const Data &bv) {
    return dot(runOne("layer_norm",
                      {{"x", f32(xs, xv)}, {"w", f32(ws, wv)},
                       {"b", f32(ws, bv)}},
                      DType::F32, xs, eps)
                   .data,
               r);
  };
  auto attrs = eps;
  attrs["has_bias"] = Attr::ofBool(true);
  OneOp g("layer_norm_grad",
          {{"x", f32(xs, x)}, {"w", f32(ws, w)}, {"dy", f32(xs, r)}},
          {{"dx", DType::F32, xs}, {"dw", DType::F32, ws},
           {"db", DType::F32, ws}},
          attrs);
  ASSERT_EQ(g.run(), "");
  expectClose(g.at("dx").data,
              finiteDifferences(
                  x, [&](const Data &v) { return forward(v, w, b); }),
              2e-3, "dx");
  expectClose(g.at("dw").data,
              finiteDifferences(
                  w, [&](const Data &v) { return forward(x, v, b); }),
              2e-3, "dweight");
  expectClose(g.at("db").data,
              finiteDifferences(
                  b, [&](const Data &v) { return forward(x, w, v); }),
              2e-3, "dbias");
}

TEST(LayerNormGrad, WithoutBiasHasTwoResultsAndRejectsThree) {
  Shape xs = {2, 3}, ws = {3};
  Data x = {1, 2, 4, -1, 0, 1}, w = {1, 1, 1}, dy = {1, 0, 0, 0, 1, 0};
  OneOp g("layer_norm_grad",
          {{"x", f32(xs, x)}, {"w", f32(ws, w)}, {"dy", f32(xs, dy)}},
          {{"dx", DType::F32, xs}, {"dw", DType::F32, ws}});
  ASSERT_EQ(g.run(), "");
  // dweight = sum over rows of dy * xhat: row 1's dy picks xhat[0] of
  // [1, 2, 4]; row 2's picks xhat[1] of [-1, 0, 1], which is 0.
  double m = 7.0 / 3, var = (std::pow(1 - m, 2) + std::pow(2 - m, 2) +
                             std::pow(4 - m, 2)) / 3;
  EXPECT_NEAR(g.at("dw").data[0], (1 - m) / std::sqrt(var + 1e-5), 1e-6);
  EXPECT_NEAR(g.at("dw").data[1], 0.0, 1e-6);
  EXPECT_NEAR(g.at("dw").data[2], 0.0, 1e-6);

  OneOp three("layer_norm_grad",
              {{"x", f32(xs, x)}, {"w", f32(ws, w)}, {"dy", f32(xs, dy)}},
              {{"dx", DType::F32, xs}, {"dw", DType::F32, ws},
               {"db", DType::F32, ws}});
  std::string err = three.run();
  EXPECT_EQ(err.rfind("test.layer_norm_grad: ", 0), 0u) << err;
}

TEST(RmsNormGrad, InputAndWeightGradsMatchFiniteDifferences) {
  const int64_t R = 2, C = 3, D = 4;
  Shape xs = {R, C, D}, ws = {D};
  Data x = randomData(R * C * D, 7, -2, 2), w = randomData(D, 8, 0.5, 1.5),
       r = randomData(R * C * D, 9);
  std::map<std::string, Attr> eps = {{"epsilon", Attr::ofNumber(1e-2)}};
  auto forward = [&](const Data &xv, const Data &wv) {
    return dot(runOne("rms_norm", {{"x", f32(xs, xv)}, {"w", f32(ws, wv)}},
                      DType::F32, xs, eps)
                   .data,
               r);
  };
  OneOp g("rms_norm_grad",
          {{"x", f32(xs, x)}, {"w", f32(ws, w)}, {"dy", f32(xs, r)}},
          {{"dx", DType::F32, xs}, {"dw", DType::F32, ws}}, eps);
  ASSERT_EQ(g.run(), "");
  expectClose(
      g.at("dx").data,
      finiteDifferences(x, [&](const Data &v) { return forward(v, w); }),
      2e-3, "dx");
  expectClose(
      g.at("dw").data,
      finiteDifferences(w, [&](const Data &v) { return forward(x, v); }),
      2e-3, "dweight");
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  int64_t B = 1, Hq = 2, Hkv = 2, Sq = 3, Sk = 3, D = 4, Dv = 3;
  bool causal = false;
  std::optional<Tensor> mask;
};

/// Checks dq, dk and dv of attention_grad against finite differences of
/// attention for the case's shapes, mask and causality.
void checkAttentionGrad(const AttentionCase &c, unsigned seed) {
  Shape qs = {c.B, c.Hq, c.Sq, c.D}, ks = {c.B, c.Hkv, c.Sk, c.D},
        vs = {c.B, c.Hkv, c.Sk, c.Dv}, os = {c.B, c.Hq, c.Sq, c.Dv};
  Data q = randomData(count(qs), seed, -1.5, 1.5),
       k = randomData(count(ks), seed + 1, -1.5, 1.5),
       v = randomData(count(vs), seed + 2), r = randomData(count(os), seed + 3);
  std::map<std::string, Attr> attrs = {{"causal", Attr::ofBool(c.causal)},
                                       {"scale", Attr::ofNumber(0.7)}};
  auto forward = [&](const Data &qv, const Data &kv, const Data &vv) {
    std::vector<std::pair<std::string, Tensor>> in = {
        {"q", f32(qs, qv)}, {"k", f32(ks, kv)}, {"v", f32(vs, vv)}};
    if (c.mask)
      in.push_back({"mask", *c.mask});
    return runOne("attention", in, DType::F32, os, attrs);
  };
  Tensor out = forward(q, k, v);
  std::vector<std::pair<std::string, Tensor>> in = {
      {"q", f32(qs, q)},   {"k", f32(ks, k)},    {"v", f32(vs, v)},
      {"o", out},          {"do", f32(os, r)}};
  if (c.mask)
    in.push_back({"mask", *c.mask});
  OneOp g("attention_grad", in,
          {{"dq", DType::F32, qs}, {"dk", DType::F32, ks},
           {"dv", DType::F32, vs}},
          attrs);
  ASSERT_EQ(g.run(), "");
  expectClose(g.at("dq").data, finiteDifferences(q, [&](const Data &x) {
                return dot(forward(x, k, v).data, r);
              }),
              2e-3, "dq");
  expectClose(g.at("dk").data, finiteDifferences(k, [&](const Data &x) {
                return dot(forward(q, x, v).data, r);
              }),
              2e-3, "dk");
  expectClose(g.at("dv").data, finiteDifferences(v, [&](const Data &x) {
                return dot(forward(q, k, x).data, r);
              }),
              2e-3, "dv");
}

TEST(AttentionGrad, NonCausalMatchesFiniteDifferences) {
  AttentionCase c;
  checkAttentionGrad(c, 10);
}

TEST(AttentionGrad, CausalMatchesFiniteDifferences) {
  AttentionCase c;
  c.B = 2;
  c.causal = true;
  checkAttentionGrad(c, 20);
}

TEST(AttentionGrad, GroupedQueryHeadsSumKeyAndValueGrads) {
  AttentionCase c;
  c.Hq = 4;
  c.Hkv = 2;
  c.causal = true;
  checkAttentionGrad(c, 30);
}

TEST(AttentionGrad, CausalWithFewerQueriesThanKeysIsBottomRightAligned) {
  AttentionCase c;
  c.Sq = 2;
  c.Sk = 4;
  c.causal = true;
  checkAttentionGrad(c, 40);
}

TEST(AttentionGrad, BoolMaskMatchesFiniteDifferences) {
  AttentionCase c;
  c.Sq = 3;
  c.Sk = 4;
  // [Sq, Sk] broadcast over batch and heads; each row keeps some keys.
  c.mask = tensor(DType::I1, {3, 4}, {1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1});
  checkAttentionGrad(c, 50);
}

TEST(AttentionGrad, FloatMaskAndFullyMaskedRowGiveZeroGradsThere) {
  AttentionCase c;
  c.Hq = 4;
  c.Hkv = 2;
  c.Sq = 2;
  c.Sk = 3;
  const double inf = std::numeric_limits<double>::infinity();
  // Per head [Hq, 1, Sk]; head 3 masks every key: its rows give zero.
  c.mask = f32({4, 1, 3}, {0.5, -1, 0, 0, 0, -inf, -inf, 0.25, 0, -inf, -inf,
                           -inf});
  checkAttentionGrad(c, 60);
}

//===----------------------------------------------------------------------===//
// Embedding, loss, rope
//===----------------------------------------------------------------------===//

TEST(EmbeddingGrad, RepeatedIndicesAccumulateIntoAZeroTable) {
  // indices [[2, 0], [2, 3]] into V = 4 rows of D = 2:
  //   row 0 = dy[0][1] = [3, 4]; row 1 untouched = [0, 0];
  //   row 2 = dy[0][0] + dy[1][0] = [1, 2] + [5, 6] = [6, 8];
  //   row 3 = dy[1][1] = [7, 8].
  Tensor t = runOne("embedding_grad",
                    {{"dy", f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
                     {"ids", tensor(DType::I64, {2, 2}, {2, 0, 2, 3})}},
                    DType::F32, {4, 2});
  EXPECT_EQ(t.shape, (Shape{4, 2}));
  EXPECT_EQ(t.data, (Data{3, 4, 0, 0, 6, 8, 7, 8}));
}

TEST(EmbeddingGrad, IndexOutOfRangeIsAnError) {
  OneOp g("embedding_grad",
          {{"dy", f32({2, 2}, {1, 2, 3, 4})},
           {"ids", tensor(DType::I32, {2}, {1, 3})}},
          {{"out", DType::F32, {3, 2}}});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.embedding_grad: ", 0), 0u) << err;
  EXPECT_NE(err.find("index 3"), std::string::npos) << err;
}

/// Checks cross_entropy_grad against finite differences of cross_entropy:
/// loss = forward * dloss (mean, sum) or sum(forward * dloss) (none).
void checkCrossEntropyGrad(const std::string &reduction,
                           std::optional<int64_t> ignore, unsigned seed) {
  Shape ls = {2, 3, 5}, labelShape = {2, 3};
  Data logits = randomData(30, seed, -2, 2);
  Tensor labels = tensor(DType::I64, labelShape, {4, 0, -100, 2, -100, 1});
  if (!ignore)
    labels.data = {4, 0, 3, 2, 1, 1};
  std::map<std::string, Attr> attrs = {
      {"reduction", Attr::ofString(reduction)}};
  if (ignore)
    attrs["ignore_index"] = Attr::ofNumber(static_cast<double>(*ignore));
  bool none = reduction == "none";
  Tensor dloss = none ? f32(labelShape, randomData(6, seed + 1))
                      : f32({}, {0.7});
  auto loss = [&](const Data &x) {
    Tensor l = runOne("cross_entropy", {{"x", f32(ls, x)}, {"y", labels}},
                      DType::F32, none ? labelShape : Shape{}, attrs);
    return dot(l.data, dloss.data);
  };
  Tensor g = runOne("cross_entropy_grad",
                    {{"x", f32(ls, logits)}, {"y", labels}, {"dl", dloss}},
                    DType::F32, ls, attrs);
  expectClose(g.data, finiteDifferences(logits, loss), 2e-3, reduction);
  if (ignore) // ignored positions (flat 2 and 4) get exactly zero
    for (int64_t p : {2, 4})
      for (int64_t j = 0; j < 5; ++j)
        EXPECT_EQ(g.data[p * 5 + j], 0.0) << "position " << p;
}

TEST(CrossEntropyGrad, MeanWithIgnoreIndexMatchesFiniteDifferences) {
  checkCrossEntropyGrad("mean", -100, 70);
}

TEST(CrossEntropyGrad, SumMatchesFiniteDifferences) {
  checkCrossEntropyGrad("sum", std::nullopt, 80);
}

TEST(CrossEntropyGrad, NoneWithPerPositionLossGradMatchesFiniteDifferences) {
  checkCrossEntropyGrad("none", -100, 90);
}

TEST(RopeInverse, UndoesTheForwardRotation) {
  Shape xs = {2, 2, 3, 6};
  Data x = randomData(count(xs), 100);
  Tensor pos = tensor(DType::I64, {2, 3}, {0, 5, 11, 3, 1000, 70000});
  Tensor y = runOne("rope", {{"x", f32(xs, x)}, {"p", pos}}, DType::F32, xs);
  Tensor back = runOne("rope", {{"y", y}, {"p", pos}}, DType::F32, xs,
                       {{"inverse", Attr::ofBool(true)}});
  expectClose(back.data, x, 1e-6);
  // inverse = false is the plain forward.
  Tensor same = runOne("rope", {{"x", f32(xs, x)}, {"p", pos}}, DType::F32, xs,
                       {{"inverse", Attr::ofBool(false)}});
  EXPECT_EQ(same.data, y.data);
}

TEST(RopeInverse, IsTheVectorJacobianProductOfTheForward) {
  Shape xs = {1, 2, 3, 4};
  Data x = randomData(count(xs), 110), r = randomData(count(xs), 111);
  Tensor pos = tensor(DType::I32, {3}, {1, 4, 9});
  std::map<std::string, Attr> theta = {{"theta", Attr::ofNumber(100.0)}};
  auto loss = [&](const Data &v) {
    return dot(
        runOne("rope", {{"x", f32(xs, v)}, {"p", pos}}, DType::F32, xs, theta)
            .data,
        r);
  };
  auto inv = theta;
  inv["inverse"] = Attr::ofBool(true);
  Tensor dx =
      runOne("rope", {{"dy", f32(xs, r)}, {"p", pos}}, DType::F32, xs, inv);
  expectClose(dx.data, finiteDifferences(x, loss), 2e-3);
}

//===----------------------------------------------------------------------===//
// Weight-only quantization
//===----------------------------------------------------------------------===//

TEST(Dequantize, EachElementTimesItsBlocksScale) {
  // q [2, 4] with scales [2, 2]: blocks of 1 row x 2 columns.
  //   row 0: (1, -2) x 0.5, (3, 4) x 2; row 1: (-128, 127) x 0.25, (0, 5) x -1
  Tensor t =
      runOne("dequantize",
             {{"q", tensor(DType::I8, {2, 4}, {1, -2, 3, 4, -128, 127, 0, 5})},
              {"s", f32({2, 2}, {0.5, 2, 0.25, -1})}},
             DType::F32, {2, 4});
  EXPECT_EQ(t.data, (Data{0.5, -1, 6, 8, -32, 31.75, 0, -5}));
}

TEST(Dequantize, ZeroPointsShiftEachBlockBeforeItsScale) {
  // Packed i4 q [1, 4] in blocks of 2 columns: (q - z) x s per block:
  //   (-8 - (-8)) x 0.5 = 0, (7 - (-8)) x 0.5 = 7.5, (3 - 2) x -1 = -1,
  //   (-1 - 2) x -1 = 3.
  Tensor t = runOne("dequantize",
                    {{"q", tensor(DType::I4, {1, 4}, {-8, 7, 3, -1})},
                     {"s", f32({1, 2}, {0.5, -1})},
                     {"z", f32({1, 2}, {-8, 2})}},
                    DType::F32, {1, 4});
  EXPECT_EQ(t.data, (Data{0, 7.5, -1, 3}));
  OneOp g("dequantize",
          {{"q", tensor(DType::I8, {1, 4}, Data(4, 1))},
           {"s", f32({1, 2}, Data(2, 1))},
           {"z", f32({1, 1}, Data(1, 0))}},
          {{"out", DType::F32, {1, 4}}});
  EXPECT_NE(g.run().find("zero points must have the scales' shape"),
            std::string::npos);
}

TEST(Dequantize, RoundsTheProductOnceToTheResultType) {
  // 3 x (1/3 in bf16: 0.333984375) = 1.001953125, not a bf16 value: rounds
  // to 1 (bf16 has 8 significant bits).
  Tensor t = runOne("dequantize",
                    {{"q", tensor(DType::I8, {1, 2}, {3, -3})},
                     {"s", tensor(DType::BF16, {1, 1}, {0.333984375})}},
                    DType::BF16, {1, 2});
  EXPECT_EQ(t.data, (Data{1, -1}));
}

TEST(Dequantize, CodebookMapsEachCodesUnsignedBitsBeforeItsScale) {
  // A 16-entry codebook c[i] = i / 4 - 2 on i4 codes: -8 is code 8
  // (c = 0), -1 is code 15 (1.75), 0 is code 0 (-2), 7 is code 7 (-0.25);
  // times the block's scale (blocks of 2 columns: 2, then -0.5).
  std::vector<double> codebook;
  for (int i = 0; i < 16; ++i)
    codebook.push_back(i / 4.0 - 2);
  Tensor t =
      runOne("dequantize",
             {{"q", tensor(DType::I4, {1, 4}, {-8, -1, 0, 7})},
              {"s", f32({1, 2}, {2, -0.5})}},
             DType::F32, {1, 4}, {{"codebook", Attr::ofNumbers(codebook)}});
  EXPECT_EQ(t.data, (Data{0, 3.5, 1, 0.125}));
  // A codebook of neither 16 nor 256 values is an error.
  OneOp g("dequantize",
          {{"q", tensor(DType::I4, {1, 4}, Data(4, 1))},
           {"s", f32({1, 2}, Data(2, 1))}},
          {{"out", DType::F32, {1, 4}}},
          {{"codebook", Attr::ofNumbers({0.5, 1.5, 2.5})}});
  EXPECT_NE(g.run().find("a codebook has 16 (i4) or 256 (i8) values"),
            std::string::npos);
}

TEST(Dequantize, ScalesThatDoNotDivideAreAnError) {
  OneOp g("dequantize",
          {{"q", tensor(DType::I8, {2, 4}, Data(8, 1))},
           {"s", f32({2, 3}, Data(6, 1))}},
          {{"out", DType::F32, {2, 4}}});
  EXPECT_EQ(g.run().rfind("test.dequantize: ", 0), 0u);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TEST(Broadcast, ColumnAndRowToMatrix) {
  Tensor t = runOne("broadcast", {{"x", f32({2, 1}, {1, 2})}}, DType::F32,
                    {2, 3}, {{"shape", Attr::ofInts({2, 3})}});
  EXPECT_EQ(t.data, (Data{1, 1, 1, 2, 2, 2}));
  t = runOne("broadcast", {{"x", f32({3}, {1, 2, 3})}}, DType::F32, {2, 3},
             {{"shape", Attr::ofInts({2, 3})}});
  EXPECT_EQ(t.data, (Data{1, 2, 3, 1, 2, 3}));
  t = runOne("broadcast", {{"x", f32({}, {5})}}, DType::F32, {2, 2},
             {{"shape", Attr::ofInts({2, 2})}});
  EXPECT_EQ(t.data, (Data{5, 5, 5, 5}));
}

TEST(Broadcast, IncompatibleShapeIsAnError) {
  OneOp g("broadcast", {{"x", f32({2}, {1, 2})}}, {{"out", DType::F32, {3}}},
          {{"shape", Attr::ofInts({3})}});
  EXPECT_EQ(g.run().rfind("test.broadcast: ", 0), 0u);
}

TEST(Pad, PlacesInputAtLowOffsetInZeros) {
  // [[1, 2], [3, 4]] low [1, 0] high [0, 1] -> 3x3:
  //   [[0, 0, 0], [1, 2, 0], [3, 4, 0]]
  Tensor t = runOne("pad", {{"x", f32({2, 2}, {1, 2, 3, 4})}}, DType::F32,
                    {3, 3},
                    {{"low", Attr::ofInts({1, 0})},
                     {"high", Attr::ofInts({0, 1})}});
  EXPECT_EQ(t.shape, (Shape{3, 3}));
  EXPECT_EQ(t.data, (Data{0, 0, 0, 1, 2, 0, 3, 4, 0}));
  // Integers pad too: [7] low [2] high [1] -> [0, 0, 7, 0].
  t = runOne("pad", {{"x", tensor(DType::I32, {1}, {7})}}, DType::I32, {4},
             {{"low", Attr::ofInts({2})}, {"high", Attr::ofInts({1})}});
  EXPECT_EQ(t.data, (Data{0, 0, 7, 0}));
}

TEST(Pad, NegativeLowIsAnError) {
  OneOp g("pad", {{"x", f32({2}, {1, 2})}}, {{"out", DType::F32, {1}}},
          {{"low", Attr::ofInts({-1})}, {"high", Attr::ofInts({0})}});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.pad: ", 0), 0u) << err;
  EXPECT_NE(err.find(">= 0"), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

TEST(AdamW, OneStepWithoutMasterByHand) {
  // step 2, lr 0.01, wd 0.1, beta1 0.9, beta2 0.999, eps 1e-8;
  // p = 2, g = -0.2, m = 0.1, v = 0.01:
  //   p  <- 2 - 0.01 * 0.1 * 2            = 1.998
  //   m  <- 0.9 * 0.1 + 0.1 * -0.2        = 0.07
  //   v  <- 0.999 * 0.01 + 0.001 * 0.04   = 0.01003
  //   m^ = 0.07 / (1 - 0.81)              = 0.368421053
  //   v^ = 0.01003 / (1 - 0.998001)       = 5.017508754, sqrt = 2.239979633
  //   p  <- 1.998 - 0.01 * 0.368421053 / 2.239979643 = 1.996355248
  // Second element: p = -1, g = 0, m = 0, v = 0: only the decay acts,
  //   p <- -1 + 0.01 * 0.1 = -0.999 (the update is 0 / (0 + eps) = 0).
  OneOp g("adamw",
          {{"p", f32({2}, {2, -1})},
           {"g", f32({2}, {-0.2f, 0})},
           {"m", f32({2}, {0.1f, 0})},
           {"v", f32({2}, {0.01f, 0})}},
          {{"p2", DType::F32, {2}}, {"m2", DType::F32, {2}},
           {"v2", DType::F32, {2}}},
          {{"lr", Attr::ofNumber(0.01)},
           {"beta1", Attr::ofNumber(0.9)},
           {"beta2", Attr::ofNumber(0.999)},
           {"epsilon", Attr::ofNumber(1e-8)},
           {"weight_decay", Attr::ofNumber(0.1)},
           {"step", Attr::ofNumber(2)}});
  ASSERT_EQ(g.run(), "");
  expectClose(g.at("p2").data, {1.996355248, -0.999}, 1e-6);
  expectClose(g.at("m2").data, {0.07, 0}, 1e-6);
  expectClose(g.at("v2").data, {0.01003, 0}, 1e-6);
}

TEST(AdamW, BF16ParamUpdatesFromF32Master) {
  // step 1, lr 0.1, wd 0.01, betas 0.9 / 0.999, eps 1e-8; master 1.25
  // (the stale bf16 param 2 is ignored), g = 0.5, m = v = 0:
  //   p <- 1.25 - 0.1 * 0.01 * 1.25 = 1.24875
  //   m <- 0.05, v <- 0.001 * 0.25 = 0.00025; m^ = 0.5, v^ = 0.25
  //   p <- 1.24875 - 0.1 * 0.5 / (0.5 + 1e-8) = 1.148750002
  // new master (f32) 1.14875; new param bf16 (ulp 2^-7 in [1, 2)):
  //   1.14875 / 0.0078125 = 147.04 -> 147 * 0.0078125 = 1.1484375.
  OneOp g("adamw",
          {{"p", tensor(DType::BF16, {1}, {2})},
           {"g", tensor(DType::BF16, {1}, {0.5})},
           {"m", f32({1}, {0})},
           {"v", f32({1}, {0})},
           {"w", f32({1}, {1.25})}},
          {{"p2", DType::BF16, {1}}, {"m2", DType::F32, {1}},
           {"v2", DType::F32, {1}}, {"w2", DType::F32, {1}}},
          {{"lr", Attr::ofNumber(0.1)},
           {"beta1", Attr::ofNumber(0.9)},
           {"beta2", Attr::ofNumber(0.999)},
           {"epsilon", Attr::ofNumber(1e-8)},
           {"weight_decay", Attr::ofNumber(0.01)},
           {"step", Attr::ofNumber(1)}});
  ASSERT_EQ(g.run(), "");
  EXPECT_EQ(g.at("p2").dtype, DType::BF16);
  EXPECT_EQ(g.at("p2").data, (Data{1.1484375}));
  expectClose(g.at("w2").data, {1.14875}, 1e-6);
  expectClose(g.at("m2").data, {0.05}, 1e-6);
  expectClose(g.at("v2").data, {0.00025}, 1e-6);
}

TEST(AdamW, MasterAndNewMasterGoTogether) {
  // With master given, three results are one too few.
  OneOp g("adamw",
          {{"p", f32({1}, {1})},
           {"g", f32({1}, {1})},
           {"m", f32({1}, {0})},
           {"v", f32({1}, {0})},
           {"w", f32({1}, {1})}},
          {{"p2", DType::F32, {1}}, {"m2", DType::F32, {1}},
           {"v2", DType::F32, {1}}},
          {{"lr", Attr::ofNumber(0.1)}});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.adamw: ", 0), 0u) << err;
}

//===----------------------------------------------------------------------===//
// Multi-result evaluation
//===----------------------------------------------------------------------===//

TEST(MultiResult, DeclaredShapeMismatchOfALaterResultNamesOpAndValue) {
  // rms_norm_grad's dweight is [3], declared [4].
  OneOp g("rms_norm_grad",
          {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})},
           {"w", f32({3}, {1, 1, 1})},
           {"dy", f32({2, 3}, {1, 1, 1, 1, 1, 1})}},
          {{"dx", DType::F32, {2, 3}}, {"dw", DType::F32, {4}}});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.rms_norm_grad: ", 0), 0u) << err;
  EXPECT_NE(err.find("'dw'"), std::string::npos) << err;
  EXPECT_NE(err.find("[3]"), std::string::npos) << err;
  EXPECT_NE(err.find("[4]"), std::string::npos) << err;
  EXPECT_EQ(g.values.count("dx"), 0u);
}

TEST(MultiResult, SingleResultOpsStillRejectTwoResults) {
  OneOp g("relu", {{"x", f32({1}, {1})}},
          {{"a", DType::F32, {1}}, {"b", DType::F32, {1}}});
  std::string err = g.run();
  EXPECT_EQ(err.rfind("test.relu: ", 0), 0u) << err;
  EXPECT_NE(err.find("exactly one result"), std::string::npos) << err;
}

TEST(MultiResult, ResultsFeedLaterOpsByName) {
  // dweight of rms_norm_grad feeds an add: with x = [[3, 4]] (mean x^2 =
  // 12.5, eps 0), r = 1/sqrt(12.5); dy = 1 gives dweight = x * r.
  Graph graph;
  graph.values = {{"x", DType::F32, {1, 2}},   {"w", DType::F32, {2}},
                  {"dy", DType::F32, {1, 2}},  {"dx", DType::F32, {1, 2}},
                  {"dw", DType::F32, {2}},     {"s", DType::F32, {2}}};
  Op grad;
  grad.op = "rms_norm_grad";
  grad.operands = {"x", "w", "dy"};
  grad.results = {"dx", "dw"};
  grad.attrs = {{"epsilon", Attr::ofNumber(0)}};
  Op add;
  add.op = "add";
  add.operands = {"dw", "w"};
  add.results = {"s"};
  graph.ops = {grad, add};
  std::map<std::string, Tensor> values = {{"x", f32({1, 2}, {3, 4})},
                                          {"w", f32({2}, {1, 1})},
                                          {"dy", f32({1, 2}, {1, 1})}};
  ASSERT_EQ(evaluate(graph, values), "");
  double r = 1 / std::sqrt(12.5);
  expectClose(values.at("s").data, {1 + 3 * r, 1 + 4 * r}, 1e-6);
}

} // namespace
