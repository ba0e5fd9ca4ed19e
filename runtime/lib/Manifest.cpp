//===- Manifest.cpp - A bundle's manifest.json, parsed and checked --------===//

#include "memwall-runtime/Manifest.h"
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
  switch (role) {
  case BufferRole::Input:
    return "input";
  case BufferRole::Weight:
    return "weight";
  case BufferRole::Output:
    return "output";
  case BufferRole::Intermediate:
    return "intermediate";
  }
  return "?";
}

const char *epilogueName(Epilogue epilogue) {
  switch (epilogue) {
  case Epilogue::None:
    return "none";
  case Epilogue::Bias:
    return "bias";
  case Epilogue::Relu:
    return "relu";
  case Epilogue::ReluBias:
    return "relu_bias";
  case Epilogue::Gelu:
    return "gelu";
  case Epilogue::GeluBias:
    return "gelu_bias";
  }
  return "?";
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

/// Opens `path` for reading; a directory is an error. Returns -1 and sets
/// `error` on failure.
int openForReading(const std::string &path, struct stat &status,
                   std::string &error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return -1;
  }
  if (fstat(fd, &status) != 0)
    error = "cannot stat '" + path + "': " + std::strerror(errno);
  else if (S_ISDIR(status.st_mode))
    error = "'" + path + "' is a directory";
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

std::string readFile(const std::string &path, std::string &contents,
                     size_t maxBytes) {
  contents.clear();
  struct stat status;
  std::string error;
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
    return "'" + path + "' is larger than the limit of " +
           std::to_string(maxBytes) + " bytes";
  }
  if (!ok)
    return "cannot read '" + path + "': " + std::strerror(readErrno);
  return "";
}

std::string readFileOfSize(const std::string &path, int64_t bytes,
                           const std::string &expected, std::string &contents) {
  contents.clear();
  struct stat status;
  if (stat(path.c_str(), &status) != 0)
    return "cannot open '" + path + "': " + std::strerror(errno);
  // Checked before opening: opening a FIFO would wait for a writer.
  if (!S_ISREG(status.st_mode))
    return "'" + path + "' is not a regular file (expected " + expected + ")";
  if (status.st_size != bytes)
    return "file '" + path + "' has " + std::to_string(status.st_size) +
           " bytes, expected " + expected;
  std::string error;
  int fd = openForReading(path, status, error);
  if (fd < 0)
    return error;
  if (std::string memory = checkHostMemory(bytes, "reading '" + path + "'");
      !memory.empty()) {
    close(fd);
    return memory;
  }
  bool tooLarge = false;
  contents.reserve(static_cast<size_t>(bytes));
  bool ok = readAtMost(fd, static_cast<size_t>(bytes), contents, tooLarge);
  int readErrno = errno;
  close(fd);
  if (!ok)
    return "cannot read '" + path + "': " + std::strerror(readErrno);
  // The file changed size between stat and read.
  if (tooLarge || static_cast<int64_t>(contents.size()) != bytes)
    return "file '" + path + "' changed size while being read (expected " +
           expected + ")";
  return "";
}

namespace {

/// Reads typed fields of JSON objects, keeping the first error. Each message
/// starts with the context (e.g. "buffer 'x'") and the value's line:column.
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

  bool getString(const json::Value &object, const char *key,
                 const std::string &context, std::string &out) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::String, context, key))
      return false;
    out = value->string;
    return true;
  }

  /// A string or null (null reads as "").
  bool getOptionalString(const json::Value &object, const char *key,
                         const std::string &context, std::string &out) {
    const json::Value *value = object.get(key);
    out.clear();
    if (!value || value->isNull())
      return true;
    if (!expect(*value, json::Value::Kind::String, context, key))
      return false;
    out = value->string;
    return true;
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

  bool getInt(const json::Value &object, const char *key,
              const std::string &context, int64_t &out) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::Number, context, key) ||
        !expectInteger(*value, context, key, "an integer"))
      return false;
    out = value->integer;
    return true;
  }

  bool getNumber(const json::Value &object, const char *key,
                 const std::string &context, double &out) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::Number, context, key))
      return false;
    out = value->number;
    return true;
  }

  bool getBool(const json::Value &object, const char *key,
               const std::string &context, bool &out) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::Bool, context, key))
      return false;
    out = value->boolean;
    return true;
  }

  bool getInts(const json::Value &object, const char *key,
               const std::string &context, std::vector<int64_t> &out) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::Array, context, key))
      return false;
    out.clear();
    for (const json::Value &element : value->array) {
      if (!expectInteger(element, context, key, "a list of integers"))
        return false;
      out.push_back(element.integer);
    }
    return true;
  }

  bool getStrings(const json::Value &object, const char *key,
                  const std::string &context, std::vector<std::string> &out) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::Array, context, key))
      return false;
    out.clear();
    for (const json::Value &element : value->array) {
      if (!element.isString())
        return fail(context, element,
                    std::string("field \"") + key +
                        "\" must be a list of strings");
      out.push_back(element.string);
    }
    return true;
  }

  bool getDType(const json::Value &object, const char *key,
                const std::string &context, DType &out) {
    std::string name;
    if (!getString(object, key, context, name))
      return false;
    std::optional<DType> parsed = reference::parseDType(name);
    if (!parsed)
      return fail(context, *object.get(key),
                  "unknown dtype \"" + name +
                      "\" (expected f32, bf16, f16, i32, i64, i8, f8e4m3fn, "
                      "f8e5m2 or i1)");
    out = *parsed;
    return true;
  }

  /// The array field `key` whose elements are all objects.
  const json::Value *getObjectArray(const json::Value &object, const char *key,
                                    const std::string &context) {
    const json::Value *value = field(object, key, context);
    if (!value || !expect(*value, json::Value::Kind::Array, context, key))
      return nullptr;
    for (const json::Value &element : value->array)
      if (!element.isObject()) {
        fail(context, element,
             std::string("every element of \"") + key + "\" must be an object");
        return nullptr;
      }
    return value;
  }
};

std::string quoted(const std::string &name) { return "'" + name + "'"; }

bool parseBuffer(FieldReader &reader, const json::Value &object, size_t index,
                 Buffer &buffer) {
  std::string context = "buffers[" + std::to_string(index) + "]";
  if (!reader.getString(object, "name", context, buffer.name))
    return false;
  context = "buffer " + quoted(buffer.name);
  std::string role;
  if (!reader.getInt(object, "offset", context, buffer.offset) ||
      !reader.getInt(object, "bytes", context, buffer.bytes) ||
      !reader.getDType(object, "dtype", context, buffer.dtype) ||
      !reader.getInts(object, "shape", context, buffer.shape) ||
      !reader.getString(object, "role", context, role))
    return false;
  if (role == "input")
    buffer.role = BufferRole::Input;
  else if (role == "weight")
    buffer.role = BufferRole::Weight;
  else if (role == "output")
    buffer.role = BufferRole::Output;
  else if (role == "intermediate")
    buffer.role = BufferRole::Intermediate;
  else
    return reader.fail(context, *object.get("role"),
                       "unknown role \"" + role +
                           "\" (expected input, weight, output or "
                           "intermediate)");
  return true;
}

bool parseBindings(FieldReader &reader, const json::Value &root,
                   const char *key, std::vector<Binding> &bindings) {
  const json::Value *array = reader.getObjectArray(root, key, "manifest");
  if (!array)
    return false;
  for (size_t i = 0; i < array->array.size(); ++i) {
    const json::Value &object = array->array[i];
    std::string context = std::string(key) + "[" + std::to_string(i) + "]";
    Binding binding;
    if (!reader.getString(object, "name", context, binding.name) ||
        !reader.getString(object, "buffer", context, binding.buffer) ||
        !reader.getString(object, "value", context, binding.value))
      return false;
    bindings.push_back(binding);
  }
  return true;
}

bool parseDim3(FieldReader &reader, const json::Value &object, const char *key,
               const std::string &context, std::array<int64_t, 3> &out) {
  std::vector<int64_t> dims;
  if (!reader.getInts(object, key, context, dims))
    return false;
  if (dims.size() != 3)
    return reader.fail(context, *object.get(key),
                       std::string("field \"") + key +
                           "\" must have 3 elements");
  std::copy(dims.begin(), dims.end(), out.begin());
  return true;
}

bool parseStep(FieldReader &reader, const json::Value &object, size_t index,
               Step &step) {
  std::string context = "steps[" + std::to_string(index) + "]";
  std::string kind;
  if (!reader.getString(object, "name", context, step.name))
    return false;
  context = "step " + quoted(step.name);
  if (!reader.getString(object, "kind", context, kind) ||
      !reader.getStrings(object, "ops", context, step.ops) ||
      !reader.getNumber(object, "predicted_time_s", context,
                        step.predictedTimeS))
    return false;
  if (kind == "kernel") {
    step.kind = StepKind::Kernel;
    KernelStep &kernel = step.kernel;
    return reader.getString(object, "module", context, kernel.module) &&
           reader.getString(object, "function", context, kernel.function) &&
           parseDim3(reader, object, "grid", context, kernel.grid) &&
           parseDim3(reader, object, "block", context, kernel.block) &&
           reader.getInt(object, "shared_bytes", context, kernel.sharedBytes) &&
           reader.getStrings(object, "args", context, kernel.args);
  }
  if (kind != "gemm")
    return reader.fail(context, *object.get("kind"),
                       "unknown step kind \"" + kind +
                           "\" (expected kernel or gemm)");
  step.kind = StepKind::Gemm;
  GemmStep &gemm = step.gemm;
  gemm.name = step.name;
  std::string epilogue;
  if (!reader.getString(object, "a", context, gemm.a) ||
      !reader.getString(object, "b", context, gemm.b) ||
      !reader.getOptionalString(object, "c", context, gemm.c) ||
      !reader.getOptionalString(object, "bias", context, gemm.bias) ||
      !reader.getString(object, "d", context, gemm.d) ||
      !reader.getInt(object, "m", context, gemm.m) ||
      !reader.getInt(object, "n", context, gemm.n) ||
      !reader.getInt(object, "k", context, gemm.k) ||
      !reader.getInt(object, "batch", context, gemm.batch) ||
      !reader.getInt(object, "stride_a", context, gemm.strideA) ||
      !reader.getInt(object, "stride_b", context, gemm.strideB) ||
      !reader.getInt(object, "stride_c", context, gemm.strideC) ||
      !reader.getInt(object, "stride_d", context, gemm.strideD) ||
      !reader.getBool(object, "trans_a", context, gemm.transA) ||
      !reader.getBool(object, "trans_b", context, gemm.transB) ||
      !reader.getDType(object, "dtype", context, gemm.dtype) ||
      !reader.getString(object, "epilogue", context, epilogue))
    return false;
  static const std::pair<const char *, Epilogue> kEpilogues[] = {
      {"none", Epilogue::None}, {"bias", Epilogue::Bias},
      {"relu", Epilogue::Relu}, {"relu_bias", Epilogue::ReluBias},
      {"gelu", Epilogue::Gelu}, {"gelu_bias", Epilogue::GeluBias}};
  for (const auto &entry : kEpilogues)
    if (epilogue == entry.first) {
      gemm.epilogue = entry.second;
      return true;
    }
  return reader.fail(context, *object.get("epilogue"),
                     "unknown epilogue \"" + epilogue +
                         "\" (expected none, bias, relu, relu_bias, gelu or "
                         "gelu_bias)");
}

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
    std::vector<int64_t> ints;
    for (const json::Value &element : value.array) {
      if (!element.isNumber() || !element.isInteger)
        return reader.fail(context, element,
                           "list attributes must hold integers");
      ints.push_back(element.integer);
    }
    attr = reference::Attr::ofInts(std::move(ints));
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
  const json::Value *values =
      reader.getObjectArray(object, "values", "reference");
  if (!values)
    return false;
  for (size_t i = 0; i < values->array.size(); ++i) {
    const json::Value &entry = values->array[i];
    std::string context = "reference.values[" + std::to_string(i) + "]";
    reference::ValueInfo info;
    if (!reader.getString(entry, "name", context, info.name))
      return false;
    context = "reference value " + quoted(info.name);
    if (!reader.getDType(entry, "dtype", context, info.dtype) ||
        !reader.getInts(entry, "shape", context, info.shape))
      return false;
    graph.values.push_back(info);
  }
  const json::Value *ops = reader.getObjectArray(object, "ops", "reference");
  if (!ops)
    return false;
  for (size_t i = 0; i < ops->array.size(); ++i) {
    const json::Value &entry = ops->array[i];
    std::string context = "reference.ops[" + std::to_string(i) + "]";
    reference::Op op;
    if (!reader.getString(entry, "op", context, op.op))
      return false;
    if (const json::Value *loc = entry.get("loc"); loc && loc->isString())
      op.loc = loc->string;
    context = "reference op '" + op.op + "' at " +
              (op.loc.empty() ? context : quoted(op.loc));
    if (!reader.getStrings(entry, "operands", context, op.operands) ||
        !reader.getStrings(entry, "results", context, op.results))
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

} // namespace

std::string parseReferenceGraph(const json::Value &object,
                                reference::Graph &graph) {
  FieldReader reader;
  graph = reference::Graph();
  if (!object.isObject()) {
    reader.fail("reference", object, "the graph must be an object");
    return reader.error;
  }
  parseReference(reader, object, graph);
  return reader.error;
}

std::string parseManifest(const json::Value &root, Manifest &manifest) {
  FieldReader reader;
  manifest = Manifest();
  if (!root.isObject()) {
    reader.fail("manifest", root, "the document must be an object");
    return reader.error;
  }
  std::string format;
  int64_t version = 0;
  if (!reader.getString(root, "format", "manifest", format) ||
      !reader.getInt(root, "version", "manifest", version))
    return reader.error;
  if (format != "memwall-bundle")
    reader.fail("manifest", *root.get("format"),
                "format is \"" + format + "\", expected \"memwall-bundle\"");
  else if (version != 1)
    reader.fail("manifest", *root.get("version"),
                "unsupported bundle version " + std::to_string(version) +
                    " (this memwall-run reads version 1)");
  if (!reader.ok())
    return reader.error;
  // Descriptive fields: optional, for reports.
  reader.getOptionalString(root, "model", "manifest", manifest.model);
  reader.getOptionalString(root, "target", "manifest", manifest.target);
  reader.getOptionalString(root, "arch", "manifest", manifest.arch);
  if (!reader.getInt(root, "arena_bytes", "manifest", manifest.arenaBytes))
    return reader.error;

  const json::Value *modules =
      reader.getObjectArray(root, "modules", "manifest");
  if (!modules)
    return reader.error;
  for (size_t i = 0; i < modules->array.size(); ++i) {
    Module module;
    std::string context = "modules[" + std::to_string(i) + "]";
    if (!reader.getString(modules->array[i], "name", context, module.name) ||
        !reader.getString(modules->array[i], "file", context, module.file))
      return reader.error;
    manifest.modules.push_back(module);
  }

  const json::Value *buffers =
      reader.getObjectArray(root, "buffers", "manifest");
  if (!buffers)
    return reader.error;
  for (size_t i = 0; i < buffers->array.size(); ++i) {
    Buffer buffer;
    if (!parseBuffer(reader, buffers->array[i], i, buffer))
      return reader.error;
    manifest.buffers.push_back(buffer);
  }

  if (!parseBindings(reader, root, "inputs", manifest.inputs) ||
      !parseBindings(reader, root, "outputs", manifest.outputs))
    return reader.error;

  const json::Value *steps = reader.getObjectArray(root, "steps", "manifest");
  if (!steps)
    return reader.error;
  for (size_t i = 0; i < steps->array.size(); ++i) {
    Step step;
    if (!parseStep(reader, steps->array[i], i, step))
      return reader.error;
    manifest.steps.push_back(std::move(step));
  }

  if (const json::Value *predicted = root.get("predicted")) {
    if (!reader.expect(*predicted, json::Value::Kind::Object, "manifest",
                       "predicted") ||
        !reader.getNumber(*predicted, "time_s", "predicted",
                          manifest.predictedTimeS) ||
        !reader.getInt(*predicted, "peak_bytes", "predicted",
                       manifest.predictedPeakBytes))
      return reader.error;
  }

  if (const json::Value *graph = root.get("reference");
      graph && !graph->isNull()) {
    if (!reader.expect(*graph, json::Value::Kind::Object, "manifest",
                       "reference") ||
        !parseReference(reader, *graph, manifest.reference))
      return reader.error;
    manifest.hasReference = true;
  }
  return reader.error;
}

namespace {

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
std::string checkGemmOperand(const Manifest &manifest, const GemmStep &gemm,
                             const char *role, const std::string &name,
                             int64_t rows, int64_t cols, int64_t stride) {
  std::string context = "step '" + gemm.name + "': operand " + role;
  const Buffer *buffer = manifest.findBuffer(name);
  if (!buffer)
    return context + " names unknown buffer '" + name + "'";
  context += " (buffer '" + name + "')";
  if (buffer->dtype != gemm.dtype)
    return context + " has dtype " + reference::dtypeName(buffer->dtype) +
           ", but the gemm's dtype is " + reference::dtypeName(gemm.dtype);
  if (stride < 0)
    return context + ": negative batch stride " + std::to_string(stride);
  std::string what = std::to_string(gemm.batch) + " x " + std::to_string(rows) +
                     " x " + std::to_string(cols) +
                     " elements at batch stride " + std::to_string(stride);
  int64_t matrix, span, elements, needed;
  if (!checkedMul(rows, cols, matrix) ||
      !checkedMul(gemm.batch - 1, stride, span) ||
      !checkedAdd(span, matrix, elements) ||
      !checkedMul(elements, reference::dtypeBytes(gemm.dtype), needed))
    return context + ": the bytes of " + tooLargeForInt64(what);
  if (buffer->bytes < needed)
    return context + " holds " + std::to_string(buffer->bytes) +
           " bytes, but " + what + " need " + std::to_string(needed);
  // With one batch the stride addresses nothing, but cuBLASLt still gets it
  // (in bytes, for alignment): it must not reach past the buffer either.
  int64_t bufferElements = buffer->bytes / reference::dtypeBytes(gemm.dtype);
  if (stride > bufferElements)
    return context + ": batch stride " + std::to_string(stride) +
           " is larger than the buffer's " + std::to_string(bufferElements) +
           " elements";
  return "";
}

std::string validateGemm(const Manifest &manifest, const GemmStep &gemm) {
  std::string context = "step '" + gemm.name + "'";
  if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0 || gemm.batch <= 0)
    return context + ": m, n, k and batch must be positive (got m=" +
           std::to_string(gemm.m) + " n=" + std::to_string(gemm.n) +
           " k=" + std::to_string(gemm.k) +
           " batch=" + std::to_string(gemm.batch) + ")";
  // cuBLASLt's batch count is an int32.
  if (gemm.batch > INT32_MAX)
    return context + ": batch " + std::to_string(gemm.batch) +
           " is more than cuBLASLt's limit of " + std::to_string(INT32_MAX);
  if (gemm.dtype != DType::F32 && gemm.dtype != DType::BF16 &&
      gemm.dtype != DType::F16)
    return context + ": gemm dtype " +
           std::string(reference::dtypeName(gemm.dtype)) +
           " is not supported (expected f32, bf16 or f16)";
  if (epilogueHasBias(gemm.epilogue) != !gemm.bias.empty())
    return context + ": epilogue '" + epilogueName(gemm.epilogue) + "' " +
           (gemm.bias.empty() ? "needs a bias buffer"
                              : "does not take a bias, but bias is set");
  std::string error;
  if (!(error = checkGemmOperand(manifest, gemm, "a", gemm.a,
                                 gemm.transA ? gemm.k : gemm.m,
                                 gemm.transA ? gemm.m : gemm.k, gemm.strideA))
           .empty())
    return error;
  if (!(error = checkGemmOperand(manifest, gemm, "b", gemm.b,
                                 gemm.transB ? gemm.n : gemm.k,
                                 gemm.transB ? gemm.k : gemm.n, gemm.strideB))
           .empty())
    return error;
  if (!gemm.c.empty() &&
      !(error = checkGemmOperand(manifest, gemm, "c", gemm.c, gemm.m, gemm.n,
                                 gemm.strideC))
           .empty())
    return error;
  if (!(error = checkGemmOperand(manifest, gemm, "d", gemm.d, gemm.m, gemm.n,
                                 gemm.strideD))
           .empty())
    return error;
  int64_t resultElements = 0; // fits: operand d holds one result matrix
  checkedMul(gemm.m, gemm.n, resultElements);
  if (gemm.batch > 1 && gemm.strideD < resultElements)
    return context + ": stride_d " + std::to_string(gemm.strideD) +
           " is smaller than one " + std::to_string(gemm.m) + " x " +
           std::to_string(gemm.n) +
           " result matrix, so batches would overwrite each other";
  if (!gemm.bias.empty() && !(error = checkGemmOperand(manifest, gemm, "bias",
                                                       gemm.bias, 1, gemm.n, 0))
                                 .empty())
    return error;
  return "";
}

std::string validateKernel(const Manifest &manifest, const Step &step) {
  std::string context = "step '" + step.name + "'";
  const KernelStep &kernel = step.kernel;
  if (!manifest.findModule(kernel.module))
    return context + ": unknown module '" + kernel.module + "'";
  if (kernel.function.empty())
    return context + ": empty function name";
  static const int64_t kMaxGrid[3] = {2147483647, 65535, 65535};
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (kernel.grid[i] <= 0 || kernel.grid[i] > kMaxGrid[i])
      return context + ": grid dimension " + std::to_string(i) + " is " +
             std::to_string(kernel.grid[i]) + ", expected 1.." +
             std::to_string(kMaxGrid[i]);
    if (kernel.block[i] <= 0 || kernel.block[i] > 1024)
      return context + ": block dimension " + std::to_string(i) + " is " +
             std::to_string(kernel.block[i]) + ", expected 1..1024";
    threads *= kernel.block[i];
  }
  if (threads > 1024)
    return context + ": block has " + std::to_string(threads) +
           " threads, more than 1024";
  if (kernel.sharedBytes < 0 || kernel.sharedBytes > (int64_t(1) << 31))
    return context + ": invalid shared_bytes " +
           std::to_string(kernel.sharedBytes);
  for (const std::string &arg : kernel.args)
    if (!manifest.findBuffer(arg))
      return context + ": argument names unknown buffer '" + arg + "'";
  return "";
}

// An input or output binding: its buffer exists with the expected role, and
// matches its reference value (when the bundle has a reference graph).
std::string validateBinding(const Manifest &manifest, const Binding &binding,
                            bool isInput) {
  std::string context =
      std::string(isInput ? "input '" : "output '") + binding.name + "'";
  const Buffer *buffer = manifest.findBuffer(binding.buffer);
  if (!buffer)
    return context + " names unknown buffer '" + binding.buffer + "'";
  if (isInput && buffer->role != BufferRole::Input &&
      buffer->role != BufferRole::Weight)
    return context + ": buffer '" + buffer->name + "' has role " +
           roleName(buffer->role) + ", expected input or weight";
  if (!manifest.hasReference)
    return "";
  const reference::ValueInfo *value = manifest.findValue(binding.value);
  if (!value)
    return context + " names unknown reference value '" + binding.value + "'";
  if (value->dtype != buffer->dtype ||
      numElements(value->shape) != numElements(buffer->shape))
    return context + ": buffer '" + buffer->name + "' (" +
           reference::dtypeName(buffer->dtype) + " " +
           shapeString(buffer->shape) + ") does not match reference value '" +
           value->name + "' (" + reference::dtypeName(value->dtype) + " " +
           shapeString(value->shape) + ")";
  return "";
}

// A reference value's shape: its element count, and the bytes of the
// doubles the reference interpreter holds it in, fit in int64.
std::string validateReferenceValue(const reference::ValueInfo &value) {
  std::string context = "reference value '" + value.name + "'";
  for (int64_t dim : value.shape)
    if (dim < 0)
      return context + ": negative dimension in shape " +
             shapeString(value.shape);
  int64_t elements, hostBytes;
  if (!checkedElementCount(value.shape, elements))
    return context + ": " + shapeTooLarge(value.shape);
  if (!checkedMul(elements, static_cast<int64_t>(sizeof(double)), hostBytes))
    return context + ": " +
           tooLargeForInt64("the bytes of " + std::to_string(elements) +
                            " elements held as doubles");
  return "";
}

// A buffer's shape, size and place: dims >= 0, bytes == elements x dtype
// size, and [offset, offset + bytes) inside the arena, all without overflow.
std::string validateBuffer(const Manifest &manifest, const Buffer &buffer) {
  std::string context = "buffer '" + buffer.name + "'";
  if (buffer.offset < 0 || buffer.bytes < 0)
    return context + ": negative offset or size";
  if (buffer.offset % kBufferAlignment != 0)
    return context + ": offset " + std::to_string(buffer.offset) +
           " is not a multiple of " + std::to_string(kBufferAlignment);
  for (int64_t dim : buffer.shape)
    if (dim < 0)
      return context + ": negative dimension in shape " +
             shapeString(buffer.shape);
  int64_t elements, dense, end;
  if (!checkedElementCount(buffer.shape, elements))
    return context + ": " + shapeTooLarge(buffer.shape);
  if (!checkedMul(elements, reference::dtypeBytes(buffer.dtype), dense))
    return context + ": " +
           tooLargeForInt64(std::string("the bytes of a dense ") +
                            reference::dtypeName(buffer.dtype) + " " +
                            shapeString(buffer.shape) + " array");
  if (buffer.bytes != dense)
    return context + ": " + std::to_string(buffer.bytes) +
           " bytes, but a dense " + reference::dtypeName(buffer.dtype) + " " +
           shapeString(buffer.shape) + " array has " + std::to_string(dense);
  if (!checkedAdd(buffer.offset, buffer.bytes, end) ||
      end > manifest.arenaBytes)
    return context + ": range " + describeRange(buffer) +
           " is outside the arena of " + std::to_string(manifest.arenaBytes) +
           " bytes";
  return "";
}

} // namespace

std::string validateManifest(const Manifest &manifest) {
  if (manifest.arenaBytes < 0)
    return "manifest: negative arena_bytes";
  if (manifest.arenaBytes == 0 && !manifest.buffers.empty())
    return "manifest: arena_bytes is 0, but there are " +
           std::to_string(manifest.buffers.size()) + " buffers";
  std::set<std::string> names;
  for (const Module &module : manifest.modules)
    if (!names.insert(module.name).second)
      return "module '" + module.name + "' is defined twice";
  names.clear();
  for (const Buffer &buffer : manifest.buffers) {
    if (!names.insert(buffer.name).second)
      return "buffer '" + buffer.name + "' is defined twice";
    if (std::string error = validateBuffer(manifest, buffer); !error.empty())
      return error;
  }
  for (const reference::ValueInfo &value : manifest.reference.values)
    if (std::string error = validateReferenceValue(value); !error.empty())
      return error;

  // Inputs and weights are all live when the run starts, and outputs when it
  // ends: two of them sharing bytes would corrupt each other.
  names.clear();
  std::vector<const Buffer *> liveAtStart, liveAtEnd;
  for (const Binding &binding : manifest.inputs) {
    if (!names.insert(binding.name).second)
      return "input '" + binding.name + "' is listed twice";
    if (std::string error = validateBinding(manifest, binding, true);
        !error.empty())
      return error;
    const Buffer *buffer = manifest.findBuffer(binding.buffer);
    for (const Buffer *other : liveAtStart)
      if (other == buffer || overlaps(*other, *buffer))
        return "input '" + binding.name + "': buffer '" + buffer->name + "' " +
               describeRange(*buffer) +
               " overlaps the buffer of another input, '" + other->name + "' " +
               describeRange(*other);
    liveAtStart.push_back(buffer);
  }
  for (const Buffer &buffer : manifest.buffers)
    if ((buffer.role == BufferRole::Input ||
         buffer.role == BufferRole::Weight) &&
        std::find(liveAtStart.begin(), liveAtStart.end(), &buffer) ==
            liveAtStart.end())
      return "buffer '" + buffer.name + "' has role " + roleName(buffer.role) +
             " but no entry of \"inputs\" provides it";
  names.clear();
  for (const Binding &binding : manifest.outputs) {
    if (!names.insert(binding.name).second)
      return "output '" + binding.name + "' is listed twice";
    if (std::string error = validateBinding(manifest, binding, false);
        !error.empty())
      return error;
    const Buffer *buffer = manifest.findBuffer(binding.buffer);
    for (const Buffer *other : liveAtEnd) {
      bool sameBytes =
          other->offset == buffer->offset && other->bytes == buffer->bytes;
      if (!sameBytes && overlaps(*other, *buffer))
        return "output '" + binding.name + "': buffer '" + buffer->name + "' " +
               describeRange(*buffer) +
               " overlaps the buffer of another output, '" + other->name +
               "' " + describeRange(*other);
    }
    liveAtEnd.push_back(buffer);
  }

  names.clear();
  for (const Step &step : manifest.steps) {
    if (!names.insert(step.name).second)
      return "step '" + step.name + "' is defined twice";
    std::string error = step.kind == StepKind::Gemm
                            ? validateGemm(manifest, step.gemm)
                            : validateKernel(manifest, step);
    if (!error.empty())
      return error;
  }
  return "";
}

std::string loadManifest(const std::string &bundleDir, Manifest &manifest) {
  std::string text;
  if (std::string error = readFile(bundleDir + "/manifest.json", text);
      !error.empty())
    return error;
  return parseManifestText(text, bundleDir, manifest);
}

std::string parseManifestText(const std::string &text,
                              const std::string &bundleDir,
                              Manifest &manifest) {
  std::string path = bundleDir + "/manifest.json";
  json::Value root;
  if (std::string error = json::parse(text, root); !error.empty())
    return path + ":" + error;
  if (std::string error = parseManifest(root, manifest); !error.empty())
    return bundleDir + "/" + error;
  if (std::string error = validateManifest(manifest); !error.empty())
    return path + ": " + error;
  return "";
}

} // namespace memwall::runtime
