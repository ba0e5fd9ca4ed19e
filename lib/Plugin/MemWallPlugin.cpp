//===- MemWallPlugin.cpp - memwall as a plugin of upstream mlir-opt -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   mlir-opt --load-dialect-plugin=lib/MemWallPlugin.so \
//       --load-pass-plugin=lib/MemWallPlugin.so \
//       --pass-pipeline='builtin.module(memwall-default{budget=40GB})' m.mlir
//
// One module exports both entry points. It links the shared libMLIR.so, so
// it must be loaded into an mlir-opt of the same MLIR/LLVM release: upstream
// checks only the plugin API version, so a mismatch is refused here, with a
// message, before anything is registered.
//
//===----------------------------------------------------------------------===//

#include "memwall/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm-c/Core.h"
#include "llvm/Config/llvm-config.h"

#include <cstdio>
#include <dlfcn.h>

// The release the plugin was built for; a test build overrides it to act
// out a plugin built for another release.
#ifndef MEMWALL_PLUGIN_LLVM_MAJOR
#define MEMWALL_PLUGIN_LLVM_MAJOR LLVM_VERSION_MAJOR
#define MEMWALL_PLUGIN_LLVM_MINOR LLVM_VERSION_MINOR
#endif

/// True when the host's LLVM/MLIR release is the one the plugin was built
/// for; prints why not otherwise.
static bool hostReleaseMatches(const char *kind) {
  // The host's own LLVMGetVersion comes first in the global lookup scope;
  // ours is the fallback for a host that does not export it.
  using GetVersion = void (*)(unsigned *, unsigned *, unsigned *);
  auto getVersion =
      reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "LLVMGetVersion"));
  if (!getVersion)
    getVersion = &LLVMGetVersion;
  unsigned major = 0, minor = 0, patch = 0;
  getVersion(&major, &minor, &patch);
  if (major == MEMWALL_PLUGIN_LLVM_MAJOR && minor == MEMWALL_PLUGIN_LLVM_MINOR)
    return true;
  // stdio, not llvm::errs(): the host's LLVM is not the one we were built
  // against.
  std::fprintf(stderr,
               "error: the memwall %s plugin was built for MLIR/LLVM %u.%u but "
               "this tool uses MLIR/LLVM %u.%u.%u; refusing to load it "
               "(rebuild memwall against this LLVM)\n",
               kind, MEMWALL_PLUGIN_LLVM_MAJOR, MEMWALL_PLUGIN_LLVM_MINOR,
               major, minor, patch);
  return false;
}

// An API version of 0 makes the host refuse the plugin without calling it.
static constexpr uint32_t kRefused = 0;

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  if (!hostReleaseMatches("dialect"))
    return {kRefused, "MemWall", LLVM_VERSION_STRING, nullptr};
  return {MLIR_PLUGIN_API_VERSION, "MemWall", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            memwall::registerMemWallDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  if (!hostReleaseMatches("pass"))
    return {kRefused, "MemWall", LLVM_VERSION_STRING, nullptr};
  return {MLIR_PLUGIN_API_VERSION, "MemWall", LLVM_VERSION_STRING,
          [] { memwall::registerMemWallPasses(); }};
}
