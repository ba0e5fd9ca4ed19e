//===- TileAttention.h - what the attention kernel can run ------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One rule shared by memwall-tile-attention (which leaves attention the
// kernel cannot run untiled, with a warning) and the attention kernel's code
// generator (docs/attention.md, docs/codegen.md).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TRANSFORMS_TILEATTENTION_H
#define MEMWALL_TRANSFORMS_TILEATTENTION_H

#include "mlir/IR/Types.h"

#include <string>

namespace memwall {

/// Why the tiled attention kernel cannot take inputs of `element` type with
/// query/key head dimension `d` and value head dimension `dv`; "" when it
/// can: bf16 or f16 (mma.sync operands), head dimensions multiples of 16
/// (mma.sync's k step) and at most 128 (the output accumulator lives in
/// registers).
std::string whyAttentionKernelCannotRun(mlir::Type element, int64_t d,
                                        int64_t dv);

/// The most key splits the tiling chooses and the combine kernel (unrolled
/// over the splits) merges: more than a wave of any GPU's SMs.
constexpr int64_t kMaxAttentionSplits = 1024;

} // namespace memwall

#endif // MEMWALL_TRANSFORMS_TILEATTENTION_H
