//===- FuzzSupport.h - what memwall's fuzz targets share ------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each fuzz target feeds its bytes through the same checks and parsers the
// tools use, in a fresh single-threaded MLIRContext per input (so one input
// cannot leave state that makes another crash irreproducible), with
// diagnostics swallowed: an error is a correct answer, a crash is the bug.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_FUZZ_FUZZSUPPORT_H
#define MEMWALL_FUZZ_FUZZSUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace memwall::fuzz {

/// The input as text; nullopt-like empty when it holds a NUL byte, which the
/// tools refuse before parsing (readTextInput).
bool asText(const uint8_t *data, size_t size, llvm::StringRef &text);

/// A context with memwall's dialects, threading off, diagnostics dropped.
std::unique_ptr<mlir::MLIRContext> createContext();

/// The tools' IR path: nesting limit, parse, verify. Null on any error.
mlir::OwningOpRef<mlir::ModuleOp> parseModule(mlir::MLIRContext &context,
                                              llvm::StringRef text);

/// An IR input parsed and verified in its own context, and the hash of its
/// text (for inputHash-style choices).
struct ParsedModule {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  uint64_t hash = 0;
};

/// asText, createContext and parseModule: null `module` on any error.
ParsedModule parseInput(const uint8_t *data, size_t size);

/// A scratch directory for the process (removed at exit).
const std::string &scratchDirectory();

/// Aborts (a finding) unless `path` holds valid JSON; removes it after.
void requireValidJSONFile(const std::string &path);

/// A deterministic choice from the input, so a reproducer replays the same
/// options it crashed with.
uint64_t inputHash(llvm::StringRef text);

} // namespace memwall::fuzz

#endif // MEMWALL_FUZZ_FUZZSUPPORT_H
