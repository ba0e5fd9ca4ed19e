//===- MemWallSharding.h - memwall ops on MLIR's shard dialect --*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The shard dialect's ShardingInterface for memwall's ops, so upstream's
// sharding-propagation and shard-partition passes split a memwall program
// over a device grid (docs/parallelism.md, "Per-device programs").
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLSHARDING_H
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLSHARDING_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace memwall {

/// Attaches shard::ShardingInterface to the memwall ops that have a
/// sharding rule (elementwise ops, matmul, attention, norms, softmax, rope,
/// embedding, reshape, transpose, cast).
void registerShardingInterfaceExternalModels(mlir::DialectRegistry &registry);

} // namespace memwall

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLSHARDING_H
