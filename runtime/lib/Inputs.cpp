//===- Inputs.cpp - Host-side inputs and outputs of a bundle run ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/OutputFile.h"
#include "memwall-runtime/Checked.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace memwall::runtime {

uint64_t SplitMix64::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SplitMix64::nextUnit() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

uint64_t inputStreamSeed(uint64_t seed, size_t index) {
  // Decorrelate neighbouring (seed, index) pairs by hashing them once.
  SplitMix64 mixer(seed ^ (0xd1b54a32d192ed03ULL * (index + 1)));
  return mixer.next();
}

reference::Tensor randomTensor(DType dtype, const std::vector<int64_t> &shape,
                               BufferRole role, uint64_t streamSeed) {
  reference::Tensor tensor;
  tensor.dtype = dtype;
  tensor.shape = shape;
  int64_t count = numElements(shape);
  tensor.data.assign(static_cast<size_t>(count), 0.0);
  if (dtype == DType::I1)
    return tensor; // masks: false
  SplitMix64 generator(streamSeed);
  if (dtype == DType::I8) {
    // i8 is quantized storage (weight-only quantization): symmetric
    // integers in [-127, 127], as a quantizer writes them.
    for (double &element : tensor.data)
      element = std::floor(generator.nextUnit() * 255) - 127;
    return tensor;
  }
  if (dtype == DType::I4) {
    // i4 storage: every value of the nibble, [-8, 7].
    for (double &element : tensor.data)
      element = std::floor(generator.nextUnit() * 16) - 8;
    return tensor;
  }
  if (!reference::isFloat(dtype)) {
    // Wider integer inputs are token ids or positions: the index along the last
    // dimension (0, 1, ..., S - 1 per row), valid ids for any vocabulary of
    // at least S rows, and positions as a prefill numbers them.
    int64_t last = shape.empty() ? 1 : std::max<int64_t>(shape.back(), 1);
    for (int64_t i = 0; i < count; ++i)
      tensor.data[i] = static_cast<double>(i % last);
    return tensor;
  }
  double low = -1, high = 1;
  if (role == BufferRole::Weight) {
    if (shape.size() >= 2 && shape[0] > 0) {
      high = 1 / std::sqrt(static_cast<double>(shape[0]));
      low = -high;
    } else {
      low = 0.5;
      high = 1.5;
    }
  }
  for (double &element : tensor.data)
    element = reference::roundToDType(low + (high - low) * generator.nextUnit(),
                                      dtype);
  return tensor;
}

void addHostTensorBytes(const std::vector<int64_t> &shape, int64_t &total) {
  int64_t elements, bytes;
  if (total < 0 || !checkedElementCount(shape, elements) ||
      !checkedMul(elements, static_cast<int64_t>(sizeof(double)), bytes) ||
      !checkedAdd(total, bytes, total))
    total = -1;
}

Status makeRandomInputs(const Manifest &manifest, uint64_t seed,
                        std::vector<HostInput> &inputs) {
  inputs.clear();
  int64_t hostBytes = 0;
  for (const Binding &binding : manifest.inputs)
    addHostTensorBytes(manifest.findBuffer(binding.buffer)->shape, hostBytes);
  if (std::string error = checkHostMemory(hostBytes, "generating the inputs");
      !error.empty())
    return Status(ErrorCode::OutOfMemory, error);
  // Ids that index an embedding table (or its gradient) stay below its row
  // count (BERT's token types index a 2-row table).
  std::map<std::string, int64_t> tableRows;
  for (const reference::Op &op : manifest.reference.ops) {
    // embedding's table is its first operand; embedding_grad's its result.
    bool gather = op.op == "embedding" && op.operands.size() == 2;
    bool scatter = op.op == "embedding_grad" && op.operands.size() == 2 &&
                   op.results.size() == 1;
    if (!gather && !scatter)
      continue;
    const reference::ValueInfo *table =
        manifest.findValue(gather ? op.operands[0] : op.results[0]);
    if (!table || table->shape.empty() || table->shape[0] <= 0)
      continue;
    auto [it, inserted] =
        tableRows.try_emplace(op.operands[1], table->shape[0]);
    if (!inserted)
      it->second = std::min(it->second, table->shape[0]);
  }
  // A second moment (AdamW's exp_avg_sq, operand 3) is a running mean of
  // squares: never negative, or the update's square root is NaN.
  std::set<std::string> secondMoments;
  for (const reference::Op &op : manifest.reference.ops)
    if (op.op == "adamw" && op.operands.size() >= 4)
      secondMoments.insert(op.operands[3]);
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    HostInput input;
    input.binding = &manifest.inputs[i];
    input.buffer = manifest.findBuffer(input.binding->buffer);
    input.tensor = randomTensor(input.buffer->dtype, input.buffer->shape,
                                input.buffer->role, inputStreamSeed(seed, i));
    if (auto it = tableRows.find(input.binding->value); it != tableRows.end())
      for (double &id : input.tensor.data)
        id = std::fmod(id, static_cast<double>(it->second));
    if (secondMoments.count(input.binding->value))
      for (double &moment : input.tensor.data)
        moment = std::fabs(moment);
    inputs.push_back(std::move(input));
  }
  return Status();
}

namespace {

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string expectation(const Buffer &buffer) {
  return std::string(reference::dtypeName(buffer.dtype)) + " " +
         shapeString(buffer.shape) + " in a file of " +
         std::to_string(denseBytes(buffer)) + " bytes";
}

Status invalidInputs(const std::string &message) {
  return Status(ErrorCode::InvalidInputs, message);
}

} // namespace

Status loadInputsFile(const Manifest &manifest, const std::string &path,
                      std::vector<HostInput> &inputs) {
  inputs.clear();
  std::string text;
  if (Status error = readFile(path, text); !error.ok())
    return error.withPrefix("inputs file: ");
  return parseInputsText(manifest, text, path, inputs);
}

Status parseInputsText(const Manifest &manifest, const std::string &text,
                       const std::string &path,
                       std::vector<HostInput> &inputs) {
  inputs.clear();
  json::Value root;
  if (Status error = json::parse(text, root); !error.ok())
    return invalidInputs(path + ":" + error.message());
  const json::Value *entries = root.get("inputs");
  if (!entries || !entries->isArray())
    return invalidInputs(path +
                         ": expected an object with an \"inputs\" array");
  std::string base = directoryOf(path);
  std::vector<const json::Value *> byInput(manifest.inputs.size(), nullptr);
  for (const json::Value &entry : entries->array) {
    const json::Value *name = entry.get("name");
    if (!name || !name->isString())
      return invalidInputs(path + ":" + entry.where() +
                           ": every entry needs a string \"name\"");
    size_t index = 0;
    while (index < manifest.inputs.size() &&
           manifest.inputs[index].name != name->string)
      ++index;
    if (index == manifest.inputs.size()) {
      std::string known;
      for (const Binding &binding : manifest.inputs)
        known += (known.empty() ? "" : ", ") + binding.name;
      return invalidInputs(
          path + ":" + entry.where() + ": input '" + name->string +
          "' is not an input of the bundle (its inputs: " + known + ")");
    }
    if (byInput[index])
      return invalidInputs(path + ":" + entry.where() + ": input '" +
                           name->string + "' is listed twice");
    byInput[index] = &entry;
  }
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    const Binding &binding = manifest.inputs[i];
    const Buffer *buffer = manifest.findBuffer(binding.buffer);
    std::string context = path + ": input '" + binding.name + "'";
    const json::Value *entry = byInput[i];
    if (!entry)
      return invalidInputs(context + " is missing (expected " +
                           expectation(*buffer) + ")");
    const json::Value *dtype = entry->get("dtype");
    const json::Value *shape = entry->get("shape");
    const json::Value *file = entry->get("file");
    if (!dtype || !dtype->isString() || !shape || !shape->isArray() || !file ||
        !file->isString())
      return invalidInputs(context + ": needs \"dtype\" (string), \"shape\" "
                                     "(list) and \"file\" (string)");
    if (dtype->string != reference::dtypeName(buffer->dtype))
      return invalidInputs(context + ": dtype " + dtype->string +
                           ", expected " + expectation(*buffer));
    std::vector<int64_t> dims;
    for (const json::Value &dim : shape->array) {
      if (!dim.isNumber() || !dim.isInteger)
        return invalidInputs(context + ": shape must be a list of integers");
      dims.push_back(dim.integer);
    }
    if (dims != buffer->shape)
      return invalidInputs(context + ": shape " + shapeString(dims) +
                           ", expected " + expectation(*buffer));
    std::string filePath = !file->string.empty() && file->string[0] == '/'
                               ? file->string
                               : base + "/" + file->string;
    // The manifest's buffers are validated: their tensors fit in int64.
    int64_t fileBytes = denseBytes(*buffer), hostBytes = fileBytes;
    addHostTensorBytes(buffer->shape, hostBytes);
    if (std::string error = checkHostMemory(hostBytes, context); !error.empty())
      return Status(ErrorCode::OutOfMemory, error);
    std::string contents;
    if (Status error =
            readFileOfSize(filePath, fileBytes, expectation(*buffer), contents);
        !error.ok())
      return error.withPrefix(context + ": ");
    HostInput input;
    input.binding = &binding;
    input.buffer = buffer;
    input.tensor = reference::Tensor::fromBytes(
        buffer->dtype, buffer->shape,
        reinterpret_cast<const uint8_t *>(contents.data()), contents.size());
    inputs.push_back(std::move(input));
  }
  return Status();
}

Status evaluateReference(const Manifest &manifest,
                         const std::vector<HostInput> &inputs,
                         std::vector<reference::Tensor> &outputs,
                         std::map<std::string, reference::Tensor> *allValues,
                         reference::Precision precision) {
  outputs.clear();
  if (!manifest.hasReference)
    return Status(ErrorCode::Reference,
                  "the bundle has no \"reference\" graph");
  // The interpreter holds every value of the graph at once.
  int64_t hostBytes = 0;
  for (const reference::ValueInfo &value : manifest.reference.values)
    addHostTensorBytes(value.shape, hostBytes);
  if (std::string error =
          checkHostMemory(hostBytes, "evaluating the reference graph");
      !error.empty())
    return Status(ErrorCode::OutOfMemory, error);
  std::map<std::string, reference::Tensor> values;
  for (const HostInput &input : inputs) {
    const reference::ValueInfo *info = manifest.findValue(input.binding->value);
    reference::Tensor tensor = input.tensor;
    tensor.shape = info->shape; // same elements; the value's own shape
    values[info->name] = std::move(tensor);
  }
  if (std::string error =
          reference::evaluate(manifest.reference, values, precision);
      !error.empty())
    return Status(ErrorCode::Reference, "reference interpreter: " + error);
  for (const Binding &binding : manifest.outputs) {
    auto found = values.find(binding.value);
    if (found == values.end())
      return Status(ErrorCode::Reference,
                    "reference interpreter: output '" + binding.name +
                        "': value '" + binding.value + "' was not computed");
    outputs.push_back(found->second);
  }
  if (allValues)
    *allValues = std::move(values);
  return Status();
}

namespace {

Status makeDirectories(const std::string &dir) {
  for (size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash + 1);
    std::string prefix = dir.substr(0, slash);
    if (mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return Status(ErrorCode::Io, "cannot create directory '" + prefix +
                                       "': " + std::strerror(errno));
  }
  return Status();
}

} // namespace

Status writeTensorDir(const std::string &dir,
                      const std::vector<std::string> &names,
                      const std::vector<reference::Tensor> &tensors) {
  if (Status error = makeDirectories(dir); !error.ok())
    return error;
  json::Writer writer;
  writer.beginObject();
  writer.key("inputs");
  writer.beginArray();
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<uint8_t> bytes = tensors[i].toBytes();
    std::string file = names[i] + ".bin";
    if (Status error = writeOutputFile(
            dir + "/" + file,
            std::string(reinterpret_cast<const char *>(bytes.data()),
                        bytes.size()));
        !error.ok())
      return error;
    writer.beginObject();
    writer.key("name");
    writer.value(names[i]);
    writer.key("dtype");
    writer.value(reference::dtypeName(tensors[i].dtype));
    writer.key("shape");
    writer.intList(tensors[i].shape);
    writer.key("file");
    writer.value(file);
    writer.endObject();
  }
  writer.endArray();
  writer.endObject();
  return writeOutputFile(dir + "/outputs.json", writer.str());
}

} // namespace memwall::runtime
