//===- GemmPlan.h - Row-major GEMM steps as column-major cuBLASLt -*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A bundle describes GEMMs in row-major terms; cuBLASLt is column-major. A
// row-major [R, C] array read column-major is its transpose, a C x R matrix
// with leading dimension C. So the row-major product
//   D (M x N) = op(A) (M x K) . op(B) (K x N)
// is, column-major, D^T (N x M) = op(B)^T (N x K) . op(A)^T (K x M):
// cuBLASLt's first operand is our B, its second our A, m' = N, n' = M,
// k' = K. Stored B read column-major is already B^T when B is not
// transposed, so cuBLASLt's transa = trans_b and transb = trans_a.
// This header is free of CUDA types so that unit tests check the mapping.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_GEMMPLAN_H
#define MEMWALL_RUNTIME_GEMMPLAN_H

#include "memwall-runtime/Manifest.h"

#include <cstdint>
#include <string>

namespace memwall::runtime {

/// One cuBLASLt matrix layout (column-major): the stored matrix before its
/// op, `rows` x `cols` with leading dimension `ld`, `batchCount` matrices
/// `batchStride` elements apart (0: the same matrix for every batch).
struct MatrixLayoutPlan {
  std::string buffer;
  int64_t rows = 0, cols = 0, ld = 0;
  int32_t batchCount = 1;
  int64_t batchStride = 0;
};

/// A cuBLASLt matmul D' = epilogue(alpha op(A') op(B') + beta C') in
/// cuBLASLt's own (column-major) terms.
struct GemmPlan {
  int64_t m = 0, n = 0, k = 0; // m' = N, n' = M, k' = K
  bool transA = false;         // op(A'): = trans_b
  bool transB = false;         // op(B'): = trans_a
  MatrixLayoutPlan a, b, c, d; // a: our B, b: our A; c = d without "c"
  std::string bias;            // "" or a length-m' (= N) vector
  float alpha = 1, beta = 0;   // beta = 1 with a "c" operand
  Epilogue epilogue = Epilogue::None;
};

GemmPlan planGemm(const GemmStep &step);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_GEMMPLAN_H
