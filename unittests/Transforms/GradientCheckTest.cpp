//===- GradientCheckTest.cpp - autodiff against finite differences --------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every VJP rule of memwall-autodiff, checked numerically: a small f32
// function per op (and a whole tiny GPT-2 and Llama training step) is
// differentiated with `optimizer=none`, exported as a reference graph and run
// by the CPU reference interpreter; each returned gradient is compared with
// central differences of the loss, (L(x + h e_i) - L(x - h e_i)) / 2h, on
// single coordinates and along random directions. The interpreter evaluates
// in fp64 and rounds every op result to f32, so h trades truncation error
// (O(h^2)) against f32 rounding noise (O(ulp(L) / h)).
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/ModelGen/ModelBuilder.h"
#include "memwall/ModelGen/ModelConfig.h"
#include "memwall/Registration.h"
#include "memwall/Target/Bundle.h"
#include "memwall/Transforms/Passes.h"

#include "memwall-runtime/Json.h"
#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Reference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <random>

using namespace mlir;
using namespace memwall;
namespace ref = memwall::reference;

namespace {

/// The differentiated function as an interpreter graph.
struct Step {
  ref::Graph graph;
  std::vector<std::string> inputs, outputs;
};

class GradientCheckTest : public ::testing::Test {
protected:
  GradientCheckTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Differentiates the single function of `module` (optimizer=none) and
  /// exports it; the step returns the loss, then one gradient per float
  /// argument in argument order.
  bool differentiate(ModuleOp module, Step &step, bool fuseHead = false) {
    PassManager pm(&context);
    // The head and its loss as one linear_cross_entropy, as memwall-default
    // runs it.
    if (fuseHead)
      pm.addNestedPass<func::FuncOp>(createFuseLinearCrossEntropy());
    AutodiffOptions options;
    options.optimizer = "none";
    pm.addPass(createAutodiff(options));
    if (failed(pm.run(module)))
      return false;
    return exportStep(module, step);
  }

  /// Exports the single function of `module` as an interpreter graph.
  bool exportStep(ModuleOp module, Step &step) {
    auto function = *module.getOps<func::FuncOp>().begin();
    FailureOr<llvm::json::Value> exported = exportReferenceGraph(function);
    if (failed(exported))
      return false;
    runtime::json::Value root;
    runtime::Status status =
        runtime::json::parse(llvm::formatv("{0}", *exported).str(), root);
    EXPECT_TRUE(status.ok()) << status.message();
    if (!status.ok())
      return false;
    status = runtime::parseReferenceGraph(root, step.graph);
    EXPECT_TRUE(status.ok()) << status.message();
    for (const char *key : {"inputs", "outputs"})
      for (const runtime::json::Value &name : root.get(key)->array)
        (key[0] == 'i' ? step.inputs : step.outputs).push_back(name.string);
    return status.ok();
  }

  /// Random arguments: floats U(-1, 1) (U(0.5, 1.5) for arguments whose
  /// name starts with "pos"), integers U{0, intBound - 1}.
  std::map<std::string, ref::Tensor> randomInputs(const Step &step,
                                                  int64_t intBound) {
    std::mt19937 rng(1234);
    std::map<std::string, ref::Tensor> values;
    for (const std::string &name : step.inputs) {
      const ref::ValueInfo &info = valueInfo(step, name);
      ref::Tensor t;
      t.dtype = info.dtype;
      t.shape = info.shape;
      t.data.resize(t.numElements());
      bool positive = name.rfind("pos", 0) == 0;
      for (double &x : t.data) {
        if (ref::isFloat(t.dtype))
          x = ref::roundToDType(
              std::uniform_real_distribution<double>(positive ? 0.5 : -1.0,
                                                     positive ? 1.5 : 1.0)(rng),
              t.dtype);
        else
          x = std::uniform_int_distribution<int64_t>(0, intBound - 1)(rng);
      }
      values[name] = std::move(t);
    }
    return values;
  }

  static const ref::ValueInfo &valueInfo(const Step &step,
                                         const std::string &name) {
    for (const ref::ValueInfo &info : step.graph.values)
      if (info.name == name)
        return info;
    ADD_FAILURE() << "no value " << name;
    return step.graph.values.front();
  }

  /// Runs the step; returns its outputs in order.
  static std::vector<ref::Tensor>
  run(const Step &step, std::map<std::string, ref::Tensor> values) {
    std::string error = ref::evaluate(step.graph, values);
    EXPECT_EQ(error, "");
    std::vector<ref::Tensor> outputs;
    for (const std::string &name : step.outputs)
      outputs.push_back(values[name]);
    return outputs;
  }

  /// Checks every float argument's gradient against central differences:
  /// every coordinate of small arguments (a random sample of 24 otherwise)
  /// and two random directions.
  void checkGradients(const Step &step, int64_t intBound, double h = 1e-3) {
    std::map<std::string, ref::Tensor> inputs = randomInputs(step, intBound);
    std::vector<ref::Tensor> outputs = run(step, inputs);
    ASSERT_FALSE(outputs.empty());
    auto loss = [&](const std::map<std::string, ref::Tensor> &at) {
      return run(step, at)[0].data[0];
    };
    std::mt19937 rng(99);
    size_t gradient = 1;
    for (const std::string &name : step.inputs) {
      if (!ref::isFloat(inputs[name].dtype))
        continue;
      ASSERT_LT(gradient, outputs.size());
      const ref::Tensor &g = outputs[gradient++];
      ASSERT_EQ(g.shape, inputs[name].shape) << name;
      double gmax = 0;
      for (double x : g.data)
        gmax = std::max(gmax, std::fabs(x));
      // f32 noise in L is ~1e-7 relative; divided by 2h.
      double noise = 4e-7 * std::max(1.0, std::fabs(outputs[0].data[0])) / h;
      auto fd = [&](const std::vector<double> &direction) {
        std::map<std::string, ref::Tensor> plus = inputs, minus = inputs;
        for (size_t i = 0; i < direction.size(); ++i) {
          plus[name].data[i] += h * direction[i];
          minus[name].data[i] -= h * direction[i];
        }
        return (loss(plus) - loss(minus)) / (2 * h);
      };
      int64_t n = g.numElements();
      std::vector<int64_t> coordinates;
      for (int64_t i = 0; i < n; ++i)
        coordinates.push_back(i);
      if (n > 24) {
        std::shuffle(coordinates.begin(), coordinates.end(), rng);
        coordinates.resize(24);
      }
      for (int64_t i : coordinates) {
        std::vector<double> e(n, 0.0);
        e[i] = 1;
        double numeric = fd(e);
        EXPECT_NEAR(g.data[i], numeric,
                    2e-3 * std::max(std::fabs(numeric), gmax) + noise)
            << "d loss / d " << name << "[" << i << "]";
      }
      for (int trial = 0; trial < 2; ++trial) {
        std::vector<double> v(n);
        double analytic = 0, magnitude = 0;
        for (int64_t i = 0; i < n; ++i) {
          v[i] = std::uniform_real_distribution<double>(-1, 1)(rng);
          analytic += g.data[i] * v[i];
          magnitude += std::fabs(g.data[i] * v[i]);
        }
        double numeric = fd(v);
        EXPECT_NEAR(analytic, numeric, 2e-3 * magnitude + noise * std::sqrt(n))
            << "directional derivative of the loss along a random v in "
            << name;
      }
    }
    EXPECT_EQ(gradient, outputs.size()) << "one gradient per float argument";
  }

  /// Parses `func.func @f(args) -> tensor<f32>` whose `body` computes
  /// `result : type`; the loss is sum(result * c) for one more argument `c`,
  /// so every element of the result carries a different weight.
  void checkWeightedSum(StringRef args, StringRef body, StringRef result,
                        StringRef type, int64_t intBound = 4, double h = 1e-3) {
    std::string shape = type.drop_front(strlen("tensor<")).str();
    int64_t rank = std::count(shape.begin(), shape.end(), 'x');
    std::string axes;
    for (int64_t i = 0; i < rank; ++i)
      axes += (i ? ", " : "") + std::to_string(i);
    std::string source = llvm::formatv(R"(
func.func @f({0}, %c: {3}) -> tensor<f32> {
{1}
  %weighted = memwall.mul {2}, %c : {3}, {3} -> {3}
  %loss = memwall.reduce sum %weighted axes [{4}] : {3} -> tensor<f32>
  return %loss : tensor<f32>
})",
                                       args, body, result, type, axes)
                             .str();
    checkSource(source, intBound, h);
  }

  void checkSource(const std::string &source, int64_t intBound,
                   double h = 1e-3) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    ASSERT_TRUE(module) << source;
    Step step;
    ASSERT_TRUE(differentiate(*module, step)) << source;
    checkGradients(step, intBound, h);
  }

  MLIRContext context;
};

TEST_F(GradientCheckTest, MatmulWithBiasOnBatchedInput) {
  checkWeightedSum(
      "%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %b: tensor<5xf32>",
      "  %y = memwall.matmul %x, %w bias %b : tensor<2x3x4xf32>, "
      "tensor<4x5xf32>, tensor<5xf32> -> tensor<2x3x5xf32>",
      "%y", "tensor<2x3x5xf32>");
}

TEST_F(GradientCheckTest, MatmulWithBothOperandsTransposed) {
  checkWeightedSum("%x: tensor<4x3xf32>, %w: tensor<5x4xf32>",
                   "  %y = memwall.matmul %x, %w {transpose_lhs, "
                   "transpose_rhs} : tensor<4x3xf32>, tensor<5x4xf32> -> "
                   "tensor<3x5xf32>",
                   "%y", "tensor<3x5xf32>");
}

TEST_F(GradientCheckTest, GradientOfATransposedOperandIsTheSwappedProduct) {
  // A weight read through its transpose (as fp8-mixed's K-major copies
  // are) and an activation transposed into a product's lhs: each
  // transpose's gradient is the product with its operands swapped, so the
  // backward runs no transpose.
  std::string source = R"(
func.func @f(%x: tensor<3x4xf32>, %w: tensor<4x5xf32>, %u: tensor<3x2xf32>, %c: tensor<3x5xf32>, %d: tensor<4x2xf32>) -> tensor<f32> {
  %wt = memwall.transpose %w [1, 0] : tensor<4x5xf32> -> tensor<5x4xf32>
  %y = memwall.matmul %x, %wt {transpose_rhs} : tensor<3x4xf32>, tensor<5x4xf32> -> tensor<3x5xf32>
  %xt = memwall.transpose %x [1, 0] : tensor<3x4xf32> -> tensor<4x3xf32>
  %z = memwall.matmul %xt, %u : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %wy = memwall.mul %y, %c : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  %ly = memwall.reduce sum %wy axes [0, 1] : tensor<3x5xf32> -> tensor<f32>
  %wz = memwall.mul %z, %d : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %lz = memwall.reduce sum %wz axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %loss = memwall.add %ly, %lz : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
})";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  Step step;
  ASSERT_TRUE(differentiate(*module, step));
  int64_t transposes = 0;
  module->walk([&](TransposeOp) { ++transposes; });
  EXPECT_EQ(transposes, 2) << "the forward's two, none in the backward";
  checkGradients(step, /*intBound=*/4);
}

TEST_F(GradientCheckTest, BatchedMatmulOfTwoActivations) {
  checkWeightedSum("%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>",
                   "  %s = memwall.matmul %q, %k {transpose_rhs} : "
                   "tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32> -> "
                   "tensor<1x2x3x5xf32>",
                   "%s", "tensor<1x2x3x5xf32>");
}

TEST_F(GradientCheckTest, BroadcastingAddSubMulDivReduceOverBroadcastAxes) {
  checkWeightedSum(
      "%x: tensor<2x3x4xf32>, %b: tensor<4xf32>, %y: tensor<3x1xf32>, "
      "%z: tensor<1x3x4xf32>, %pos_d: tensor<2x1x1xf32>",
      "  %0 = memwall.add %x, %b : tensor<2x3x4xf32>, tensor<4xf32> -> "
      "tensor<2x3x4xf32>\n"
      "  %1 = memwall.sub %0, %y : tensor<2x3x4xf32>, tensor<3x1xf32> -> "
      "tensor<2x3x4xf32>\n"
      "  %2 = memwall.mul %1, %z : tensor<2x3x4xf32>, tensor<1x3x4xf32> -> "
      "tensor<2x3x4xf32>\n"
      "  %3 = memwall.div %2, %pos_d : tensor<2x3x4xf32>, tensor<2x1x1xf32> "
      "-> tensor<2x3x4xf32>\n"
      "  %4 = memwall.scale %3 by 1.250000e-01 : tensor<2x3x4xf32>",
      "%4", "tensor<2x3x4xf32>");
}

TEST_F(GradientCheckTest, PointwiseActivations) {
  for (const char *activation : {"gelu %x erf", "gelu %x tanh", "silu %x",
                                 "relu %x", "tanh %x", "sigmoid %x"}) {
    SCOPED_TRACE(activation);
    checkWeightedSum(
        "%x: tensor<3x5xf32>",
        llvm::formatv("  %y = memwall.{0} : tensor<3x5xf32>", activation).str(),
        "%y", "tensor<3x5xf32>");
  }
}

TEST_F(GradientCheckTest, SwiGLU) {
  checkWeightedSum("%gate: tensor<3x6xf32>, %up: tensor<3x6xf32>",
                   "  %y = memwall.swiglu %gate, %up : tensor<3x6xf32>", "%y",
                   "tensor<3x6xf32>");
}

// A token's slots run through the experts its indices name (4 experts, 3
// tokens, U{0, 3} indices, repeats within a token included): a shared input
// row sums its slots' gradients; the per-slot second product reads its
// experts transposed.
TEST_F(GradientCheckTest,
       ExpertMatmulSharedAndPerSlotInputsAndTransposedWeights) {
  checkSource(R"(
func.func @f(%x: tensor<3x4xf32>, %w: tensor<4x4x5xf32>, %w2: tensor<4x6x5xf32>, %e: tensor<3x2xi32>, %c: tensor<3x2x6xf32>) -> tensor<f32> {
  %y = memwall.expert_matmul %x, %w[%e] : tensor<3x4xf32>, tensor<4x4x5xf32>, tensor<3x2xi32> -> tensor<3x2x5xf32>
  %z = memwall.expert_matmul %y, %w2[%e] transpose_weight : tensor<3x2x5xf32>, tensor<4x6x5xf32>, tensor<3x2xi32> -> tensor<3x2x6xf32>
  %wz = memwall.mul %z, %c : tensor<3x2x6xf32>, tensor<3x2x6xf32> -> tensor<3x2x6xf32>
  %loss = memwall.reduce sum %wz axes [0, 1, 2] : tensor<3x2x6xf32> -> tensor<f32>
  return %loss : tensor<f32>
})",
              /*intBound=*/4);
}

// A whole mixture-of-experts MLP: router, softmax top-2 of 4 experts (with
// and without renormalization), SwiGLU experts and the weighted combine.
// The router's gradient flows through the chosen experts' weights only.
TEST_F(GradientCheckTest, MixtureOfExpertsLayerWithAndWithoutRenormalization) {
  for (const char *normalize : {" normalize", ""}) {
    SCOPED_TRACE(normalize);
    checkSource(llvm::formatv(R"(
func.func @f(%x: tensor<3x4xf32>, %router: tensor<4x4xf32>, %wg: tensor<4x4x6xf32>, %wu: tensor<4x4x6xf32>, %wd: tensor<4x6x4xf32>, %c: tensor<3x4xf32>) -> tensor<f32> {
  %logits = memwall.matmul %x, %router : tensor<3x4xf32>, tensor<4x4xf32> -> tensor<3x4xf32>
  %w, %e = memwall.moe_gating %logits top 2{0} : tensor<3x4xf32> -> tensor<3x2xf32>, tensor<3x2xi32>
  %g = memwall.expert_matmul %x, %wg[%e] : tensor<3x4xf32>, tensor<4x4x6xf32>, tensor<3x2xi32> -> tensor<3x2x6xf32>
  %u = memwall.expert_matmul %x, %wu[%e] : tensor<3x4xf32>, tensor<4x4x6xf32>, tensor<3x2xi32> -> tensor<3x2x6xf32>
  %a = memwall.swiglu %g, %u : tensor<3x2x6xf32>
  %d = memwall.expert_matmul %a, %wd[%e] : tensor<3x2x6xf32>, tensor<4x6x4xf32>, tensor<3x2xi32> -> tensor<3x2x4xf32>
  %wr = memwall.reshape %w [3, 2, 1] : tensor<3x2xf32> -> tensor<3x2x1xf32>
  %s = memwall.mul %d, %wr : tensor<3x2x4xf32>, tensor<3x2x1xf32> -> tensor<3x2x4xf32>
  %y = memwall.reduce sum %s axes [1] : tensor<3x2x4xf32> -> tensor<3x4xf32>
  %wy = memwall.mul %y, %c : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %loss = memwall.reduce sum %wy axes [0, 1] : tensor<3x4xf32> -> tensor<f32>
  return %loss : tensor<f32>
})",
                              normalize)
                    .str(),
                /*intBound=*/4);
  }
}

TEST_F(GradientCheckTest, LayerNormWithAndWithoutBias) {
  checkWeightedSum("%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>",
                   "  %y = memwall.layer_norm %x, %g, %b eps 1.000000e-05 : "
                   "tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>",
                   "%y", "tensor<3x8xf32>");
  checkWeightedSum("%x: tensor<3x8xf32>, %g: tensor<8xf32>",
                   "  %y = memwall.layer_norm %x, %g eps 1.000000e-05 : "
                   "tensor<3x8xf32>, tensor<8xf32>",
                   "%y", "tensor<3x8xf32>");
}

TEST_F(GradientCheckTest, RmsNorm) {
  checkWeightedSum("%x: tensor<2x2x8xf32>, %g: tensor<8xf32>",
                   "  %y = memwall.rms_norm %x, %g eps 1.000000e-06 : "
                   "tensor<2x2x8xf32>, tensor<8xf32>",
                   "%y", "tensor<2x2x8xf32>");
}

TEST_F(GradientCheckTest, SoftmaxAlongLastAndFirstAxis) {
  checkWeightedSum("%x: tensor<3x5xf32>",
                   "  %y = memwall.softmax %x axis -1 : tensor<3x5xf32>", "%y",
                   "tensor<3x5xf32>");
  checkWeightedSum("%x: tensor<3x5xf32>",
                   "  %y = memwall.softmax %x axis 0 : tensor<3x5xf32>", "%y",
                   "tensor<3x5xf32>");
}

TEST_F(GradientCheckTest, ReduceSumKeepDimsAndMeanOverTwoAxes) {
  checkWeightedSum("%x: tensor<2x3x4xf32>",
                   "  %y = memwall.reduce sum %x axes [1] keep_dims : "
                   "tensor<2x3x4xf32> -> tensor<2x1x4xf32>",
                   "%y", "tensor<2x1x4xf32>");
  checkWeightedSum("%x: tensor<2x3x4xf32>",
                   "  %y = memwall.reduce mean %x axes [0, 2] : "
                   "tensor<2x3x4xf32> -> tensor<3xf32>",
                   "%y", "tensor<3xf32>");
}

TEST_F(GradientCheckTest, Rope) {
  checkWeightedSum("%x: tensor<1x2x4x8xf32>, %p: tensor<4xi64>",
                   "  %y = memwall.rope %x, %p theta 1.000000e+04 : "
                   "tensor<1x2x4x8xf32>, tensor<4xi64>",
                   "%y", "tensor<1x2x4x8xf32>", /*intBound=*/64);
}

TEST_F(GradientCheckTest, EmbeddingAccumulatesRepeatedIds) {
  // 6 ids drawn from 3 rows: rows repeat, their gradients must add up.
  checkWeightedSum("%table: tensor<3x4xf32>, %ids: tensor<2x3xi64>",
                   "  %y = memwall.embedding %table[%ids] : tensor<3x4xf32>, "
                   "tensor<2x3xi64> -> tensor<2x3x4xf32>",
                   "%y", "tensor<2x3x4xf32>", /*intBound=*/3);
}

TEST_F(GradientCheckTest, AttentionNonCausalWithAdditiveMask) {
  checkWeightedSum("%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, "
                   "%v: tensor<1x2x5x6xf32>, %m: tensor<1x1x3x5xf32>",
                   "  %o = memwall.attention %q, %k, %v mask %m : "
                   "tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, "
                   "tensor<1x2x5x6xf32>, tensor<1x1x3x5xf32> -> "
                   "tensor<1x2x3x6xf32>",
                   "%o", "tensor<1x2x3x6xf32>");
}

TEST_F(GradientCheckTest, AttentionCausalBottomRightWithFewerQueries) {
  checkWeightedSum("%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x5x4xf32>, "
                   "%v: tensor<2x2x5x4xf32>",
                   "  %o = memwall.attention %q, %k, %v causal : "
                   "tensor<2x2x3x4xf32>, tensor<2x2x5x4xf32>, "
                   "tensor<2x2x5x4xf32> -> tensor<2x2x3x4xf32>",
                   "%o", "tensor<2x2x3x4xf32>");
}

TEST_F(GradientCheckTest, AttentionSlidingWindowGradientsStayInTheBand) {
  // Window 2 over 5 keys and 3 queries: each query sees two keys, so keys 0
  // and 1 get gradient from query 0 only (key 0 from none).
  checkWeightedSum("%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, "
                   "%v: tensor<1x2x5x4xf32>",
                   "  %o = memwall.attention %q, %k, %v causal window 2 : "
                   "tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, "
                   "tensor<1x2x5x4xf32> -> tensor<1x2x3x4xf32>",
                   "%o", "tensor<1x2x3x4xf32>");
}

TEST_F(GradientCheckTest, AttentionGroupedQueryHeadsShareKeyValueGradients) {
  checkWeightedSum("%q: tensor<1x4x4x4xf32>, %k: tensor<1x2x4x4xf32>, "
                   "%v: tensor<1x2x4x4xf32>",
                   "  %o = memwall.attention %q, %k, %v causal scale "
                   "3.000000e-01 : tensor<1x4x4x4xf32>, tensor<1x2x4x4xf32>, "
                   "tensor<1x2x4x4xf32> -> tensor<1x4x4x4xf32>",
                   "%o", "tensor<1x4x4x4xf32>");
}

TEST_F(GradientCheckTest, CrossEntropyMeanSumAndIgnoreIndex) {
  for (const char *reduction : {"mean", "sum", "mean ignore_index 0"}) {
    SCOPED_TRACE(reduction);
    // Labels U{0..4} of 5 classes; with ignore_index 0 about a fifth of the
    // positions drop out of the loss and the mean's count.
    checkSource(llvm::formatv(R"(
func.func @f(%x: tensor<2x3x5xf32>, %labels: tensor<2x3xi64>) -> tensor<f32> {
  %loss = memwall.cross_entropy %x, %labels {0} : tensor<2x3x5xf32>, tensor<2x3xi64> -> tensor<f32>
  return %loss : tensor<f32>
})",
                              reduction)
                    .str(),
                /*intBound=*/5);
  }
}

TEST_F(GradientCheckTest, CrossEntropyPerPositionLosses) {
  checkWeightedSum("%x: tensor<2x3x5xf32>, %labels: tensor<2x3xi64>",
                   "  %l = memwall.cross_entropy %x, %labels none : "
                   "tensor<2x3x5xf32>, tensor<2x3xi64> -> tensor<2x3xf32>",
                   "%l", "tensor<2x3xf32>", /*intBound=*/5);
}

TEST_F(GradientCheckTest, LinearCrossEntropyBothWeightLayoutsAndReductions) {
  // The hidden states and the head weight both get gradients, through
  // logits that the op never returns.
  for (const char *attrs :
       {"transpose_weight", "sum", "mean ignore_index 0 transpose_weight"}) {
    SCOPED_TRACE(attrs);
    bool transposed = StringRef(attrs).contains("transpose_weight");
    std::string weight = transposed ? "tensor<5x4xf32>" : "tensor<4x5xf32>";
    checkSource(llvm::formatv(R"(
func.func @f(%h: tensor<2x3x4xf32>, %w: {1}, %labels: tensor<2x3xi64>) -> tensor<f32> {
  %loss, %lse = memwall.linear_cross_entropy %h, %w, %labels {0} : tensor<2x3x4xf32>, {1}, tensor<2x3xi64> -> tensor<f32>, tensor<2x3xf32>
  return %loss : tensor<f32>
})",
                              attrs, weight)
                    .str(),
                /*intBound=*/5);
  }
}

TEST_F(GradientCheckTest, LinearCrossEntropyPerPositionLosses) {
  checkWeightedSum("%h: tensor<2x3x4xf32>, %w: tensor<5x4xf32>, "
                   "%labels: tensor<2x3xi64>",
                   "  %l, %lse = memwall.linear_cross_entropy %h, %w, %labels "
                   "none transpose_weight : tensor<2x3x4xf32>, "
                   "tensor<5x4xf32>, tensor<2x3xi64> -> tensor<2x3xf32>, "
                   "tensor<2x3xf32>",
                   "%l", "tensor<2x3xf32>", /*intBound=*/5);
}

TEST_F(GradientCheckTest, LayoutOpsTransposeReshapeSliceConcat) {
  checkWeightedSum(
      "%x: tensor<2x3x4xf32>, %y: tensor<3x2xf32>",
      "  %0 = memwall.transpose %x [1, 0, 2] : tensor<2x3x4xf32> -> "
      "tensor<3x2x4xf32>\n"
      "  %1 = memwall.reshape %0 [3, 8] : tensor<3x2x4xf32> -> "
      "tensor<3x8xf32>\n"
      "  %2 = memwall.slice %1 offsets [0, 2] sizes [3, 4] : tensor<3x8xf32> "
      "-> tensor<3x4xf32>\n"
      "  %3 = memwall.concat %2, %y axis 1 : tensor<3x4xf32>, "
      "tensor<3x2xf32> -> tensor<3x6xf32>",
      "%3", "tensor<3x6xf32>");
}

TEST_F(GradientCheckTest, SlicesCoveringAPackedTensorJoinTheirGradients) {
  // q, k and v of a packed [2, 9] projection, used unevenly: the three
  // slice gradients cover the columns once and join as one concat (k's
  // columns 3..5 also reach the output a second way, through the sum).
  checkWeightedSum("%x: tensor<2x9xf32>",
                   "  %q = memwall.slice %x offsets [0, 0] sizes [2, 3] : "
                   "tensor<2x9xf32> -> tensor<2x3xf32>\n"
                   "  %k = memwall.slice %x offsets [0, 3] sizes [2, 3] : "
                   "tensor<2x9xf32> -> tensor<2x3xf32>\n"
                   "  %v = memwall.slice %x offsets [0, 6] sizes [2, 3] : "
                   "tensor<2x9xf32> -> tensor<2x3xf32>\n"
                   "  %0 = memwall.mul %q, %k : tensor<2x3xf32>, "
                   "tensor<2x3xf32> -> tensor<2x3xf32>\n"
                   "  %1 = memwall.tanh %v : tensor<2x3xf32>\n"
                   "  %2 = memwall.add %0, %1 : tensor<2x3xf32>, "
                   "tensor<2x3xf32> -> tensor<2x3xf32>",
                   "%2", "tensor<2x3xf32>");
}

TEST_F(GradientCheckTest, ValueUsedTwiceGetsSummedGradient) {
  checkWeightedSum("%x: tensor<3x4xf32>",
                   "  %0 = memwall.tanh %x : tensor<3x4xf32>\n"
                   "  %1 = memwall.mul %0, %x : tensor<3x4xf32>, "
                   "tensor<3x4xf32> -> tensor<3x4xf32>\n"
                   "  %2 = memwall.add %1, %0 : tensor<3x4xf32>, "
                   "tensor<3x4xf32> -> tensor<3x4xf32>",
                   "%2", "tensor<3x4xf32>");
}

/// memwall-tile-attention must compute what naive attention computes: the
/// interpreter evaluates flash_attention as the kernel orders it (key blocks,
/// online softmax, split-KV combine) and its backward from the log-sum-exp.
class TiledAttentionTest : public GradientCheckTest {
protected:
  /// Runs `source` as written and after memwall-tile-attention (and, with
  /// `differentiate`, memwall-autodiff first), on the same random inputs;
  /// every output must pass the bundle check against the untiled one.
  void checkTiledEqualsNaive(const std::string &source, bool differentiate,
                             int64_t minSplits = 1) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    ASSERT_TRUE(module) << source;
    if (differentiate) {
      PassManager pm(&context);
      AutodiffOptions options;
      options.optimizer = "none";
      pm.addPass(createAutodiff(options));
      ASSERT_TRUE(succeeded(pm.run(*module)));
    }
    Step naive;
    ASSERT_TRUE(exportStep(*module, naive));
    PassManager tile(&context);
    SetTargetOptions target;
    target.targetName = "h100-sxm";
    tile.addPass(createSetTarget(target));
    tile.addNestedPass<func::FuncOp>(createTileAttention());
    ASSERT_TRUE(succeeded(tile.run(*module)));
    int64_t flash = 0, splits = 0;
    module->walk([&](FlashAttentionOp op) {
      ++flash;
      splits = std::max<int64_t>(splits, op.getNumSplits());
    });
    EXPECT_GT(flash, 0) << "nothing was tiled";
    EXPECT_GE(splits, minSplits);
    if (differentiate) {
      int64_t grads = 0;
      module->walk([&](FlashAttentionGradOp) { ++grads; });
      EXPECT_GT(grads, 0) << "the backward was not tiled";
    }
    Step tiled;
    ASSERT_TRUE(exportStep(*module, tiled));
    std::map<std::string, ref::Tensor> inputs = randomInputs(naive, 4);
    std::vector<ref::Tensor> expected = run(naive, inputs);
    std::vector<ref::Tensor> got = run(tiled, inputs);
    ASSERT_EQ(expected.size(), got.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ref::Comparison c = ref::compare(got[i], expected[i]);
      EXPECT_TRUE(c.passed)
          << "output " << i << ": max rel error " << c.maxRelError
          << " (tolerance " << c.tolerance << ")";
    }
  }

  static std::string attention(StringRef q, StringRef kv, StringRef out,
                               StringRef flags) {
    return llvm::formatv(R"(
func.func @f(%q: {0}, %k: {1}, %v: {1}) -> {2} {
  %o = memwall.attention %q, %k, %v {3} : {0}, {1}, {1} -> {2}
  return %o : {2}
})",
                         q, kv, out, flags)
        .str();
  }
};

TEST_F(TiledAttentionTest, CausalPrefillWithRaggedLastBlock) {
  // 200 queries and keys: blocks of 128 leave a ragged 72-row block.
  checkTiledEqualsNaive(attention("tensor<1x2x200x64xbf16>",
                                  "tensor<1x2x200x64xbf16>",
                                  "tensor<1x2x200x64xbf16>", "causal"),
                        false);
}

TEST_F(TiledAttentionTest, NonCausalGroupedQueryHeads) {
  checkTiledEqualsNaive(attention("tensor<2x4x96x32xbf16>",
                                  "tensor<2x2x160x32xbf16>",
                                  "tensor<2x4x96x32xbf16>", ""),
                        false);
}

TEST_F(TiledAttentionTest, SlidingWindowPrefillAndDecode) {
  // A 100-key window over 300 queries (blocks before each window skipped),
  // and one query over 1000 keys in splits, most of them before the window.
  checkTiledEqualsNaive(
      attention("tensor<1x2x300x64xbf16>", "tensor<1x2x300x64xbf16>",
                "tensor<1x2x300x64xbf16>", "causal window 100"),
      false);
  checkTiledEqualsNaive(attention("tensor<1x4x1x64xf16>",
                                  "tensor<1x4x1000x64xf16>",
                                  "tensor<1x4x1x64xf16>", "causal window 200"),
                        false, /*minSplits=*/2);
}

TEST_F(TiledAttentionTest, DecodeOverALongCacheSplitsTheKeys) {
  // One query over 1000 keys: 8 key blocks, split across the idle SMs.
  checkTiledEqualsNaive(attention("tensor<1x4x1x64xf16>",
                                  "tensor<1x4x1000x64xf16>",
                                  "tensor<1x4x1x64xf16>", "causal"),
                        false, /*minSplits=*/2);
}

TEST_F(TiledAttentionTest, OnlineSoftmaxMatchesNaiveToRoundingInF32) {
  // The f32 op written by hand (the pass tiles only bf16/f16): 3-key blocks
  // in 2 splits over 10 keys with an additive mask.
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"(
func.func @f(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x10x8xf32>, %m: tensor<1x1x4x10xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %a = memwall.attention %q, %k, %k mask %m causal scale 5.000000e-01 : tensor<1x2x4x8xf32>, tensor<1x1x10x8xf32>, tensor<1x1x10x8xf32>, tensor<1x1x4x10xf32> -> tensor<1x2x4x8xf32>
  %f, %lse = memwall.flash_attention %q, %k, %k mask %m causal scale 5.000000e-01 block_q 2 block_kv 3 splits 2 : (tensor<1x2x4x8xf32>, tensor<1x1x10x8xf32>, tensor<1x1x10x8xf32>, tensor<1x1x4x10xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return %a, %f : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
})",
                                                             &context);
  ASSERT_TRUE(module);
  Step step;
  ASSERT_TRUE(exportStep(*module, step));
  std::vector<ref::Tensor> out = run(step, randomInputs(step, 1));
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < out[0].data.size(); ++i)
    EXPECT_NEAR(out[1].data[i], out[0].data[i], 1e-6) << "element " << i;
}

TEST_F(TiledAttentionTest, TiledBackwardFromLogSumExpMatchesNaiveGradients) {
  checkTiledEqualsNaive(R"(
func.func @f(%q: tensor<1x4x80x32xbf16>, %k: tensor<1x2x80x32xbf16>, %v: tensor<1x2x80x32xbf16>, %c: tensor<1x4x80x32xbf16>) -> tensor<f32> {
  %o = memwall.attention %q, %k, %v causal : tensor<1x4x80x32xbf16>, tensor<1x2x80x32xbf16>, tensor<1x2x80x32xbf16> -> tensor<1x4x80x32xbf16>
  %w = memwall.mul %o, %c : tensor<1x4x80x32xbf16>, tensor<1x4x80x32xbf16> -> tensor<1x4x80x32xbf16>
  %f = memwall.cast %w to f32 : tensor<1x4x80x32xbf16> -> tensor<1x4x80x32xf32>
  %l = memwall.reduce sum %f axes [0, 1, 2, 3] : tensor<1x4x80x32xf32> -> tensor<f32>
  return %l : tensor<f32>
})",
                        /*differentiate=*/true);
}

/// A whole training step of a tiny f32 model from memwall-gen's builder:
/// every weight's gradient through embeddings, norms, attention, MLP and the
/// loss.
class TinyModelGradientCheck : public GradientCheckTest {
protected:
  /// memwall-remat at the tightest of a few budgets below the peak leaves
  /// the loss and every gradient bit-identical in the reference interpreter.
  void checkRecomputationIsBitIdentical(bool fuseHead);

  void checkPreset(StringRef preset, int64_t kvHeads, bool fuseHead = false) {
    llvm::Expected<ModelConfig> config = lookupPreset(preset);
    ASSERT_TRUE(static_cast<bool>(config)) << toString(config.takeError());
    config->layers = 2;
    config->hidden = 8;
    config->heads = 2;
    config->kvHeads = kvHeads;
    config->ffn = 12;
    config->vocab = 11;
    config->maxPositions = 8;
    config->seq = 4;
    config->batch = 2;
    config->dtype = "f32";
    config->dropout = 0;
    if (llvm::Error error = validateModelConfig(*config, GenerationMode::Train))
      FAIL() << toString(std::move(error));
    OwningOpRef<ModuleOp> module =
        buildModel(&context, *config, GenerationMode::Train);
    ASSERT_TRUE(module);
    Step step;
    ASSERT_TRUE(differentiate(*module, step, fuseHead));
    if (fuseHead)
      EXPECT_TRUE(llvm::any_of(step.graph.ops, [](const ref::Op &op) {
        return op.op == "linear_cross_entropy_grad";
      })) << "the head was not fused";
    // Token ids, labels and positions all below maxPositions (8).
    checkGradients(step, /*intBound=*/8);
  }
};

/// An f32 GPT-2 of hidden size 16, two heads, batch 2, no dropout.
std::optional<ModelConfig> tinyGPT2(int64_t layers, int64_t ffn, int64_t vocab,
                                    int64_t seq) {
  llvm::Expected<ModelConfig> config = lookupPreset("gpt2");
  if (!config) {
    ADD_FAILURE() << toString(config.takeError());
    return std::nullopt;
  }
  config->layers = layers;
  config->hidden = 16;
  config->heads = 2;
  config->kvHeads = 2;
  config->ffn = ffn;
  config->vocab = vocab;
  config->maxPositions = seq;
  config->seq = seq;
  config->batch = 2;
  config->dtype = "f32";
  config->dropout = 0;
  return *config;
}

/// memwall-remat must not change what a step computes: the recomputed
/// clones produce bit-identical gradients in the reference interpreter.
void TinyModelGradientCheck::checkRecomputationIsBitIdentical(bool fuseHead) {
  std::optional<ModelConfig> config =
      tinyGPT2(/*layers=*/3, /*ffn=*/64, /*vocab=*/11, /*seq=*/32);
  ASSERT_TRUE(config);
  OwningOpRef<ModuleOp> module =
      buildModel(&context, *config, GenerationMode::Train);
  ASSERT_TRUE(module);
  PassManager differentiate(&context);
  if (fuseHead)
    differentiate.addNestedPass<func::FuncOp>(createFuseLinearCrossEntropy());
  AutodiffOptions autodiff;
  autodiff.optimizer = "none";
  differentiate.addPass(createAutodiff(autodiff));
  ASSERT_TRUE(succeeded(differentiate.run(*module)));
  Step plain;
  ASSERT_TRUE(exportStep(*module, plain));
  int64_t peak =
      simulateMemory(getMainFunction(*module), ShardingOptions()).peakBytes;
  // The tightest of a few budgets below the peak that recomputation meets.
  OwningOpRef<ModuleOp> rematerialized;
  int64_t recomputed = 0;
  for (double fraction : {0.80, 0.85, 0.90, 0.95}) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager pm(&context);
    RematOptions options;
    options.budget =
        std::to_string(static_cast<int64_t>(peak * fraction)) + "B";
    pm.addPass(createRemat(options));
    ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) {
      return success(); // an infeasible budget is expected here
    });
    if (failed(pm.run(*copy)))
      continue;
    copy->walk([&](Operation *op) {
      recomputed += op->hasAttr(MemWallDialect::kRecomputedAttrName);
    });
    if (recomputed > 0) {
      rematerialized = std::move(copy);
      break;
    }
  }
  ASSERT_TRUE(rematerialized) << "no budget below the peak was met";
  Step remat;
  ASSERT_TRUE(exportStep(*rematerialized, remat));
  std::map<std::string, ref::Tensor> inputs = randomInputs(plain, 11);
  std::vector<ref::Tensor> expected = run(plain, inputs);
  std::vector<ref::Tensor> got = run(remat, inputs);
  ASSERT_EQ(expected.size(), got.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(got[i].shape, expected[i].shape);
    EXPECT_EQ(got[i].data, expected[i].data) << "output " << i;
  }
}

TEST_F(TinyModelGradientCheck, GPT2TrainingStepWithTiedEmbeddings) {
  checkPreset("gpt2", /*kvHeads=*/2);
}

TEST_F(TinyModelGradientCheck, LlamaTrainingStepWithGroupedQueryAttention) {
  checkPreset("llama-2-7b", /*kvHeads=*/1);
}

TEST_F(TinyModelGradientCheck, RecomputationLeavesEveryGradientBitIdentical) {
  checkRecomputationIsBitIdentical(/*fuseHead=*/false);
}

TEST_F(TinyModelGradientCheck,
       RecomputationWithTheFusedHeadLeavesEveryGradientBitIdentical) {
  checkRecomputationIsBitIdentical(/*fuseHead=*/true);
}

/// The fused head computes what the matmul and cross_entropy it replaces
/// compute: the loss and every gradient agree to f32 rounding.
TEST_F(TinyModelGradientCheck, FusedHeadGivesTheUnfusedLossAndGradients) {
  std::optional<ModelConfig> config =
      tinyGPT2(/*layers=*/1, /*ffn=*/32, /*vocab=*/300, /*seq=*/8);
  ASSERT_TRUE(config);
  Step steps[2];
  for (bool fuse : {false, true}) {
    OwningOpRef<ModuleOp> module =
        buildModel(&context, *config, GenerationMode::Train);
    ASSERT_TRUE(module);
    ASSERT_TRUE(differentiate(*module, steps[fuse], fuse));
  }
  std::map<std::string, ref::Tensor> inputs = randomInputs(steps[0], 8);
  std::vector<ref::Tensor> unfused = run(steps[0], inputs);
  std::vector<ref::Tensor> fused = run(steps[1], inputs);
  ASSERT_EQ(unfused.size(), fused.size());
  for (size_t i = 0; i < unfused.size(); ++i) {
    ASSERT_EQ(fused[i].shape, unfused[i].shape) << "output " << i;
    double scale = 0;
    for (double x : unfused[i].data)
      scale = std::max(scale, std::fabs(x));
    for (size_t j = 0; j < unfused[i].data.size(); ++j)
      ASSERT_NEAR(fused[i].data[j], unfused[i].data[j], 1e-5 * scale + 1e-12)
          << "output " << i << " element " << j;
  }
}

TEST_F(TinyModelGradientCheck, GPT2StepWithTheTiedHeadFusedIntoItsLoss) {
  checkPreset("gpt2", /*kvHeads=*/2, /*fuseHead=*/true);
}

TEST_F(TinyModelGradientCheck, LlamaStepWithItsOwnHeadFusedIntoItsLoss) {
  checkPreset("llama-2-7b", /*kvHeads=*/1, /*fuseHead=*/true);
}

} // namespace
