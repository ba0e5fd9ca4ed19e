//===- Reference.h - CPU reference interpreter for memwall ops --*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Evaluates the unfused memwall ops of a bundle's "reference" graph
// (docs/bundle-format.md) on the CPU: fp32 math, every op result rounded to
// its element type (bf16/f16 round to nearest even, fp8 saturating). Used by
// `memwall-run --check` to judge GPU outputs and by tests in CI. Free of MLIR
// and LLVM, and built without exceptions: failures are returned as strings.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_REFERENCE_H
#define MEMWALL_RUNTIME_REFERENCE_H

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memwall::reference {

enum class DType { F32, BF16, F16, F8E4M3FN, F8E5M2, I8, I32, I64, I1, I4 };

/// Parses "f32", "bf16", ... (the bundle spelling); nullopt if unknown.
std::optional<DType> parseDType(const std::string &name);
const char *dtypeName(DType type);
/// Bytes one element occupies in a bundle buffer (i1: 1).
int64_t dtypeBytes(DType type);
/// Bytes `elements` values of `type` take in memory, or -1 past int64: i4
/// (signed, weight-only quantized storage) packs two a byte, element i in
/// byte i / 2, the even element in the low nibble (as MLIR's narrow-type
/// emulation and AWQ/GPTQ-style packers lay them out).
int64_t dtypeStorageBytes(DType type, int64_t elements);
bool isFloat(DType type);

/// Rounds `value` to the nearest value representable in `type` (RNE for
/// floats; fp8 saturates to its largest finite value; integers truncate
/// toward zero and wrap like a C cast; i1 is value != 0).
double roundToDType(double value, DType type);

/// A dense row-major tensor. Elements are held widened to double but are
/// always exactly representable in `dtype`.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t numElements() const;
  /// Encodes to / decodes from the bundle's packed little-endian layout.
  std::vector<uint8_t> toBytes() const;
  static Tensor fromBytes(DType dtype, std::vector<int64_t> shape,
                          const uint8_t *bytes, size_t size);
};

/// One attribute value of a reference op: bool, number, integer list or
/// string, as the manifest's JSON gives it.
struct Attr {
  enum class Kind {
    Bool,
    Number,
    IntList,
    NumberList,
    String
  } kind = Kind::Number;
  bool boolean = false;
  double number = 0;
  std::vector<int64_t> ints;
  std::vector<double> numbers;
  std::string string;

  static Attr ofBool(bool v);
  static Attr ofNumber(double v);
  static Attr ofInts(std::vector<int64_t> v);
  static Attr ofNumbers(std::vector<double> v);
  static Attr ofString(std::string v);
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

struct Op {
  std::string op;  // "matmul", "add", ... (the memwall op name, no prefix)
  std::string loc; // source location, for messages
  std::vector<std::string> operands, results;
  std::map<std::string, Attr> attrs;
};

struct Graph {
  std::vector<ValueInfo> values;
  std::vector<Op> ops;
};

/// How op results are stored. `Declared`: every result rounded to its
/// value's element type, as the bundle's buffers store it. `F32`: every
/// bf16/f16/fp8 value (inputs included: same values, exactly) widened to
/// f32, so nothing is rounded below f32 (a cast to a narrow float keeps f32);
/// the yardstick the end-to-end check measures rounding drift against
/// (docs/runtime.md, "Check"). Integer values keep their types.
enum class Precision { Declared, F32 };

/// Runs `graph` in op order. `values` must hold every value that no op
/// defines (the inputs); on success it also holds every op result (with
/// Precision::F32, the float inputs too become f32 tensors). Returns
/// an empty string on success, else one message naming the op (its `loc`)
/// and what is wrong (unknown op, shape or dtype mismatch with `values`,
/// missing operand, unsupported attribute).
std::string evaluate(const Graph &graph, std::map<std::string, Tensor> &values,
                     Precision precision = Precision::Declared);

/// Philox4x32-10 (Salmon et al., SC'11; Random123's philox4x32_R(10, ...)).
std::array<uint32_t, 4> philox4x32x10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key);

/// Whether dropout at `rate` with `seed` keeps element `index` (flat,
/// row-major): word 0 of Philox4x32-10 of counter {lo32(index),
/// hi32(index), 0, 0} and key {lo32(seed), hi32(seed)} is at least
/// floor(rate · 2^32) (memwall.dropout; generated kernels draw the same).
bool dropoutKeeps(uint64_t seed, uint64_t index, double rate);

/// Comparison of a computed output against the reference, as
/// docs/bundle-format.md ("Check") defines it.
struct Comparison {
  double maxAbsError = 0;
  double maxRelError = 0; // |got - ref| / max(|ref|, rms(ref))
  double tolerance = 0;   // 1e-2 for bf16/f16 outputs, 1e-5 for f32
  bool passed = false;
};
/// `rtol` > 0 replaces the dtype's tolerance (deep low-precision graphs
/// drift by a few ulps per op).
Comparison compare(const Tensor &got, const Tensor &ref, double rtol = 0);

/// The tolerance of outputs stored as `type`: 1e-5 for f32, 1e-2 for
/// bf16/f16, one ulp of an fp8 format (2^-3 for e4m3, 2^-2 for e5m2: a
/// kernel computing in f32 and the reference in double round the odd value
/// next to a midpoint apart), 0 (exact) for integers.
double defaultTolerance(DType type);

/// The tolerance a check of `type` applies when asked for `rtol` (0: the
/// default): never below one ulp of an fp8 format.
double checkTolerance(DType type, double rtol);

} // namespace memwall::reference

#endif // MEMWALL_RUNTIME_REFERENCE_H
