//===- Manifest.h - A bundle's manifest.json, parsed and checked -*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The in-memory form of docs/bundle-format.md. Parsing reads every field
// through the schema that the compiler writes with (BundleSchema.def) and
// checks the JSON's structure; validation checks everything memwall-run relies
// on before it touches the GPU (buffer ranges and alignment, step operands,
// GEMM sizes), so that a bad bundle fails with a message naming the buffer or
// step instead of a device fault.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_MANIFEST_H
#define MEMWALL_RUNTIME_MANIFEST_H

#include "memwall-runtime/Json.h"
#include "memwall-runtime/Reference.h"
#include "memwall-runtime/Status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace memwall::runtime {

using reference::DType;

/// Device buffers start at multiples of this many bytes.
constexpr int64_t kBufferAlignment = 256;

/// In the order of schema::kBufferRoles, which names them.
/// Counters: i32 arrival counters (a split-K GEMM's or a split-keys
/// attention's, one per output tile), zero when the bundle
/// is loaded (the arena is zeroed) and left zero by every launch; no other
/// buffer shares their bytes.
enum class BufferRole { Input, Weight, Output, Intermediate, Counters };
const char *roleName(BufferRole role);

struct Buffer {
  std::string name;
  int64_t offset = 0;
  int64_t bytes = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  BufferRole role = BufferRole::Intermediate;
  /// Element strides, outermost first; empty for a dense row-major buffer.
  /// A strided buffer spans its outermost dimension's whole pitch
  /// (`bytes` = shape[0] x strides[0] elements).
  std::vector<int64_t> strides;
};

/// The bytes of `buffer`'s tensor stored densely (an input file's size).
int64_t denseBytes(const Buffer &buffer);
/// Writes `tensor` (of the buffer's dtype and shape) where `buffer` keeps
/// its elements, from `bufferStart`; a strided buffer's gaps are untouched.
void storeToBuffer(const Buffer &buffer, const reference::Tensor &tensor,
                   uint8_t *bufferStart);
/// The `buffer.bytes` bytes `buffer` holds for `tensor`, the gaps zero.
std::vector<uint8_t> toBufferBytes(const Buffer &buffer,
                                   const reference::Tensor &tensor);
/// The tensor `buffer` holds in `bytes` (`buffer.bytes` of them).
reference::Tensor fromBufferBytes(const Buffer &buffer, const uint8_t *bytes);

/// An entry of "inputs" or "outputs": a name, the buffer holding it and the
/// reference-graph value it corresponds to.
struct Binding {
  std::string name;
  std::string buffer;
  std::string value;
};

struct Module {
  std::string name;
  std::string file; // relative to the bundle directory
};

/// In the order of schema::kTensorMapSwizzles (and of CUtensorMapSwizzle).
enum class TensorMapSwizzle { None, Bytes32, Bytes64, Bytes128 };
/// In the order of schema::kTensorMapL2Promotions (CUtensorMapL2promotion).
enum class TensorMapL2Promotion { None, Bytes64, Bytes128, Bytes256 };
/// In the order of schema::kTensorMapOobFills (CUtensorMapFloatOOBfill).
enum class TensorMapOobFill { Zero, Nan };
/// In the order of schema::kTensorMapInterleaves (CUtensorMapInterleave).
enum class TensorMapInterleave { None, Bytes16, Bytes32 };

/// A kernel argument passed as a TMA tensor map of its buffer
/// (docs/bundle-format.md): memwall-run encodes it with
/// cuTensorMapEncodeTiled and passes the map's device address.
struct TensorMap {
  /// Index into KernelStep::args; that argument's buffer is the tensor.
  int64_t arg = 0;
  /// Global extents and element strides, outermost first (the innermost
  /// stride is 1); the box copied per TMA load, outermost first.
  std::vector<int64_t> shape, strides, box;
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  TensorMapL2Promotion l2Promotion = TensorMapL2Promotion::None;
  TensorMapOobFill oobFill = TensorMapOobFill::Zero;
  TensorMapInterleave interleave = TensorMapInterleave::None;
};

struct KernelStep {
  std::string module;
  std::string function;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t sharedBytes = 0;
  std::vector<std::string> args;
  /// The arguments passed as tensor maps instead of buffer addresses.
  std::vector<TensorMap> tensorMaps;
};

/// In the order of schema::kEpilogues, which names them.
enum class Epilogue { None, Bias, Relu, ReluBias, Gelu, GeluBias };
const char *epilogueName(Epilogue epilogue);
bool epilogueHasBias(Epilogue epilogue);

/// D[b] (M x N) = epilogue(op(A[b]) (M x K) . op(B[b]) (K x N) + C[b]), all
/// row-major; strides are in elements.
struct GemmStep {
  std::string name;
  std::string a, b, c, bias, d; // c and bias: "" when null
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0, strideD = 0;
  bool transA = false, transB = false;
  DType dtype = DType::F32;
  /// C and D's type: dtype, or f32 beside bf16/f16 A and B (an fp32
  /// accumulator, "out_dtype"; the reader sets it to dtype when absent, and
  /// code building a step sets both).
  DType outDtype = DType::F32;
  Epilogue epilogue = Epilogue::None;
};

/// output[i] = the sum over the group's ranks of input[i], i < count
/// (BundleSchema.def); group size 1 is a copy.
struct AllReduceStep {
  std::string input, output;
  int64_t count = 0;
  DType dtype = DType::F32;
  int64_t groupSize = 1;
};

/// In the order of schema::kStepKinds, which names them.
enum class StepKind { Kernel, Gemm, AllReduce };
/// "kernel", "gemm", "all_reduce".
const char *stepKindName(StepKind kind);

struct Step {
  StepKind kind = StepKind::Kernel;
  std::string name;
  std::vector<std::string> ops;
  double predictedTimeS = 0;
  KernelStep kernel;       // when kind == Kernel
  GemmStep gemm;           // when kind == Gemm
  AllReduceStep allReduce; // when kind == AllReduce
};

/// The "predicted" object: the compiler's prediction for the whole bundle.
struct Predicted {
  double timeS = 0;
  int64_t peakBytes = 0;
};

/// "format" and "version", read and checked before the rest.
struct BundleHeader {
  std::string format;
  int64_t version = 0;
};

struct Manifest {
  std::string model, target, arch;
  std::vector<Module> modules;
  int64_t arenaBytes = 0;
  std::vector<Buffer> buffers;
  std::vector<Binding> inputs, outputs;
  std::vector<Step> steps;
  Predicted predicted;
  bool hasReference = false;
  reference::Graph reference;

  const Buffer *findBuffer(const std::string &name) const;
  const Module *findModule(const std::string &name) const;
  const reference::ValueInfo *findValue(const std::string &name) const;
};

/// Product of `shape` (1 for a scalar); -1 when a dimension is negative or
/// the product does not fit in int64 (validateManifest refuses such shapes).
int64_t numElements(const std::vector<int64_t> &shape);
/// "[2, 3]".
std::string shapeString(const std::vector<int64_t> &shape);

/// Reads the JSON structure of a manifest into `manifest`. Fails with an
/// InvalidManifest message naming the field (and its line:column).
Status parseManifest(const json::Value &root, Manifest &manifest);

/// Parses a reference graph ({"values": [...], "ops": [...]}, the manifest's
/// "reference" member); fails with InvalidManifest.
Status parseReferenceGraph(const json::Value &object, reference::Graph &graph);

/// Checks what parsing cannot: buffer ranges, alignment and sizes, overlaps
/// of buffers that are live at the same time (inputs and weights; outputs),
/// step operands, kernel launch shapes, GEMM sizes and strides against
/// buffer sizes, all-reduce counts, dtypes and groups, and that
/// inputs/outputs match their reference values. Every element count, byte
/// size, offset and stride is computed with overflow checks, so that
/// afterwards each of them fits in int64. Fails with one
/// InvalidManifest message naming the buffer or step.
Status validateManifest(const Manifest &manifest);

/// Reads BUNDLE_DIR/manifest.json, parses and validates it.
Status loadManifest(const std::string &bundleDir, Manifest &manifest);

/// Parses and validates `text`, the contents of BUNDLE_DIR/manifest.json
/// (messages name that path).
Status parseManifestText(const std::string &text, const std::string &bundleDir,
                         Manifest &manifest);

/// Reads a whole file of at most `maxBytes` bytes (pipes and devices are read
/// up to the cap); fails with an Io message naming `path`.
Status readFile(const std::string &path, std::string &contents,
                size_t maxBytes = json::kMaxDocumentBytes);

/// Reads the regular file `path`, which must have exactly `bytes` bytes
/// (tensor data); `expected` describes them for messages. Devices and FIFOs
/// are refused without reading them.
Status readFileOfSize(const std::string &path, int64_t bytes,
                      const std::string &expected, std::string &contents);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_MANIFEST_H
