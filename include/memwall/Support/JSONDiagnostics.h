//===- JSONDiagnostics.h - compiler-style JSON errors -----------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reading user-written JSON (target files, Hugging Face configs) with errors
// that name the file and the line, or the key, that is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_JSONDIAGNOSTICS_H
#define MEMWALL_SUPPORT_JSONDIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace memwall {

/// Parses `text` as JSON; a syntax error becomes
/// "<bufferName>:<line>:<col>: <message>", the format of compiler
/// diagnostics, instead of llvm::json's "[line:col, byte=N]: message".
llvm::Expected<llvm::json::Value>
parseJSONWithLocation(llvm::StringRef text, llvm::StringRef bufferName);

/// Parses `text` as a JSON object (`what` names it in the error when the
/// document is something else, e.g. "a target").
llvm::Expected<llvm::json::Object>
parseJSONObjectWithLocation(llvm::StringRef text, llvm::StringRef bufferName,
                            llvm::StringRef what);

/// Reads typed fields of one JSON object. Absent keys leave the destination
/// untouched; the first problem is kept as `<bufferName>: "<key>" <message>`.
class JSONObjectReader {
public:
  /// `keyPrefix` names a nested object in messages ("achievable.").
  JSONObjectReader(const llvm::json::Object &object, llvm::StringRef bufferName,
                   llvm::StringRef keyPrefix = "")
      : object(object), bufferName(bufferName), keyPrefix(keyPrefix) {}

  /// A finite number, >= 0 (> 0 when `positive`).
  void readNumber(llvm::StringRef key, double &value, bool positive = false);
  /// A whole number, >= 0 (> 0 when `positive`).
  void readInteger(llvm::StringRef key, int64_t &value, bool positive = false);
  void readString(llvm::StringRef key, std::string &value);
  void readBoolean(llvm::StringRef key, bool &value);
  /// Fails on the first of `keys` that is absent, adding `hint`.
  void requireKeys(llvm::ArrayRef<llvm::StringRef> keys,
                   llvm::StringRef hint = "");
  /// Fails on the first key not in `known` ("is not a <what>").
  void rejectUnknownKeys(llvm::ArrayRef<llvm::StringRef> known,
                         llvm::StringRef what);

  void fail(const llvm::Twine &key, const llvm::Twine &message);
  /// Keeps the first problem of a nested object's reader as this one's.
  void adopt(llvm::Error nestedError);
  bool hasFailed() const { return !error.empty(); }
  llvm::Error takeError();

private:
  const llvm::json::Object &object;
  llvm::StringRef bufferName;
  std::string keyPrefix;
  std::string error;
};

} // namespace memwall

#endif // MEMWALL_SUPPORT_JSONDIAGNOSTICS_H
