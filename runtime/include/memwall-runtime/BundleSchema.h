//===- BundleSchema.h - The manifest.json schema, as constants --*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// BundleSchema.def as C++ constants shared by the compiler's writer and the
// runtime's reader: for each object a namespace with one Field per key
// (schema::gemmStep::strideA.key is "stride_a") and kFields, the fields in
// order; kObjects lists every object. No LLVM, no runtime structs: the
// compiler includes it as it is.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_BUNDLESCHEMA_H
#define MEMWALL_RUNTIME_BUNDLESCHEMA_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>

namespace memwall::runtime::schema {

/// The "format" and "version" a manifest starts with.
inline constexpr const char *kFormat = "memwall-bundle";
inline constexpr int64_t kVersion = 1;

enum class FieldKind {
  String,
  /// A number without fraction or exponent that fits int64.
  Integer,
  Number,
  Boolean,
  IntegerList,
  StringList,
  /// A list of exactly 3 integers (a launch grid or block).
  Dim3,
  /// One of the names of the field's EnumSpec.
  Enum,
  /// An object read by the field's object (same schema, nested).
  Object,
  /// A list of objects, each read by the field's object.
  ObjectList,
  /// The reference graph (docs/bundle-format.md), read by
  /// parseReferenceGraph: its op attributes are free-form.
  ReferenceGraph,
};

enum class Presence {
  Required,
  /// May be absent.
  Optional,
  /// May be absent or null; both read as the default.
  Nullable,
};

/// The names an Enum field accepts, in the order of the runtime's enum (and
/// of messages); `noun` names the field in messages ("unknown role ...").
struct EnumSpec {
  const char *noun;
  const char *const *names;
  size_t size;

  /// The index of `name`, or -1.
  int find(const char *name) const {
    for (size_t i = 0; i < size; ++i)
      if (std::strcmp(names[i], name) == 0)
        return static_cast<int>(i);
    return -1;
  }
};

inline constexpr const char *kDTypeNames[] = {
    "f32", "bf16", "f16", "i32", "i64", "i8", "f8e4m3fn", "f8e5m2", "i1", "i4"};
inline constexpr EnumSpec kDTypes{"dtype", kDTypeNames, std::size(kDTypeNames)};

inline constexpr const char *kBufferRoleNames[] = {"input", "weight", "output",
                                                   "intermediate", "counters"};
inline constexpr EnumSpec kBufferRoles{"role", kBufferRoleNames,
                                       std::size(kBufferRoleNames)};

inline constexpr const char *kStepKindNames[] = {"kernel", "gemm",
                                                 "all_reduce"};
inline constexpr EnumSpec kStepKinds{"step kind", kStepKindNames,
                                     std::size(kStepKindNames)};

inline constexpr const char *kEpilogueNames[] = {
    "none", "bias", "relu", "relu_bias", "gelu", "gelu_bias"};
inline constexpr EnumSpec kEpilogues{"epilogue", kEpilogueNames,
                                     std::size(kEpilogueNames)};

inline constexpr const char *kTensorMapSwizzleNames[] = {"none", "32b", "64b",
                                                         "128b"};
inline constexpr EnumSpec kTensorMapSwizzles{"swizzle", kTensorMapSwizzleNames,
                                             std::size(kTensorMapSwizzleNames)};

inline constexpr const char *kTensorMapL2PromotionNames[] = {"none", "64b",
                                                             "128b", "256b"};
inline constexpr EnumSpec kTensorMapL2Promotions{
    "l2 promotion", kTensorMapL2PromotionNames,
    std::size(kTensorMapL2PromotionNames)};

inline constexpr const char *kTensorMapOobFillNames[] = {"zero", "nan"};
inline constexpr EnumSpec kTensorMapOobFills{"out-of-bounds fill",
                                             kTensorMapOobFillNames,
                                             std::size(kTensorMapOobFillNames)};

inline constexpr const char *kTensorMapInterleaveNames[] = {"none", "16b",
                                                            "32b"};
inline constexpr EnumSpec kTensorMapInterleaves{
    "interleave", kTensorMapInterleaveNames,
    std::size(kTensorMapInterleaveNames)};

struct Field {
  const char *key;
  FieldKind kind;
  Presence presence;
  /// Enum fields: the names they accept.
  const EnumSpec *enumSpec;
  /// Object and ObjectList fields: the element's object (kObjects).
  const char *object;
};

struct ObjectSpec {
  const char *name;
  /// How messages name an element once its first field, "name", is read
  /// ("buffer 'x'"); "" when they name it by its index ("inputs[0]").
  const char *label;
  const Field *const *fields;
  size_t size;
};

// What a field's Detail column becomes: (enumSpec, object).
#define BUNDLE_DETAIL_String(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_Integer(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_Number(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_Boolean(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_IntegerList(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_StringList(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_Dim3(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_ReferenceGraph(Detail) nullptr, nullptr
#define BUNDLE_DETAIL_Enum(Detail) &Detail, nullptr
#define BUNDLE_DETAIL_Object(Detail) nullptr, #Detail
#define BUNDLE_DETAIL_ObjectList(Detail) nullptr, #Detail

#define BUNDLE_OBJECT(Object, Struct, Label)                                   \
  namespace Object {                                                           \
  inline constexpr const char *kLabel = Label;
#define BUNDLE_FIELD(Object, Member, Key, Kind, Presence_, Detail)             \
  inline constexpr Field Member{Key, FieldKind::Kind, Presence::Presence_,     \
                                BUNDLE_DETAIL_##Kind(Detail)};
#define BUNDLE_OBJECT_END(Object) }
#include "memwall-runtime/BundleSchema.def"

#define BUNDLE_OBJECT(Object, Struct, Label)                                   \
  namespace Object {                                                           \
  inline constexpr const Field *kFields[] = {
#define BUNDLE_FIELD(Object, Member, Key, Kind, Presence, Detail) &Member,
#define BUNDLE_OBJECT_END(Object)                                              \
  }                                                                            \
  ;                                                                            \
  inline constexpr ObjectSpec kSpec{#Object, kLabel, kFields,                  \
                                    std::size(kFields)};                       \
  }
#include "memwall-runtime/BundleSchema.def"

#define BUNDLE_OBJECT(Object, Struct, Label) &Object::kSpec,
#define BUNDLE_FIELD(Object, Member, Key, Kind, Presence, Detail)
#define BUNDLE_OBJECT_END(Object)
/// Every object of the schema, in BundleSchema.def's order.
inline constexpr const ObjectSpec *kObjects[] = {
#include "memwall-runtime/BundleSchema.def"
};

#undef BUNDLE_DETAIL_String
#undef BUNDLE_DETAIL_Integer
#undef BUNDLE_DETAIL_Number
#undef BUNDLE_DETAIL_Boolean
#undef BUNDLE_DETAIL_IntegerList
#undef BUNDLE_DETAIL_StringList
#undef BUNDLE_DETAIL_Dim3
#undef BUNDLE_DETAIL_ReferenceGraph
#undef BUNDLE_DETAIL_Enum
#undef BUNDLE_DETAIL_Object
#undef BUNDLE_DETAIL_ObjectList

/// The object named `name`, or nullptr.
inline const ObjectSpec *findObject(const char *name) {
  for (const ObjectSpec *object : kObjects)
    if (std::strcmp(object->name, name) == 0)
      return object;
  return nullptr;
}

} // namespace memwall::runtime::schema

#endif // MEMWALL_RUNTIME_BUNDLESCHEMA_H
