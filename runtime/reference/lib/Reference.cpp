//===- Reference.cpp - CPU reference interpreter for memwall ops ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Straightforward loops over row-major tensors held as doubles. Elementwise
// math is fp32, sums and dot products accumulate in double, and every op
// result is rounded to its element type. Matmul is blocked and, like the
// row-wise ops, split over std::threads: `memwall-run --check` evaluates
// seed workloads with multi-GFLOP GEMMs.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Reference.h"
#include "memwall-runtime/Checked.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

namespace memwall::reference {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

std::optional<DType> parseDType(const std::string &name) {
  static const std::pair<const char *, DType> names[] = {
      {"f32", DType::F32},       {"bf16", DType::BF16},
      {"f16", DType::F16},       {"f8e4m3fn", DType::F8E4M3FN},
      {"f8e5m2", DType::F8E5M2}, {"i8", DType::I8},
      {"i32", DType::I32},       {"i64", DType::I64},
      {"i1", DType::I1},         {"i4", DType::I4}};
  for (const auto &entry : names)
    if (name == entry.first)
      return entry.second;
  return std::nullopt;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::F8E4M3FN:
    return "f8e4m3fn";
  case DType::F8E5M2:
    return "f8e5m2";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::I1:
    return "i1";
  case DType::I4:
    return "i4";
  }
  return "?";
}

int64_t dtypeBytes(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::I64:
    return 8;
  default:
    return 1;
  }
}

int64_t dtypeStorageBytes(DType type, int64_t elements) {
  if (elements < 0)
    return -1;
  if (type == DType::I4)
    return elements / 2 + elements % 2;
  int64_t width = dtypeBytes(type);
  return elements > std::numeric_limits<int64_t>::max() / width
             ? -1
             : elements * width;
}

bool isFloat(DType type) {
  switch (type) {
  case DType::F32:
  case DType::BF16:
  case DType::F16:
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    return true;
  default:
    return false;
  }
}

namespace {

/// A binary floating-point format: `mantBits` stored fraction bits, the
/// smallest normal exponent, the largest finite value, and whether overflow
/// saturates (the fp8 formats) instead of giving infinity.
struct FloatFormat {
  int expBits, mantBits, bias;
  double maxFinite;
  bool saturate;
  bool hasInf; // IEEE-style all-ones exponent for inf/NaN
};

const FloatFormat kF16 = {5, 10, 15, 65504.0, false, true};
const FloatFormat kBF16 = {8, 7, 127, 3.3895313892515355e38, false, true};
const FloatFormat kE4M3 = {4, 3, 7, 448.0, true, false};
const FloatFormat kE5M2 = {5, 2, 15, 57344.0, true, true};

double roundToFormat(double x, const FloatFormat &f) {
  if (std::isnan(x) || x == 0)
    return x;
  if (std::isinf(x))
    return f.saturate ? std::copysign(f.maxFinite, x) : x;
  int e = std::max(std::ilogb(x), 1 - f.bias);
  // x / quantum is exact (power-of-two scaling); nearbyint rounds to even.
  double quantum = std::ldexp(1.0, e - f.mantBits);
  double r = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(r) > f.maxFinite)
    return f.saturate
               ? std::copysign(f.maxFinite, x)
               : std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

/// Bit encoding of a value already representable in `f`.
uint32_t encodeFormat(double x, const FloatFormat &f) {
  uint32_t sign = std::signbit(x) ? 1u << (f.expBits + f.mantBits) : 0;
  uint32_t expMax = (1u << f.expBits) - 1;
  if (std::isnan(x))
    return f.hasInf ? (expMax << f.mantBits) | (1u << (f.mantBits - 1))
                    : (expMax << f.mantBits) | ((1u << f.mantBits) - 1);
  if (std::isinf(x))
    return sign | (expMax << f.mantBits);
  double a = std::fabs(x);
  if (a == 0)
    return sign;
  int e = std::ilogb(a);
  if (e < 1 - f.bias) // subnormal
    return sign | static_cast<uint32_t>(std::ldexp(a, f.bias - 1 + f.mantBits));
  uint32_t mant =
      static_cast<uint32_t>(std::ldexp(std::ldexp(a, -e) - 1.0, f.mantBits));
  return sign | (static_cast<uint32_t>(e + f.bias) << f.mantBits) | mant;
}

double decodeFormat(uint32_t bits, const FloatFormat &f) {
  uint32_t mantMask = (1u << f.mantBits) - 1;
  uint32_t expMax = (1u << f.expBits) - 1;
  bool negative = (bits >> (f.expBits + f.mantBits)) & 1;
  uint32_t exp = (bits >> f.mantBits) & expMax;
  uint32_t mant = bits & mantMask;
  double v;
  if (f.hasInf && exp == expMax)
    v = mant ? std::numeric_limits<double>::quiet_NaN()
             : std::numeric_limits<double>::infinity();
  else if (!f.hasInf && exp == expMax && mant == mantMask)
    v = std::numeric_limits<double>::quiet_NaN();
  else if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mantBits);
  else
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -f.mantBits),
                   static_cast<int>(exp) - f.bias);
  return negative ? -v : v;
}

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float roundBF16(float f) {
  if (std::isnan(f))
    return f;
  uint32_t u = floatBits(f);
  u += 0x7FFF + ((u >> 16) & 1); // round to nearest even; overflow gives inf
  return bitsFloat(u & 0xFFFF0000u);
}

int64_t truncToInt64(double x) {
  if (std::isnan(x))
    return 0;
  double t = std::trunc(x);
  if (t >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (t <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(t);
}

} // namespace

double roundToDType(double value, DType type) {
  switch (type) {
  case DType::F32:
    return static_cast<float>(value);
  case DType::BF16: {
    float f = static_cast<float>(value);
    // Rounding through float is exact unless float already rounded.
    if (static_cast<double>(f) == value || std::isnan(value))
      return roundBF16(f);
    return roundToFormat(value, kBF16);
  }
  case DType::F16:
    return roundToFormat(value, kF16);
  case DType::F8E4M3FN:
    return roundToFormat(value, kE4M3);
  case DType::F8E5M2:
    return roundToFormat(value, kE5M2);
  case DType::I8:
    return static_cast<int8_t>(static_cast<uint8_t>(truncToInt64(value)));
  case DType::I4: {
    // Two's complement in 4 bits.
    int64_t nibble = truncToInt64(value) & 0xF;
    return static_cast<double>(nibble >= 8 ? nibble - 16 : nibble);
  }
  case DType::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(truncToInt64(value)));
  case DType::I64:
    return static_cast<double>(truncToInt64(value));
  case DType::I1:
    return value != 0 ? 1.0 : 0.0;
  }
  return value;
}

namespace {
/// roundToDType for an fp32 result, with the common cases inline.
inline double roundFloat(float f, DType type) {
  if (type == DType::F32)
    return f;
  if (type == DType::BF16)
    return roundBF16(f);
  return roundToDType(f, type);
}
} // namespace

//===----------------------------------------------------------------------===//
// Tensor and Attr
//===----------------------------------------------------------------------===//

namespace {
/// The element count of `shape`; -1 when it has a negative dimension or does
/// not fit in int64 (no real tensor has that many elements).
int64_t product(const std::vector<int64_t> &shape) {
  int64_t n;
  return checkedElementCount(shape, n) ? n : -1;
}
} // namespace

int64_t Tensor::numElements() const { return product(shape); }

std::vector<uint8_t> Tensor::toBytes() const {
  if (dtype == DType::I4) {
    std::vector<uint8_t> packed(dtypeStorageBytes(dtype, data.size()), 0);
    for (size_t i = 0; i < data.size(); ++i)
      packed[i / 2] |= static_cast<uint8_t>(
          (static_cast<uint64_t>(truncToInt64(data[i])) & 0xF)
          << (4 * (i % 2)));
    return packed;
  }
  int64_t width = dtypeBytes(dtype);
  std::vector<uint8_t> bytes(data.size() * width);
  for (size_t i = 0; i < data.size(); ++i) {
    double v = data[i];
    uint64_t bits = 0;
    switch (dtype) {
    case DType::F32:
      bits = floatBits(static_cast<float>(v));
      break;
    case DType::BF16:
      bits = floatBits(roundBF16(static_cast<float>(v))) >> 16;
      break;
    case DType::F16:
      bits = encodeFormat(roundToFormat(v, kF16), kF16);
      break;
    case DType::F8E4M3FN:
      bits = encodeFormat(roundToFormat(v, kE4M3), kE4M3);
      break;
    case DType::F8E5M2:
      bits = encodeFormat(roundToFormat(v, kE5M2), kE5M2);
      break;
    case DType::I1:
      bits = v != 0;
      break;
    default:
      bits = static_cast<uint64_t>(truncToInt64(v));
      break;
    }
    for (int64_t b = 0; b < width; ++b)
      bytes[i * width + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
  return bytes;
}

Tensor Tensor::fromBytes(DType dtype, std::vector<int64_t> shape,
                         const uint8_t *bytes, size_t size) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  int64_t n = t.numElements();
  int64_t width = dtypeBytes(dtype);
  t.data.assign(n, 0.0);
  if (dtype == DType::I4) {
    int64_t available = std::min<int64_t>(n, static_cast<int64_t>(size) * 2);
    for (int64_t i = 0; i < available; ++i) {
      int nibble = (bytes[i / 2] >> (4 * (i % 2))) & 0xF;
      t.data[i] = nibble >= 8 ? nibble - 16 : nibble;
    }
    return t;
  }
  // A short buffer leaves the remaining elements zero; callers check sizes.
  int64_t available = std::min<int64_t>(n, static_cast<int64_t>(size) / width);
  for (int64_t i = 0; i < available; ++i) {
    uint64_t bits = 0;
    for (int64_t b = 0; b < width; ++b)
      bits |= static_cast<uint64_t>(bytes[i * width + b]) << (8 * b);
    double v = 0;
    switch (dtype) {
    case DType::F32:
      v = bitsFloat(static_cast<uint32_t>(bits));
      break;
    case DType::BF16:
      v = bitsFloat(static_cast<uint32_t>(bits) << 16);
      break;
    case DType::F16:
      v = decodeFormat(static_cast<uint32_t>(bits), kF16);
      break;
    case DType::F8E4M3FN:
      v = decodeFormat(static_cast<uint32_t>(bits), kE4M3);
      break;
    case DType::F8E5M2:
      v = decodeFormat(static_cast<uint32_t>(bits), kE5M2);
      break;
    case DType::I8:
      v = static_cast<int8_t>(bits);
      break;
    case DType::I32:
      v = static_cast<int32_t>(bits);
      break;
    case DType::I64:
      v = static_cast<double>(static_cast<int64_t>(bits));
      break;
    case DType::I1:
      v = bits != 0;
      break;
    }
    t.data[i] = v;
  }
  return t;
}

Attr Attr::ofBool(bool v) {
  Attr a;
  a.kind = Kind::Bool;
  a.boolean = v;
  return a;
}
Attr Attr::ofNumber(double v) {
  Attr a;
  a.kind = Kind::Number;
  a.number = v;
  return a;
}
Attr Attr::ofInts(std::vector<int64_t> v) {
  Attr a;
  a.kind = Kind::IntList;
  a.ints = std::move(v);
  return a;
}
Attr Attr::ofNumbers(std::vector<double> v) {
  Attr a;
  a.kind = Kind::NumberList;
  a.numbers = std::move(v);
  return a;
}
Attr Attr::ofString(std::string v) {
  Attr a;
  a.kind = Kind::String;
  a.string = std::move(v);
  return a;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

using Shape = std::vector<int64_t>;

std::string shapeStr(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string typeStr(const Shape &shape, DType type) {
  return shapeStr(shape) + " " + dtypeName(type);
}

Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

unsigned numThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

/// Runs fn(begin, end) over [0, n) split into contiguous chunks, one per
/// thread; `grain` is the least work worth a thread.
void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  int64_t threads =
      std::min<int64_t>(numThreads(), std::max<int64_t>(1, n / grain));
  if (threads <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin >= end)
      break;
    pool.emplace_back(fn, begin, end);
  }
  for (auto &thread : pool)
    thread.join();
}

/// NumPy broadcast of two shapes; false if incompatible.
bool broadcastShapes(const Shape &a, const Shape &b, Shape &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return false;
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return true;
}

/// Strides of `shape` read as broadcast to `out` (0 on broadcast dims).
Shape broadcastStrides(const Shape &shape, const Shape &out) {
  Shape strides(out.size(), 0);
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1,
               o = static_cast<int64_t>(out.size()) - 1;
       i >= 0; --i, --o) {
    strides[o] = shape[i] == 1 ? 0 : s;
    s *= shape[i];
  }
  return strides;
}

/// Offset of the element at row-major position `linear` of `shape` under
/// `strides`.
int64_t stridedOffset(int64_t linear, const Shape &shape,
                      const Shape &strides) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    offset += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return offset;
}

/// out[i] = src[base + strided offset of i] over `outShape`, in rows
/// of the last dimension (transpose and slice).
void stridedCopy(const std::vector<double> &src, int64_t base,
                 const Shape &srcStrides, const Shape &outShape,
                 std::vector<double> &out) {
  out.assign(product(outShape), 0.0);
  if (out.empty())
    return;
  if (outShape.empty()) {
    out[0] = src[base];
    return;
  }
  int64_t inner = outShape.back(), innerStride = srcStrides.back();
  int64_t rows = static_cast<int64_t>(out.size()) / inner;
  Shape outer(outShape.begin(), outShape.end() - 1);
  Shape outerStrides(srcStrides.begin(), srcStrides.end() - 1);
  parallelFor(rows, 4096 / std::max<int64_t>(1, inner) + 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  int64_t s = base + stridedOffset(r, outer, outerStrides);
                  double *o = out.data() + r * inner;
                  for (int64_t j = 0; j < inner; ++j)
                    o[j] = src[s + j * innerStride];
                }
              });
}

/// Attribute access that records the first problem as a message.
struct AttrReader {
  const Op &op;
  std::string error;

  const Attr *find(const std::string &name) const {
    auto it = op.attrs.find(name);
    return it == op.attrs.end() ? nullptr : &it->second;
  }
  void fail(const std::string &msg) {
    if (error.empty())
      error = msg;
  }
  bool has(const std::string &name) const { return find(name); }
  bool flag(const std::string &name, bool def = false) {
    const Attr *a = find(name);
    if (!a)
      return def;
    if (a->kind == Attr::Kind::Bool)
      return a->boolean;
    if (a->kind == Attr::Kind::Number)
      return a->number != 0;
    fail("attribute '" + name + "' must be a bool");
    return def;
  }
  double number(const std::string &name, std::optional<double> def) {
    const Attr *a = find(name);
    if (!a) {
      if (!def)
        fail("needs attribute '" + name + "'");
      return def.value_or(0);
    }
    if (a->kind == Attr::Kind::Number)
      return a->number;
    if (a->kind == Attr::Kind::Bool)
      return a->boolean;
    fail("attribute '" + name + "' must be a number");
    return def.value_or(0);
  }
  int64_t integer(const std::string &name, std::optional<int64_t> def) {
    double v = number(name, def ? std::optional<double>(*def) : std::nullopt);
    if (v != std::floor(v))
      fail("attribute '" + name + "' must be an integer");
    return static_cast<int64_t>(v);
  }
  Shape ints(const std::string &name, std::optional<Shape> def = {}) {
    const Attr *a = find(name);
    if (!a) {
      if (!def)
        fail("needs attribute '" + name + "'");
      return def.value_or(Shape());
    }
    if (a->kind == Attr::Kind::IntList)
      return a->ints;
    fail("attribute '" + name + "' must be a list of integers");
    return def.value_or(Shape());
  }
  /// A list of numbers (one of integers reads as one too); empty when
  /// absent.
  std::vector<double> numbers(const std::string &name) {
    const Attr *a = find(name);
    if (!a)
      return {};
    if (a->kind == Attr::Kind::NumberList)
      return a->numbers;
    if (a->kind == Attr::Kind::IntList)
      return std::vector<double>(a->ints.begin(), a->ints.end());
    fail("attribute '" + name + "' must be a list of numbers");
    return {};
  }
  std::string string(const std::string &name, std::optional<std::string> def) {
    const Attr *a = find(name);
    if (!a) {
      if (!def)
        fail("needs attribute '" + name + "'");
      return def.value_or("");
    }
    if (a->kind == Attr::Kind::String)
      return a->string;
    fail("attribute '" + name + "' must be a string");
    return def.value_or("");
  }
};

/// One op being evaluated: its operands and the declared result types.
struct OpEval {
  const Op &op;
  std::vector<const Tensor *> in;
  // One per result, dtype preset from the graph; the op sets shape and data.
  std::vector<Tensor> &outs;
  Tensor &out; // outs[0], the only result of most ops
  // The graph's declared result shapes (checked after the op ran); ops whose
  // result shape is not implied by their operands read them.
  std::vector<Shape> declared;
  AttrReader attrs;

  OpEval(const Op &op, std::vector<Tensor> &outs)
      : op(op), outs(outs), out(outs[0]), attrs{op, {}} {}

  const Tensor &operand(size_t i) const { return *in[i]; }
  std::string expectResults(size_t n) const {
    if (outs.size() != n)
      return fail("must have " + std::to_string(n) + " results here, has " +
                  std::to_string(outs.size()));
    return "";
  }
  std::string fail(const std::string &msg) const {
    return op.loc + ": '" + op.op + "' " + msg;
  }
  std::string attrError() const {
    return attrs.error.empty() ? std::string() : fail(attrs.error);
  }
  std::string expectOperands(size_t min, size_t max) const {
    if (in.size() < min || in.size() > max) {
      std::string count =
          min == max ? std::to_string(min)
                     : std::to_string(min) + " to " +
                           (max == SIZE_MAX ? std::string("any number of")
                                            : std::to_string(max));
      return fail("takes " + count + " operands, got " +
                  std::to_string(in.size()));
    }
    return "";
  }
  std::string expectFloat(size_t i, const char *what) const {
    if (!isFloat(in[i]->dtype))
      return fail(std::string(what) + " must have a float element type, got " +
                  dtypeName(in[i]->dtype));
    return "";
  }
  /// Result `r`'s shape, as the op computed it, against the graph's: called
  /// before allocating a result that may be larger than the operands, so a
  /// hostile graph cannot make the interpreter allocate more than the
  /// declared (and size-checked) values.
  std::string expectDeclaredShape(size_t r = 0) const {
    if (outs[r].shape != declared[r])
      return fail("computes shape " + shapeStr(outs[r].shape) + " for '" +
                  op.results[r] + "' but the graph declares " +
                  shapeStr(declared[r]));
    return "";
  }
  std::string expectSameType(const Tensor &t, const char *what) const {
    if (t.dtype != out.dtype)
      return fail(std::string(what) + " has element type " +
                  dtypeName(t.dtype) + " but the result is " +
                  dtypeName(out.dtype));
    return "";
  }
};

#define RETURN_IF_ERROR(expr)                                                  \
  do {                                                                         \
    std::string _err = (expr);                                                 \
    if (!_err.empty())                                                         \
      return _err;                                                             \
  } while (0)

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

std::string binary(OpEval &e, const std::function<float(float, float)> &fn) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  const Tensor &a = e.operand(0), &b = e.operand(1);
  RETURN_IF_ERROR(e.expectFloat(0, "lhs"));
  RETURN_IF_ERROR(e.expectFloat(1, "rhs"));
  if (!broadcastShapes(a.shape, b.shape, e.out.shape))
    return e.fail("cannot broadcast " + shapeStr(a.shape) + " with " +
                  shapeStr(b.shape));
  RETURN_IF_ERROR(e.expectDeclaredShape());
  DType type = e.out.dtype;
  int64_t n = e.out.numElements();
  e.out.data.assign(n, 0.0);
  if (a.shape == b.shape) {
    parallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        e.out.data[i] = roundFloat(
            fn(static_cast<float>(a.data[i]), static_cast<float>(b.data[i])),
            type);
    });
    return "";
  }
  const Shape &shape = e.out.shape;
  Shape sa = broadcastStrides(a.shape, shape),
        sb = broadcastStrides(b.shape, shape);
  int64_t inner = shape.empty() ? 1 : shape.back();
  int64_t ia = shape.empty() ? 0 : sa.back(),
          ib = shape.empty() ? 0 : sb.back();
  Shape outer = shape, oa = sa, ob = sb;
  if (!shape.empty()) {
    outer.pop_back();
    oa.pop_back();
    ob.pop_back();
  }
  int64_t rows = inner ? n / inner : 0;
  parallelFor(rows, 1 + (1 << 16) / std::max<int64_t>(1, inner),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const double *pa =
                      a.data.data() + stridedOffset(r, outer, oa);
                  const double *pb =
                      b.data.data() + stridedOffset(r, outer, ob);
                  double *o = e.out.data.data() + r * inner;
                  for (int64_t j = 0; j < inner; ++j)
                    o[j] = roundFloat(fn(static_cast<float>(pa[j * ia]),
                                         static_cast<float>(pb[j * ib])),
                                      type);
                }
              });
  return "";
}

std::string unary(OpEval &e, const std::function<float(float)> &fn) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  e.out.shape = x.shape;
  e.out.data.assign(x.data.size(), 0.0);
  DType type = e.out.dtype;
  parallelFor(static_cast<int64_t>(x.data.size()), 1 << 15,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  e.out.data[i] =
                      roundFloat(fn(static_cast<float>(x.data[i])), type);
              });
  return "";
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

std::string evalGelu(OpEval &e) {
  std::string approx = e.attrs.string("approximation", std::string("erf"));
  RETURN_IF_ERROR(e.attrError());
  if (approx == "erf")
    return unary(e, [](float x) {
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    });
  if (approx == "tanh")
    return unary(e, [](float x) {
      return 0.5f * x *
             (1.0f +
              std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    });
  return e.fail("has unknown approximation '" + approx +
                "' (expected erf or tanh)");
}

std::string evalScale(OpEval &e) {
  float factor = static_cast<float>(e.attrs.number("factor", std::nullopt));
  RETURN_IF_ERROR(e.attrError());
  return unary(e, [factor](float x) { return x * factor; });
}

std::string evalDropout(OpEval &e) {
  double rate = e.attrs.number("rate", 0.0);
  int64_t seed = e.attrs.integer("seed", 0);
  RETURN_IF_ERROR(e.attrError());
  if (!(rate >= 0 && rate < 1))
    return e.fail("dropout rate must be in [0, 1)");
  RETURN_IF_ERROR(unary(e, [](float x) { return x; }));
  // The survivors scaled by 1 / (1 - rate) in f32, as kernels compute it.
  float scale = static_cast<float>(1.0 / (1.0 - rate));
  DType type = e.out.dtype;
  parallelFor(static_cast<int64_t>(e.out.data.size()), 1 << 15,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  e.out.data[i] =
                      dropoutKeeps(static_cast<uint64_t>(seed),
                                   static_cast<uint64_t>(i), rate)
                          ? roundFloat(
                                static_cast<float>(e.out.data[i]) * scale, type)
                          : 0.0;
              });
  return "";
}

std::string evalSwiglu(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  if (e.operand(0).shape != e.operand(1).shape)
    return e.fail("gate " + shapeStr(e.operand(0).shape) + " and up " +
                  shapeStr(e.operand(1).shape) + " differ in shape");
  return binary(e, [](float g, float u) { return silu(g) * u; });
}

//===----------------------------------------------------------------------===//
// Normalizations, softmax, reductions
//===----------------------------------------------------------------------===//

std::string checkFeatureVector(OpEval &e, size_t i, int64_t d,
                               const char *what) {
  const Tensor &t = e.operand(i);
  if (t.shape != Shape{d})
    return e.fail(std::string(what) + " has shape " + shapeStr(t.shape) +
                  ", expected [" + std::to_string(d) + "]");
  return e.expectFloat(i, what);
}

std::string evalNorm(OpEval &e, bool layerNorm) {
  RETURN_IF_ERROR(layerNorm ? e.expectOperands(2, 3) : e.expectOperands(2, 2));
  double eps = e.attrs.number("epsilon", layerNorm ? 1e-5 : 1e-6);
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  if (x.shape.empty())
    return e.fail("needs an input of rank >= 1");
  int64_t d = x.shape.back();
  RETURN_IF_ERROR(checkFeatureVector(e, 1, d, "weight"));
  const Tensor *bias = e.in.size() > 2 ? e.in[2] : nullptr;
  if (bias)
    RETURN_IF_ERROR(checkFeatureVector(e, 2, d, "bias"));
  const Tensor &w = e.operand(1);
  e.out.shape = x.shape;
  e.out.data.assign(x.data.size(), 0.0);
  int64_t rows = d ? x.numElements() / d : 0;
  DType type = e.out.dtype;
  parallelFor(rows, 1 + 65536 / std::max<int64_t>(1, d),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const double *row = x.data.data() + r * d;
                  double *o = e.out.data.data() + r * d;
                  double mean = 0, sq = 0;
                  if (layerNorm) {
                    for (int64_t j = 0; j < d; ++j)
                      mean += row[j];
                    mean /= d;
                  }
                  for (int64_t j = 0; j < d; ++j)
                    sq += (row[j] - mean) * (row[j] - mean);
                  float rstd =
                      static_cast<float>(1.0 / std::sqrt(sq / d + eps));
                  float m = static_cast<float>(mean);
                  for (int64_t j = 0; j < d; ++j) {
                    float v = (static_cast<float>(row[j]) - m) * rstd *
                              static_cast<float>(w.data[j]);
                    if (bias)
                      v += static_cast<float>(bias->data[j]);
                    o[j] = roundFloat(v, type);
                  }
                }
              });
  return "";
}

std::string normalizeAxis(OpEval &e, int64_t &axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < 0)
    axis += r;
  if (axis < 0 || axis >= r)
    return e.fail("axis " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(r));
  return "";
}

std::string evalSoftmax(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  int64_t axis = e.attrs.integer("axis", -1);
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  RETURN_IF_ERROR(normalizeAxis(e, axis, x.shape.size()));
  e.out.shape = x.shape;
  e.out.data.assign(x.data.size(), 0.0);
  int64_t n = x.shape[axis];
  int64_t inner = product(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  int64_t outer = product(Shape(x.shape.begin(), x.shape.begin() + axis));
  DType type = e.out.dtype;
  parallelFor(
      outer * inner, 1 + 65536 / std::max<int64_t>(1, n),
      [&](int64_t begin, int64_t end) {
        std::vector<float> ex(n);
        for (int64_t lane = begin; lane < end; ++lane) {
          int64_t base = (lane / inner) * n * inner + lane % inner;
          float mx = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < n; ++j)
            mx = std::max(mx, static_cast<float>(x.data[base + j * inner]));
          double sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            ex[j] = std::exp(static_cast<float>(x.data[base + j * inner]) - mx);
            sum += ex[j];
          }
          for (int64_t j = 0; j < n; ++j)
            e.out.data[base + j * inner] =
                roundFloat(static_cast<float>(ex[j] / sum), type);
        }
      });
  return "";
}

std::string evalReduce(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  std::string kind = e.attrs.string("kind", std::nullopt);
  Shape axes = e.attrs.ints("axes");
  bool keepDims = e.attrs.flag("keep_dims");
  RETURN_IF_ERROR(e.attrError());
  if (kind != "sum" && kind != "max" && kind != "mean")
    return e.fail("has unknown kind '" + kind +
                  "' (expected sum, max or mean)");
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t axis : axes) {
    RETURN_IF_ERROR(normalizeAxis(e, axis, x.shape.size()));
    if (reduced[axis])
      return e.fail("reduces axis " + std::to_string(axis) + " twice");
    reduced[axis] = true;
  }
  // Output index of each input dim: its stride in the output (0 if reduced).
  Shape outShape, keptShape;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (!reduced[i])
      keptShape.push_back(x.shape[i]);
    if (!reduced[i] || keepDims)
      outShape.push_back(reduced[i] ? 1 : x.shape[i]);
  }
  Shape keptStrides = stridesOf(keptShape), outStrides(x.shape.size(), 0);
  for (size_t i = 0, k = 0; i < x.shape.size(); ++i)
    if (!reduced[i])
      outStrides[i] = keptStrides[k++];
  int64_t count = x.numElements() / std::max<int64_t>(1, product(keptShape));
  std::vector<double> acc(
      product(keptShape),
      kind == "max" ? -std::numeric_limits<double>::infinity() : 0.0);
  bool isMax = kind == "max";
  Shape idx(x.shape.size(), 0);
  int64_t o = 0;
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    double v = x.data[i];
    if (isMax)
      acc[o] = (std::isnan(v) || v > acc[o]) ? v : acc[o];
    else
      acc[o] += v;
    // Advance the multi-index and the output offset together.
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      o += outStrides[d];
      if (++idx[d] < x.shape[d])
        break;
      o -= outStrides[d] * x.shape[d];
      idx[d] = 0;
    }
  }
  e.out.shape = outShape;
  e.out.data.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    double v = kind == "mean" ? acc[i] / count : acc[i];
    e.out.data[i] = roundToDType(static_cast<float>(v), e.out.dtype);
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Positions, embeddings, attention, loss
//===----------------------------------------------------------------------===//

std::string evalRope(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  double theta = e.attrs.number("theta", 10000.0);
  // The inverse (transpose) rotation, by the negative angle: the backward.
  double sign = e.attrs.flag("inverse") ? -1.0 : 1.0;
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0), &pos = e.operand(1);
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  if (x.shape.size() != 4 || x.shape[3] % 2)
    return e.fail("input " + shapeStr(x.shape) +
                  " must be [B, H, S, D] with D even");
  int64_t B = x.shape[0], H = x.shape[1], S = x.shape[2], D = x.shape[3];
  bool perBatch = pos.shape == Shape{B, S};
  if (isFloat(pos.dtype) || (pos.shape != Shape{S} && !perBatch))
    return e.fail("positions " + typeStr(pos.shape, pos.dtype) +
                  " must be integers of shape [" + std::to_string(S) +
                  "] or [" + std::to_string(B) + ", " + std::to_string(S) +
                  "]");
  int64_t half = D / 2;
  std::vector<double> invFreq(half);
  for (int64_t i = 0; i < half; ++i)
    invFreq[i] = std::pow(theta, -2.0 * static_cast<double>(i) / D);
  // Llama-3.1's frequency scaling (Hugging Face's rope_type "llama3"):
  // wavelengths past original / low are divided by factor, those under
  // original / high kept, and those between interpolated.
  if (e.attrs.find("llama3_factor")) {
    double factor = e.attrs.number("llama3_factor", std::nullopt);
    double low = e.attrs.number("llama3_low_freq_factor", std::nullopt);
    double high = e.attrs.number("llama3_high_freq_factor", std::nullopt);
    double original = e.attrs.number("llama3_original_context", std::nullopt);
    RETURN_IF_ERROR(e.attrError());
    if (!(factor > 0 && low > 0 && high > low && original > 0))
      return e.fail("llama3 RoPE scaling needs factor, low and original > 0 "
                    "and high > low");
    const double pi = 3.14159265358979323846;
    for (double &f : invFreq) {
      double wavelength = 2 * pi / f;
      if (wavelength > original / low) {
        f /= factor;
      } else if (wavelength >= original / high) {
        double smooth = (original / wavelength - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  }
  e.out.shape = x.shape;
  e.out.data.assign(x.data.size(), 0.0);
  DType type = e.out.dtype;
  parallelFor(
      B * H * S, 1 + 65536 / std::max<int64_t>(1, D),
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          int64_t s = r % S, b = r / (H * S);
          double p = pos.data[perBatch ? b * S + s : s];
          const double *in = x.data.data() + r * D;
          double *o = e.out.data.data() + r * D;
          for (int64_t i = 0; i < half; ++i) {
            // Angles in double: positions reach 1e5 and beyond.
            double angle = sign * p * invFreq[i];
            double c = std::cos(angle), sn = std::sin(angle);
            double x1 = in[i], x2 = in[i + half];
            o[i] = roundToDType(static_cast<float>(x1 * c - x2 * sn), type);
            o[i + half] =
                roundToDType(static_cast<float>(x2 * c + x1 * sn), type);
          }
        }
      });
  return "";
}

std::string evalEmbedding(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  const Tensor &table = e.operand(0), &idx = e.operand(1);
  if (table.shape.size() != 2)
    return e.fail("table " + shapeStr(table.shape) + " must be [V, D]");
  if (isFloat(idx.dtype) || idx.dtype == DType::I1)
    return e.fail(std::string("indices must be integers, got ") +
                  dtypeName(idx.dtype));
  RETURN_IF_ERROR(e.expectSameType(table, "table"));
  int64_t V = table.shape[0], D = table.shape[1];
  e.out.shape = idx.shape;
  e.out.shape.push_back(D);
  RETURN_IF_ERROR(e.expectDeclaredShape());
  e.out.data.assign(idx.data.size() * D, 0.0);
  for (size_t i = 0; i < idx.data.size(); ++i) {
    int64_t row = static_cast<int64_t>(idx.data[i]);
    if (row < 0 || row >= V)
      return e.fail("index " + std::to_string(row) +
                    " is outside the table's " + std::to_string(V) + " rows");
    std::copy_n(table.data.begin() + row * D, D, e.out.data.begin() + i * D);
  }
  return "";
}

/// The shapes, attributes and mask of an attention op (forward or backward):
/// query [B, Hq, Sq, D], key [B, Hkv, Sk, D], value [B, Hkv, Sk, Dv].
struct AttentionSpec {
  int64_t B = 0, Hq = 0, Sq = 0, D = 0, Hkv = 0, Sk = 0, Dv = 0, group = 1;
  bool causal = false;
  /// Sliding window (causal only): query i sees keys j with
  /// i + (Sk - Sq) - window < j; 0 for none.
  int64_t window = 0;
  double scale = 1;
  const Tensor *mask = nullptr; // broadcast to [B, Hq, Sq, Sk]
  Shape maskStrides;
  bool boolMask = false;

  /// Fills scores[j] = scale * q_i . k_j + mask for query row `i` of head `h`
  /// of batch `b`, -inf where masked; returns the row maximum.
  double scores(const Tensor &q, const Tensor &k, int64_t b, int64_t h,
                int64_t i, double *out) const {
    const double inf = std::numeric_limits<double>::infinity();
    int64_t kvBase = (b * Hkv + h / group) * Sk;
    const double *qr = q.data.data() + ((b * Hq + h) * Sq + i) * D;
    double mx = -inf;
    for (int64_t j = 0; j < Sk; ++j) {
      double s = -inf;
      bool visible = !causal || (j <= i + (Sk - Sq) &&
                                 (window == 0 || j > i + (Sk - Sq) - window));
      double m = 0;
      if (mask) {
        m = mask->data[b * maskStrides[0] + h * maskStrides[1] +
                       i * maskStrides[2] + j * maskStrides[3]];
        if (boolMask && m == 0)
          visible = false;
      }
      if (visible) {
        const double *kr = k.data.data() + (kvBase + j) * D;
        // Four partial sums: independent chains vectorize.
        double part[4] = {0, 0, 0, 0};
        int64_t c = 0;
        for (; c + 4 <= D; c += 4)
          for (int64_t u = 0; u < 4; ++u)
            part[u] += qr[c + u] * kr[c + u];
        for (; c < D; ++c)
          part[0] += qr[c] * kr[c];
        double dot = (part[0] + part[1]) + (part[2] + part[3]);
        s = scale * dot + (boolMask ? 0.0 : m);
      }
      out[j] = s;
      mx = std::max(mx, s);
    }
    return mx;
  }
};

/// Checks query, key and value (operands 0 to 2) and the optional mask
/// (operand `maskIndex`) and reads `causal`, `window` and `scale` into `a`.
std::string readAttention(OpEval &e, size_t maskIndex, AttentionSpec &a) {
  bool causal = e.attrs.flag("causal");
  const Tensor &q = e.operand(0), &k = e.operand(1), &v = e.operand(2);
  const Tensor *mask = e.in.size() > maskIndex ? e.in[maskIndex] : nullptr;
  for (size_t i = 0; i < 3; ++i)
    RETURN_IF_ERROR(e.expectFloat(i, i == 0   ? "query"
                                     : i == 1 ? "key"
                                              : "value"));
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    return e.fail("query, key and value must have rank 4, got " +
                  shapeStr(q.shape) + ", " + shapeStr(k.shape) + ", " +
                  shapeStr(v.shape));
  int64_t B = q.shape[0], Hq = q.shape[1], Sq = q.shape[2], D = q.shape[3];
  int64_t Hkv = k.shape[1], Sk = k.shape[2], Dv = v.shape[3];
  if (k.shape[0] != B || v.shape[0] != B || k.shape[3] != D ||
      v.shape[1] != Hkv || v.shape[2] != Sk || Hkv == 0 || Hq % Hkv)
    return e.fail("has incompatible query " + shapeStr(q.shape) + ", key " +
                  shapeStr(k.shape) + " and value " + shapeStr(v.shape));
  if (causal && Sq > Sk)
    return e.fail("causal attention needs Sq <= Sk, got Sq = " +
                  std::to_string(Sq) + ", Sk = " + std::to_string(Sk));
  double scale =
      e.attrs.number("scale", 1.0 / std::sqrt(static_cast<double>(D)));
  double window = e.attrs.number("window", 0);
  RETURN_IF_ERROR(e.attrError());
  if (window != 0 && (!causal || !(window >= 1 && window <= 0x1p62) ||
                      window != std::floor(window)))
    return e.fail("a sliding window must be a positive whole number of keys "
                  "on causal attention");
  Shape full = {B, Hq, Sq, Sk};
  if (mask) {
    Shape b;
    if (mask->shape.size() > 4 || !broadcastShapes(mask->shape, full, b) ||
        b != full)
      return e.fail("mask " + shapeStr(mask->shape) +
                    " does not broadcast to " + shapeStr(full));
    a.maskStrides = broadcastStrides(mask->shape, full);
  }
  a.B = B, a.Hq = Hq, a.Sq = Sq, a.D = D, a.Hkv = Hkv, a.Sk = Sk, a.Dv = Dv;
  a.group = Hq / Hkv;
  a.causal = causal;
  a.window = static_cast<int64_t>(window);
  a.scale = scale;
  a.mask = mask;
  a.boolMask = mask && mask->dtype == DType::I1;
  return "";
}

std::string evalAttention(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(3, 4));
  AttentionSpec a;
  RETURN_IF_ERROR(readAttention(e, 3, a));
  const Tensor &q = e.operand(0), &k = e.operand(1), &v = e.operand(2);
  int64_t B = a.B, Hq = a.Hq, Sq = a.Sq, D = a.D, Hkv = a.Hkv, Sk = a.Sk,
          Dv = a.Dv;
  e.out.shape = {B, Hq, Sq, Dv};
  RETURN_IF_ERROR(e.expectDeclaredShape());
  e.out.data.assign(B * Hq * Sq * Dv, 0.0);
  DType type = e.out.dtype;
  parallelFor(B * Hq * Sq, 1 + 65536 / std::max<int64_t>(1, Sk * D),
              [&](int64_t begin, int64_t end) {
                std::vector<double> scores(Sk), acc(Dv);
                const double inf = std::numeric_limits<double>::infinity();
                for (int64_t r = begin; r < end; ++r) {
                  int64_t i = r % Sq, h = (r / Sq) % Hq, b = r / (Sq * Hq);
                  int64_t kvBase = (b * Hkv + h / a.group) * Sk;
                  double mx = a.scores(q, k, b, h, i, scores.data());
                  std::fill(acc.begin(), acc.end(), 0.0);
                  double sum = 0;
                  // A row with every key masked gives zeros.
                  if (mx != -inf) {
                    for (int64_t j = 0; j < Sk; ++j) {
                      if (scores[j] == -inf)
                        continue;
                      double p = std::exp(scores[j] - mx);
                      sum += p;
                      const double *vr = v.data.data() + (kvBase + j) * Dv;
                      for (int64_t c = 0; c < Dv; ++c)
                        acc[c] += p * vr[c];
                    }
                  }
                  double *o = e.out.data.data() + r * Dv;
                  for (int64_t c = 0; c < Dv; ++c)
                    o[c] = sum > 0 ? roundToDType(
                                         static_cast<float>(acc[c] / sum), type)
                                   : 0.0;
                }
              });
  return "";
}

/// The reduction and ignore_index of a cross-entropy op.
struct LossSpec {
  std::string reduction;
  bool hasIgnore = false;
  int64_t ignore = 0;
};

std::string readLoss(OpEval &e, LossSpec &loss) {
  loss.reduction = e.attrs.string("reduction", std::string("mean"));
  loss.hasIgnore = e.attrs.has("ignore_index");
  loss.ignore = loss.hasIgnore ? e.attrs.integer("ignore_index", 0) : 0;
  RETURN_IF_ERROR(e.attrError());
  if (loss.reduction != "mean" && loss.reduction != "sum" &&
      loss.reduction != "none")
    return e.fail("has unknown reduction '" + loss.reduction +
                  "' (expected mean, sum or none)");
  return "";
}

/// Checks `labels` against `V` classes and marks the positions that count
/// (not ignored); labels out of range are an error.
std::string markCountedLabels(OpEval &e, const Tensor &labels, int64_t V,
                              const LossSpec &loss,
                              std::vector<char> &counted) {
  if (isFloat(labels.dtype) || labels.dtype == DType::I1)
    return e.fail(std::string("labels must be integers, got ") +
                  dtypeName(labels.dtype));
  int64_t n = labels.numElements();
  counted.assign(n, 0);
  for (int64_t p = 0; p < n; ++p) {
    int64_t label = static_cast<int64_t>(labels.data[p]);
    if (loss.hasIgnore && label == loss.ignore)
      continue;
    if (label < 0 || label >= V)
      return e.fail("label " + std::to_string(label) + " is outside [0, " +
                    std::to_string(V) + ")");
    counted[p] = 1;
  }
  return "";
}

/// Checks logits [..., V] (operand 0) against labels [...] (operand 1) and
/// marks the positions that count.
std::string readLabels(OpEval &e, const LossSpec &loss,
                       std::vector<char> &counted) {
  const Tensor &logits = e.operand(0), &labels = e.operand(1);
  RETURN_IF_ERROR(e.expectFloat(0, "logits"));
  if (logits.shape.empty() ||
      Shape(logits.shape.begin(), logits.shape.end() - 1) != labels.shape)
    return e.fail("logits " + shapeStr(logits.shape) + " and labels " +
                  shapeStr(labels.shape) +
                  " do not match ([..., V] and [...])");
  return markCountedLabels(e, labels, logits.shape.back(), loss, counted);
}

/// log(sum(exp(row))) of a row of `V` logits, the max subtracted first.
double logSumExp(const double *row, int64_t V) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < V; ++j)
    mx = std::max(mx, row[j]);
  double sum = 0;
  for (int64_t j = 0; j < V; ++j)
    sum += std::exp(row[j] - mx);
  return std::log(sum) + mx;
}

/// The loss result of the positions' `loss`es under `spec`'s reduction.
std::string reduceLoss(OpEval &e, const LossSpec &spec, const Shape &labels,
                       const std::vector<double> &loss,
                       const std::vector<char> &counted) {
  int64_t n = static_cast<int64_t>(loss.size());
  if (spec.reduction == "none") {
    e.out.shape = labels;
    e.out.data.resize(n);
    for (int64_t p = 0; p < n; ++p)
      e.out.data[p] = roundToDType(loss[p], e.out.dtype);
    return "";
  }
  double total = 0;
  int64_t count = 0;
  for (int64_t p = 0; p < n; ++p) {
    total += loss[p];
    count += counted[p];
  }
  // Like PyTorch, a mean over no counted position is NaN.
  double v =
      spec.reduction == "sum" ? total : total / static_cast<double>(count);
  e.out.shape = {};
  e.out.data = {roundToDType(v, e.out.dtype)};
  return "";
}

/// Checks the loss gradient `dloss` (rank 0, or shaped like `labels` for
/// reduction none) and gives the factor every position's gradient is scaled
/// by (dloss, over the counted positions for mean; 1 for none, whose
/// positions take their own dloss).
std::string readLossGradient(OpEval &e, const LossSpec &spec,
                             const Tensor &dloss, const Shape &labels,
                             const std::vector<char> &counted, double &factor) {
  bool none = spec.reduction == "none";
  if (dloss.dtype != DType::F32 || dloss.shape != (none ? labels : Shape{}))
    return e.fail("loss gradient " + typeStr(dloss.shape, dloss.dtype) +
                  " must be " + typeStr(none ? labels : Shape{}, DType::F32) +
                  " for reduction " + spec.reduction);
  factor = 1;
  if (!none) {
    factor = dloss.data[0];
    if (spec.reduction == "mean") {
      int64_t count = 0;
      for (char c : counted)
        count += c;
      factor /= static_cast<double>(count);
    }
  }
  return "";
}

std::string evalCrossEntropy(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  LossSpec spec;
  RETURN_IF_ERROR(readLoss(e, spec));
  std::vector<char> counted;
  RETURN_IF_ERROR(readLabels(e, spec, counted));
  const Tensor &logits = e.operand(0), &labels = e.operand(1);
  int64_t V = logits.shape.back(), n = labels.numElements();
  std::vector<double> loss(n, 0.0);
  parallelFor(n, 1 + 65536 / std::max<int64_t>(1, V),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  if (!counted[p])
                    continue;
                  const double *row = logits.data.data() + p * V;
                  loss[p] = logSumExp(row, V) -
                            row[static_cast<int64_t>(labels.data[p])];
                }
              });
  return reduceLoss(e, spec, labels.shape, loss, counted);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

std::string evalReshape(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  Shape shape = e.attrs.ints("shape");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  for (int64_t d : shape)
    if (d < 0)
      return e.fail("has a negative dimension in shape " + shapeStr(shape));
  if (product(shape) != x.numElements())
    return e.fail("cannot reshape " + shapeStr(x.shape) + " to " +
                  shapeStr(shape) + ": element counts differ");
  e.out.shape = shape;
  e.out.data = x.data;
  return "";
}

std::string evalTranspose(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  Shape perm = e.attrs.ints("permutation");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  std::vector<bool> seen(x.shape.size(), false);
  if (perm.size() != x.shape.size())
    return e.fail("permutation " + shapeStr(perm) + " does not match rank " +
                  std::to_string(x.shape.size()));
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
      return e.fail("has invalid permutation " + shapeStr(perm));
    seen[p] = true;
  }
  Shape inStrides = stridesOf(x.shape), strides(perm.size());
  e.out.shape.resize(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    e.out.shape[i] = x.shape[perm[i]];
    strides[i] = inStrides[perm[i]];
  }
  stridedCopy(x.data, 0, strides, e.out.shape, e.out.data);
  return "";
}

std::string evalSlice(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  const Tensor &x = e.operand(0);
  Shape offsets = e.attrs.ints("offsets"), sizes = e.attrs.ints("sizes");
  Shape steps = e.attrs.ints("strides", Shape(x.shape.size(), 1));
  RETURN_IF_ERROR(e.attrError());
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  size_t rank = x.shape.size();
  if (offsets.size() != rank || sizes.size() != rank || steps.size() != rank)
    return e.fail("offsets, sizes and strides must each have " +
                  std::to_string(rank) + " entries");
  Shape inStrides = stridesOf(x.shape), strides(rank);
  int64_t base = 0;
  for (size_t i = 0; i < rank; ++i) {
    int64_t last = 0; // the last index read along dimension i
    if (offsets[i] < 0 || sizes[i] < 0 || steps[i] < 1 ||
        (sizes[i] > 0 &&
         (!checkedMul(sizes[i] - 1, steps[i], last) ||
          !checkedAdd(offsets[i], last, last) || last >= x.shape[i])))
      return e.fail("slice offsets " + shapeStr(offsets) + " sizes " +
                    shapeStr(sizes) + " strides " + shapeStr(steps) +
                    " is out of bounds of " + shapeStr(x.shape));
    base += offsets[i] * inStrides[i];
    strides[i] = steps[i] * inStrides[i];
  }
  e.out.shape = sizes;
  stridedCopy(x.data, base, strides, sizes, e.out.data);
  return "";
}

std::string concatAlong(OpEval &e, int64_t axis) {
  const Tensor &first = e.operand(0);
  RETURN_IF_ERROR(normalizeAxis(e, axis, first.shape.size()));
  Shape shape = first.shape;
  shape[axis] = 0;
  for (const Tensor *t : e.in) {
    RETURN_IF_ERROR(e.expectSameType(*t, "an input"));
    bool ok = t->shape.size() == first.shape.size();
    for (size_t d = 0; ok && d < shape.size(); ++d)
      ok = static_cast<int64_t>(d) == axis || t->shape[d] == first.shape[d];
    if (!ok)
      return e.fail("cannot concatenate " + shapeStr(t->shape) + " with " +
                    shapeStr(first.shape) + " along axis " +
                    std::to_string(axis));
    if (!checkedAdd(shape[axis], t->shape[axis], shape[axis]))
      return e.fail("concatenated size along axis " + std::to_string(axis) +
                    " does not fit in a 64-bit integer");
  }
  int64_t outer = product(Shape(shape.begin(), shape.begin() + axis));
  int64_t inner = product(Shape(shape.begin() + axis + 1, shape.end()));
  e.out.shape = shape;
  RETURN_IF_ERROR(e.expectDeclaredShape());
  e.out.data.assign(product(shape), 0.0);
  int64_t rowOut = shape[axis] * inner, offset = 0;
  for (const Tensor *t : e.in) {
    int64_t chunk = t->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(t->data.begin() + o * chunk, chunk,
                  e.out.data.begin() + o * rowOut + offset);
    offset += chunk;
  }
  return "";
}

std::string evalConcat(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, SIZE_MAX));
  int64_t axis = e.attrs.integer("axis", std::nullopt);
  RETURN_IF_ERROR(e.attrError());
  return concatAlong(e, axis);
}

std::string evalKVCacheAppend(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  if (e.operand(0).shape.size() != 4 || e.operand(1).shape.size() != 4)
    return e.fail("cache " + shapeStr(e.operand(0).shape) + " and update " +
                  shapeStr(e.operand(1).shape) + " must have rank 4");
  return concatAlong(e, 2);
}

std::string evalCast(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  std::string name = e.attrs.string("element_type", std::nullopt);
  RETURN_IF_ERROR(e.attrError());
  std::optional<DType> type = parseDType(name);
  if (!type)
    return e.fail("has unknown element_type '" + name + "'");
  if (*type != e.out.dtype)
    return e.fail("casts to " + name + " but the graph declares the result " +
                  dtypeName(e.out.dtype));
  const Tensor &x = e.operand(0);
  e.out.shape = x.shape;
  e.out.data.resize(x.data.size());
  parallelFor(static_cast<int64_t>(x.data.size()), 1 << 15,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  e.out.data[i] = roundToDType(x.data[i], *type);
              });
  return "";
}

/// memwall.dequantize: each stored element (minus its block's zero point,
/// when there are zero points) times the scale of its block (the scales'
/// dims divide the input's), in f32 as the GEMM's prologue computes it,
/// rounded once to the result type.
std::string evalDequantize(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 3));
  const Tensor &q = e.operand(0), &scales = e.operand(1);
  const Tensor *zeroPoints = e.in.size() == 3 ? &e.operand(2) : nullptr;
  // A codebook maps each code (its bits unsigned) to the value scaled.
  std::vector<double> codebook = e.attrs.numbers("codebook");
  RETURN_IF_ERROR(e.attrError());
  if (!codebook.empty() && codebook.size() != 16 && codebook.size() != 256)
    return e.fail("a codebook has 16 (i4) or 256 (i8) values");
  if (scales.shape.size() != q.shape.size())
    return e.fail("scales must have the input's rank");
  if (zeroPoints && zeroPoints->shape != scales.shape)
    return e.fail("zero points must have the scales' shape");
  std::vector<int64_t> block(q.shape.size());
  for (size_t d = 0; d < q.shape.size(); ++d) {
    if (scales.shape[d] <= 0 || q.shape[d] % scales.shape[d] != 0)
      return e.fail("scales dim " + std::to_string(d) +
                    " must divide the input's");
    block[d] = q.shape[d] / scales.shape[d];
  }
  e.out.shape = q.shape;
  e.out.data.resize(q.data.size());
  DType type = e.out.dtype;
  parallelFor(static_cast<int64_t>(q.data.size()), 1 << 15,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  // Row-major coordinates of i, to the scale's index.
                  int64_t rest = i, scaleIndex = 0, scaleStride = 1;
                  for (size_t d = q.shape.size(); d-- > 0;) {
                    int64_t coordinate = rest % q.shape[d];
                    rest /= q.shape[d];
                    scaleIndex += coordinate / block[d] * scaleStride;
                    scaleStride *= scales.shape[d];
                  }
                  float stored = static_cast<float>(q.data[i]);
                  if (!codebook.empty()) {
                    int64_t bits = static_cast<int64_t>(q.data[i]);
                    stored =
                        static_cast<float>(codebook[static_cast<size_t>(bits) &
                                                    (codebook.size() - 1)]);
                  }
                  if (zeroPoints)
                    stored -= static_cast<float>(zeroPoints->data[scaleIndex]);
                  float product =
                      stored * static_cast<float>(scales.data[scaleIndex]);
                  e.out.data[i] = roundToDType(product, type);
                }
              });
  return "";
}

//===----------------------------------------------------------------------===//
// Training: gradients and the optimizer update
//
// Backward ops accumulate in double and round each result once.
//===----------------------------------------------------------------------===//

/// f'(x) of the activations of `activation_grad`; false if unknown.
bool activationDerivative(const std::string &kind,
                          std::function<double(double)> &fn) {
  if (kind == "gelu_erf")
    fn = [](double x) {
      // Phi(x) + x phi(x).
      double cdf = 0.5 * (1.0 + std::erf(x * 0.70710678118654752));
      double pdf = 0.39894228040143268 * std::exp(-0.5 * x * x);
      return cdf + x * pdf;
    };
  else if (kind == "gelu_tanh")
    fn = [](double x) {
      const double k = 0.79788456080286536, c = 0.044715;
      double t = std::tanh(k * (x + c * x * x * x));
      return 0.5 * (1.0 + t) +
             0.5 * x * (1.0 - t * t) * k * (1.0 + 3 * c * x * x);
    };
  else if (kind == "silu")
    fn = [](double x) {
      double s = 1.0 / (1.0 + std::exp(-x));
      return s * (1.0 + x * (1.0 - s));
    };
  else if (kind == "relu")
    fn = [](double x) { return x > 0 ? 1.0 : 0.0; };
  else if (kind == "tanh")
    fn = [](double x) {
      double t = std::tanh(x);
      return 1.0 - t * t;
    };
  else
    return false;
  return true;
}

std::string evalActivationGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  std::string kind = e.attrs.string("activation", std::nullopt);
  RETURN_IF_ERROR(e.attrError());
  std::function<double(double)> derivative;
  if (!activationDerivative(kind, derivative))
    return e.fail("has unknown activation '" + kind +
                  "' (expected gelu_erf, gelu_tanh, silu, relu or tanh)");
  const Tensor &x = e.operand(0), &dy = e.operand(1);
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  RETURN_IF_ERROR(e.expectFloat(1, "grad"));
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  RETURN_IF_ERROR(e.expectSameType(dy, "grad"));
  if (x.shape != dy.shape)
    return e.fail("input " + shapeStr(x.shape) + " and grad " +
                  shapeStr(dy.shape) + " differ in shape");
  e.out.shape = x.shape;
  e.out.data.assign(x.data.size(), 0.0);
  DType type = e.out.dtype;
  parallelFor(static_cast<int64_t>(x.data.size()), 1 << 14,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  e.out.data[i] =
                      roundToDType(dy.data[i] * derivative(x.data[i]), type);
              });
  return "";
}

/// layer_norm_grad (`layerNorm`) and rms_norm_grad: operands (x [..., D],
/// weight [D], dy [..., D]); results dx, dweight and, for layer_norm_grad
/// with has_bias, dbias.
std::string evalNormGrad(OpEval &e, bool layerNorm) {
  RETURN_IF_ERROR(e.expectOperands(3, 3));
  double eps = e.attrs.number("epsilon", layerNorm ? 1e-5 : 1e-6);
  bool hasBias = layerNorm && e.attrs.flag("has_bias");
  RETURN_IF_ERROR(e.attrError());
  RETURN_IF_ERROR(e.expectResults(hasBias ? 3 : 2));
  const Tensor &x = e.operand(0), &w = e.operand(1), &dy = e.operand(2);
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  RETURN_IF_ERROR(e.expectFloat(2, "grad"));
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  if (x.shape.empty())
    return e.fail("needs an input of rank >= 1");
  if (dy.shape != x.shape)
    return e.fail("grad " + shapeStr(dy.shape) + " and input " +
                  shapeStr(x.shape) + " differ in shape");
  int64_t d = x.shape.back();
  RETURN_IF_ERROR(checkFeatureVector(e, 1, d, "weight"));
  int64_t rows = d ? x.numElements() / d : 0;
  std::vector<double> mean(rows, 0.0), rstd(rows, 0.0);
  Tensor &dx = e.outs[0];
  dx.shape = x.shape;
  dx.data.assign(x.data.size(), 0.0);
  parallelFor(rows, 1 + 65536 / std::max<int64_t>(1, d),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const double *xr = x.data.data() + r * d;
                  const double *g = dy.data.data() + r * d;
                  double mu = 0, sq = 0;
                  if (layerNorm) {
                    for (int64_t j = 0; j < d; ++j)
                      mu += xr[j];
                    mu /= d;
                  }
                  for (int64_t j = 0; j < d; ++j)
                    sq += (xr[j] - mu) * (xr[j] - mu);
                  double rs = 1.0 / std::sqrt(sq / d + eps);
                  mean[r] = mu;
                  rstd[r] = rs;
                  // gw = dy * w; xhat = (x - mean) * rstd.
                  double sumG = 0, sumGX = 0;
                  for (int64_t j = 0; j < d; ++j) {
                    double gw = g[j] * w.data[j];
                    sumG += gw;
                    sumGX += gw * (xr[j] - mu) * rs;
                  }
                  double meanG = layerNorm ? sumG / d : 0, meanGX = sumGX / d;
                  // LayerNorm: rstd (gw - mean(gw) - xhat mean(gw xhat)).
                  // RMSNorm:   r gw - x r^3 mean(gw x) (xhat = x r).
                  double *o = dx.data.data() + r * d;
                  for (int64_t j = 0; j < d; ++j) {
                    double xhat = (xr[j] - mu) * rs;
                    double v = rs * (g[j] * w.data[j] - meanG - xhat * meanGX);
                    o[j] = roundToDType(v, dx.dtype);
                  }
                }
              });
  for (size_t res = 1; res < e.outs.size(); ++res) {
    bool bias = res == 2;
    Tensor &out = e.outs[res];
    out.shape = {d};
    out.data.assign(d, 0.0);
    parallelFor(d, 1 + 65536 / std::max<int64_t>(1, rows),
                [&](int64_t begin, int64_t end) {
                  for (int64_t j = begin; j < end; ++j) {
                    double acc = 0;
                    for (int64_t r = 0; r < rows; ++r) {
                      double g = dy.data[r * d + j];
                      acc += bias ? g
                                  : g * (x.data[r * d + j] - mean[r]) * rstd[r];
                    }
                    out.data[j] = roundToDType(acc, out.dtype);
                  }
                });
  }
  return "";
}

std::string evalLayerNormGrad(OpEval &e) { return evalNormGrad(e, true); }
std::string evalRmsNormGrad(OpEval &e) { return evalNormGrad(e, false); }

/// Operands (q, k, v, out, dout[, mask]); results dq, dk, dv[, dmask].
/// Probabilities are recomputed per (batch, head); a task owns one KV head
/// and the query heads of its group, so the group's dK and dV sums need no
/// locks. dmask (an additive mask's gradient) is the score gradient dS summed
/// over the mask's broadcast dimensions, after all tasks.
std::string attentionGrad(OpEval &e, size_t maskIndex, const Tensor *lse) {
  AttentionSpec a;
  RETURN_IF_ERROR(readAttention(e, maskIndex, a));
  const Tensor &q = e.operand(0), &k = e.operand(1), &v = e.operand(2),
               &o = e.operand(3), &dout = e.operand(4);
  RETURN_IF_ERROR(e.expectFloat(3, "out"));
  RETURN_IF_ERROR(e.expectFloat(4, "grad"));
  int64_t B = a.B, Hq = a.Hq, Sq = a.Sq, D = a.D, Hkv = a.Hkv, Sk = a.Sk,
          Dv = a.Dv;
  Shape outShape = {B, Hq, Sq, Dv};
  if (o.shape != outShape || dout.shape != outShape)
    return e.fail("out " + shapeStr(o.shape) + " and grad " +
                  shapeStr(dout.shape) + " must both be " + shapeStr(outShape));
  bool maskGrad = e.outs.size() == 4;
  if (maskGrad && (!a.mask || a.boolMask))
    return e.fail("has a mask gradient but no floating-point mask");
  // The full [B, Hq, Sq, Sk] score gradient, only when dmask is asked for.
  std::vector<double> fullDS(maskGrad ? B * Hq * Sq * Sk : 0, 0.0);
  Tensor &dq = e.outs[0], &dk = e.outs[1], &dv = e.outs[2];
  dq.shape = q.shape;
  dk.shape = k.shape;
  dv.shape = v.shape;
  dq.data.assign(q.data.size(), 0.0);
  dk.data.assign(k.data.size(), 0.0);
  dv.data.assign(v.data.size(), 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  parallelFor(B * Hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> P(Sq * Sk), dS(Sq * Sk), dK(Sk * D), dV(Sk * Dv), dQ(D);
    for (int64_t t = begin; t < end; ++t) {
      int64_t b = t / Hkv, kvh = t % Hkv;
      const double *K = k.data.data() + (b * Hkv + kvh) * Sk * D;
      const double *Vm = v.data.data() + (b * Hkv + kvh) * Sk * Dv;
      std::fill(dK.begin(), dK.end(), 0.0);
      std::fill(dV.begin(), dV.end(), 0.0);
      for (int64_t h = kvh * a.group; h < (kvh + 1) * a.group; ++h) {
        int64_t qBase = (b * Hq + h) * Sq;
        // P = softmax(scores) row by row, or exp(scores - lse) from the
        // tiled forward's log-sum-exp; fully masked rows are zero.
        for (int64_t i = 0; i < Sq; ++i) {
          double *p = P.data() + i * Sk;
          double mx = a.scores(q, k, b, h, i, p);
          if (lse) {
            double l = lse->data[qBase + i];
            for (int64_t j = 0; j < Sk; ++j)
              p[j] = l == -inf || p[j] == -inf ? 0.0 : std::exp(p[j] - l);
            continue;
          }
          double sum = 0;
          for (int64_t j = 0; j < Sk; ++j) {
            p[j] = mx == -inf || p[j] == -inf ? 0.0 : std::exp(p[j] - mx);
            sum += p[j];
          }
          for (int64_t j = 0; j < Sk; ++j)
            p[j] = sum > 0 ? p[j] / sum : 0.0;
        }
        for (int64_t i = 0; i < Sq; ++i) {
          const double *dOi = dout.data.data() + (qBase + i) * Dv;
          const double *Oi = o.data.data() + (qBase + i) * Dv;
          const double *p = P.data() + i * Sk;
          double *ds = dS.data() + i * Sk;
          double rowDot = 0; // rowsum(dO o O)
          for (int64_t c = 0; c < Dv; ++c)
            rowDot += dOi[c] * Oi[c];
          for (int64_t j = 0; j < Sk; ++j) {
            if (p[j] == 0) {
              ds[j] = 0;
              continue;
            }
            const double *vj = Vm + j * Dv;
            double dp = 0;
            for (int64_t c = 0; c < Dv; ++c)
              dp += dOi[c] * vj[c];
            ds[j] = p[j] * (dp - rowDot);
            if (maskGrad)
              fullDS[((qBase + i) * Sk) + j] = ds[j];
            // dV_j += P_ij dO_i.
            double *dvj = dV.data() + j * Dv;
            for (int64_t c = 0; c < Dv; ++c)
              dvj[c] += p[j] * dOi[c];
          }
          // dQ_i = scale sum_j dS_ij K_j.
          std::fill(dQ.begin(), dQ.end(), 0.0);
          for (int64_t j = 0; j < Sk; ++j) {
            if (ds[j] == 0)
              continue;
            const double *kj = K + j * D;
            for (int64_t c = 0; c < D; ++c)
              dQ[c] += ds[j] * kj[c];
          }
          double *dqi = dq.data.data() + (qBase + i) * D;
          for (int64_t c = 0; c < D; ++c)
            dqi[c] = roundToDType(a.scale * dQ[c], dq.dtype);
          // dK_j += scale dS_ij Q_i.
          const double *qi = q.data.data() + (qBase + i) * D;
          for (int64_t j = 0; j < Sk; ++j) {
            if (ds[j] == 0)
              continue;
            double *dkj = dK.data() + j * D;
            for (int64_t c = 0; c < D; ++c)
              dkj[c] += a.scale * ds[j] * qi[c];
          }
        }
      }
      double *dkOut = dk.data.data() + (b * Hkv + kvh) * Sk * D;
      double *dvOut = dv.data.data() + (b * Hkv + kvh) * Sk * Dv;
      for (int64_t c = 0; c < Sk * D; ++c)
        dkOut[c] = roundToDType(dK[c], dk.dtype);
      for (int64_t c = 0; c < Sk * Dv; ++c)
        dvOut[c] = roundToDType(dV[c], dv.dtype);
    }
  });
  if (maskGrad) {
    Tensor &dmask = e.outs[3];
    dmask.shape = a.mask->shape;
    dmask.data.assign(a.mask->data.size(), 0.0);
    int64_t index = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < Sq; ++i)
          for (int64_t j = 0; j < Sk; ++j)
            dmask.data[b * a.maskStrides[0] + h * a.maskStrides[1] +
                       i * a.maskStrides[2] + j * a.maskStrides[3]] +=
                fullDS[index++];
    for (double &x : dmask.data)
      x = roundToDType(x, dmask.dtype);
  }
  return "";
}

std::string evalAttentionGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(5, 6));
  return attentionGrad(e, 5, nullptr);
}

/// flash_attention: the online softmax of FlashAttention, evaluated the way
/// the tiled kernel orders it: per query row, key blocks of `block_kv` in
/// order, the running max, sum and accumulator rescaled at each block; with
/// `num_splits`, contiguous ranges of blocks combined by their
/// log-sum-exps. Results: the output and the row log-sum-exp (f32).
std::string evalFlashAttention(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(3, 4));
  RETURN_IF_ERROR(e.expectResults(2));
  int64_t blockKV = e.attrs.integer("block_kv", std::nullopt);
  int64_t splits = e.attrs.integer("num_splits", 1);
  RETURN_IF_ERROR(e.attrError());
  AttentionSpec a;
  RETURN_IF_ERROR(readAttention(e, 3, a));
  if (blockKV <= 0 || splits <= 0)
    return e.fail("needs positive block_kv and num_splits");
  const Tensor &q = e.operand(0), &k = e.operand(1), &v = e.operand(2);
  int64_t B = a.B, Hq = a.Hq, Sq = a.Sq, D = a.D, Hkv = a.Hkv, Sk = a.Sk,
          Dv = a.Dv;
  Tensor &out = e.outs[0], &lse = e.outs[1];
  out.shape = {B, Hq, Sq, Dv};
  out.data.assign(B * Hq * Sq * Dv, 0.0);
  lse.shape = {B, Hq, Sq};
  lse.data.assign(B * Hq * Sq, 0.0);
  int64_t blocks = (Sk + blockKV - 1) / blockKV;
  int64_t perSplit = (blocks + splits - 1) / splits;
  const double inf = std::numeric_limits<double>::infinity();
  parallelFor(B * Hq * Sq, 1 + 65536 / std::max<int64_t>(1, Sk * D),
              [&](int64_t begin, int64_t end) {
                std::vector<double> scores(Sk), acc(Dv), total(Dv);
                for (int64_t r = begin; r < end; ++r) {
                  int64_t i = r % Sq, h = (r / Sq) % Hq, b = r / (Sq * Hq);
                  int64_t kvBase = (b * Hkv + h / a.group) * Sk;
                  a.scores(q, k, b, h, i, scores.data());
                  // Each split: an online softmax over its key blocks.
                  double m = -inf, l = 0;
                  std::fill(total.begin(), total.end(), 0.0);
                  for (int64_t s0 = 0; s0 < blocks; s0 += perSplit) {
                    double ms = -inf, ls = 0;
                    std::fill(acc.begin(), acc.end(), 0.0);
                    for (int64_t blk = s0;
                         blk < std::min(blocks, s0 + perSplit); ++blk) {
                      int64_t j0 = blk * blockKV,
                              j1 = std::min(Sk, j0 + blockKV);
                      double mb = ms;
                      for (int64_t j = j0; j < j1; ++j)
                        mb = std::max(mb, scores[j]);
                      if (mb == -inf)
                        continue; // a fully masked block is skipped
                      double rescale = std::exp(ms - mb); // 0 when ms = -inf
                      ls *= rescale;
                      for (double &x : acc)
                        x *= rescale;
                      for (int64_t j = j0; j < j1; ++j) {
                        if (scores[j] == -inf)
                          continue;
                        double p = std::exp(scores[j] - mb);
                        ls += p;
                        const double *vr = v.data.data() + (kvBase + j) * Dv;
                        for (int64_t c = 0; c < Dv; ++c)
                          acc[c] += p * vr[c];
                      }
                      ms = mb;
                    }
                    if (ms == -inf)
                      continue;
                    // Combine this split into the total by its max.
                    double mn = std::max(m, ms);
                    double wOld = m == -inf ? 0 : std::exp(m - mn);
                    double wNew = std::exp(ms - mn);
                    l = l * wOld + ls * wNew;
                    for (int64_t c = 0; c < Dv; ++c)
                      total[c] = total[c] * wOld + acc[c] * wNew;
                    m = mn;
                  }
                  double *o = out.data.data() + r * Dv;
                  for (int64_t c = 0; c < Dv; ++c)
                    o[c] = l > 0
                               ? roundToDType(static_cast<float>(total[c] / l),
                                              out.dtype)
                               : 0.0;
                  lse.data[r] =
                      l > 0 ? roundToDType(m + std::log(l), DType::F32) : -inf;
                }
              });
  return "";
}

/// flash_attention_grad: operands (q, k, v, out, dout, lse[, mask]); the
/// probabilities come from the forward's log-sum-exp.
std::string evalFlashAttentionGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(6, 7));
  const Tensor &lse = e.operand(5);
  const Tensor &q = e.operand(0);
  if (q.shape.size() != 4 ||
      lse.shape != Shape{q.shape[0], q.shape[1], q.shape[2]})
    return e.fail("lse " + shapeStr(lse.shape) +
                  " must be [B, Hq, Sq] of the query " + shapeStr(q.shape));
  return attentionGrad(e, 6, &lse);
}

/// Operands (dy [..., D], indices [...]); the result [V, D] takes V from the
/// graph's declared shape.
std::string evalEmbeddingGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 2));
  const Tensor &dy = e.operand(0), &idx = e.operand(1);
  RETURN_IF_ERROR(e.expectFloat(0, "grad"));
  RETURN_IF_ERROR(e.expectSameType(dy, "grad"));
  if (isFloat(idx.dtype) || idx.dtype == DType::I1)
    return e.fail(std::string("indices must be integers, got ") +
                  dtypeName(idx.dtype));
  const Shape &table = e.declared[0];
  if (table.size() != 2)
    return e.fail("result " + shapeStr(table) + " must be a [V, D] table");
  int64_t V = table[0], D = table[1];
  Shape rows = idx.shape;
  rows.push_back(D);
  if (dy.shape != rows)
    return e.fail("grad " + shapeStr(dy.shape) + " must be " + shapeStr(rows) +
                  " (the indices' shape, then D)");
  std::vector<double> acc(V * D, 0.0);
  for (size_t i = 0; i < idx.data.size(); ++i) {
    int64_t row = static_cast<int64_t>(idx.data[i]);
    if (row < 0 || row >= V)
      return e.fail("index " + std::to_string(row) +
                    " is outside the table's " + std::to_string(V) + " rows");
    for (int64_t c = 0; c < D; ++c)
      acc[row * D + c] += dy.data[i * D + c];
  }
  e.out.shape = table;
  e.out.data.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i)
    e.out.data[i] = roundToDType(acc[i], e.out.dtype);
  return "";
}

/// Operands (logits [..., V], labels [...], dloss): (softmax - onehot) times
/// dloss, over the counted positions for `mean`.
std::string evalCrossEntropyGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(3, 3));
  LossSpec spec;
  RETURN_IF_ERROR(readLoss(e, spec));
  std::vector<char> counted;
  RETURN_IF_ERROR(readLabels(e, spec, counted));
  const Tensor &logits = e.operand(0), &labels = e.operand(1),
               &dloss = e.operand(2);
  RETURN_IF_ERROR(e.expectSameType(logits, "logits"));
  double factor;
  RETURN_IF_ERROR(
      readLossGradient(e, spec, dloss, labels.shape, counted, factor));
  bool none = spec.reduction == "none";
  int64_t V = logits.shape.back(), n = labels.numElements();
  e.out.shape = logits.shape;
  e.out.data.assign(logits.data.size(), 0.0);
  DType type = e.out.dtype;
  parallelFor(
      n, 1 + 65536 / std::max<int64_t>(1, V), [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          if (!counted[p])
            continue;
          double scale = none ? dloss.data[p] : factor;
          const double *row = logits.data.data() + p * V;
          double *o = e.out.data.data() + p * V;
          double lse = logSumExp(row, V);
          int64_t label = static_cast<int64_t>(labels.data[p]);
          for (int64_t j = 0; j < V; ++j) {
            double prob = std::exp(row[j] - lse);
            o[j] =
                roundToDType((prob - (j == label ? 1.0 : 0.0)) * scale, type);
          }
        }
      });
  return "";
}

/// A sum over the `group_size` devices that each hold a partial `input`
/// (a tensor-parallel layer's all-reduce). The interpreter is one device:
/// a group of one is the input itself; a larger group would need the other
/// devices' partial sums, which it never computes.
std::string evalAllReduce(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  int64_t groupSize = e.attrs.integer("group_size", std::nullopt);
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  if (groupSize < 1)
    return e.fail("has group_size " + std::to_string(groupSize) +
                  ", expected at least 1");
  if (groupSize > 1)
    return e.fail("sums over a group of " + std::to_string(groupSize) +
                  " devices, but the reference interpreter evaluates one "
                  "device: an all-reduce over " +
                  std::to_string(groupSize) +
                  " devices needs the other devices' partial sums");
  e.out.shape = x.shape;
  e.out.data = x.data;
  return "";
}

/// A splat constant (arith.constant of a splat, as autodiff's loss seed and
/// zero gradients): every element `value`, shaped as the graph declares.
std::string evalConstant(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(0, 0));
  double value = e.attrs.number("value", std::nullopt);
  RETURN_IF_ERROR(e.attrError());
  e.out.shape = e.declared[0];
  e.out.data.assign(e.out.numElements(), roundToDType(value, e.out.dtype));
  return "";
}

std::string evalBroadcast(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  Shape shape = e.attrs.ints("shape");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  Shape b;
  if (x.shape.size() > shape.size() || !broadcastShapes(x.shape, shape, b) ||
      b != shape)
    return e.fail("cannot broadcast " + shapeStr(x.shape) + " to " +
                  shapeStr(shape));
  e.out.shape = shape;
  RETURN_IF_ERROR(e.expectDeclaredShape());
  stridedCopy(x.data, 0, broadcastStrides(x.shape, shape), shape, e.out.data);
  return "";
}

std::string evalPad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  Shape low = e.attrs.ints("low"), high = e.attrs.ints("high");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &x = e.operand(0);
  RETURN_IF_ERROR(e.expectSameType(x, "input"));
  size_t rank = x.shape.size();
  if (low.size() != rank || high.size() != rank)
    return e.fail("low " + shapeStr(low) + " and high " + shapeStr(high) +
                  " must each have " + std::to_string(rank) + " entries");
  for (size_t i = 0; i < rank; ++i)
    if (low[i] < 0 || high[i] < 0)
      return e.fail("padding low " + shapeStr(low) + " high " + shapeStr(high) +
                    " must be >= 0");
  Shape shape(rank);
  for (size_t i = 0; i < rank; ++i)
    if (!checkedAdd(x.shape[i], low[i], shape[i]) ||
        !checkedAdd(shape[i], high[i], shape[i]))
      return e.fail("padding low " + shapeStr(low) + " high " + shapeStr(high) +
                    " of " + shapeStr(x.shape) +
                    " does not fit in a 64-bit integer");
  e.out.shape = shape;
  RETURN_IF_ERROR(e.expectDeclaredShape());
  e.out.data.assign(product(shape), 0.0);
  Shape outStrides = stridesOf(shape);
  int64_t base = 0;
  for (size_t i = 0; i < rank; ++i)
    base += low[i] * outStrides[i];
  for (int64_t i = 0, n = x.numElements(); i < n; ++i)
    e.out.data[base + stridedOffset(i, x.shape, outStrides)] = x.data[i];
  return "";
}

/// Operands (param, grad, m, v[, master]); results new param, m, v[, master].
std::string evalAdamW(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(4, 5));
  double lr = e.attrs.number("lr", std::nullopt);
  double beta1 = e.attrs.number("beta1", 0.9);
  double beta2 = e.attrs.number("beta2", 0.999);
  double eps = e.attrs.number("epsilon", 1e-8);
  double wd = e.attrs.number("weight_decay", 0.01);
  int64_t step = e.attrs.integer("step", 1);
  RETURN_IF_ERROR(e.attrError());
  if (step < 1)
    return e.fail("step must be >= 1, got " + std::to_string(step));
  bool hasMaster = e.in.size() == 5;
  RETURN_IF_ERROR(e.expectResults(hasMaster ? 4 : 3));
  static const char *const names[] = {"param", "grad", "exp_avg", "exp_avg_sq",
                                      "master"};
  const Tensor &param = e.operand(0);
  for (size_t i = 0; i < e.in.size(); ++i) {
    RETURN_IF_ERROR(e.expectFloat(i, names[i]));
    if (e.operand(i).shape != param.shape)
      return e.fail(std::string(names[i]) + " " + shapeStr(e.operand(i).shape) +
                    " must have the param's shape " + shapeStr(param.shape));
  }
  const Tensor &g = e.operand(1), &m = e.operand(2), &v = e.operand(3);
  const Tensor &p = hasMaster ? e.operand(4) : param;
  double c1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  double c2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  int64_t n = param.numElements();
  for (Tensor &out : e.outs) {
    out.shape = param.shape;
    out.data.assign(n, 0.0);
  }
  parallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double w = p.data[i], gi = g.data[i];
      w -= lr * wd * w;
      double mi = beta1 * m.data[i] + (1 - beta1) * gi;
      double vi = beta2 * v.data[i] + (1 - beta2) * gi * gi;
      w -= lr * (mi / c1) / (std::sqrt(vi / c2) + eps);
      e.outs[0].data[i] = roundToDType(w, e.outs[0].dtype);
      e.outs[1].data[i] = roundToDType(mi, e.outs[1].dtype);
      e.outs[2].data[i] = roundToDType(vi, e.outs[2].dtype);
      if (hasMaster)
        e.outs[3].data[i] = roundToDType(w, e.outs[3].dtype);
    }
  });
  return "";
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

constexpr int64_t kMR = 4;   // rows per micro tile
constexpr int64_t kKB = 256; // k block: partial sums stay in Acc
constexpr int64_t kNB = 512; // n block: B block stays in L2

/// C[MR x NR] (double) += A[MR x kb] * B[kb x NR], summing in Acc first.
/// Written with GCC vector extensions so that the MR x NR accumulators stay
/// in registers (the auto-vectorizer keeps them in memory).
template <typename Acc, int64_t NR>
inline __attribute__((always_inline)) void
microKernel(const Acc *a, int64_t lda, const Acc *b, int64_t ldb, int64_t kb,
            double *c, int64_t ldc, int64_t rows, int64_t cols) {
  typedef Acc Vec __attribute__((vector_size(32)));
  constexpr int64_t VL = 32 / sizeof(Acc), NV = NR / VL;
  Vec acc[kMR][NV];
#pragma GCC unroll 4
  for (int64_t r = 0; r < kMR; ++r)
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; ++v)
      acc[r][v] = Vec{};
  for (int64_t k = 0; k < kb; ++k) {
    Vec bv[NV];
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; ++v)
      std::memcpy(&bv[v], b + k * ldb + v * VL, sizeof(Vec));
#pragma GCC unroll 4
    for (int64_t r = 0; r < kMR; ++r) {
      Acc av = a[r * lda + k];
#pragma GCC unroll 4
      for (int64_t v = 0; v < NV; ++v)
        acc[r][v] += bv[v] * av;
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] += acc[r][j / VL][j % VL];
}

/// Rows [r0, r1) of C = A * B for one batch. A is [Mpad, K] and B is
/// [K, Npad], both padded with zeros to the tile sizes.
template <typename Acc>
inline __attribute__((always_inline)) void
gemmRows(const Acc *A, const Acc *B, double *C, int64_t r0, int64_t r1,
         int64_t N, int64_t K, int64_t Npad) {
  constexpr int64_t NR = sizeof(Acc) == 4 ? 16 : 8;
  for (int64_t j0 = 0; j0 < N; j0 += kNB) {
    int64_t jEnd = std::min(N, j0 + kNB);
    for (int64_t k0 = 0; k0 < K; k0 += kKB) {
      int64_t kb = std::min(K, k0 + kKB) - k0;
      for (int64_t i = r0; i < r1; i += kMR) {
        int64_t rows = std::min(kMR, r1 - i);
        for (int64_t j = j0; j < jEnd; j += NR)
          microKernel<Acc, NR>(A + i * K + k0, K, B + k0 * Npad + j, Npad, kb,
                               C + i * N + j, N, rows, std::min(NR, jEnd - j));
      }
    }
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The same loops compiled for AVX2/FMA, chosen at run time: the default
// x86-64 target only has SSE2.
__attribute__((target("avx2,fma"))) void
gemmRowsAvx2F(const float *A, const float *B, double *C, int64_t r0, int64_t r1,
              int64_t N, int64_t K, int64_t Npad) {
  gemmRows<float>(A, B, C, r0, r1, N, K, Npad);
}
__attribute__((target("avx2,fma"))) void
gemmRowsAvx2D(const double *A, const double *B, double *C, int64_t r0,
              int64_t r1, int64_t N, int64_t K, int64_t Npad) {
  gemmRows<double>(A, B, C, r0, r1, N, K, Npad);
}
bool hasAvx2() {
  static const bool has =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

void gemmRowsDispatch(const float *A, const float *B, double *C, int64_t r0,
                      int64_t r1, int64_t N, int64_t K, int64_t Npad) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (hasAvx2())
    return gemmRowsAvx2F(A, B, C, r0, r1, N, K, Npad);
#endif
  gemmRows<float>(A, B, C, r0, r1, N, K, Npad);
}
void gemmRowsDispatch(const double *A, const double *B, double *C, int64_t r0,
                      int64_t r1, int64_t N, int64_t K, int64_t Npad) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (hasAvx2())
    return gemmRowsAvx2D(A, B, C, r0, r1, N, K, Npad);
#endif
  gemmRows<double>(A, B, C, r0, r1, N, K, Npad);
}

/// Batched C = op(A) op(B) in double. Products of bf16/f16/fp8/i8 values are
/// exact in float, so those sum in float within a k block (exactly, for i8)
/// and in double across blocks; f32 operands sum in double throughout.
template <typename Acc>
void gemm(const Tensor &lhs, const Tensor &rhs, bool transA, bool transB,
          int64_t M, int64_t N, int64_t K, const Shape &batchShape,
          std::vector<double> &C) {
  constexpr int64_t NR = sizeof(Acc) == 4 ? 16 : 8;
  int64_t Mpad = (M + kMR - 1) / kMR * kMR;
  int64_t Npad = (N + NR - 1) / NR * NR;
  Shape lb(lhs.shape.begin(), lhs.shape.end() - 2);
  Shape rb(rhs.shape.begin(), rhs.shape.end() - 2);
  int64_t nA = product(lb), nB = product(rb), batches = product(batchShape);
  std::vector<Acc> A(nA * Mpad * K, Acc(0)), B(nB * K * Npad, Acc(0));
  // Pack with transposes resolved: A as [M, K], B as [K, N].
  parallelFor(nA * M, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t b = r / M, i = r % M;
      const double *src = lhs.data.data() + b * M * K;
      Acc *dst = A.data() + (b * Mpad + i) * K;
      for (int64_t k = 0; k < K; ++k)
        dst[k] = static_cast<Acc>(transA ? src[k * M + i] : src[i * K + k]);
    }
  });
  parallelFor(nB * K, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t b = r / K, k = r % K;
      const double *src = rhs.data.data() + b * K * N;
      Acc *dst = B.data() + (b * K + k) * Npad;
      for (int64_t j = 0; j < N; ++j)
        dst[j] = static_cast<Acc>(transB ? src[j * K + k] : src[k * N + j]);
    }
  });
  Shape sa = broadcastStrides(lb, batchShape),
        sb = broadcastStrides(rb, batchShape);
  C.assign(batches * M * N, 0.0);
  // Tasks are 64-row panels of every batch.
  constexpr int64_t panel = 64;
  int64_t panels = (M + panel - 1) / panel;
  parallelFor(batches * panels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t bi = t / panels, p = t % panels;
      const Acc *a = A.data() + stridedOffset(bi, batchShape, sa) * Mpad * K;
      const Acc *b = B.data() + stridedOffset(bi, batchShape, sb) * K * Npad;
      gemmRowsDispatch(a, b, C.data() + bi * M * N, p * panel,
                       std::min(M, (p + 1) * panel), N, K, Npad);
    }
  });
}

std::string evalMatmul(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(2, 3));
  bool transA = e.attrs.flag("transpose_lhs"),
       transB = e.attrs.flag("transpose_rhs");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &lhs = e.operand(0), &rhs = e.operand(1);
  const Tensor *bias = e.in.size() > 2 ? e.in[2] : nullptr;
  if (lhs.shape.size() < 2 || rhs.shape.size() < 2)
    return e.fail("operands must have rank >= 2, got " + shapeStr(lhs.shape) +
                  " and " + shapeStr(rhs.shape));
  if (lhs.dtype != rhs.dtype)
    return e.fail(std::string("operands differ in element type: ") +
                  dtypeName(lhs.dtype) + " and " + dtypeName(rhs.dtype));
  if (lhs.dtype == DType::I1 || lhs.dtype == DType::I32 ||
      lhs.dtype == DType::I64)
    return e.fail(std::string("cannot multiply ") + dtypeName(lhs.dtype));
  size_t lr = lhs.shape.size(), rr = rhs.shape.size();
  int64_t M = lhs.shape[lr - (transA ? 1 : 2)];
  int64_t K = lhs.shape[lr - (transA ? 2 : 1)];
  int64_t Kr = rhs.shape[rr - (transB ? 1 : 2)];
  int64_t N = rhs.shape[rr - (transB ? 2 : 1)];
  if (K != Kr)
    return e.fail("contraction sizes differ: lhs " + shapeStr(lhs.shape) +
                  " and rhs " + shapeStr(rhs.shape) + " give K = " +
                  std::to_string(K) + " and " + std::to_string(Kr));
  Shape batchShape;
  if (!broadcastShapes(Shape(lhs.shape.begin(), lhs.shape.end() - 2),
                       Shape(rhs.shape.begin(), rhs.shape.end() - 2),
                       batchShape))
    return e.fail("batch dimensions of " + shapeStr(lhs.shape) + " and " +
                  shapeStr(rhs.shape) + " do not broadcast");
  if (bias) {
    if (bias->shape != Shape{N})
      return e.fail("bias has shape " + shapeStr(bias->shape) + ", expected [" +
                    std::to_string(N) + "]");
    RETURN_IF_ERROR(e.expectFloat(2, "bias"));
  }
  DType expected = lhs.dtype;
  if (lhs.dtype == DType::F8E4M3FN || lhs.dtype == DType::F8E5M2)
    expected = DType::BF16;
  else if (lhs.dtype == DType::I8)
    expected = DType::I32;
  if (e.out.dtype != expected)
    return e.fail(std::string("of ") + dtypeName(lhs.dtype) + " gives " +
                  dtypeName(expected) + " but the graph declares " +
                  dtypeName(e.out.dtype));
  e.out.shape = batchShape;
  e.out.shape.push_back(M);
  e.out.shape.push_back(N);
  RETURN_IF_ERROR(e.expectDeclaredShape());
  std::vector<double> C;
  if (lhs.dtype == DType::F32)
    gemm<double>(lhs, rhs, transA, transB, M, N, K, batchShape, C);
  else
    gemm<float>(lhs, rhs, transA, transB, M, N, K, batchShape, C);
  DType type = e.out.dtype;
  int64_t rows = N ? static_cast<int64_t>(C.size()) / N : 0;
  parallelFor(rows, 1 + 65536 / std::max<int64_t>(1, N),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r)
                  for (int64_t j = 0; j < N; ++j) {
                    double v = C[r * N + j];
                    if (bias)
                      v += bias->data[j];
                    C[r * N + j] = roundToDType(v, type);
                  }
              });
  e.out.data = std::move(C);
  return "";
}

//===----------------------------------------------------------------------===//
// Fused linear cross-entropy
//===----------------------------------------------------------------------===//

/// A language-model head: hidden [..., D] (operand 0) times weight [V, D]
/// with transpose_weight, else [D, V] (operand 1), against labels (operand
/// 2); its logits are computed a block of positions at a time, never whole.
struct LinearHead {
  const Tensor *hidden = nullptr, *weight = nullptr, *labels = nullptr;
  int64_t N = 0, D = 0, V = 0;
  bool transposed = false;
  LossSpec spec;
  std::vector<char> counted;

  double w(int64_t j, int64_t d) const {
    return transposed ? weight->data[j * D + d] : weight->data[d * V + j];
  }
  /// The logits of position `p` into `row` [V], rounded to the operands'
  /// type as the matmul they replace stores them.
  void logits(int64_t p, double *row) const {
    const double *h = hidden->data.data() + p * D;
    for (int64_t j = 0; j < V; ++j) {
      double acc = 0;
      for (int64_t d = 0; d < D; ++d)
        acc += h[d] * w(j, d);
      row[j] = roundToDType(acc, hidden->dtype);
    }
  }
};

std::string readLinearHead(OpEval &e, LinearHead &head) {
  RETURN_IF_ERROR(readLoss(e, head.spec));
  head.transposed = e.attrs.flag("transpose_weight");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &hidden = e.operand(0), &weight = e.operand(1),
               &labels = e.operand(2);
  RETURN_IF_ERROR(e.expectFloat(0, "hidden"));
  if (weight.dtype != hidden.dtype)
    return e.fail(std::string("hidden and weight differ in element type: ") +
                  dtypeName(hidden.dtype) + " and " + dtypeName(weight.dtype));
  if (hidden.shape.empty() || weight.shape.size() != 2 ||
      weight.shape[head.transposed ? 1 : 0] != hidden.shape.back())
    return e.fail("hidden " + shapeStr(hidden.shape) + " and weight " +
                  shapeStr(weight.shape) + " do not contract (" +
                  (head.transposed ? "[V, D]" : "[D, V]") + " weight)");
  if (Shape(hidden.shape.begin(), hidden.shape.end() - 1) != labels.shape)
    return e.fail("hidden " + shapeStr(hidden.shape) + " and labels " +
                  shapeStr(labels.shape) +
                  " do not match ([..., D] and [...])");
  head.hidden = &hidden;
  head.weight = &weight;
  head.labels = &labels;
  head.D = hidden.shape.back();
  head.V = weight.shape[head.transposed ? 0 : 1];
  head.N = labels.numElements();
  return markCountedLabels(e, labels, head.V, head.spec, head.counted);
}

/// Operands (hidden, weight, labels): the loss of the logits hidden times
/// weight (as cross_entropy of the matmul), and each position's log-sum-exp.
std::string evalLinearCrossEntropy(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(3, 3));
  RETURN_IF_ERROR(e.expectResults(2));
  LinearHead head;
  RETURN_IF_ERROR(readLinearHead(e, head));
  int64_t N = head.N, V = head.V;
  std::vector<double> loss(N, 0.0), lse(N, 0.0);
  parallelFor(N, 1 + 65536 / std::max<int64_t>(1, V * head.D),
              [&](int64_t begin, int64_t end) {
                std::vector<double> row(V);
                for (int64_t p = begin; p < end; ++p) {
                  head.logits(p, row.data());
                  lse[p] = logSumExp(row.data(), V);
                  if (head.counted[p])
                    loss[p] = lse[p] -
                              row[static_cast<int64_t>(head.labels->data[p])];
                }
              });
  Tensor &lseOut = e.outs[1];
  lseOut.shape = head.labels->shape;
  lseOut.data.resize(N);
  for (int64_t p = 0; p < N; ++p)
    lseOut.data[p] = roundToDType(lse[p], lseOut.dtype);
  return reduceLoss(e, head.spec, head.labels->shape, loss, head.counted);
}

/// Operands (hidden, weight, labels, lse, dloss): the gradients of the
/// hidden states and the weight through the logits' gradient
/// (exp(logits - lse) - onehot) times dloss, rounded to the operands' type
/// as cross_entropy_grad stores it. Blocks of positions at a time; dW sums
/// every position in order.
std::string evalLinearCrossEntropyGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(5, 5));
  RETURN_IF_ERROR(e.expectResults(2));
  LinearHead head;
  RETURN_IF_ERROR(readLinearHead(e, head));
  const Tensor &lse = e.operand(3), &dloss = e.operand(4);
  if (lse.dtype != DType::F32 || lse.shape != head.labels->shape)
    return e.fail("lse " + typeStr(lse.shape, lse.dtype) + " must be " +
                  typeStr(head.labels->shape, DType::F32));
  double factor;
  RETURN_IF_ERROR(readLossGradient(e, head.spec, dloss, head.labels->shape,
                                   head.counted, factor));
  bool none = head.spec.reduction == "none";
  int64_t N = head.N, V = head.V, D = head.D;
  DType type = head.hidden->dtype;
  Tensor &dh = e.outs[0], &dw = e.outs[1];
  if (dh.dtype != type || dw.dtype != type)
    return e.fail(std::string("gradients must have the operands' type ") +
                  dtypeName(type) + ", the graph declares " +
                  dtypeName(dh.dtype) + " and " + dtypeName(dw.dtype));
  dh.shape = head.hidden->shape;
  dh.data.assign(N * D, 0.0);
  dw.shape = head.weight->shape;
  std::vector<double> dwAcc(V * D, 0.0);
  const int64_t block =
      std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(1, V));
  std::vector<double> grad;
  for (int64_t first = 0; first < N; first += block) {
    int64_t rows = std::min(block, N - first);
    grad.assign(rows * V, 0.0);
    // The block's logits gradient and its rows of dH.
    parallelFor(rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t p = first + r;
        if (!head.counted[p])
          continue;
        double *g = grad.data() + r * V;
        head.logits(p, g);
        double scale = none ? dloss.data[p] : factor;
        int64_t label = static_cast<int64_t>(head.labels->data[p]);
        for (int64_t j = 0; j < V; ++j)
          g[j] = roundToDType(
              (std::exp(g[j] - lse.data[p]) - (j == label ? 1.0 : 0.0)) * scale,
              type);
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j)
            acc += g[j] * head.w(j, d);
          dh.data[p * D + d] = roundToDType(acc, type);
        }
      }
    });
    // dW's rows (or columns), each summed over the positions in order.
    parallelFor(V, 1, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j)
        for (int64_t r = 0; r < rows; ++r) {
          double g = grad[r * V + j];
          const double *h = head.hidden->data.data() + (first + r) * D;
          for (int64_t d = 0; d < D; ++d)
            dwAcc[j * D + d] += g * h[d];
        }
    });
  }
  dw.data.resize(V * D);
  for (int64_t j = 0; j < V; ++j)
    for (int64_t d = 0; d < D; ++d)
      dw.data[head.transposed ? j * D + d : d * V + j] =
          roundToDType(dwAcc[j * D + d], type);
  return "";
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// An index for messages: integral values as integers.
std::string indexStr(double v) {
  if (v == std::trunc(v) && std::fabs(v) < 9e15)
    return std::to_string(static_cast<int64_t>(v));
  return std::to_string(v);
}

/// `shape` with one more dimension named `last`: "[2, 3, K]".
std::string shapeWith(const Shape &shape, const char *last) {
  std::string s = shapeStr(shape);
  s.pop_back();
  return s + (shape.empty() ? "" : ", ") + last + "]";
}

std::string expectIntegers(const OpEval &e, size_t i, const char *what) {
  DType type = e.operand(i).dtype;
  if (isFloat(type) || type == DType::I1)
    return e.fail(std::string(what) +
                  " must have an integer element type, got " + dtypeName(type));
  return "";
}

/// Every element of `indices` is an expert in [0, E).
std::string checkExpertIndices(const OpEval &e, const Tensor &indices,
                               int64_t E) {
  for (double v : indices.data)
    if (!(v >= 0 && v < static_cast<double>(E)))
      return e.fail("expert index " + indexStr(v) +
                    " is outside [0, E) for E = " + std::to_string(E));
  return "";
}

/// p = softmax(row) over E entries, in double, the row's max subtracted.
void softmaxRow(const double *row, int64_t E, double *p) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < E; ++c)
    mx = std::max(mx, row[c]);
  double sum = 0;
  for (int64_t c = 0; c < E; ++c) {
    p[c] = std::exp(row[c] - mx);
    sum += p[c];
  }
  for (int64_t c = 0; c < E; ++c)
    p[c] /= sum;
}

/// Operands (logits [..., E]); results (weights [..., k], indices [..., k])
/// for k = experts_per_token: per row, the k experts of the largest softmax
/// probability, in descending order of probability (ties to the lower
/// expert), and their probabilities, divided by their sum with normalize.
std::string evalMoeGating(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(1, 1));
  RETURN_IF_ERROR(e.expectResults(2));
  int64_t k = e.attrs.integer("experts_per_token", std::nullopt);
  bool normalize = e.attrs.flag("normalize");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &logits = e.operand(0);
  RETURN_IF_ERROR(e.expectFloat(0, "logits"));
  if (logits.shape.empty())
    return e.fail("logits must be [..., E], got a scalar");
  int64_t E = logits.shape.back();
  if (k < 1 || k > E)
    return e.fail("experts_per_token " + std::to_string(k) +
                  " must be in [1, E] for E = " + std::to_string(E));
  Tensor &weights = e.outs[0], &indices = e.outs[1];
  if (!isFloat(weights.dtype))
    return e.fail(
        std::string("weights must have a float element type, the graph "
                    "declares ") +
        dtypeName(weights.dtype));
  if (isFloat(indices.dtype) || indices.dtype == DType::I1)
    return e.fail(
        std::string("indices must have an integer element type, the graph "
                    "declares ") +
        dtypeName(indices.dtype));
  if (roundToDType(static_cast<double>(E - 1), indices.dtype) !=
      static_cast<double>(E - 1))
    return e.fail(std::string("indices of type ") + dtypeName(indices.dtype) +
                  " cannot hold expert " + std::to_string(E - 1));
  Shape shape = logits.shape;
  shape.back() = k;
  weights.shape = indices.shape = shape;
  RETURN_IF_ERROR(e.expectDeclaredShape(0));
  RETURN_IF_ERROR(e.expectDeclaredShape(1));
  int64_t rows = logits.numElements() / E;
  weights.data.assign(rows * k, 0.0);
  indices.data.assign(rows * k, 0.0);
  parallelFor(rows, 1 + 65536 / E, [&](int64_t begin, int64_t end) {
    std::vector<double> p(E);
    std::vector<int64_t> order(E);
    // Descending probability, then ascending expert; a NaN probability
    // (from a NaN or infinite logit) sorts as -inf, keeping the order strict.
    auto before = [&](int64_t a, int64_t b) {
      double pa =
          std::isnan(p[a]) ? -std::numeric_limits<double>::infinity() : p[a];
      double pb =
          std::isnan(p[b]) ? -std::numeric_limits<double>::infinity() : p[b];
      return pa > pb || (pa == pb && a < b);
    };
    for (int64_t r = begin; r < end; ++r) {
      softmaxRow(logits.data.data() + r * E, E, p.data());
      for (int64_t c = 0; c < E; ++c)
        order[c] = c;
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      double sum = 0;
      for (int64_t j = 0; j < k; ++j)
        sum += p[order[j]];
      for (int64_t j = 0; j < k; ++j) {
        double w = p[order[j]];
        weights.data[r * k + j] =
            roundToDType(normalize ? w / sum : w, weights.dtype);
        indices.data[r * k + j] =
            roundToDType(static_cast<double>(order[j]), indices.dtype);
      }
    }
  });
  return "";
}

/// Operands (dweights [..., k], logits [..., E], indices [..., k]): the
/// gradient of moe_gating's weights with respect to its logits, the
/// selection held fixed. With w_j = p[i_j] (over S = sum_m p[i_m] with
/// normalize) and s = sum_j dw_j w_j: normalize gives w_m (dw_m - s) at
/// each selected expert i_m and 0 elsewhere; without, p_c (g_c - s) at every
/// expert c, g_c the dw_j of the slots that chose c. A repeated index adds.
std::string evalMoeGatingGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(3, 3));
  bool normalize = e.attrs.flag("normalize");
  RETURN_IF_ERROR(e.attrError());
  const Tensor &dw = e.operand(0), &logits = e.operand(1),
               &indices = e.operand(2);
  RETURN_IF_ERROR(e.expectFloat(0, "dweights"));
  RETURN_IF_ERROR(e.expectFloat(1, "logits"));
  RETURN_IF_ERROR(expectIntegers(e, 2, "indices"));
  if (!isFloat(e.out.dtype))
    return e.fail(
        std::string("dlogits must have a float element type, the graph "
                    "declares ") +
        dtypeName(e.out.dtype));
  if (logits.shape.empty() || dw.shape != indices.shape ||
      indices.shape.size() != logits.shape.size() ||
      !std::equal(logits.shape.begin(), logits.shape.end() - 1,
                  indices.shape.begin()))
    return e.fail("dweights " + shapeStr(dw.shape) + ", logits " +
                  shapeStr(logits.shape) + " and indices " +
                  shapeStr(indices.shape) +
                  " must be [..., k], [..., E] and [..., k] with the same "
                  "leading dimensions");
  int64_t E = logits.shape.back(), k = indices.shape.back();
  RETURN_IF_ERROR(checkExpertIndices(e, indices, E));
  e.out.shape = logits.shape;
  RETURN_IF_ERROR(e.expectDeclaredShape());
  int64_t rows = product(Shape(logits.shape.begin(), logits.shape.end() - 1));
  e.out.data.assign(logits.data.size(), 0.0);
  DType type = e.out.dtype;
  parallelFor(rows, 1 + 65536 / std::max<int64_t>(1, E + k),
              [&](int64_t begin, int64_t end) {
                std::vector<double> p(E), g(E);
                for (int64_t r = begin; r < end; ++r) {
                  softmaxRow(logits.data.data() + r * E, E, p.data());
                  const double *dwr = dw.data.data() + r * k;
                  const double *ir = indices.data.data() + r * k;
                  double *o = e.out.data.data() + r * E;
                  std::fill(g.begin(), g.end(), 0.0);
                  double S = 0, s = 0;
                  for (int64_t j = 0; j < k; ++j) {
                    double pj = p[static_cast<int64_t>(ir[j])];
                    S += pj;
                    s += dwr[j] * pj;
                  }
                  if (normalize) {
                    s /= S;
                    for (int64_t j = 0; j < k; ++j) {
                      auto c = static_cast<int64_t>(ir[j]);
                      g[c] += p[c] / S * (dwr[j] - s);
                    }
                    for (int64_t c = 0; c < E; ++c)
                      o[c] = roundToDType(g[c], type);
                  } else {
                    for (int64_t j = 0; j < k; ++j)
                      g[static_cast<int64_t>(ir[j])] += dwr[j];
                    for (int64_t c = 0; c < E; ++c)
                      o[c] = roundToDType(p[c] * (g[c] - s), type);
                  }
                }
              });
  return "";
}

/// The routed rows of expert_matmul and its weight gradient (operands 0 and
/// 2): indices L + [k] pick k experts for each token of L; the input is
/// L + [K] (one row per token, shared by its k slots) or L + [k, K] (one row
/// per slot).
struct ExpertRows {
  const Tensor *input = nullptr, *indices = nullptr;
  int64_t tokens = 0, k = 0, K = 0;
  bool perSlot = false;

  /// The input row of slot j of token r.
  const double *row(int64_t r, int64_t j) const {
    return input->data.data() + (perSlot ? r * k + j : r) * K;
  }
  int64_t expert(int64_t slot) const {
    return static_cast<int64_t>(indices->data[slot]);
  }
};

std::string readExpertRows(const OpEval &e, ExpertRows &rows) {
  const Tensor &input = e.operand(0), &indices = e.operand(2);
  RETURN_IF_ERROR(e.expectFloat(0, "input"));
  RETURN_IF_ERROR(expectIntegers(e, 2, "indices"));
  if (indices.shape.empty())
    return e.fail("indices must be [..., k], got a scalar");
  size_t rank = indices.shape.size();
  Shape leading(indices.shape.begin(), indices.shape.end() - 1);
  rows.perSlot = input.shape.size() == rank + 1;
  if ((input.shape.size() != rank && !rows.perSlot) ||
      Shape(input.shape.begin(), input.shape.end() - 1) !=
          (rows.perSlot ? indices.shape : leading))
    return e.fail("input " + shapeStr(input.shape) + " must be " +
                  shapeWith(leading, "K") + " (one row per token) or " +
                  shapeWith(indices.shape, "K") +
                  " (one row per slot) for indices " + shapeStr(indices.shape));
  rows.input = &input;
  rows.indices = &indices;
  rows.tokens = product(leading);
  rows.k = indices.shape.back();
  rows.K = input.shape.back();
  return "";
}

/// Operands (input, weight, indices L + [k]): slot j of token r multiplies
/// its input row by the weight of expert indices[r, j], [E, K, N] ([E, N, K]
/// with transpose_weight), giving L + [k, N].
std::string evalExpertMatmul(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(3, 3));
  bool transposed = e.attrs.flag("transpose_weight");
  RETURN_IF_ERROR(e.attrError());
  ExpertRows rows;
  RETURN_IF_ERROR(readExpertRows(e, rows));
  const Tensor &weight = e.operand(1);
  RETURN_IF_ERROR(e.expectFloat(1, "weight"));
  if (!isFloat(e.out.dtype))
    return e.fail(
        std::string("the result must have a float element type, the graph "
                    "declares ") +
        dtypeName(e.out.dtype));
  const char *layout = transposed ? "[E, N, K]" : "[E, K, N]";
  if (weight.shape.size() != 3)
    return e.fail("weight " + shapeStr(weight.shape) + " must be " + layout);
  int64_t E = weight.shape[0], K = weight.shape[transposed ? 2 : 1],
          N = weight.shape[transposed ? 1 : 2];
  if (K != rows.K)
    return e.fail(
        "contraction sizes differ: input " + shapeStr(rows.input->shape) +
        " and " + layout + " weight " + shapeStr(weight.shape) +
        " give K = " + std::to_string(rows.K) + " and " + std::to_string(K));
  RETURN_IF_ERROR(checkExpertIndices(e, *rows.indices, E));
  e.out.shape = rows.indices->shape;
  e.out.shape.push_back(N);
  RETURN_IF_ERROR(e.expectDeclaredShape());
  int64_t slots = rows.tokens * rows.k;
  e.out.data.assign(slots * N, 0.0);
  DType type = e.out.dtype;
  parallelFor(slots, 1 + 65536 / std::max<int64_t>(1, K * N),
              [&](int64_t begin, int64_t end) {
                std::vector<double> acc(N);
                for (int64_t s = begin; s < end; ++s) {
                  const double *x = rows.row(s / rows.k, s % rows.k);
                  const double *w = weight.data.data() + rows.expert(s) * K * N;
                  std::fill(acc.begin(), acc.end(), 0.0);
                  if (transposed) {
                    for (int64_t n = 0; n < N; ++n)
                      for (int64_t c = 0; c < K; ++c)
                        acc[n] += x[c] * w[n * K + c];
                  } else {
                    for (int64_t c = 0; c < K; ++c)
                      for (int64_t n = 0; n < N; ++n)
                        acc[n] += x[c] * w[c * N + n];
                  }
                  double *o = e.out.data.data() + s * N;
                  for (int64_t n = 0; n < N; ++n)
                    o[n] = roundToDType(acc[n], type);
                }
              });
  return "";
}

/// Operands (input, grad L + [k, N], indices L + [k]): expert_matmul's
/// weight gradient, [E, K, N] ([E, N, K] with transpose_weight) for E =
/// experts: each expert's the sum, over the slots that chose it in order,
/// of the slot's input row times its grad row; zeros where no slot chose.
std::string evalExpertMatmulWeightGrad(OpEval &e) {
  RETURN_IF_ERROR(e.expectOperands(3, 3));
  int64_t E = e.attrs.integer("experts", std::nullopt);
  bool transposed = e.attrs.flag("transpose_weight");
  RETURN_IF_ERROR(e.attrError());
  if (E < 1)
    return e.fail("experts " + std::to_string(E) + " must be >= 1");
  ExpertRows rows;
  RETURN_IF_ERROR(readExpertRows(e, rows));
  const Tensor &grad = e.operand(1);
  RETURN_IF_ERROR(e.expectFloat(1, "grad"));
  if (!isFloat(e.out.dtype))
    return e.fail(
        std::string("the result must have a float element type, the graph "
                    "declares ") +
        dtypeName(e.out.dtype));
  const Shape &slotShape = rows.indices->shape;
  if (grad.shape.size() != slotShape.size() + 1 ||
      Shape(grad.shape.begin(), grad.shape.end() - 1) != slotShape)
    return e.fail("grad " + shapeStr(grad.shape) + " must be " +
                  shapeWith(slotShape, "N") + " (the indices' shape, then N)");
  RETURN_IF_ERROR(checkExpertIndices(e, *rows.indices, E));
  int64_t K = rows.K, N = grad.shape.back();
  e.out.shape = transposed ? Shape{E, N, K} : Shape{E, K, N};
  RETURN_IF_ERROR(e.expectDeclaredShape());
  e.out.data.assign(product(e.out.shape), 0.0);
  if (e.out.data.empty())
    return "";
  // The slots sorted by expert (a counting sort, each expert's in order).
  int64_t slots = rows.tokens * rows.k;
  std::vector<int64_t> start(E + 1, 0), bySlot(slots);
  for (int64_t s = 0; s < slots; ++s)
    ++start[rows.expert(s) + 1];
  for (int64_t ex = 0; ex < E; ++ex)
    start[ex + 1] += start[ex];
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (int64_t s = 0; s < slots; ++s)
    bySlot[next[rows.expert(s)]++] = s;
  DType type = e.out.dtype;
  parallelFor(E, 1, [&](int64_t begin, int64_t end) {
    for (int64_t ex = begin; ex < end; ++ex) {
      double *o = e.out.data.data() + ex * K * N;
      for (int64_t i = start[ex]; i < start[ex + 1]; ++i) {
        int64_t s = bySlot[i];
        const double *in = rows.row(s / rows.k, s % rows.k);
        const double *g = grad.data.data() + s * N;
        for (int64_t c = 0; c < K; ++c)
          for (int64_t n = 0; n < N; ++n)
            o[transposed ? n * K + c : c * N + n] += in[c] * g[n];
      }
      for (int64_t i = 0; i < K * N; ++i)
        o[i] = roundToDType(o[i], type);
    }
  });
  return "";
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

using Evaluator = std::function<std::string(OpEval &)>;

/// An op's evaluator and how many results it may have.
struct OpDef {
  Evaluator fn;
  size_t minResults = 1, maxResults = 1;
  OpDef(Evaluator fn, size_t minResults = 1, size_t maxResults = 1)
      : fn(std::move(fn)), minResults(minResults), maxResults(maxResults) {}
  template <typename F> OpDef(F f) : OpDef(Evaluator(std::move(f))) {}
};

const std::map<std::string, OpDef> &evaluators() {
  static const std::map<std::string, OpDef> table = {
      {"matmul", evalMatmul},
      {"add",
       [](OpEval &e) {
         return binary(e, [](float a, float b) { return a + b; });
       }},
      {"sub",
       [](OpEval &e) {
         return binary(e, [](float a, float b) { return a - b; });
       }},
      {"mul",
       [](OpEval &e) {
         return binary(e, [](float a, float b) { return a * b; });
       }},
      {"div",
       [](OpEval &e) {
         return binary(e, [](float a, float b) { return a / b; });
       }},
      {"scale", evalScale},
      {"gelu", evalGelu},
      {"silu", [](OpEval &e) { return unary(e, silu); }},
      {"sigmoid", [](OpEval &e) { return unary(e, sigmoid); }},
      {"relu",
       [](OpEval &e) {
         return unary(e, [](float x) { return x > 0 ? x : 0.0f; });
       }},
      {"tanh",
       [](OpEval &e) {
         return unary(e, [](float x) { return std::tanh(x); });
       }},
      {"swiglu", evalSwiglu},
      {"dropout", evalDropout},
      {"layer_norm", [](OpEval &e) { return evalNorm(e, true); }},
      {"rms_norm", [](OpEval &e) { return evalNorm(e, false); }},
      {"softmax", evalSoftmax},
      {"reduce", evalReduce},
      {"rope", evalRope},
      {"embedding", evalEmbedding},
      {"attention", evalAttention},
      {"cross_entropy", evalCrossEntropy},
      {"reshape", evalReshape},
      {"transpose", evalTranspose},
      {"slice", evalSlice},
      {"concat", evalConcat},
      {"cast", evalCast},
      {"dequantize", evalDequantize},
      {"kv_cache_append", evalKVCacheAppend},
      {"activation_grad", evalActivationGrad},
      {"layer_norm_grad", {evalLayerNormGrad, 2, 3}},
      {"rms_norm_grad", {evalRmsNormGrad, 2, 2}},
      {"attention_grad", {evalAttentionGrad, 3, 4}},
      {"flash_attention", {evalFlashAttention, 2, 2}},
      {"flash_attention_grad", {evalFlashAttentionGrad, 3, 3}},
      {"embedding_grad", evalEmbeddingGrad},
      {"cross_entropy_grad", evalCrossEntropyGrad},
      {"linear_cross_entropy", {evalLinearCrossEntropy, 2, 2}},
      {"linear_cross_entropy_grad", {evalLinearCrossEntropyGrad, 2, 2}},
      {"moe_gating", {evalMoeGating, 2, 2}},
      {"moe_gating_grad", evalMoeGatingGrad},
      {"expert_matmul", evalExpertMatmul},
      {"expert_matmul_weight_grad", evalExpertMatmulWeightGrad},
      {"broadcast", evalBroadcast},
      {"constant", evalConstant},
      {"all_reduce", evalAllReduce},
      {"pad", evalPad},
      {"adamw", {evalAdamW, 3, 4}},
  };
  return table;
}

} // namespace

namespace {
DType widenedToF32(DType type) { return isFloat(type) ? DType::F32 : type; }

/// `graph` with every float value f32 and every cast to a float type a cast
/// to f32 (Precision::F32).
Graph widenToF32(const Graph &graph) {
  Graph widened = graph;
  for (ValueInfo &info : widened.values)
    info.dtype = widenedToF32(info.dtype);
  for (Op &op : widened.ops) {
    if (op.op != "cast")
      continue;
    auto type = op.attrs.find("element_type");
    if (type == op.attrs.end() || type->second.kind != Attr::Kind::String)
      continue; // evalCast names the problem
    if (std::optional<DType> parsed = parseDType(type->second.string))
      type->second.string = dtypeName(widenedToF32(*parsed));
  }
  return widened;
}
} // namespace

std::string evaluate(const Graph &declaredGraph,
                     std::map<std::string, Tensor> &values,
                     Precision precision) {
  Graph widened;
  if (precision == Precision::F32) {
    widened = widenToF32(declaredGraph);
    // Every narrow float value is exactly an f32 value.
    for (auto &[name, tensor] : values)
      tensor.dtype = widenedToF32(tensor.dtype);
  }
  const Graph &graph =
      precision == Precision::F32 ? widened : declaredGraph;
  std::map<std::string, const ValueInfo *> infos;
  for (const ValueInfo &info : graph.values)
    infos[info.name] = &info;
  for (size_t index = 0; index < graph.ops.size(); ++index) {
    const Op &op = graph.ops[index];
    std::string loc = op.loc.empty() ? "op #" + std::to_string(index) : op.loc;
    auto it = evaluators().find(op.op);
    if (it == evaluators().end())
      return loc + ": the reference interpreter does not support '" + op.op +
             "'";
    const OpDef &def = it->second;
    size_t nres = op.results.size();
    if (nres < def.minResults || nres > def.maxResults) {
      std::string count =
          def.minResults == def.maxResults
              ? (def.minResults == 1
                     ? std::string("exactly one result")
                     : std::to_string(def.minResults) + " results")
              : std::to_string(def.minResults) + " to " +
                    std::to_string(def.maxResults) + " results";
      return loc + ": '" + op.op + "' must have " + count + ", has " +
             std::to_string(nres);
    }
    std::vector<const ValueInfo *> resultInfos;
    for (const std::string &result : op.results) {
      auto info = infos.find(result);
      if (info == infos.end())
        return loc + ": result '" + result + "' of '" + op.op +
               "' is not listed in the graph's values";
      resultInfos.push_back(info->second);
    }
    std::vector<Tensor> outs(nres);
    for (size_t r = 0; r < nres; ++r)
      outs[r].dtype = resultInfos[r]->dtype;
    Op located = op;
    located.loc = loc;
    OpEval e(located, outs);
    for (const ValueInfo *info : resultInfos)
      e.declared.push_back(info->shape);
    for (const std::string &name : op.operands) {
      auto value = values.find(name);
      if (value == values.end())
        return loc + ": operand '" + name + "' of '" + op.op +
               "' has no value (neither an input nor defined by an earlier op)";
      const Tensor &t = value->second;
      if (static_cast<int64_t>(t.data.size()) != t.numElements())
        return loc + ": operand '" + name + "' holds " +
               std::to_string(t.data.size()) + " elements but its shape " +
               shapeStr(t.shape) + " has " + std::to_string(t.numElements());
      auto declared = infos.find(name);
      if (declared != infos.end() && (declared->second->dtype != t.dtype ||
                                      declared->second->shape != t.shape))
        return loc + ": operand '" + name + "' is " +
               typeStr(t.shape, t.dtype) + " but the graph declares " +
               typeStr(declared->second->shape, declared->second->dtype);
      e.in.push_back(&t);
    }
    RETURN_IF_ERROR(def.fn(e));
    for (size_t r = 0; r < nres; ++r)
      if (outs[r].shape != resultInfos[r]->shape)
        return loc + ": '" + op.op + "' computes shape " +
               shapeStr(outs[r].shape) + " for '" + op.results[r] +
               "' but the graph declares " + shapeStr(resultInfos[r]->shape);
    for (size_t r = 0; r < nres; ++r)
      values[op.results[r]] = std::move(outs[r]);
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Check
//===----------------------------------------------------------------------===//

double defaultTolerance(DType type) {
  switch (type) {
  case DType::F32:
    return 1e-5;
  case DType::BF16:
  case DType::F16:
    return 1e-2;
  case DType::F8E4M3FN:
    return 0.125;
  case DType::F8E5M2:
    return 0.25;
  default:
    return 0;
  }
}

std::array<uint32_t, 4> philox4x32x10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    uint64_t product0 = uint64_t{0xD2511F53u} * counter[0];
    uint64_t product1 = uint64_t{0xCD9E8D57u} * counter[2];
    counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key[0],
               static_cast<uint32_t>(product1),
               static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key[1],
               static_cast<uint32_t>(product0)};
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
  return counter;
}

bool dropoutKeeps(uint64_t seed, uint64_t index, double rate) {
  auto threshold = static_cast<uint32_t>(std::floor(rate * 4294967296.0));
  uint32_t word = philox4x32x10(
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)})[0];
  return word >= threshold;
}

double checkTolerance(DType type, double rtol) {
  bool fp8 = type == DType::F8E4M3FN || type == DType::F8E5M2;
  double tolerance = rtol > 0 ? rtol : defaultTolerance(type);
  return fp8 ? std::max(tolerance, defaultTolerance(type)) : tolerance;
}

Comparison compare(const Tensor &got, const Tensor &ref, double rtol) {
  Comparison c;
  c.tolerance = rtol > 0 ? rtol : defaultTolerance(ref.dtype);
  const double inf = std::numeric_limits<double>::infinity();
  if (got.shape != ref.shape || got.data.size() != ref.data.size()) {
    c.maxAbsError = c.maxRelError = inf;
    return c;
  }
  double sq = 0;
  int64_t finite = 0;
  for (double r : ref.data)
    if (std::isfinite(r)) {
      sq += r * r;
      ++finite;
    }
  double rms = finite ? std::sqrt(sq / finite) : 0;
  if (!(rms > 0) || !std::isfinite(rms))
    rms = 1;
  c.passed = true;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    double r = ref.data[i], g = got.data[i];
    double abs, rel;
    if (std::isnan(r) || std::isnan(g) || std::isinf(r)) {
      // Non-finite references must be matched exactly.
      bool same = (std::isnan(r) && std::isnan(g)) || r == g;
      abs = rel = same ? 0 : inf;
    } else {
      abs = std::fabs(g - r);
      rel = abs / std::max(std::fabs(r), rms);
    }
    c.maxAbsError = std::max(c.maxAbsError, abs);
    c.maxRelError = std::max(c.maxRelError, rel);
    if (!(rel <= c.tolerance))
      c.passed = false;
  }
  return c;
}

} // namespace memwall::reference
