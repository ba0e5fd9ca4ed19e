//===- JSONDiagnostics.h - compiler-style JSON errors -----------*- C++ -*-===//

#ifndef MEMWALL_SUPPORT_JSONDIAGNOSTICS_H
#define MEMWALL_SUPPORT_JSONDIAGNOSTICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace memwall {

/// Parses `text` as JSON; a syntax error becomes
/// "<bufferName>:<line>:<col>: <message>", the format of compiler
/// diagnostics, instead of llvm::json's "[line:col, byte=N]: message".
llvm::Expected<llvm::json::Value>
parseJSONWithLocation(llvm::StringRef text, llvm::StringRef bufferName);

} // namespace memwall

#endif // MEMWALL_SUPPORT_JSONDIAGNOSTICS_H
