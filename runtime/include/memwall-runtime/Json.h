//===- Json.h - Small JSON DOM parser and writer ----------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-run reads manifest.json and inputs files and writes reports without
// LLVM and without exceptions, so it carries its own JSON: a DOM parser whose
// errors say line:column, and a streaming pretty-printing writer.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_JSON_H
#define MEMWALL_RUNTIME_JSON_H

#include "memwall-runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memwall::runtime::json {

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind = Kind::Null;
  bool boolean = false;
  /// Every number, as a double.
  double number = 0;
  /// True when the literal has no fraction or exponent and fits int64; then
  /// `integer` holds it exactly (doubles lose precision above 2^53).
  bool isInteger = false;
  int64_t integer = 0;
  std::string string;
  std::vector<Value> array;
  /// Members in document order (keys are unique: the parser rejects
  /// duplicates).
  std::vector<std::pair<std::string, Value>> object;
  /// Where the value starts in the document (1-based), for messages.
  int line = 0, column = 0;

  bool isNull() const { return kind == Kind::Null; }
  bool isBool() const { return kind == Kind::Bool; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }

  /// The member `key` of an object, or nullptr (also for non-objects).
  const Value *get(const std::string &key) const;
  /// "line:column", for messages.
  std::string where() const;
};

/// Kind name for messages ("object", "string", ...).
const char *kindName(Value::Kind kind);

/// The largest document parse() accepts, and the most readFile() reads by
/// default: a large model's manifest is a few MiB.
constexpr size_t kMaxDocumentBytes = size_t(256) << 20;

/// Parses a complete JSON document. Fails with InvalidJson and the message
/// "LINE:COLUMN: message". Documents nested deeper than 512 levels or larger
/// than kMaxDocumentBytes, and numbers beyond double's range, are errors.
Status parse(const std::string &text, Value &result);

/// A streaming JSON writer with two-space indentation. Call key() before each
/// value inside an object.
class Writer {
public:
  void beginObject();
  void endObject();
  void beginArray();
  void endArray();
  void key(const std::string &name);
  void value(const std::string &text);
  void value(const char *text);
  void value(double number); // NaN and infinities are written as null
  void value(int64_t number);
  void value(int number) { value(static_cast<int64_t>(number)); }
  void value(bool flag);
  void null();
  /// A list of integers on one line ("[2, 4]"), for shapes.
  void intList(const std::vector<int64_t> &values);

  const std::string &str() const { return out; }

private:
  void beforeValue();
  void newline();

  std::string out;
  // One entry per open container: number of elements written so far.
  std::vector<int> counts;
  bool afterKey = false;
};

/// Appends `text` to `out` as a quoted JSON string with escapes.
void appendQuoted(std::string &out, const std::string &text);

} // namespace memwall::runtime::json

#endif // MEMWALL_RUNTIME_JSON_H
