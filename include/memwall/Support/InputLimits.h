//===- InputLimits.h - size and nesting limits on files memwall reads -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Users hand memwall files; recursive-descent parsers (MLIR's, llvm::json)
// recurse once per nesting level and read whatever they are given. Every
// text input goes through here first: a byte cap (so /dev/zero or a FIFO
// cannot exhaust memory), no NUL bytes (binary files), and a bracket-nesting
// limit checked before a parser can overflow its stack.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_INPUTLIMITS_H
#define MEMWALL_SUPPORT_INPUTLIMITS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace memwall {

/// The most bytes of IR memwall reads from one file.
constexpr uint64_t kMaxIRInputBytes = uint64_t(1) << 30;
/// The most bytes of JSON (configs, targets, measured runs) from one file.
constexpr uint64_t kMaxJSONInputBytes = uint64_t(64) << 20;
/// The deepest bracket nesting memwall hands to a parser. Real models nest
/// a few levels; MLIR's parser and llvm::json recurse per level.
constexpr unsigned kMaxNestingDepth = 256;

enum class TextSyntax { MLIR, JSON };

/// Reads the text file `path` ("-" is stdin), refusing more than `maxBytes`
/// and NUL bytes. Errors name `what` and the path.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readTextInput(llvm::StringRef path, llvm::StringRef what, uint64_t maxBytes);

/// readTextInput and checkNestingDepth for an MLIR file (kMaxIRInputBytes).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readIRInput(llvm::StringRef path);

/// Fails with "NAME:LINE:COL: ..." at the first bracket nested deeper than
/// `maxDepth`, skipping string literals (and, for MLIR, comments).
llvm::Error checkNestingDepth(llvm::StringRef text, llvm::StringRef bufferName,
                              TextSyntax syntax,
                              unsigned maxDepth = kMaxNestingDepth);

/// Runs `work` in a child process (stderr silenced) and fails, naming
/// `what`, only when the child does not finish normally: a parser memwall
/// does not own that crashes on a hostile file then cannot take the tool
/// down. Call it before the process starts threads; run `work` again
/// in-process when this succeeds, for its diagnostics and result.
llvm::Error checkRunsWithoutCrashing(llvm::function_ref<void()> work,
                                     llvm::StringRef what);

} // namespace memwall

#endif // MEMWALL_SUPPORT_INPUTLIMITS_H
