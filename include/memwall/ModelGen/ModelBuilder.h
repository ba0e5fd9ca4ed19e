//===- ModelBuilder.h - memwall IR for a transformer step -------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_MODELGEN_MODELBUILDER_H
#define MEMWALL_MODELGEN_MODELBUILDER_H

#include "memwall/ModelGen/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace memwall {

/// Builds `module @<name> { func.func @<mode>(...) }` computing one step of
/// `config` in `mode`: prefill returns logits (BERT: sequence output and
/// pooled output), decode returns logits and the appended KV caches, train
/// returns the cross-entropy loss. Weights, inputs and KV caches are function
/// arguments tagged with memwall.kind; every op and argument has a NameLoc
/// ("layers.3.attn.qkv"). `config` must pass validateModelConfig.
mlir::OwningOpRef<mlir::ModuleOp> buildModel(mlir::MLIRContext *context,
                                             const ModelConfig &config,
                                             GenerationMode mode);

} // namespace memwall

#endif // MEMWALL_MODELGEN_MODELBUILDER_H
