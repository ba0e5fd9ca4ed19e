//===- JSONDiagnostics.cpp - compiler-style JSON errors -------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Support/JSONDiagnostics.h"

#include "memwall/Support/InputLimits.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace memwall;

llvm::Expected<llvm::json::Value>
memwall::parseJSONWithLocation(llvm::StringRef text,
                               llvm::StringRef bufferName) {
  // llvm::json recurses per level and has no limit of its own.
  if (llvm::Error error =
          checkNestingDepth(text, bufferName, TextSyntax::JSON))
    return std::move(error);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (parsed)
    return parsed;
  std::string message = llvm::toString(parsed.takeError());
  llvm::StringRef rest = message;
  std::string formatted = (bufferName + ": " + message).str();
  if (rest.consume_front("[")) {
    auto [position, detail] = rest.split("]: ");
    llvm::StringRef lineCol = position.split(", ").first;
    if (!detail.empty() && lineCol.contains(':'))
      formatted = (bufferName + ":" + lineCol + ": " + detail).str();
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(), formatted);
}

llvm::Expected<llvm::json::Object>
memwall::parseJSONObjectWithLocation(llvm::StringRef text,
                                     llvm::StringRef bufferName,
                                     llvm::StringRef what) {
  llvm::Expected<llvm::json::Value> parsed =
      parseJSONWithLocation(text, bufferName);
  if (!parsed)
    return parsed.takeError();
  llvm::json::Object *object = parsed->getAsObject();
  if (!object)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   bufferName + ": " + what +
                                       " must be a JSON object");
  return std::move(*object);
}

void JSONObjectReader::readNumber(llvm::StringRef key, double &value,
                                  bool positive) {
  const llvm::json::Value *field = object.get(key);
  if (!field)
    return;
  std::optional<double> number = field->getAsNumber();
  if (!number || !std::isfinite(*number) || *number < 0 ||
      (positive && *number == 0))
    return fail(key, positive ? "must be a positive number"
                              : "must be a non-negative number");
  value = *number;
}

void JSONObjectReader::readInteger(llvm::StringRef key, int64_t &value,
                                   bool positive) {
  const llvm::json::Value *field = object.get(key);
  if (!field)
    return;
  std::optional<int64_t> number = field->getAsInteger();
  if (!number || *number < 0 || (positive && *number == 0))
    return fail(key, positive ? "must be a positive integer"
                              : "must be a non-negative integer");
  value = *number;
}

void JSONObjectReader::readString(llvm::StringRef key, std::string &value) {
  const llvm::json::Value *field = object.get(key);
  if (!field)
    return;
  std::optional<llvm::StringRef> text = field->getAsString();
  if (!text)
    return fail(key, "must be a string");
  value = text->str();
}

void JSONObjectReader::readBoolean(llvm::StringRef key, bool &value) {
  const llvm::json::Value *field = object.get(key);
  if (!field)
    return;
  std::optional<bool> flag = field->getAsBoolean();
  if (!flag)
    return fail(key, "must be true or false");
  value = *flag;
}

void JSONObjectReader::requireKeys(llvm::ArrayRef<llvm::StringRef> keys,
                                   llvm::StringRef hint) {
  for (llvm::StringRef key : keys)
    if (!object.get(key))
      return fail(key, hint.empty() ? llvm::Twine("is required")
                                    : "is required " + hint);
}

void JSONObjectReader::rejectUnknownKeys(llvm::ArrayRef<llvm::StringRef> known,
                                         llvm::StringRef what) {
  for (const auto &entry : object)
    if (!llvm::is_contained(known, llvm::StringRef(entry.first)))
      return fail(llvm::StringRef(entry.first), "is not a " + what);
}

void JSONObjectReader::fail(const llvm::Twine &key,
                            const llvm::Twine &message) {
  if (error.empty())
    error = (bufferName + ": \"" + keyPrefix + key + "\" " + message).str();
}

void JSONObjectReader::adopt(llvm::Error nestedError) {
  if (!nestedError)
    return;
  std::string message = llvm::toString(std::move(nestedError));
  if (error.empty())
    error = std::move(message);
}

llvm::Error JSONObjectReader::takeError() {
  if (error.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
}
