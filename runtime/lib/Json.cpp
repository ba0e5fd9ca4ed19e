//===- Json.cpp - Small JSON DOM parser and writer ------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace memwall::runtime::json {

const Value *Value::get(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (const auto &member : object)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

std::string Value::where() const {
  return std::to_string(line) + ":" + std::to_string(column);
}

const char *kindName(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return "boolean";
  case Value::Kind::Number:
    return "number";
  case Value::Kind::String:
    return "string";
  case Value::Kind::Array:
    return "array";
  case Value::Kind::Object:
    return "object";
  }
  return "?";
}

namespace {

// Deeper documents are certainly not manifests; the limit keeps the recursive
// parser's stack bounded (100,000 nested '[' would overflow it).
constexpr int kMaxDepth = 512;

class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  std::string parseDocument(Value &result) {
    if (text.size() > kMaxDocumentBytes)
      return fail("the document has " + std::to_string(text.size()) +
                  " bytes, more than the limit of " +
                  std::to_string(kMaxDocumentBytes));
    skipWhitespace();
    if (!parseValue(result, 0, ""))
      return error;
    skipWhitespace();
    if (pos != text.size())
      return fail("unexpected trailing characters after the JSON value");
    return "";
  }

private:
  const std::string &text;
  size_t pos = 0;
  int line = 1, column = 1;
  std::string error;

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return text[pos]; }

  void advance() {
    if (text[pos] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    ++pos;
  }

  // Records the first error at the current position; returns false so that
  // callers can `return fail(...)`.
  bool failHere(const std::string &message) {
    return failAt(line, column, message);
  }
  bool failAt(int atLine, int atColumn, const std::string &message) {
    if (error.empty())
      error = std::to_string(atLine) + ":" + std::to_string(atColumn) + ": " +
              message;
    return false;
  }
  std::string fail(const std::string &message) {
    failHere(message);
    return error;
  }

  void skipWhitespace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      advance();
  }

  static std::string describe(char c) {
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f) {
      char buffer[16];
      std::snprintf(buffer, sizeof(buffer), "byte 0x%02x",
                    static_cast<unsigned char>(c));
      return buffer;
    }
    return std::string("'") + c + "'";
  }

  /// `key` is the member key of the innermost enclosing object ("" at the
  /// top level), for messages about numbers.
  bool parseValue(Value &value, int depth, const std::string &key) {
    value = Value();
    value.line = line;
    value.column = column;
    if (atEnd())
      return failHere("unexpected end of input, expected a value");
    char c = peek();
    if ((c == '{' || c == '[') && depth >= kMaxDepth)
      return failHere("JSON nested deeper than " + std::to_string(kMaxDepth) +
                      " levels");
    if (c == '{')
      return parseObject(value, depth);
    if (c == '[')
      return parseArray(value, depth, key);
    if (c == '"') {
      value.kind = Value::Kind::String;
      return parseString(value.string);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(value, key);
    if (matchWord("true")) {
      value.kind = Value::Kind::Bool;
      value.boolean = true;
      return true;
    }
    if (matchWord("false")) {
      value.kind = Value::Kind::Bool;
      return true;
    }
    if (matchWord("null"))
      return true;
    return failHere("unexpected " + describe(c) + ", expected a value");
  }

  bool matchWord(const char *word) {
    size_t length = std::char_traits<char>::length(word);
    if (text.compare(pos, length, word) != 0)
      return false;
    for (size_t i = 0; i < length; ++i)
      advance();
    return true;
  }

  bool parseObject(Value &value, int depth) {
    value.kind = Value::Kind::Object;
    advance(); // '{'
    skipWhitespace();
    if (!atEnd() && peek() == '}') {
      advance();
      return true;
    }
    while (true) {
      skipWhitespace();
      if (atEnd())
        return failHere("unexpected end of input in object, expected a key");
      if (peek() != '"')
        return failHere("unexpected " + describe(peek()) +
                        ", expected a string key");
      int keyLine = line, keyColumn = column;
      std::string key;
      if (!parseString(key))
        return false;
      if (value.get(key))
        return failAt(keyLine, keyColumn, "duplicate key \"" + key + "\"");
      skipWhitespace();
      if (atEnd())
        return failHere("unexpected end of input in object, expected ':'");
      if (peek() != ':')
        return failHere("unexpected " + describe(peek()) +
                        ", expected ':' after key");
      advance();
      skipWhitespace();
      value.object.emplace_back(key, Value());
      if (!parseValue(value.object.back().second, depth + 1, key))
        return false;
      skipWhitespace();
      if (atEnd())
        return failHere("unexpected end of input in object, expected ',' or "
                        "'}'");
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        return true;
      }
      return failHere("unexpected " + describe(peek()) +
                      ", expected ',' or '}' in object");
    }
  }

  bool parseArray(Value &value, int depth, const std::string &key) {
    value.kind = Value::Kind::Array;
    advance(); // '['
    skipWhitespace();
    if (!atEnd() && peek() == ']') {
      advance();
      return true;
    }
    while (true) {
      skipWhitespace();
      value.array.emplace_back();
      if (!parseValue(value.array.back(), depth + 1, key))
        return false;
      skipWhitespace();
      if (atEnd())
        return failHere("unexpected end of input in array, expected ',' or "
                        "']'");
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ']') {
        advance();
        return true;
      }
      return failHere("unexpected " + describe(peek()) +
                      ", expected ',' or ']' in array");
    }
  }

  static void appendUtf8(std::string &out, uint32_t codePoint) {
    if (codePoint < 0x80) {
      out += static_cast<char>(codePoint);
    } else if (codePoint < 0x800) {
      out += static_cast<char>(0xc0 | (codePoint >> 6));
      out += static_cast<char>(0x80 | (codePoint & 0x3f));
    } else if (codePoint < 0x10000) {
      out += static_cast<char>(0xe0 | (codePoint >> 12));
      out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (codePoint & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (codePoint >> 18));
      out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (codePoint & 0x3f));
    }
  }

  bool parseHex4(uint32_t &result) {
    result = 0;
    for (int i = 0; i < 4; ++i) {
      if (atEnd())
        return failHere("unexpected end of input in \\u escape");
      char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return failHere("invalid hex digit " + describe(c) + " in \\u escape");
      result = result * 16 + digit;
      advance();
    }
    return true;
  }

  bool parseString(std::string &out) {
    int startLine = line, startColumn = column;
    advance(); // '"'
    while (true) {
      if (atEnd())
        return failAt(startLine, startColumn, "unterminated string");
      char c = peek();
      if (c == '"') {
        advance();
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return failHere("unescaped control character (" + describe(c) +
                        ") in string");
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      int escapeLine = line, escapeColumn = column;
      advance(); // '\\'
      if (atEnd())
        return failAt(startLine, startColumn, "unterminated string");
      char escape = peek();
      advance();
      switch (escape) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t codePoint;
        if (!parseHex4(codePoint))
          return false;
        if (codePoint >= 0xdc00 && codePoint <= 0xdfff)
          return failAt(escapeLine, escapeColumn,
                        "unpaired low surrogate in \\u escape");
        if (codePoint >= 0xd800 && codePoint <= 0xdbff) {
          if (text.compare(pos, 2, "\\u") != 0)
            return failAt(escapeLine, escapeColumn,
                          "unpaired high surrogate in \\u escape");
          advance();
          advance();
          uint32_t low;
          if (!parseHex4(low))
            return false;
          if (low < 0xdc00 || low > 0xdfff)
            return failAt(escapeLine, escapeColumn,
                          "unpaired high surrogate in \\u escape");
          codePoint = 0x10000 + ((codePoint - 0xd800) << 10) + (low - 0xdc00);
        }
        appendUtf8(out, codePoint);
        break;
      }
      default:
        return failAt(escapeLine, escapeColumn,
                      "invalid escape '\\" + std::string(1, escape) + "'");
      }
    }
  }

  bool parseNumber(Value &value, const std::string &key) {
    int startLine = line, startColumn = column;
    size_t start = pos;
    bool integral = true;
    if (peek() == '-')
      advance();
    if (atEnd() || !(peek() >= '0' && peek() <= '9'))
      return failAt(startLine, startColumn,
                    "invalid number: expected a digit after '-'");
    if (peek() == '0') {
      advance();
      if (!atEnd() && peek() >= '0' && peek() <= '9')
        return failAt(startLine, startColumn,
                      "invalid number: leading zeros are not allowed");
    } else {
      while (!atEnd() && peek() >= '0' && peek() <= '9')
        advance();
    }
    if (!atEnd() && peek() == '.') {
      integral = false;
      advance();
      if (atEnd() || !(peek() >= '0' && peek() <= '9'))
        return failAt(startLine, startColumn,
                      "invalid number: expected a digit after '.'");
      while (!atEnd() && peek() >= '0' && peek() <= '9')
        advance();
    }
    if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
      integral = false;
      advance();
      if (!atEnd() && (peek() == '+' || peek() == '-'))
        advance();
      if (atEnd() || !(peek() >= '0' && peek() <= '9'))
        return failAt(startLine, startColumn,
                      "invalid number: expected a digit in the exponent");
      while (!atEnd() && peek() >= '0' && peek() <= '9')
        advance();
    }
    std::string literal = text.substr(start, pos - start);
    value.kind = Value::Kind::Number;
    value.number = std::strtod(literal.c_str(), nullptr);
    if (integral) {
      errno = 0;
      long long parsed = std::strtoll(literal.c_str(), nullptr, 10);
      if (errno == 0) {
        value.isInteger = true;
        value.integer = parsed;
      }
    } else if (std::isfinite(value.number) &&
               value.number == std::floor(value.number) &&
               std::fabs(value.number) < 9.007199254740992e15) {
      // 1e3 and 2.0 are integers too; only exact ones below 2^53.
      value.isInteger = true;
      value.integer = static_cast<int64_t>(value.number);
    }
    if (!std::isfinite(value.number))
      return failAt(startLine, startColumn,
                    "number out of range: " + literal +
                        (key.empty() ? "" : " (in \"" + key + "\")"));
    return true;
  }
};

} // namespace

Status parse(const std::string &text, Value &result) {
  Parser parser(text);
  std::string error = parser.parseDocument(result);
  if (!error.empty())
    return Status(ErrorCode::InvalidJson, error);
  return Status();
}

void appendQuoted(std::string &out, const std::string &text) {
  out += '"';
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void Writer::newline() {
  out += '\n';
  out.append(2 * counts.size(), ' ');
}

void Writer::beforeValue() {
  if (afterKey) {
    afterKey = false;
    return;
  }
  if (!counts.empty()) {
    if (counts.back() > 0)
      out += ',';
    ++counts.back();
    newline();
  }
}

void Writer::beginObject() {
  beforeValue();
  out += '{';
  counts.push_back(0);
}

void Writer::endObject() {
  bool empty = counts.back() == 0;
  counts.pop_back();
  if (!empty)
    newline();
  out += '}';
  if (counts.empty())
    out += '\n';
}

void Writer::beginArray() {
  beforeValue();
  out += '[';
  counts.push_back(0);
}

void Writer::endArray() {
  bool empty = counts.back() == 0;
  counts.pop_back();
  if (!empty)
    newline();
  out += ']';
  if (counts.empty())
    out += '\n';
}

void Writer::key(const std::string &name) {
  beforeValue();
  appendQuoted(out, name);
  out += ": ";
  afterKey = true;
}

void Writer::value(const std::string &text) {
  beforeValue();
  appendQuoted(out, text);
}

void Writer::value(const char *text) { value(std::string(text)); }

void Writer::value(double number) {
  beforeValue();
  if (!std::isfinite(number)) {
    out += "null";
    return;
  }
  // The shortest of 15..17 significant digits that reads back exactly.
  char buffer[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, number);
    if (std::strtod(buffer, nullptr) == number)
      break;
  }
  out += buffer;
}

void Writer::value(int64_t number) {
  beforeValue();
  out += std::to_string(number);
}

void Writer::value(bool flag) {
  beforeValue();
  out += flag ? "true" : "false";
}

void Writer::intList(const std::vector<int64_t> &values) {
  beforeValue();
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i)
      out += ", ";
    out += std::to_string(values[i]);
  }
  out += ']';
}

void Writer::null() {
  beforeValue();
  out += "null";
}

} // namespace memwall::runtime::json
