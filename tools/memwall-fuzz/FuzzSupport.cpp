//===- FuzzSupport.cpp - what memwall's fuzz targets share ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "memwall/Registration.h"
#include "memwall/Support/InputLimits.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;

bool memwall::fuzz::asText(const uint8_t *data, size_t size,
                           llvm::StringRef &text) {
  if (std::memchr(data, 0, size))
    return false;
  text = llvm::StringRef(reinterpret_cast<const char *>(data), size);
  return true;
}

std::unique_ptr<MLIRContext> memwall::fuzz::createContext() {
  DialectRegistry registry;
  registerMemWallDialects(registry);
  auto context =
      std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  // Errors are answers here; only crashes are findings.
  context->getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  return context;
}

OwningOpRef<ModuleOp> memwall::fuzz::parseModule(MLIRContext &context,
                                                 llvm::StringRef text) {
  if (llvm::Error error = checkNestingDepth(text, "fuzz", TextSyntax::MLIR)) {
    llvm::consumeError(std::move(error));
    return nullptr;
  }
  // As the tools read files: a NUL-terminated copy, which MLIR's lexer
  // relies on (parseSourceString over the fuzzer's unterminated bytes reads
  // past their end).
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz"), llvm::SMLoc());
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

memwall::fuzz::ParsedModule memwall::fuzz::parseInput(const uint8_t *data,
                                                      size_t size) {
  ParsedModule parsed;
  llvm::StringRef text;
  if (!asText(data, size, text))
    return parsed;
  parsed.context = createContext();
  parsed.module = parseModule(*parsed.context, text);
  parsed.hash = inputHash(text);
  return parsed;
}

const std::string &memwall::fuzz::scratchDirectory() {
  // Never freed: the exit handler runs after static destructors would have
  // destroyed a std::string (it was registered before the string existed).
  static const std::string *directory = [] {
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueDirectory("memwall-fuzz", path))
      std::abort();
    std::atexit([] { llvm::sys::fs::remove_directories(*directory); });
    return new std::string(path.str());
  }();
  return *directory;
}

void memwall::fuzz::requireValidJSONFile(const std::string &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return; // the run chose to write nothing
  if (llvm::Expected<llvm::json::Value> value =
          llvm::json::parse((*buffer)->getBuffer());
      !value) {
    llvm::errs() << "memwall wrote invalid JSON to " << path << ": "
                 << llvm::toString(value.takeError()) << "\n";
    std::abort();
  }
  llvm::sys::fs::remove(path);
}

uint64_t memwall::fuzz::inputHash(llvm::StringRef text) {
  // FNV-1a: stable across processes, unlike llvm::hash_value's seed.
  uint64_t hash = 14695981039346656037ull;
  for (char c : text)
    hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return hash;
}
