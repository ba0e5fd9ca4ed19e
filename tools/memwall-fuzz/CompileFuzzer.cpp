//===- CompileFuzzer.cpp - IR through memwall-compile's pipeline ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What `memwall-compile model.mlir -o model.bundle` does with a user's file:
// limits, parse, verify, fuse (or not, from a hash of the input), generate
// every kernel, plan the arena and write the bundle (into a scratch directory).
// PTX is left out: LLVM's NVPTX backend is upstream's to fuzz, and it would cut
// the executions per second a hundredfold.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "memwall/Pipelines.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  memwall::fuzz::ParsedModule input = memwall::fuzz::parseInput(data, size);
  if (!input.module)
    return 0;
  static const memwall::GPUTarget target =
      *memwall::lookupBuiltinGPUTarget(memwall::kDefaultGPUTargetName);
  memwall::CompileOptions options;
  options.fuse = !(input.hash & 1);
  options.skipPTX = true;
  FailureOr<memwall::Bundle> bundle =
      memwall::compileBundle(*input.module, target, options);
  if (failed(bundle))
    return 0;
  static const std::string bundlePath =
      memwall::fuzz::scratchDirectory() + "/model.bundle";
  llvm::consumeError(memwall::writeBundle(*bundle, bundlePath));
  return 0;
}
