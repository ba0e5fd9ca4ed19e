//===- JsonTest.cpp - Tests of memwall-run's JSON parser and writer -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Json.h"

#include <gtest/gtest.h>

using namespace memwall::runtime;

namespace {

json::Value parseOk(const std::string &text) {
  json::Value value;
  std::string error = json::parse(text, value).message();
  EXPECT_EQ(error, "") << text;
  return value;
}

std::string parseError(const std::string &text) {
  json::Value value;
  return json::parse(text, value).message();
}

TEST(JsonParse, ObjectsArraysAndLiteralsKeepOrderAndPositions) {
  json::Value root = parseOk(
      "{\n  \"b\": [1, true, false, null],\n  \"a\": {\"x\": \"y\"}\n}");
  ASSERT_TRUE(root.isObject());
  ASSERT_EQ(root.object.size(), 2u);
  EXPECT_EQ(root.object[0].first, "b");
  EXPECT_EQ(root.object[1].first, "a");
  const json::Value *b = root.get("b");
  ASSERT_TRUE(b && b->isArray());
  ASSERT_EQ(b->array.size(), 4u);
  EXPECT_TRUE(b->array[1].isBool() && b->array[1].boolean);
  EXPECT_TRUE(b->array[2].isBool() && !b->array[2].boolean);
  EXPECT_TRUE(b->array[3].isNull());
  EXPECT_EQ(b->line, 2);
  EXPECT_EQ(b->column, 8);
  EXPECT_EQ(root.get("a")->get("x")->string, "y");
  EXPECT_EQ(root.get("missing"), nullptr);
  EXPECT_EQ(b->get("x"), nullptr); // not an object
}

TEST(JsonParse, EmptyContainers) {
  EXPECT_TRUE(parseOk("{}").object.empty());
  EXPECT_TRUE(parseOk(" [ ] ").array.empty());
}

TEST(JsonParse, StringEscapesAndUnicode) {
  json::Value value =
      parseOk(R"("q\" b\\ s\/ \b\f\n\r\t e\u00e9 g\uD83D\uDE00")");
  EXPECT_EQ(value.string, "q\" b\\ s/ \b\f\n\r\t e\xc3\xa9 g\xf0\x9f\x98\x80");
}

TEST(JsonParse, IntegersAreExactBeyondDoublePrecision) {
  json::Value value = parseOk("[9007199254740993, -42, 0, 1e3, 2.5, "
                              "-1.5e-3, 99999999999999999999]");
  EXPECT_TRUE(value.array[0].isInteger);
  EXPECT_EQ(value.array[0].integer, 9007199254740993LL);
  EXPECT_EQ(value.array[1].integer, -42);
  EXPECT_TRUE(value.array[2].isInteger);
  EXPECT_TRUE(value.array[3].isInteger);
  EXPECT_EQ(value.array[3].integer, 1000);
  EXPECT_FALSE(value.array[4].isInteger);
  EXPECT_DOUBLE_EQ(value.array[4].number, 2.5);
  EXPECT_DOUBLE_EQ(value.array[5].number, -1.5e-3);
  EXPECT_FALSE(value.array[6].isInteger); // beyond int64
  EXPECT_DOUBLE_EQ(value.array[6].number, 1e20);
}

TEST(JsonParseErrors, EndOfInput) {
  EXPECT_EQ(parseError(""), "1:1: unexpected end of input, expected a value");
  EXPECT_EQ(parseError("[1,\n"),
            "2:1: unexpected end of input, expected a value");
  EXPECT_EQ(parseError("{\"a\": 1"),
            "1:8: unexpected end of input in object, expected ',' or '}'");
  EXPECT_EQ(parseError("[1"),
            "1:3: unexpected end of input in array, expected ',' or ']'");
}

TEST(JsonParseErrors, UnexpectedCharacters) {
  EXPECT_EQ(parseError("{\n  \"a\": 1\n  \"b\": 2\n}"),
            "3:3: unexpected '\"', expected ',' or '}' in object");
  EXPECT_EQ(parseError("[1,]"), "1:4: unexpected ']', expected a value");
  EXPECT_EQ(parseError("[1 2]"),
            "1:4: unexpected '2', expected ',' or ']' in array");
  EXPECT_EQ(parseError("{\"a\" 1}"),
            "1:6: unexpected '1', expected ':' after key");
  EXPECT_EQ(parseError("{1: 2}"), "1:2: unexpected '1', expected a string key");
  EXPECT_EQ(parseError("tru"), "1:1: unexpected 't', expected a value");
  EXPECT_EQ(parseError("{} x"),
            "1:4: unexpected trailing characters after the JSON value");
}

TEST(JsonParseErrors, Strings) {
  EXPECT_EQ(parseError("\n  \"abc"), "2:3: unterminated string");
  EXPECT_EQ(parseError("\"a\\qb\""), "1:3: invalid escape '\\q'");
  EXPECT_EQ(parseError("\"\\u12g4\""),
            "1:6: invalid hex digit 'g' in \\u escape");
  EXPECT_EQ(parseError("\"\\ud800x\""),
            "1:2: unpaired high surrogate in \\u escape");
  EXPECT_EQ(parseError("\"\\udc00\""),
            "1:2: unpaired low surrogate in \\u escape");
  EXPECT_EQ(parseError("\"a\tb\""),
            "1:3: unescaped control character (byte 0x09) in string");
}

TEST(JsonParseErrors, Numbers) {
  EXPECT_EQ(parseError("-"), "1:1: invalid number: expected a digit after '-'");
  EXPECT_EQ(parseError("[01]"),
            "1:2: invalid number: leading zeros are not allowed");
  EXPECT_EQ(parseError("1."),
            "1:1: invalid number: expected a digit after '.'");
  EXPECT_EQ(parseError("1e+"),
            "1:1: invalid number: expected a digit in the exponent");
  EXPECT_EQ(parseError("1e999"), "1:1: number out of range: 1e999");
}

TEST(JsonParseErrors, DuplicateKeys) {
  EXPECT_EQ(parseError("{\"a\": 1,\n \"a\": 2}"), "2:2: duplicate key \"a\"");
}

// 100,000 nested '[' overflowed the recursive parser's stack.
TEST(JsonParseErrors, RejectsJsonNestedTooDeep) {
  EXPECT_EQ(parseError(std::string(100000, '[')),
            "1:513: JSON nested deeper than 512 levels");
  std::string objects;
  for (int i = 0; i < 100000; ++i)
    objects += "{\"a\":";
  EXPECT_EQ(parseError(objects), "1:2561: JSON nested deeper than 512 levels");
}

TEST(JsonParse, AcceptsNestingUpToTheLimit) {
  json::Value value =
      parseOk(std::string(512, '[') + "1" + std::string(512, ']'));
  EXPECT_TRUE(value.isArray());
}

TEST(JsonParseErrors, RejectsOutOfRangeNumberNamingTheKey) {
  EXPECT_EQ(parseError("{\"shape\": [2, -1e400]}"),
            "1:15: number out of range: -1e400 (in \"shape\")");
  EXPECT_EQ(parseError("{\"a\": {\"offset\": 1e999}}"),
            "1:18: number out of range: 1e999 (in \"offset\")");
}

TEST(JsonParseErrors, RejectsDocumentLargerThanTheLimit) {
  std::string text(json::kMaxDocumentBytes + 1, ' ');
  text[0] = '1';
  EXPECT_EQ(parseError(text), "1:1: the document has " +
                                  std::to_string(text.size()) +
                                  " bytes, more than the limit of " +
                                  std::to_string(json::kMaxDocumentBytes));
}

TEST(JsonWriter, WritesWhatTheParserReadsBack) {
  json::Writer writer;
  writer.beginObject();
  writer.key("name");
  writer.value("a \"quoted\"\nline");
  writer.key("values");
  writer.beginArray();
  writer.value(int64_t(1) << 60);
  writer.value(1.5e-6);
  writer.value(0.1);
  writer.value(true);
  writer.null();
  writer.value(1.0 / 0.0); // not JSON: written as null
  writer.endArray();
  writer.key("empty");
  writer.beginObject();
  writer.endObject();
  writer.endObject();
  json::Value root = parseOk(writer.str());
  EXPECT_EQ(root.get("name")->string, "a \"quoted\"\nline");
  const json::Value *values = root.get("values");
  ASSERT_EQ(values->array.size(), 6u);
  EXPECT_EQ(values->array[0].integer, int64_t(1) << 60);
  EXPECT_EQ(values->array[1].number, 1.5e-6);
  EXPECT_EQ(values->array[2].number, 0.1);
  EXPECT_TRUE(values->array[3].boolean);
  EXPECT_TRUE(values->array[4].isNull());
  EXPECT_TRUE(values->array[5].isNull());
  EXPECT_TRUE(root.get("empty")->isObject());
  // Shortest round-tripping form, not 17 digits.
  EXPECT_NE(writer.str().find("0.1,"), std::string::npos);
}

} // namespace
