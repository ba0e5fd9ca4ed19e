//===- Manifest.cpp - A bundle's manifest.json, parsed and checked --------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/BundleSchema.h"
#include "memwall-runtime/Checked.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace memwall::runtime {

const char *roleName(BufferRole role) {
  return schema::kBufferRoles.names[static_cast<size_t>(role)];
}

const char *stepKindName(StepKind kind) {
  return schema::kStepKinds.names[static_cast<size_t>(kind)];
}

const char *epilogueName(Epilogue epilogue) {
  return schema::kEpilogues.names[static_cast<size_t>(epilogue)];
}

bool epilogueHasBias(Epilogue epilogue) {
  return epilogue == Epilogue::Bias || epilogue == Epilogue::ReluBias ||
         epilogue == Epilogue::GeluBias;
}

const Buffer *Manifest::findBuffer(const std::string &name) const {
  for (const Buffer &buffer : buffers)
    if (buffer.name == name)
      return &buffer;
  return nullptr;
}

const Module *Manifest::findModule(const std::string &name) const {
  for (const Module &module : modules)
    if (module.name == name)
      return &module;
  return nullptr;
}

const reference::ValueInfo *Manifest::findValue(const std::string &name) const {
  for (const reference::ValueInfo &value : reference.values)
    if (value.name == name)
      return &value;
  return nullptr;
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t count;
  return checkedElementCount(shape, count) ? count : -1;
}

namespace {
/// Calls `copy(denseByte, bufferByte, bytes)` for each run of elements that
/// is contiguous both densely and in strided `buffer` (a validated one).
template <typename CopyFn>
void forEachStridedRun(const Buffer &buffer, CopyFn copy) {
  int64_t elements = numElements(buffer.shape);
  if (elements <= 0)
    return;
  int64_t width = reference::dtypeBytes(buffer.dtype);
  size_t rank = buffer.shape.size();
  int64_t run = buffer.strides.back() == 1 ? buffer.shape.back() : 1;
  std::vector<int64_t> index(rank, 0);
  for (int64_t dense = 0; dense < elements; dense += run) {
    int64_t at = 0;
    for (size_t i = 0; i < rank; ++i)
      at += index[i] * buffer.strides[i];
    copy(dense * width, at * width, run * width);
    for (size_t i = rank, carry = run; i-- > 0 && carry;) {
      index[i] += static_cast<int64_t>(carry);
      carry = static_cast<size_t>(index[i] / buffer.shape[i]);
      index[i] %= buffer.shape[i];
    }
  }
}
} // namespace

int64_t denseBytes(const Buffer &buffer) {
  return reference::dtypeStorageBytes(buffer.dtype, numElements(buffer.shape));
}

void storeToBuffer(const Buffer &buffer, const reference::Tensor &tensor,
                   uint8_t *bufferStart) {
  std::vector<uint8_t> dense = tensor.toBytes();
  if (buffer.strides.empty()) {
    std::memcpy(bufferStart, dense.data(), dense.size());
    return;
  }
  forEachStridedRun(buffer, [&](int64_t from, int64_t to, int64_t size) {
    std::memcpy(bufferStart + to, dense.data() + from, size);
  });
}

std::vector<uint8_t> toBufferBytes(const Buffer &buffer,
                                   const reference::Tensor &tensor) {
  if (buffer.strides.empty())
    return tensor.toBytes();
  std::vector<uint8_t> bytes(static_cast<size_t>(buffer.bytes), 0);
  storeToBuffer(buffer, tensor, bytes.data());
  return bytes;
}

reference::Tensor fromBufferBytes(const Buffer &buffer, const uint8_t *bytes) {
  if (buffer.strides.empty())
    return reference::Tensor::fromBytes(buffer.dtype, buffer.shape, bytes,
                                        static_cast<size_t>(buffer.bytes));
  std::vector<uint8_t> packed(static_cast<size_t>(denseBytes(buffer)));
  forEachStridedRun(buffer, [&](int64_t to, int64_t from, int64_t size) {
    std::memcpy(packed.data() + to, bytes + from, size);
  });
  return reference::Tensor::fromBytes(buffer.dtype, buffer.shape, packed.data(),
                                      packed.size());
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

namespace {

/// An I/O failure on `path`: "cannot open 'PATH': REASON".
Status ioError(const char *what, const std::string &path, int error) {
  return Status(ErrorCode::Io, std::string("cannot ") + what + " '" + path +
                                   "': " + std::strerror(error));
}

/// Opens `path` for reading; a directory is an error. Returns -1 and sets
/// `error` on failure.
int openForReading(const std::string &path, struct stat &status,
                   Status &error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = ioError("open", path, errno);
    return -1;
  }
  if (fstat(fd, &status) != 0)
    error = ioError("stat", path, errno);
  else if (S_ISDIR(status.st_mode))
    error = Status(ErrorCode::Io, "'" + path + "' is a directory");
  else
    return fd;
  close(fd);
  return -1;
}

/// Appends what `fd` holds to `contents`, at most `maxBytes` bytes in all;
/// sets `overflowed` when there was more.
bool readAtMost(int fd, size_t maxBytes, std::string &contents,
                bool &overflowed) {
  overflowed = false;
  char chunk[1 << 16];
  while (true) {
    ssize_t got = read(fd, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return false;
    if (got == 0)
      return true;
    if (contents.size() + static_cast<size_t>(got) > maxBytes) {
      overflowed = true;
      return true;
    }
    contents.append(chunk, static_cast<size_t>(got));
  }
}

} // namespace

Status readFile(const std::string &path, std::string &contents,
                size_t maxBytes) {
  contents.clear();
  struct stat status;
  Status error;
  int fd = openForReading(path, status, error);
  if (fd < 0)
    return error;
  // A regular file says its size up front; pipes and devices such as
  // /dev/zero are read up to the cap.
  bool tooLarge = S_ISREG(status.st_mode) &&
                  static_cast<uint64_t>(status.st_size) > maxBytes;
  bool ok = true;
  if (!tooLarge) {
    if (S_ISREG(status.st_mode))
      contents.reserve(static_cast<size_t>(status.st_size));
    ok = readAtMost(fd, maxBytes, contents, tooLarge);
  }
  int readErrno = errno;
  close(fd);
  if (tooLarge) {
    contents.clear();
    return Status(ErrorCode::Io, "'" + path + "' is larger than the limit of " +
                                     std::to_string(maxBytes) + " bytes");
  }
  if (!ok)
    return ioError("read", path, readErrno);
  return Status();
}

Status readFileOfSize(const std::string &path, int64_t bytes,
                      const std::string &expected, std::string &contents) {
  contents.clear();
  struct stat status;
  if (stat(path.c_str(), &status) != 0)
    return ioError("open", path, errno);
  // Checked before opening: opening a FIFO would wait for a writer.
  if (!S_ISREG(status.st_mode))
    return Status(ErrorCode::InvalidInputs, "'" + path +
                                                "' is not a regular file "
                                                "(expected " +
                                                expected + ")");
  if (status.st_size != bytes)
    return Status(ErrorCode::InvalidInputs, "file '" + path + "' has " +
                                                std::to_string(status.st_size) +
                                                " bytes, expected " + expected);
  Status error;
  int fd = openForReading(path, status, error);
  if (fd < 0)
    return error;
  if (std::string memory = checkHostMemory(bytes, "reading '" + path + "'");
      !memory.empty()) {
    close(fd);
    return Status(ErrorCode::OutOfMemory, memory);
  }
  bool tooLarge = false;
  contents.reserve(static_cast<size_t>(bytes));
  bool ok = readAtMost(fd, static_cast<size_t>(bytes), contents, tooLarge);
  int readErrno = errno;
  close(fd);
  if (!ok)
    return ioError("read", path, readErrno);
  // The file changed size between stat and read.
  if (tooLarge || static_cast<int64_t>(contents.size()) != bytes)
    return Status(ErrorCode::InvalidInputs,
                  "file '" + path +
                      "' changed size while being read (expected " + expected +
                      ")");
  return Status();
}

namespace {

/// Reads JSON values into runtime structs as the schema (BundleSchema.def)
/// describes them, keeping the first error. Each message starts with the
/// context (e.g. "buffer 'x'") and the value's line:column.
class FieldReader {
public:
  std::string error;

  bool ok() const { return error.empty(); }

  bool fail(const std::string &context, const json::Value &at,
            const std::string &message) {
    if (error.empty())
      error = "manifest.json:" + at.where() + ": " + context + ": " + message;
    return false;
  }

  Status status() const {
    return ok() ? Status() : Status(ErrorCode::InvalidManifest, error);
  }

  /// The member `key` of `object`; fails when it is missing.
  const json::Value *field(const json::Value &object, const char *key,
                           const std::string &context) {
    const json::Value *value = object.get(key);
    if (!value)
      fail(context, object, std::string("missing field \"") + key + "\"");
    return value;
  }

  bool expect(const json::Value &value, json::Value::Kind kind,
              const std::string &context, const char *key) {
    if (value.kind == kind)
      return true;
    return fail(context, value,
                std::string("field \"") + key + "\" must be a " +
                    json::kindName(kind) + ", not a " +
                    json::kindName(value.kind));
  }

  /// Fails unless `value` is an integer that fits in int64 (sizes, offsets
  /// and strides beyond it are refused here, not wrapped later).
  bool expectInteger(const json::Value &value, const std::string &context,
                     const char *key, const char *what) {
    if (value.isNumber() && value.isInteger)
      return true;
    if (value.isNumber() && value.number == std::floor(value.number)) {
      char number[32];
      std::snprintf(number, sizeof(number), "%g", value.number);
      return fail(context, value,
                  std::string("field \"") + key + "\": " + number +
                      " is out of the range of a 64-bit integer");
    }
    return fail(context, value,
                std::string("field \"") + key + "\" must be " + what);
  }

  // One read() per C++ type a schema field is read into; `value` is present
  // and not a null the field allows.

  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, std::string &out) {
    if (!expect(value, json::Value::Kind::String, context, field.key))
      return false;
    out = value.string;
    return true;
  }

  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, int64_t &out) {
    if (!expect(value, json::Value::Kind::Number, context, field.key) ||
        !expectInteger(value, context, field.key, "an integer"))
      return false;
    out = value.integer;
    return true;
  }

  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, double &out) {
    if (!expect(value, json::Value::Kind::Number, context, field.key))
      return false;
    out = value.number;
    return true;
  }

  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, bool &out) {
    if (!expect(value, json::Value::Kind::Bool, context, field.key))
      return false;
    out = value.boolean;
    return true;
  }

  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, std::vector<int64_t> &out) {
    if (!expect(value, json::Value::Kind::Array, context, field.key))
      return false;
    out.clear();
    for (const json::Value &element : value.array) {
      if (!expectInteger(element, context, field.key, "a list of integers"))
        return false;
      out.push_back(element.integer);
    }
    return true;
  }

  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, std::vector<std::string> &out) {
    if (!expect(value, json::Value::Kind::Array, context, field.key))
      return false;
    out.clear();
    for (const json::Value &element : value.array) {
      if (!element.isString())
        return fail(context, element,
                    std::string("field \"") + field.key +
                        "\" must be a list of strings");
      out.push_back(element.string);
    }
    return true;
  }

  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, std::array<int64_t, 3> &out) {
    std::vector<int64_t> dims;
    if (!read(field, value, context, dims))
      return false;
    if (dims.size() != 3)
      return fail(context, value,
                  std::string("field \"") + field.key +
                      "\" must have 3 elements");
    std::copy(dims.begin(), dims.end(), out.begin());
    return true;
  }

  /// An Enum field: one of its EnumSpec's names.
  template <typename E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, E &out) {
    std::string name;
    if (!read(field, value, context, name))
      return false;
    const schema::EnumSpec &spec = *field.enumSpec;
    int index = spec.find(name.c_str());
    if (index < 0)
      return fail(context, value,
                  std::string("unknown ") + spec.noun + " \"" + name +
                      "\" (expected " + expectedNames(spec) + ")");
    assignEnum(out, static_cast<size_t>(index), name);
    return true;
  }

  /// The reference graph.
  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, reference::Graph &out);

  /// An Object field: read into `out` by the element's schema object.
  template <typename Struct, std::enable_if_t<std::is_class_v<Struct>, int> = 0>
  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, Struct &out) {
    if (!expect(value, json::Value::Kind::Object, context, field.key))
      return false;
    return readObject(value, field.key, out);
  }

  /// An ObjectList field: every element is an object (checked first), each
  /// read by the element's schema object.
  template <typename Struct>
  bool read(const schema::Field &field, const json::Value &value,
            const std::string &context, std::vector<Struct> &out) {
    if (!expect(value, json::Value::Kind::Array, context, field.key) ||
        !expectObjects(value, field.key, context))
      return false;
    out.clear();
    for (size_t i = 0; i < value.array.size(); ++i) {
      Struct element;
      if (!readObject(value.array[i],
                      std::string(field.key) + "[" + std::to_string(i) + "]",
                      element))
        return false;
      out.push_back(std::move(element));
    }
    return true;
  }

  /// Reads every field of the schema object of `Struct` from `object`;
  /// messages name it `context` (or by its label and name once read).
  template <typename Struct>
  bool readObject(const json::Value &object, std::string context, Struct &out);

  /// Reads one schema field of `object` into `out`, as its Presence says.
  template <typename T>
  bool readField(const schema::Field &field, const json::Value &object,
                 const std::string &context, T &out) {
    const json::Value *value = object.get(field.key);
    if (field.presence != schema::Presence::Required &&
        (!value ||
         (value->isNull() && field.presence == schema::Presence::Nullable)))
      return true;
    if (!value)
      return fail(context, object,
                  std::string("missing field \"") + field.key + "\"");
    return read(field, *value, context, out);
  }

  /// The array `key` of `object` whose elements are all objects.
  const json::Value *objectArray(const json::Value &object, const char *key,
                                 const std::string &context) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::Array, context, key) ||
        !expectObjects(*value, key, context))
      return nullptr;
    return value;
  }

  /// Fails unless every element of the array `value` is an object.
  bool expectObjects(const json::Value &value, const char *key,
                     const std::string &context) {
    for (const json::Value &element : value.array)
      if (!element.isObject())
        return fail(context, element,
                    std::string("every element of \"") + key +
                        "\" must be an object");
    return true;
  }

private:
  /// What the object's kind field selects: for steps, the kernel, gemm or
  /// all-reduce fields of the same JSON object.
  template <typename Struct>
  bool readKindFields(const json::Value &, const std::string &, Struct &) {
    return true;
  }
  bool readKindFields(const json::Value &object, const std::string &context,
                      Step &step);

  /// "a, b or c".
  static std::string expectedNames(const schema::EnumSpec &spec) {
    std::string text;
    for (size_t i = 0; i < spec.size; ++i) {
      if (i)
        text += i + 1 == spec.size ? " or " : ", ";
      text += spec.names[i];
    }
    return text;
  }

  // The runtime's enums list their values in the EnumSpec's order; DType
  // has its own order (reference::parseDType).
  template <typename E>
  static void assignEnum(E &out, size_t index, const std::string &) {
    out = static_cast<E>(index);
  }
  static void assignEnum(DType &out, size_t, const std::string &name) {
    out = *reference::parseDType(name);
  }
};

/// Reads the field `Member` of a schema object into a runtime struct.
template <typename Struct> struct FieldBinding {
  const schema::Field *field;
  bool (*read)(FieldReader &, const schema::Field &, const json::Value &,
               const std::string &, Struct &);
};

template <typename MemberPointer> struct MemberTraits;
template <typename Struct, typename T> struct MemberTraits<T Struct::*> {
  using StructType = Struct;
};

template <auto Member>
bool readMember(FieldReader &reader, const schema::Field &field,
                const json::Value &object, const std::string &context,
                typename MemberTraits<decltype(Member)>::StructType &out) {
  return reader.readField(field, object, context, out.*Member);
}

/// The schema object a runtime struct is read by: its binding table.
template <typename Struct> struct SchemaObject;

// One table per object of BundleSchema.def: each field with its member.
#define BUNDLE_OBJECT(Object, Struct, Label)                                   \
  template <> struct SchemaObject<Struct> {                                    \
    using StructType = Struct;                                                 \
    static constexpr const schema::ObjectSpec &spec = schema::Object::kSpec;   \
    static constexpr FieldBinding<Struct> fields[] = {
#define BUNDLE_FIELD(Object, Member, Key, Kind, Presence, Detail)              \
  {&schema::Object::Member, &readMember<&StructType::Member>},
#define BUNDLE_OBJECT_END(Object)                                              \
  }                                                                            \
  ;                                                                            \
  static_assert(std::size(fields) == std::size(schema::Object::kFields));      \
  }                                                                            \
  ;
#include "memwall-runtime/BundleSchema.def"

template <typename Struct>
bool FieldReader::readObject(const json::Value &object, std::string context,
                             Struct &out) {
  using Object = SchemaObject<Struct>;
  bool named = *Object::spec.label != '\0';
  for (const FieldBinding<Struct> &binding : Object::fields) {
    if (!binding.read(*this, *binding.field, object, context, out))
      return false;
    // An object with a label is named by its first field once read.
    if (named && binding.field == Object::fields[0].field)
      context = std::string(Object::spec.label) + " '" +
                object.get(binding.field->key)->string + "'";
  }
  return readKindFields(object, context, out);
}

} // namespace

namespace {

// The reference graph's fields: read by parseReference, written by
// exportReferenceGraph (docs/bundle-format.md, "The reference graph").
constexpr schema::Field kValueName{"name", schema::FieldKind::String,
                                   schema::Presence::Required, nullptr,
                                   nullptr};
constexpr schema::Field kValueDType{"dtype", schema::FieldKind::Enum,
                                    schema::Presence::Required,
                                    &schema::kDTypes, nullptr};
constexpr schema::Field kValueShape{"shape", schema::FieldKind::IntegerList,
                                    schema::Presence::Required, nullptr,
                                    nullptr};
constexpr schema::Field kOpName{"op", schema::FieldKind::String,
                                schema::Presence::Required, nullptr, nullptr};
constexpr schema::Field kOpOperands{"operands", schema::FieldKind::StringList,
                                    schema::Presence::Required, nullptr,
                                    nullptr};
constexpr schema::Field kOpResults{"results", schema::FieldKind::StringList,
                                   schema::Presence::Required, nullptr,
                                   nullptr};

std::string quoted(const std::string &name) { return "'" + name + "'"; }

bool parseAttr(FieldReader &reader, const json::Value &value,
               const std::string &context, reference::Attr &attr) {
  switch (value.kind) {
  case json::Value::Kind::Bool:
    attr = reference::Attr::ofBool(value.boolean);
    return true;
  case json::Value::Kind::Number:
    attr = reference::Attr::ofNumber(value.number);
    return true;
  case json::Value::Kind::String:
    attr = reference::Attr::ofString(value.string);
    return true;
  case json::Value::Kind::Array: {
    // Integers (shapes, axes) or, with any fraction, numbers (codebooks).
    std::vector<int64_t> ints;
    std::vector<double> numbers;
    bool allIntegers = true;
    for (const json::Value &element : value.array) {
      if (!element.isNumber())
        return reader.fail(context, element,
                           "list attributes must hold numbers");
      allIntegers &= element.isInteger;
      ints.push_back(element.isInteger ? element.integer : 0);
      numbers.push_back(element.number);
    }
    attr = allIntegers ? reference::Attr::ofInts(std::move(ints))
                       : reference::Attr::ofNumbers(std::move(numbers));
    return true;
  }
  default:
    return reader.fail(context, value,
                       std::string("unsupported attribute of kind ") +
                           json::kindName(value.kind));
  }
}

bool parseReference(FieldReader &reader, const json::Value &object,
                    reference::Graph &graph) {
  const json::Value *values = reader.objectArray(object, "values", "reference");
  if (!values)
    return false;
  for (size_t i = 0; i < values->array.size(); ++i) {
    const json::Value &entry = values->array[i];
    std::string context = "reference.values[" + std::to_string(i) + "]";
    reference::ValueInfo info;
    if (!reader.readField(kValueName, entry, context, info.name))
      return false;
    context = "reference value " + quoted(info.name);
    if (!reader.readField(kValueDType, entry, context, info.dtype) ||
        !reader.readField(kValueShape, entry, context, info.shape))
      return false;
    graph.values.push_back(info);
  }
  const json::Value *ops = reader.objectArray(object, "ops", "reference");
  if (!ops)
    return false;
  for (size_t i = 0; i < ops->array.size(); ++i) {
    const json::Value &entry = ops->array[i];
    std::string context = "reference.ops[" + std::to_string(i) + "]";
    reference::Op op;
    if (!reader.readField(kOpName, entry, context, op.op))
      return false;
    if (const json::Value *loc = entry.get("loc"); loc && loc->isString())
      op.loc = loc->string;
    context = "reference op '" + op.op + "' at " +
              (op.loc.empty() ? context : quoted(op.loc));
    if (!reader.readField(kOpOperands, entry, context, op.operands) ||
        !reader.readField(kOpResults, entry, context, op.results))
      return false;
    if (const json::Value *attrs = entry.get("attrs")) {
      if (!reader.expect(*attrs, json::Value::Kind::Object, context, "attrs"))
        return false;
      for (const auto &member : attrs->object) {
        reference::Attr attr;
        if (!parseAttr(reader, member.second,
                       context + " attribute '" + member.first + "'", attr))
          return false;
        op.attrs[member.first] = attr;
      }
    }
    graph.ops.push_back(std::move(op));
  }
  return true;
}

bool FieldReader::read(const schema::Field &field, const json::Value &value,
                       const std::string &context, reference::Graph &out) {
  return expect(value, json::Value::Kind::Object, context, field.key) &&
         parseReference(*this, value, out);
}

bool FieldReader::readKindFields(const json::Value &object,
                                 const std::string &context, Step &step) {
  if (step.kind == StepKind::Kernel)
    return readObject(object, context, step.kernel);
  if (step.kind == StepKind::AllReduce)
    return readObject(object, context, step.allReduce);
  step.gemm.name = step.name;
  if (!readObject(object, context, step.gemm))
    return false;
  if (!object.get(schema::gemmStep::outDtype.key))
    step.gemm.outDtype = step.gemm.dtype;
  return true;
}

} // namespace

Status parseReferenceGraph(const json::Value &object, reference::Graph &graph) {
  FieldReader reader;
  graph = reference::Graph();
  if (!object.isObject())
    reader.fail("reference", object, "the graph must be an object");
  else
    parseReference(reader, object, graph);
  return reader.status();
}

Status parseManifest(const json::Value &root, Manifest &manifest) {
  FieldReader reader;
  manifest = Manifest();
  if (!root.isObject()) {
    reader.fail("manifest", root, "the document must be an object");
    return reader.status();
  }
  BundleHeader header;
  if (!reader.readObject(root, "manifest", header))
    return reader.status();
  if (header.format != schema::kFormat)
    reader.fail("manifest", *root.get(schema::header::format.key),
                "format is \"" + header.format + "\", expected \"" +
                    schema::kFormat + "\"");
  else if (header.version != schema::kVersion)
    reader.fail("manifest", *root.get(schema::header::version.key),
                "unsupported bundle version " + std::to_string(header.version) +
                    " (this memwall-run reads version " +
                    std::to_string(schema::kVersion) + ")");
  if (!reader.ok())
    return reader.status();
  if (!reader.readObject(root, "manifest", manifest))
    return reader.status();
  const json::Value *graph = root.get(schema::manifest::reference.key);
  manifest.hasReference = graph && !graph->isNull();
  return reader.status();
}

namespace {

/// A validation failure.
Status invalid(const std::string &message) {
  return Status(ErrorCode::InvalidManifest, message);
}

// Only for buffers whose ranges validateManifest has checked: their ends
// fit in int64.
bool overlaps(const Buffer &a, const Buffer &b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes &&
         a.bytes > 0 && b.bytes > 0;
}

std::string describeRange(const Buffer &buffer) {
  int64_t end;
  std::string endText = checkedAdd(buffer.offset, buffer.bytes, end)
                            ? std::to_string(end)
                            : std::to_string(buffer.offset) + " + " +
                                  std::to_string(buffer.bytes);
  return "[" + std::to_string(buffer.offset) + ", " + endText + ")";
}

std::string tooLargeForInt64(const std::string &what) {
  return what + " do not fit in a 64-bit integer";
}

std::string shapeTooLarge(const std::vector<int64_t> &shape) {
  return "shape " + shapeString(shape) +
         " is too large: the product of its dimensions does not fit in a "
         "64-bit integer";
}

// Checks one GEMM operand: it exists, has the GEMM's dtype, and holds
// `batch` matrices of rows x cols elements `stride` elements apart, so that
// the furthest element the GEMM addresses, (batch-1)*stride + rows*cols - 1,
// lies inside the buffer.
Status checkGemmOperand(const Manifest &manifest, const GemmStep &gemm,
                        const char *role, const std::string &name, int64_t rows,
                        int64_t cols, int64_t stride) {
  // C and D hold the output type; A, B and the bias the input type.
  bool output = role[0] == 'c' || role[0] == 'd';
  DType dtype = output ? gemm.outDtype : gemm.dtype;
  std::string context = "step '" + gemm.name + "': operand " + role;
  const Buffer *buffer = manifest.findBuffer(name);
  if (!buffer)
    return invalid(context + " names unknown buffer '" + name + "'");
  context += " (buffer '" + name + "')";
  if (buffer->dtype != dtype)
    return invalid(context + " has dtype " +
                   reference::dtypeName(buffer->dtype) + ", but the gemm's " +
                   (output ? "out_dtype" : "dtype") + " is " +
                   reference::dtypeName(dtype));
  if (stride < 0)
    return invalid(context + ": negative batch stride " +
                   std::to_string(stride));
  std::string what = std::to_string(gemm.batch) + " x " + std::to_string(rows) +
                     " x " + std::to_string(cols) +
                     " elements at batch stride " + std::to_string(stride);
  int64_t matrix, span, elements, needed;
  if (!checkedMul(rows, cols, matrix) ||
      !checkedMul(gemm.batch - 1, stride, span) ||
      !checkedAdd(span, matrix, elements) ||
      !checkedMul(elements, reference::dtypeBytes(dtype), needed))
    return invalid(context + ": the bytes of " + tooLargeForInt64(what));
  if (buffer->bytes < needed)
    return invalid(context + " holds " + std::to_string(buffer->bytes) +
                   " bytes, but " + what + " need " + std::to_string(needed));
  // With one batch the stride addresses nothing, but cuBLASLt still gets it
  // (in bytes, for alignment): it must not reach past the buffer either.
  int64_t bufferElements = buffer->bytes / reference::dtypeBytes(dtype);
  if (stride > bufferElements)
    return invalid(context + ": batch stride " + std::to_string(stride) +
                   " is larger than the buffer's " +
                   std::to_string(bufferElements) + " elements");
  return Status();
}

Status validateGemm(const Manifest &manifest, const GemmStep &gemm) {
  std::string context = "step '" + gemm.name + "'";
  if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0 || gemm.batch <= 0)
    return invalid(context + ": m, n, k and batch must be positive (got m=" +
                   std::to_string(gemm.m) + " n=" + std::to_string(gemm.n) +
                   " k=" + std::to_string(gemm.k) +
                   " batch=" + std::to_string(gemm.batch) + ")");
  // cuBLASLt's batch count is an int32.
  if (gemm.batch > INT32_MAX)
    return invalid(context + ": batch " + std::to_string(gemm.batch) +
                   " is more than cuBLASLt's limit of " +
                   std::to_string(INT32_MAX));
  if (gemm.dtype != DType::F32 && gemm.dtype != DType::BF16 &&
      gemm.dtype != DType::F16)
    return invalid(context + ": gemm dtype " +
                   std::string(reference::dtypeName(gemm.dtype)) +
                   " is not supported (expected f32, bf16 or f16)");
  if (gemm.outDtype != gemm.dtype &&
      (gemm.outDtype != DType::F32 || gemm.dtype == DType::F32 ||
       gemm.epilogue != Epilogue::None))
    return invalid(context + ": out_dtype " +
                   std::string(reference::dtypeName(gemm.outDtype)) +
                   " with dtype " + reference::dtypeName(gemm.dtype) +
                   " is not supported (expected the dtype itself, or f32 "
                   "beside bf16 or f16 without an epilogue)");
  if (epilogueHasBias(gemm.epilogue) != !gemm.bias.empty())
    return invalid(
        context + ": epilogue '" + epilogueName(gemm.epilogue) + "' " +
        (gemm.bias.empty() ? "needs a bias buffer"
                           : "does not take a bias, but bias is set"));
  Status error;
  if (!(error = checkGemmOperand(manifest, gemm, "a", gemm.a,
                                 gemm.transA ? gemm.k : gemm.m,
                                 gemm.transA ? gemm.m : gemm.k, gemm.strideA))
           .ok())
    return error;
  if (!(error = checkGemmOperand(manifest, gemm, "b", gemm.b,
                                 gemm.transB ? gemm.n : gemm.k,
                                 gemm.transB ? gemm.k : gemm.n, gemm.strideB))
           .ok())
    return error;
  if (!gemm.c.empty() &&
      !(error = checkGemmOperand(manifest, gemm, "c", gemm.c, gemm.m, gemm.n,
                                 gemm.strideC))
           .ok())
    return error;
  if (!(error = checkGemmOperand(manifest, gemm, "d", gemm.d, gemm.m, gemm.n,
                                 gemm.strideD))
           .ok())
    return error;
  int64_t resultElements = 0; // fits: operand d holds one result matrix
  checkedMul(gemm.m, gemm.n, resultElements);
  if (gemm.batch > 1 && gemm.strideD < resultElements)
    return invalid(context + ": stride_d " + std::to_string(gemm.strideD) +
                   " is smaller than one " + std::to_string(gemm.m) + " x " +
                   std::to_string(gemm.n) +
                   " result matrix, so batches would overwrite each other");
  if (!gemm.bias.empty() && !(error = checkGemmOperand(manifest, gemm, "bias",
                                                       gemm.bias, 1, gemm.n, 0))
                                 .ok())
    return error;
  return Status();
}

// What cuTensorMapEncodeTiled accepts (CUDA driver API): rank 1..5; extents
// 1..2^32; strides multiples of 16 bytes below 2^40 (the innermost is the
// element); box extents 1..256 with the innermost box a multiple of 16
// bytes, and no wider than the swizzle span; and the view must lie inside
// its buffer (base 16-byte aligned: buffers are kBufferAlignment-aligned).
Status validateTensorMap(const Buffer &buffer, const TensorMap &map,
                         const std::string &context) {
  size_t rank = map.shape.size();
  if (rank < 1 || rank > 5)
    return invalid(context + ": rank " + std::to_string(rank) +
                   ", expected 1..5");
  if (map.strides.size() != rank || map.box.size() != rank)
    return invalid(context + ": shape, strides and box must have " +
                   std::to_string(rank) + " entries each");
  if (map.interleave != TensorMapInterleave::None)
    return invalid(context + ": interleaved tensor maps are not supported");
  int64_t elementBytes = reference::dtypeBytes(buffer.dtype);
  if (map.strides.back() != 1)
    return invalid(context + ": the innermost stride must be 1");
  // The last element's offset, checked against the buffer without overflow.
  int64_t lastElement = 0;
  for (size_t i = 0; i < rank; ++i) {
    std::string dim = " of dim " + std::to_string(i);
    if (map.shape[i] < 1 || map.shape[i] > (int64_t(1) << 32))
      return invalid(context + ": extent " + std::to_string(map.shape[i]) +
                     dim + ", expected 1..2^32");
    if (map.box[i] < 1 || map.box[i] > 256)
      return invalid(context + ": box extent " + std::to_string(map.box[i]) +
                     dim + ", expected 1..256");
    if (map.strides[i] < 1 || map.strides[i] > (int64_t(1) << 40) / 16)
      return invalid(context + ": stride " + std::to_string(map.strides[i]) +
                     dim + " out of range");
    if (i + 1 < rank && map.strides[i] * elementBytes % 16 != 0)
      return invalid(context + ": stride" + dim + " is " +
                     std::to_string(map.strides[i] * elementBytes) +
                     " bytes, not a multiple of 16");
    if (map.strides[i] > 0 &&
        map.shape[i] - 1 > (INT64_MAX - lastElement) / map.strides[i])
      return invalid(context + ": the view overflows int64");
    lastElement += (map.shape[i] - 1) * map.strides[i];
  }
  if (lastElement >= buffer.bytes / elementBytes)
    return invalid(context + ": the view " + shapeString(map.shape) +
                   " reaches element " + std::to_string(lastElement) +
                   " of buffer '" + buffer.name + "', which has " +
                   std::to_string(buffer.bytes / elementBytes));
  int64_t innerBoxBytes = map.box.back() * elementBytes;
  if (innerBoxBytes % 16 != 0)
    return invalid(context + ": the innermost box is " +
                   std::to_string(innerBoxBytes) +
                   " bytes, not a multiple of 16");
  static const int64_t kSwizzleSpan[] = {0, 32, 64, 128};
  int64_t span = kSwizzleSpan[static_cast<int>(map.swizzle)];
  if (span && innerBoxBytes > span)
    return invalid(context + ": the innermost box (" +
                   std::to_string(innerBoxBytes) + " bytes) exceeds the " +
                   std::to_string(span) + "-byte swizzle span");
  return Status();
}

Status validateKernel(const Manifest &manifest, const Step &step) {
  std::string context = "step '" + step.name + "'";
  const KernelStep &kernel = step.kernel;
  if (!manifest.findModule(kernel.module))
    return invalid(context + ": unknown module '" + kernel.module + "'");
  if (kernel.function.empty())
    return invalid(context + ": empty function name");
  static const int64_t kMaxGrid[3] = {2147483647, 65535, 65535};
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (kernel.grid[i] <= 0 || kernel.grid[i] > kMaxGrid[i])
      return invalid(context + ": grid dimension " + std::to_string(i) +
                     " is " + std::to_string(kernel.grid[i]) +
                     ", expected 1.." + std::to_string(kMaxGrid[i]));
    if (kernel.block[i] <= 0 || kernel.block[i] > 1024)
      return invalid(context + ": block dimension " + std::to_string(i) +
                     " is " + std::to_string(kernel.block[i]) +
                     ", expected 1..1024");
    threads *= kernel.block[i];
  }
  if (threads > 1024)
    return invalid(context + ": block has " + std::to_string(threads) +
                   " threads, more than 1024");
  if (kernel.sharedBytes < 0 || kernel.sharedBytes > (int64_t(1) << 31))
    return invalid(context + ": invalid shared_bytes " +
                   std::to_string(kernel.sharedBytes));
  for (const std::string &arg : kernel.args)
    if (!manifest.findBuffer(arg))
      return invalid(context + ": argument names unknown buffer '" + arg + "'");
  std::vector<bool> mapped(kernel.args.size(), false);
  for (const TensorMap &map : kernel.tensorMaps) {
    if (map.arg < 0 || map.arg >= static_cast<int64_t>(kernel.args.size()))
      return invalid(context + ": tensor map of argument " +
                     std::to_string(map.arg) + ", but the kernel has " +
                     std::to_string(kernel.args.size()));
    if (mapped[map.arg])
      return invalid(context + ": argument " + std::to_string(map.arg) +
                     " has two tensor maps");
    mapped[map.arg] = true;
    if (Status status = validateTensorMap(
            *manifest.findBuffer(kernel.args[map.arg]), map,
            context + ": tensor map of argument " + std::to_string(map.arg));
        !status.ok())
      return status;
  }
  return Status();
}

// An all-reduce (NCCL's ncclAllReduce): buffers that hold `count` dense
// elements of a type NCCL sums, and a group of at least one device.
Status validateAllReduce(const Manifest &manifest, const Step &step) {
  std::string context = "step '" + step.name + "'";
  const AllReduceStep &allReduce = step.allReduce;
  if (allReduce.dtype != DType::F32 && allReduce.dtype != DType::BF16 &&
      allReduce.dtype != DType::F16)
    return invalid(context + ": all-reduce dtype " +
                   reference::dtypeName(allReduce.dtype) +
                   " is not supported (expected f32, bf16 or f16)");
  if (allReduce.count <= 0)
    return invalid(context + ": count " + std::to_string(allReduce.count) +
                   " must be positive");
  if (allReduce.groupSize < 1)
    return invalid(context + ": group_size " +
                   std::to_string(allReduce.groupSize) +
                   " must be at least 1 (the devices summed over)");
  const Buffer *buffers[2] = {nullptr, nullptr};
  const char *roles[2] = {"input", "output"};
  const std::string *names[2] = {&allReduce.input, &allReduce.output};
  for (int i = 0; i < 2; ++i) {
    std::string operand = context + ": " + roles[i];
    const Buffer *buffer = buffers[i] = manifest.findBuffer(*names[i]);
    if (!buffer)
      return invalid(operand + " names unknown buffer '" + *names[i] + "'");
    operand += " (buffer '" + buffer->name + "')";
    if (buffer->dtype != allReduce.dtype)
      return invalid(operand + " has dtype " +
                     reference::dtypeName(buffer->dtype) +
                     ", but the all-reduce's dtype is " +
                     reference::dtypeName(allReduce.dtype));
    // NCCL reads and writes `count` contiguous elements.
    if (!buffer->strides.empty())
      return invalid(operand + " is strided; an all-reduce needs a dense "
                               "buffer");
    int64_t elements = numElements(buffer->shape);
    if (allReduce.count > elements)
      return invalid(operand + " holds " + std::to_string(elements) +
                     " elements, fewer than count " +
                     std::to_string(allReduce.count));
  }
  // In place (the same first byte) or apart: NCCL defines nothing else.
  int64_t bytes = allReduce.count * reference::dtypeBytes(allReduce.dtype);
  const Buffer &input = *buffers[0], &output = *buffers[1];
  if (input.offset != output.offset && input.offset < output.offset + bytes &&
      output.offset < input.offset + bytes)
    return invalid(context + ": output (buffer '" + output.name +
                   "') overlaps input (buffer '" + input.name +
                   "') without being it: NCCL reduces in place only when "
                   "both start at the same byte");
  return Status();
}

// An input or output binding: its buffer exists with the expected role, and
// matches its reference value (when the bundle has a reference graph).
Status validateBinding(const Manifest &manifest, const Binding &binding,
                       bool isInput) {
  std::string context =
      std::string(isInput ? "input '" : "output '") + binding.name + "'";
  const Buffer *buffer = manifest.findBuffer(binding.buffer);
  if (!buffer)
    return invalid(context + " names unknown buffer '" + binding.buffer + "'");
  if (isInput && buffer->role != BufferRole::Input &&
      buffer->role != BufferRole::Weight)
    return invalid(context + ": buffer '" + buffer->name + "' has role " +
                   roleName(buffer->role) + ", expected input or weight");
  if (buffer->role == BufferRole::Counters)
    return invalid(context + ": buffer '" + buffer->name +
                   "' holds counters, which no binding may name");
  if (!manifest.hasReference)
    return Status();
  const reference::ValueInfo *value = manifest.findValue(binding.value);
  if (!value)
    return invalid(context + " names unknown reference value '" +
                   binding.value + "'");
  if (value->dtype != buffer->dtype ||
      numElements(value->shape) != numElements(buffer->shape))
    return invalid(context + ": buffer '" + buffer->name + "' (" +
                   reference::dtypeName(buffer->dtype) + " " +
                   shapeString(buffer->shape) +
                   ") does not match reference value '" + value->name + "' (" +
                   reference::dtypeName(value->dtype) + " " +
                   shapeString(value->shape) + ")");
  return Status();
}

// A reference value's shape: its element count, and the bytes of the
// doubles the reference interpreter holds it in, fit in int64.
Status validateReferenceValue(const reference::ValueInfo &value) {
  std::string context = "reference value '" + value.name + "'";
  for (int64_t dim : value.shape)
    if (dim < 0)
      return invalid(context + ": negative dimension in shape " +
                     shapeString(value.shape));
  int64_t elements, hostBytes;
  if (!checkedElementCount(value.shape, elements))
    return invalid(context + ": " + shapeTooLarge(value.shape));
  if (!checkedMul(elements, static_cast<int64_t>(sizeof(double)), hostBytes))
    return invalid(context + ": " +
                   tooLargeForInt64("the bytes of " + std::to_string(elements) +
                                    " elements held as doubles"));
  return Status();
}

// A strided buffer's layout: one stride a dimension, each at least 1 and
// past the extent of the dimensions inside it (no two elements share bytes),
// whole elements (not packed i4), and `bytes` the outermost dimension's full
// pitch, all without overflow.
Status validateStrides(const Buffer &buffer, const std::string &context) {
  const std::vector<int64_t> &shape = buffer.shape, &strides = buffer.strides;
  if (strides.size() != shape.size() || shape.empty())
    return invalid(context + ": " + std::to_string(strides.size()) +
                   " strides for shape " + shapeString(shape));
  if (buffer.dtype == DType::I4)
    return invalid(context + ": a strided buffer cannot pack i4");
  for (size_t i = 0; i < strides.size(); ++i) {
    int64_t inner = 1;
    if (i + 1 < strides.size() &&
        !checkedMul(strides[i + 1], shape[i + 1], inner))
      return invalid(context + ": " + tooLargeForInt64("the strides"));
    if (strides[i] < 1 || strides[i] < inner)
      return invalid(context + ": strides " + shapeString(strides) +
                     " overlap the elements of shape " + shapeString(shape));
  }
  int64_t pitched, bytes;
  if (!checkedMul(shape[0], strides[0], pitched) ||
      !checkedMul(pitched, reference::dtypeBytes(buffer.dtype), bytes))
    return invalid(context + ": " + tooLargeForInt64("the strided bytes"));
  if (buffer.bytes != bytes)
    return invalid(context + ": " + std::to_string(buffer.bytes) +
                   " bytes, but shape " + shapeString(shape) + " at strides " +
                   shapeString(strides) + " spans " + std::to_string(bytes));
  return Status();
}

// A buffer's shape, size and place: dims >= 0, bytes == elements x dtype
// size, and [offset, offset + bytes) inside the arena, all without overflow.
Status validateBuffer(const Manifest &manifest, const Buffer &buffer) {
  std::string context = "buffer '" + buffer.name + "'";
  if (buffer.offset < 0 || buffer.bytes < 0)
    return invalid(context + ": negative offset or size");
  if (buffer.offset % kBufferAlignment != 0)
    return invalid(context + ": offset " + std::to_string(buffer.offset) +
                   " is not a multiple of " + std::to_string(kBufferAlignment));
  for (int64_t dim : buffer.shape)
    if (dim < 0)
      return invalid(context + ": negative dimension in shape " +
                     shapeString(buffer.shape));
  int64_t elements, dense, end;
  if (!checkedElementCount(buffer.shape, elements))
    return invalid(context + ": " + shapeTooLarge(buffer.shape));
  dense = reference::dtypeStorageBytes(buffer.dtype, elements);
  if (dense < 0)
    return invalid(context + ": " +
                   tooLargeForInt64(std::string("the bytes of a dense ") +
                                    reference::dtypeName(buffer.dtype) + " " +
                                    shapeString(buffer.shape) + " array"));
  if (!buffer.strides.empty()) {
    if (Status error = validateStrides(buffer, context); !error.ok())
      return error;
  } else if (buffer.bytes != dense) {
    return invalid(context + ": " + std::to_string(buffer.bytes) +
                   " bytes, but a dense " + reference::dtypeName(buffer.dtype) +
                   " " + shapeString(buffer.shape) + " array has " +
                   std::to_string(dense));
  }
  if (!checkedAdd(buffer.offset, buffer.bytes, end) ||
      end > manifest.arenaBytes)
    return invalid(context + ": range " + describeRange(buffer) +
                   " is outside the arena of " +
                   std::to_string(manifest.arenaBytes) + " bytes");
  return Status();
}

} // namespace

Status validateManifest(const Manifest &manifest) {
  if (manifest.arenaBytes < 0)
    return invalid("manifest: negative arena_bytes");
  if (manifest.arenaBytes == 0 && !manifest.buffers.empty())
    return invalid("manifest: arena_bytes is 0, but there are " +
                   std::to_string(manifest.buffers.size()) + " buffers");
  std::set<std::string> names;
  for (const Module &module : manifest.modules)
    if (!names.insert(module.name).second)
      return invalid("module '" + module.name + "' is defined twice");
  names.clear();
  for (const Buffer &buffer : manifest.buffers) {
    if (!names.insert(buffer.name).second)
      return invalid("buffer '" + buffer.name + "' is defined twice");
    if (Status error = validateBuffer(manifest, buffer); !error.ok())
      return error;
  }
  for (const reference::ValueInfo &value : manifest.reference.values)
    if (Status error = validateReferenceValue(value); !error.ok())
      return error;

  // Inputs and weights are all live when the run starts, and outputs when it
  // ends: two of them sharing bytes would corrupt each other.
  names.clear();
  std::vector<const Buffer *> liveAtStart, liveAtEnd;
  for (const Binding &binding : manifest.inputs) {
    if (!names.insert(binding.name).second)
      return invalid("input '" + binding.name + "' is listed twice");
    if (Status error = validateBinding(manifest, binding, true); !error.ok())
      return error;
    const Buffer *buffer = manifest.findBuffer(binding.buffer);
    for (const Buffer *other : liveAtStart)
      if (other == buffer || overlaps(*other, *buffer))
        return invalid("input '" + binding.name + "': buffer '" + buffer->name +
                       "' " + describeRange(*buffer) +
                       " overlaps the buffer of another input, '" +
                       other->name + "' " + describeRange(*other));
    liveAtStart.push_back(buffer);
  }
  for (const Buffer &buffer : manifest.buffers)
    if ((buffer.role == BufferRole::Input ||
         buffer.role == BufferRole::Weight) &&
        std::find(liveAtStart.begin(), liveAtStart.end(), &buffer) ==
            liveAtStart.end())
      return invalid("buffer '" + buffer.name + "' has role " +
                     roleName(buffer.role) +
                     " but no entry of \"inputs\" provides it");
  // Counters keep their zeros across launches: i32, and no other buffer
  // shares their bytes.
  for (const Buffer &buffer : manifest.buffers) {
    if (buffer.role != BufferRole::Counters)
      continue;
    if (buffer.dtype != DType::I32)
      return invalid("buffer '" + buffer.name + "' holds counters but is " +
                     reference::dtypeName(buffer.dtype) + ", not i32");
    for (const Buffer &other : manifest.buffers)
      if (&other != &buffer && overlaps(other, buffer))
        return invalid("buffer '" + buffer.name + "' " + describeRange(buffer) +
                       " holds counters, but buffer '" + other.name + "' " +
                       describeRange(other) + " overlaps it");
  }
  names.clear();
  for (const Binding &binding : manifest.outputs) {
    if (!names.insert(binding.name).second)
      return invalid("output '" + binding.name + "' is listed twice");
    if (Status error = validateBinding(manifest, binding, false); !error.ok())
      return error;
    const Buffer *buffer = manifest.findBuffer(binding.buffer);
    for (const Buffer *other : liveAtEnd) {
      bool sameBytes =
          other->offset == buffer->offset && other->bytes == buffer->bytes;
      if (!sameBytes && overlaps(*other, *buffer))
        return invalid("output '" + binding.name + "': buffer '" +
                       buffer->name + "' " + describeRange(*buffer) +
                       " overlaps the buffer of another output, '" +
                       other->name + "' " + describeRange(*other));
    }
    liveAtEnd.push_back(buffer);
  }

  names.clear();
  for (const Step &step : manifest.steps) {
    if (!names.insert(step.name).second)
      return invalid("step '" + step.name + "' is defined twice");
    Status error =
        step.kind == StepKind::Gemm        ? validateGemm(manifest, step.gemm)
        : step.kind == StepKind::AllReduce ? validateAllReduce(manifest, step)
                                           : validateKernel(manifest, step);
    if (!error.ok())
      return error;
  }
  return Status();
}

Status loadManifest(const std::string &bundleDir, Manifest &manifest) {
  std::string text;
  if (Status error = readFile(bundleDir + "/manifest.json", text); !error.ok())
    return error;
  return parseManifestText(text, bundleDir, manifest);
}

Status parseManifestText(const std::string &text, const std::string &bundleDir,
                         Manifest &manifest) {
  std::string path = bundleDir + "/manifest.json";
  json::Value root;
  if (Status error = json::parse(text, root); !error.ok())
    return Status(ErrorCode::InvalidManifest, path + ":" + error.message());
  if (Status error = parseManifest(root, manifest); !error.ok())
    return error.withPrefix(bundleDir + "/");
  return validateManifest(manifest).withPrefix(path + ": ");
}

} // namespace memwall::runtime
