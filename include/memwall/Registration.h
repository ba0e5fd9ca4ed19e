//===- Registration.h - register memwall with MLIR --------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one place that knows every memwall dialect and pass. Tools, plugins and
// embedders call these two functions.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_REGISTRATION_H
#define MEMWALL_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace memwall {

/// Adds the memwall dialect (and the upstream dialects its IR uses: func,
/// and shard with memwall's sharding rules) to `registry`.
void registerMemWallDialects(mlir::DialectRegistry &registry);

/// Registers every memwall pass and named pipeline (memwall-default, see
/// memwall/Pipelines.h) with the global pass registry, so they can be named
/// on the command line and in --pass-pipeline.
void registerMemWallPasses();

} // namespace memwall

#endif // MEMWALL_REGISTRATION_H
