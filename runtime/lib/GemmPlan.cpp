//===- GemmPlan.cpp - Row-major GEMM steps as column-major cuBLASLt -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/GemmPlan.h"

namespace memwall::runtime {

namespace {

// A row-major [storedRows, storedCols] array read column-major: a
// storedCols x storedRows matrix whose columns are storedCols apart.
MatrixLayoutPlan columnMajorView(const std::string &buffer, int64_t storedRows,
                                 int64_t storedCols, int64_t batch,
                                 int64_t stride) {
  MatrixLayoutPlan layout;
  layout.buffer = buffer;
  layout.rows = storedCols;
  layout.cols = storedRows;
  layout.ld = storedCols;
  layout.batchCount = static_cast<int32_t>(batch);
  layout.batchStride = stride;
  return layout;
}

} // namespace

GemmPlan planGemm(const GemmStep &step) {
  GemmPlan plan;
  plan.m = step.n;
  plan.n = step.m;
  plan.k = step.k;
  plan.transA = step.transB;
  plan.transB = step.transA;
  // B is stored [K, N], or [N, K] when trans_b.
  plan.a =
      step.transB
          ? columnMajorView(step.b, step.n, step.k, step.batch, step.strideB)
          : columnMajorView(step.b, step.k, step.n, step.batch, step.strideB);
  // A is stored [M, K], or [K, M] when trans_a.
  plan.b =
      step.transA
          ? columnMajorView(step.a, step.k, step.m, step.batch, step.strideA)
          : columnMajorView(step.a, step.m, step.k, step.batch, step.strideA);
  plan.d = columnMajorView(step.d, step.m, step.n, step.batch, step.strideD);
  if (step.c.empty()) {
    // beta = 0: cuBLASLt still wants a C; D itself, never read.
    plan.c = plan.d;
    plan.beta = 0;
  } else {
    plan.c = columnMajorView(step.c, step.m, step.n, step.batch, step.strideC);
    plan.beta = 1;
  }
  plan.bias = step.bias;
  plan.epilogue = step.epilogue;
  return plan;
}

} // namespace memwall::runtime
