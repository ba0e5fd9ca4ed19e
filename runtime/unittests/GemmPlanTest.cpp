//===- GemmPlanTest.cpp - Tests of the row- to column-major GEMM mapping --===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Hand-worked layouts for small cases, then an independent check: a naive
// column-major GEMM that reads memory exactly as cuBLASLt would under the plan
// must reproduce a naive row-major GEMM of the bundle's definition, for every
// transpose combination, batch strides (including a broadcast weight),
// C and bias.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/GemmPlan.h"

#include <gtest/gtest.h>

#include <map>

using namespace memwall::runtime;

namespace {

GemmStep makeStep(int64_t m, int64_t n, int64_t k, bool transA, bool transB) {
  GemmStep step;
  step.name = "g";
  step.a = "A";
  step.b = "B";
  step.d = "D";
  step.m = m;
  step.n = n;
  step.k = k;
  step.transA = transA;
  step.transB = transB;
  return step;
}

void expectLayout(const MatrixLayoutPlan &layout, const std::string &buffer,
                  int64_t rows, int64_t cols, int64_t ld) {
  EXPECT_EQ(layout.buffer, buffer);
  EXPECT_EQ(layout.rows, rows);
  EXPECT_EQ(layout.cols, cols);
  EXPECT_EQ(layout.ld, ld);
}

TEST(PlanGemm, NoTransposeSwapsOperandsAndDimensions) {
  // D[2x3] = A[2x4] . B[4x3]: cuBLASLt computes D^T[3x2] = B^T . A^T.
  GemmPlan plan = planGemm(makeStep(2, 3, 4, false, false));
  EXPECT_EQ(plan.m, 3);
  EXPECT_EQ(plan.n, 2);
  EXPECT_EQ(plan.k, 4);
  EXPECT_FALSE(plan.transA);
  EXPECT_FALSE(plan.transB);
  expectLayout(plan.a, "B", 3, 4, 3); // B [4,3] row-major = 3x4 col-major
  expectLayout(plan.b, "A", 4, 2, 4); // A [2,4] row-major = 4x2 col-major
  expectLayout(plan.d, "D", 3, 2, 3);
  expectLayout(plan.c, "D", 3, 2, 3); // no C: beta 0 and C = D
  EXPECT_EQ(plan.beta, 0.0f);
  EXPECT_EQ(plan.alpha, 1.0f);
}

TEST(PlanGemm, TransBBecomesTransA) {
  // B stored [N, K] = [3, 4]: read column-major it is 4x3 (ld 4) and must be
  // transposed to give op(B)^T = N x K.
  GemmPlan plan = planGemm(makeStep(2, 3, 4, false, true));
  EXPECT_TRUE(plan.transA);
  EXPECT_FALSE(plan.transB);
  expectLayout(plan.a, "B", 4, 3, 4);
  expectLayout(plan.b, "A", 4, 2, 4);
}

TEST(PlanGemm, TransABecomesTransB) {
  // A stored [K, M] = [4, 2]: column-major 2x4 (ld 2), transposed to K x M.
  GemmPlan plan = planGemm(makeStep(2, 3, 4, true, false));
  EXPECT_FALSE(plan.transA);
  EXPECT_TRUE(plan.transB);
  expectLayout(plan.a, "B", 3, 4, 3);
  expectLayout(plan.b, "A", 2, 4, 2);
}

TEST(PlanGemm, BatchStridesCAndBiasFollowTheirOperands) {
  GemmStep step = makeStep(2, 3, 4, true, true);
  step.batch = 5;
  step.strideA = 8;
  step.strideB = 0; // one weight for every batch
  step.strideD = 6;
  step.c = "C";
  step.strideC = 6;
  step.bias = "bias";
  step.epilogue = Epilogue::GeluBias;
  GemmPlan plan = planGemm(step);
  EXPECT_EQ(plan.a.batchCount, 5);
  EXPECT_EQ(plan.a.batchStride, 0);
  EXPECT_EQ(plan.b.batchCount, 5);
  EXPECT_EQ(plan.b.batchStride, 8);
  expectLayout(plan.c, "C", 3, 2, 3);
  EXPECT_EQ(plan.c.batchStride, 6);
  EXPECT_EQ(plan.d.batchStride, 6);
  EXPECT_EQ(plan.beta, 1.0f);
  EXPECT_EQ(plan.bias, "bias");
  EXPECT_EQ(plan.epilogue, Epilogue::GeluBias);
}

// Memory of each buffer, as doubles.
using Memory = std::map<std::string, std::vector<double>>;

// What cuBLASLt computes under `plan` (column-major, op per trans flag),
// without an epilogue beyond bias: D' = alpha op(A') op(B') + beta C' + bias.
void runColumnMajor(const GemmPlan &plan, Memory &memory) {
  ASSERT_EQ(plan.a.rows, plan.transA ? plan.k : plan.m);
  ASSERT_EQ(plan.a.cols, plan.transA ? plan.m : plan.k);
  ASSERT_EQ(plan.b.rows, plan.transB ? plan.n : plan.k);
  ASSERT_EQ(plan.b.cols, plan.transB ? plan.k : plan.n);
  ASSERT_EQ(plan.d.rows, plan.m);
  ASSERT_EQ(plan.d.cols, plan.n);
  for (const MatrixLayoutPlan *layout : {&plan.a, &plan.b, &plan.c, &plan.d})
    ASSERT_GE(layout->ld, layout->rows);
  const std::vector<double> &a = memory[plan.a.buffer];
  const std::vector<double> &b = memory[plan.b.buffer];
  std::vector<double> c = memory[plan.c.buffer];
  std::vector<double> &d = memory[plan.d.buffer];
  for (int32_t batch = 0; batch < plan.d.batchCount; ++batch) {
    const double *pa = a.data() + batch * plan.a.batchStride;
    const double *pb = b.data() + batch * plan.b.batchStride;
    const double *pc = c.data() + batch * plan.c.batchStride;
    double *pd = d.data() + batch * plan.d.batchStride;
    for (int64_t i = 0; i < plan.m; ++i)
      for (int64_t j = 0; j < plan.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < plan.k; ++p) {
          double opA =
              plan.transA ? pa[p + i * plan.a.ld] : pa[i + p * plan.a.ld];
          double opB =
              plan.transB ? pb[j + p * plan.b.ld] : pb[p + j * plan.b.ld];
          sum += opA * opB;
        }
        double value = plan.alpha * sum + plan.beta * pc[i + j * plan.c.ld];
        if (!plan.bias.empty())
          value += memory[plan.bias][i]; // bias has one entry per row of D'
        pd[i + j * plan.d.ld] = value;
      }
  }
}

// The bundle's definition, row-major.
std::vector<double> runRowMajor(const GemmStep &step, Memory &memory) {
  std::vector<double> d(memory[step.d].size(), 0.0);
  const std::vector<double> &a = memory[step.a], &b = memory[step.b];
  for (int64_t batch = 0; batch < step.batch; ++batch)
    for (int64_t i = 0; i < step.m; ++i)
      for (int64_t j = 0; j < step.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < step.k; ++p) {
          double x = step.transA ? a[batch * step.strideA + p * step.m + i]
                                 : a[batch * step.strideA + i * step.k + p];
          double y = step.transB ? b[batch * step.strideB + j * step.k + p]
                                 : b[batch * step.strideB + p * step.n + j];
          sum += x * y;
        }
        if (!step.c.empty())
          sum += memory[step.c][batch * step.strideC + i * step.n + j];
        if (!step.bias.empty())
          sum += memory[step.bias][j];
        d[batch * step.strideD + i * step.n + j] = sum;
      }
  return d;
}

std::vector<double> filled(size_t size, double base) {
  std::vector<double> values(size);
  for (size_t i = 0; i < size; ++i)
    values[i] = base + static_cast<double>((i * 7919) % 23) - 11;
  return values;
}

TEST(PlanGemm, ColumnMajorExecutionOfThePlanMatchesRowMajorDefinition) {
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (bool withC : {false, true})
        for (bool broadcastB : {false, true}) {
          GemmStep step = makeStep(3, 5, 4, transA, transB);
          step.batch = 2;
          step.strideA = 12 + 4; // padding between batch matrices
          step.strideB = broadcastB ? 0 : 20;
          step.strideD = 15;
          if (withC) {
            step.c = "C";
            step.strideC = 15;
            step.bias = "bias";
            step.epilogue = Epilogue::Bias;
          }
          Memory memory;
          memory["A"] = filled(32, 0.5);
          memory["B"] = filled(40, 0.25);
          memory["C"] = filled(30, 3);
          memory["bias"] = filled(5, 100);
          memory["D"] = std::vector<double>(30, 0.0);
          std::vector<double> expected = runRowMajor(step, memory);
          runColumnMajor(planGemm(step), memory);
          EXPECT_EQ(memory["D"], expected)
              << "transA=" << transA << " transB=" << transB
              << " withC=" << withC << " broadcastB=" << broadcastB;
        }
}

} // namespace
