//===- OutlineKernel.h - a kernel's ops into a memwall.fusion ---*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one way memwall-fuse and memwall-fuse-horizontal turn a kernel
// analyzeKernel accepted into IR.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TRANSFORMS_OUTLINEKERNEL_H
#define MEMWALL_TRANSFORMS_OUTLINEKERNEL_H

#include "memwall/Analysis/FusionCost.h"

namespace memwall {

/// Moves `kernel.ops` into one `memwall.fusion` of `kernel.kind` at the
/// last of them: its inputs are the kernel's inputs (and the caches it
/// appends to in place), its results the kernel's outputs, which replace
/// the ops' results; it keeps the ops' phase. The ops are erased. A user of
/// an output placed between the ops now precedes the fusion: the caller
/// restores dominance where that can happen.
FusionOp outlineKernel(const KernelAnalysis &kernel);

} // namespace memwall

#endif // MEMWALL_TRANSFORMS_OUTLINEKERNEL_H
