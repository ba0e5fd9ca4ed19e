//===- GemmKernelTest.cpp - the GEMM kernel, run on the CPU ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs memwall's own tensor-core GEMM kernel (cp.async ring, ldmatrix,
// mma.sync, fused elementwise epilogue) in the SIMT interpreter and compares
// every output with the product and epilogue computed here in double
// precision from the same rounded inputs. The interpreter also fails a
// kernel on a shared-memory race (a missing barrier or wait), an
// out-of-bounds access or a divergent warp collective. Every tile
// configuration chooseGemmTiling can return runs at least once, on ragged M
// and N. The PTX of a 128x128 kernel is checked with ptxas for sm_90a and
// sm_80 where the CUDA toolkit is installed.
//
//===----------------------------------------------------------------------===//

#include "memwall/Simulator/SimtInterpreter.h"

#include "lib/Target/GemmCodegen.h"
#include "memwall/Analysis/GemmTiling.h"
#include "memwall/Pipelines.h"
#include "memwall/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace mlir;
using namespace memwall;

namespace {

/// The ops after the matmul, and what they compute from its result.
enum class Epilogue {
  None,
  Bias,
  BiasGeluErf,
  BiasResidual,
  ScaleCast,
  /// bias, tanh-GELU, times a per-row scale; the matmul's result is an
  /// output too.
  MidChainOutput,
  /// silu(x) + a scalar.
  SiluScalar,
  /// bias, residual add, layer_norm (weight and bias); the residual sum is
  /// an output too.
  BiasResidualLayerNorm,
  /// rms_norm, then a scale.
  RmsNormScale,
  /// bias, layer_norm with a weight and no bias.
  BiasLayerNormWithoutBias,
  /// A dual GEMM: silu(x·Wg) * (x·Wu), the SwiGLU of Llama's MLP.
  SwiGlu,
  /// The same with a bias on each product.
  BiasSwiGlu,
  /// bias, then the [B, S, N] result written heads-split ([B, H, S, D] by a
  /// reshape and a transpose), as attention reads v.
  BiasHeadsSplit,
  /// heads-split and rotated by rope, as q and k.
  HeadsRope,
  /// A dual GEMM of k and v: k heads-split and rotated, v heads-split.
  DualHeadsRope,
};

bool isDual(Epilogue epilogue) {
  return epilogue == Epilogue::SwiGlu || epilogue == Epilogue::BiasSwiGlu ||
         epilogue == Epilogue::DualHeadsRope;
}

bool isHeadsLayout(Epilogue epilogue) {
  return epilogue == Epilogue::BiasHeadsSplit ||
         epilogue == Epilogue::HeadsRope || epilogue == Epilogue::DualHeadsRope;
}

struct GemmCase {
  /// lhs batch (folded into M when rhs is rank 2, else GEMMs on grid.z).
  int64_t batch = 1;
  int64_t m = 16, n = 16, k = 16;
  bool f16 = false;
  /// f32 operands: the FFMA kernel.
  bool f32 = false;
  /// fp8 operands of this format ("f8E4M3FN", "f8E5M2"), the product and
  /// the epilogue bf16: the wgmma kernels' k32 path.
  std::string fp8;
  bool transposeLhs = false, transposeRhs = true;
  /// rhs has the batch dims too (a batched GEMM).
  bool batchedRhs = false;
  Epilogue epilogue = Epilogue::None;
  /// The tiling to generate; chooseGemmTiling's when unset (asked for
  /// whole rows with `wholeRows`; a given shape narrower than N then runs
  /// row-chunked).
  std::optional<GemmTileShape> shape;
  bool wholeRows = false;
  /// Opt into the sm_90a wgmma kernel (GemmProblem::wgmmaRequested).
  bool wgmma = false;
  /// And into its warp-specialized form
  /// (GemmProblem::warpSpecializedRequested).
  bool warpSpecialized = false;
  /// fp8 operands accumulate over the whole K in the tensor cores
  /// (GemmProblem::fp8FastAccumulation); else each k-step is promoted.
  bool fp8FastAccumulation = false;
  /// The rhs stored quantized ("i8", "i4", "f8E4M3FN", "f8E5M2") and
  /// dequantized in the kernel with scales of shape [scaleRows, scaleColumns]
  /// over the rhs as stored (rank 2); none when empty.
  std::string rhsStorage;
  int64_t scaleRows = 1, scaleColumns = 1;
  /// Asymmetric: zero points of the scales' shape (a single matmul only).
  bool zeroPoints = false;
  /// Heads-layout epilogues: the lhs is [batch, m, K] (m is the sequence
  /// S) and the result is split into heads of `headDim`; rope's positions
  /// are [batch, m] with `batchPositions` (else [m]), its rotation inverted
  /// with `inverseRope`.
  int64_t headDim = 0;
  bool batchPositions = false, inverseRope = false;
  /// The lhs is attention's output [batch, k / lhsHeadDim, m, lhsHeadDim],
  /// read through a transpose and reshape (a heads merge); 0: stored as
  /// read.
  int64_t lhsHeadDim = 0;
};

/// An fp8 byte's value, decoded independently of the kernel's bit trick:
/// sign, exponent and mantissa by the format's definition (e4m3fn: bias 7,
/// 3 mantissa bits; e5m2: bias 15, 2 bits).
double decodeFp8(uint8_t byte, bool e4m3) {
  int mantissaBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int exponent = (byte & 0x7F) >> mantissaBits;
  int mantissa = byte & ((1 << mantissaBits) - 1);
  double magnitude = exponent == 0
                         ? std::ldexp(mantissa, 1 - bias - mantissaBits)
                         : std::ldexp((1 << mantissaBits) + mantissa,
                                      exponent - bias - mantissaBits);
  return byte & 0x80 ? -magnitude : magnitude;
}

/// Whether `byte` is a finite value of its fp8 format.
bool isFiniteFp8(uint8_t byte, bool e4m3) {
  return e4m3 ? (byte & 0x7F) != 0x7F : (byte & 0x7C) != 0x7C;
}

/// A tensor's contents: the values (rounded to its element type, for the
/// reference) and their bytes (for the kernel).
struct TensorData {
  std::vector<double> values;
  std::vector<uint8_t> bytes;
};

class GemmKernelTest : public ::testing::Test {
protected:
  GemmKernelTest() : context(simt::createContext()) {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context->appendDialectRegistry(registry);
    context->loadAllAvailableDialects();
  }

  TensorData randomTensor(int64_t elements, Type element) {
    std::uniform_real_distribution<float> uniform(-1, 1);
    TensorData data;
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;
    data.bytes.resize(elements * bytes);
    // Rope's positions: token positions of a long context.
    if (element.isInteger(64)) {
      std::uniform_int_distribution<int64_t> position(0, 4095);
      for (int64_t i = 0; i < elements; ++i) {
        int64_t p = position(rng);
        data.values.push_back(static_cast<double>(p));
        std::memcpy(&data.bytes[8 * i], &p, 8);
      }
      return data;
    }
    // fp8 operands: random finite bytes of magnitude at most 2, subnormals
    // included.
    if (isa<Float8E4M3FNType, Float8E5M2Type>(element)) {
      bool e4m3 = isa<Float8E4M3FNType>(element);
      std::uniform_int_distribution<int> byteDistribution(0, 255);
      for (int64_t i = 0; i < elements; ++i) {
        uint8_t byte;
        do
          byte = static_cast<uint8_t>(byteDistribution(rng));
        while (!isFiniteFp8(byte, e4m3) ||
               std::fabs(decodeFp8(byte, e4m3)) > 2);
        data.bytes[i] = byte;
        data.values.push_back(decodeFp8(byte, e4m3));
      }
      return data;
    }
    // Quantized storage (1-byte, or packed i4): quantizeRhs fills it.
    if (bytes <= 1) {
      data.values.assign(elements, 0);
      return data;
    }
    for (int64_t i = 0; i < elements; ++i) {
      float x = uniform(rng);
      if (element.isF32()) {
        data.values.push_back(x);
        std::memcpy(&data.bytes[4 * i], &x, 4);
        continue;
      }
      uint16_t bits =
          element.isF16() ? simt::floatToF16(x) : simt::floatToBf16(x);
      data.values.push_back(element.isF16() ? simt::f16ToFloat(bits)
                                            : simt::bf16ToFloat(bits));
      std::memcpy(&data.bytes[2 * i], &bits, 2);
    }
    return data;
  }

  static double readElement(const std::vector<uint8_t> &bytes, int64_t i,
                            Type element) {
    if (element.isF32()) {
      float x;
      std::memcpy(&x, &bytes[4 * i], 4);
      return x;
    }
    uint16_t bits;
    std::memcpy(&bits, &bytes[2 * i], 2);
    return element.isF16() ? simt::f16ToFloat(bits) : simt::bf16ToFloat(bits);
  }

  /// The MLIR function of `c`: matmul then its epilogue.
  std::string source(const GemmCase &c) {
    std::string t = c.f32 ? "f32" : c.f16 ? "f16" : "bf16";
    std::string scalesArgument;
    auto tensor = [&](ArrayRef<int64_t> dims, StringRef element) {
      std::string text = "tensor<";
      for (int64_t d : dims)
        text += std::to_string(d) + "x";
      return text + element.str() + ">";
    };
    bool batched = c.batch > 1 || c.headDim > 0 || c.lhsHeadDim > 0;
    auto withBatch = [&](int64_t rows, int64_t columns, bool hasBatch) {
      SmallVector<int64_t> dims;
      if (hasBatch)
        dims.push_back(c.batch);
      dims.append({rows, columns});
      return dims;
    };
    // The operands' type: the values' unless fp8.
    std::string operand = c.fp8.empty() ? t : c.fp8;
    std::string lhs = tensor(c.transposeLhs ? withBatch(c.k, c.m, batched)
                                            : withBatch(c.m, c.k, batched),
                             operand);
    std::string rhs = tensor(c.transposeRhs ? withBatch(c.n, c.k, c.batchedRhs)
                                            : withBatch(c.k, c.n, c.batchedRhs),
                             operand);
    std::string result = tensor(withBatch(c.m, c.n, batched), t);
    std::string bias = tensor({c.n}, t);
    std::string attributes;
    if (c.transposeLhs || c.transposeRhs)
      attributes = std::string("{") + (c.transposeLhs ? "transpose_lhs" : "") +
                   (c.transposeLhs && c.transposeRhs ? ", " : "") +
                   (c.transposeRhs ? "transpose_rhs" : "") + "}";
    bool hasBias =
        c.epilogue != Epilogue::None && c.epilogue != Epilogue::ScaleCast &&
        c.epilogue != Epilogue::SiluScalar &&
        c.epilogue != Epilogue::RmsNormScale &&
        c.epilogue != Epilogue::SwiGlu && c.epilogue != Epilogue::HeadsRope &&
        c.epilogue != Epilogue::DualHeadsRope;
    // A heads layout of `value`: [B, S, H, D], then [B, H, S, D]; rotated
    // when `rope`. Returns the layout's last value.
    std::string positions =
        c.batchPositions ? tensor({c.batch, c.m}, "i64") : tensor({c.m}, "i64");
    auto headsLayout = [&](StringRef value, StringRef name, bool rope,
                           std::string &body) {
      int64_t heads = c.headDim > 0 ? c.n / c.headDim : 0;
      std::string split = tensor({c.batch, c.m, heads, c.headDim}, t);
      std::string split4 = tensor({c.batch, heads, c.m, c.headDim}, t);
      body += llvm::formatv("  %{0}s = memwall.reshape {1} [{2}, {3}, {4}, "
                            "{5}] : {6} -> {7}\n",
                            name, value, c.batch, c.m, heads, c.headDim, result,
                            split)
                  .str();
      body += llvm::formatv("  %{0}t = memwall.transpose %{0}s [0, 2, 1, 3] "
                            ": {1} -> {2}\n",
                            name, split, split4)
                  .str();
      if (!rope)
        return std::make_pair("%" + name.str() + "t", split4);
      body += llvm::formatv("  %{0}r = memwall.rope %{0}t, %p theta "
                            "1.000000e+04{1} : {2}, {3}\n",
                            name, c.inverseRope ? " inverse" : "", split4,
                            positions)
                  .str();
      return std::make_pair("%" + name.str() + "r", split4);
    };
    std::string args = "%a: " + lhs + ", %w: " + rhs;
    std::string body;
    if (c.lhsHeadDim > 0) {
      int64_t heads = c.k / c.lhsHeadDim;
      std::string stored = tensor({c.batch, heads, c.m, c.lhsHeadDim}, operand);
      std::string moved = tensor({c.batch, c.m, heads, c.lhsHeadDim}, operand);
      args = "%ah: " + stored + ", %w: " + rhs;
      body = "  %at = memwall.transpose %ah [0, 2, 1, 3] : " + stored + " -> " +
             moved + "\n" +
             llvm::formatv("  %a = memwall.reshape %at [{0}, {1}, {2}] : {3} "
                           "-> {4}\n",
                           c.batch, c.m, c.k, moved, lhs)
                 .str();
    }
    if (!c.rhsStorage.empty()) {
      std::string stored = tensor(c.transposeRhs ? withBatch(c.n, c.k, false)
                                                 : withBatch(c.k, c.n, false),
                                  c.rhsStorage);
      std::string scales = tensor({c.scaleRows, c.scaleColumns}, t);
      args = "%a: " + lhs + ", %wq: " + stored;
      body = "  %w = memwall.dequantize %wq, %ws" +
             std::string(c.zeroPoints ? " zero_points %wz" : "") + " : " +
             stored + ", " + scales + (c.zeroPoints ? ", " + scales : "") +
             " -> " + rhs + "\n";
      // Last, so the reference finds the other inputs where it expects.
      scalesArgument = ", %ws: " + scales;
      if (c.zeroPoints)
        scalesArgument += ", %wz: " + scales;
    }
    if (hasBias)
      args += ", %bias: " + bias;
    body += "  %r = memwall.matmul %a, %w" +
            std::string(hasBias ? " bias %bias " : " ") + attributes + " : " +
            lhs + ", " + rhs + (hasBias ? ", " + bias : "") + " -> " + result +
            "\n";
    std::string results = result, returned = "%r";
    switch (c.epilogue) {
    case Epilogue::None:
    case Epilogue::Bias:
      break;
    case Epilogue::BiasGeluErf:
      body += "  %g = memwall.gelu %r : " + result + "\n";
      returned = "%g";
      break;
    case Epilogue::BiasResidual:
      args += ", %res: " + result;
      body += "  %s = memwall.add %r, %res : " + result + ", " + result +
              " -> " + result + "\n";
      returned = "%s";
      break;
    case Epilogue::ScaleCast: {
      std::string wide = tensor(withBatch(c.m, c.n, batched), "f32");
      body += "  %s = memwall.scale %r by 1.250000e-01 : " + result + "\n" +
              "  %c = memwall.cast %s to f32 : " + result + " -> " + wide +
              "\n";
      results = wide;
      returned = "%c";
      break;
    }
    case Epilogue::MidChainOutput: {
      std::string rowScale = tensor(withBatch(c.m, 1, batched), t);
      args += ", %rs: " + rowScale;
      body += "  %g = memwall.gelu %r tanh : " + result + "\n" +
              "  %t = memwall.mul %g, %rs : " + result + ", " + rowScale +
              " -> " + result + "\n";
      results = result + ", " + result;
      returned = "%r, %t";
      break;
    }
    case Epilogue::BiasResidualLayerNorm:
      args += ", %res: " + result + ", %g: " + bias + ", %beta: " + bias;
      body += "  %s = memwall.add %r, %res : " + result + ", " + result +
              " -> " + result + "\n" + "  %n = memwall.layer_norm %s, %g, " +
              "%beta eps 1.000000e-05 : " + result + ", " + bias + ", " + bias +
              "\n";
      results = result + ", " + result;
      returned = "%s, %n";
      break;
    case Epilogue::BiasLayerNormWithoutBias:
      args += ", %g: " + bias;
      body += "  %n = memwall.layer_norm %r, %g eps 1.000000e-05 : " + result +
              ", " + bias + "\n";
      returned = "%n";
      break;
    case Epilogue::RmsNormScale:
      args += ", %g: " + bias;
      body += "  %n = memwall.rms_norm %r, %g eps 1.000000e-06 : " + result +
              ", " + bias + "\n" +
              "  %o = memwall.scale %n by 2.000000e+00 : " + result + "\n";
      returned = "%o";
      break;
    case Epilogue::BiasHeadsSplit:
      std::tie(returned, results) = headsLayout("%r", "v", false, body);
      break;
    case Epilogue::HeadsRope:
      args += ", %p: " + positions;
      std::tie(returned, results) = headsLayout("%r", "q", true, body);
      break;
    case Epilogue::DualHeadsRope: {
      args += ", %wu: " + rhs + ", %p: " + positions;
      body += "  %u = memwall.matmul %a, %wu " + attributes + " : " + lhs +
              ", " + rhs + " -> " + result + "\n";
      auto [k, kType] = headsLayout("%r", "k", true, body);
      auto [v, vType] = headsLayout("%u", "v", false, body);
      returned = k + ", " + v;
      results = kType + ", " + vType;
      break;
    }
    case Epilogue::SwiGlu:
    case Epilogue::BiasSwiGlu:
      // The up projection: the same lhs and layouts, its own weight (and
      // bias), stored and dequantized as the gate's.
      if (!c.rhsStorage.empty()) {
        std::string stored = tensor(c.transposeRhs ? withBatch(c.n, c.k, false)
                                                   : withBatch(c.k, c.n, false),
                                    c.rhsStorage);
        std::string scales = tensor({c.scaleRows, c.scaleColumns}, t);
        args += ", %wuq: " + stored;
        body += "  %wu = memwall.dequantize %wuq, %wus : " + stored + ", " +
                scales + " -> " + rhs + "\n";
        scalesArgument += ", %wus: " + scales;
      } else {
        args += ", %wu: " + rhs;
      }
      if (hasBias)
        args += ", %bu: " + bias;
      body += "  %u = memwall.matmul %a, %wu" +
              std::string(hasBias ? " bias %bu " : " ") + attributes + " : " +
              lhs + ", " + rhs + (hasBias ? ", " + bias : "") + " -> " +
              result + "\n" + "  %s = memwall.silu %r : " + result + "\n" +
              "  %o = memwall.mul %s, %u : " + result + ", " + result +
              " -> " + result + "\n";
      returned = "%o";
      break;
    case Epilogue::SiluScalar: {
      std::string scalar = tensor({}, t);
      args += ", %s0: " + scalar;
      body += "  %u = memwall.silu %r : " + result + "\n" +
              "  %v = memwall.add %u, %s0 : " + result + ", " + scalar +
              " -> " + result + "\n";
      returned = "%v";
      break;
    }
    }
    return "func.func @f(" + args + scalesArgument + ") -> (" + results +
           ") {\n" + body + "  return " + returned + " : " + results + "\n}";
  }

  /// How the kernel indexes `value` from the matmul's result shape.
  static KernelInput classify(Value value, ArrayRef<int64_t> iteration) {
    KernelInput input;
    input.value = value;
    auto type = cast<RankedTensorType>(value.getType());
    ArrayRef<int64_t> shape = type.getShape();
    int64_t elements = type.getNumElements();
    int64_t total = 1;
    for (int64_t d : iteration)
      total *= d;
    if (shape == iteration)
      return input;
    if (elements == 1) {
      input.pattern = AccessPattern::Scalar;
      return input;
    }
    if (shape.size() <= iteration.size() &&
        shape == iteration.take_back(shape.size())) {
      input.pattern = AccessPattern::Suffix;
      input.innerElements = elements;
      return input;
    }
    input.pattern = AccessPattern::Outer;
    input.innerElements = total / elements;
    return input;
  }

  /// The kernel of the function's ops, as the fusion analysis describes a
  /// GEMM with its epilogue.
  KernelAnalysis analyze(func::FuncOp func, const GemmCase &c,
                         const GPUTarget &target) {
    KernelAnalysis analysis;
    analysis.kind = FusionKind::Gemm;
    MatmulOp matmul;
    for (Operation &op : func.getBody().front()) {
      if (isa<func::ReturnOp>(op)) {
        analysis.outputs.append(op.operand_begin(), op.operand_end());
        continue;
      }
      // The first matmul is the anchor, a second one its dual sibling.
      if (auto found = dyn_cast<MatmulOp>(op)) {
        if (matmul)
          analysis.siblingMatmul = found;
        else
          matmul = found;
      }
      analysis.ops.push_back(&op);
    }
    analysis.anchor = matmul;
    auto resultType = cast<RankedTensorType>(matmul.getType());
    analysis.iterationShape.assign(resultType.getShape().begin(),
                                   resultType.getShape().end());
    for (Operation *op : analysis.ops)
      for (Value operand : op->getOperands())
        if (isa<BlockArgument>(operand) &&
            llvm::none_of(analysis.inputs, [&](const KernelInput &input) {
              return input.value == operand;
            }))
          analysis.inputs.push_back(classify(operand, analysis.iterationShape));
    if (auto dequantize = matmul.getRhs().getDefiningOp<DequantizeOp>()) {
      // As the fusion analysis has them: read by the main loop only. The
      // lhs first, the stored rhs second, the scales and then the zero
      // points last (the reference's order of the function's arguments).
      auto rank = [&](const KernelInput &input) {
        if (input.value == matmul.getLhs())
          return 0;
        if (input.value == dequantize.getInput())
          return 1;
        auto user = dyn_cast<DequantizeOp>(*input.value.getUsers().begin());
        if (user && input.value == user.getScales())
          return 3;
        if (user && input.value == user.getZeroPoints())
          return 4;
        return 2;
      };
      llvm::stable_sort(analysis.inputs,
                        [&](const KernelInput &x, const KernelInput &y) {
                          return rank(x) < rank(y);
                        });
      for (KernelInput &input : analysis.inputs)
        if (rank(input) != 0 &&
            isa<DequantizeOp>(*input.value.getUsers().begin())) {
          input.pattern = AccessPattern::Full;
          input.innerElements = 1;
        }
    }
    std::string why;
    FailureOr<GemmProblem> problem = getGemmProblem(matmul, &why);
    EXPECT_TRUE(succeeded(problem)) << why;
    if (analysis.siblingMatmul)
      problem->rhsOperands = 2;
    if (c.lhsHeadDim > 0) {
      FailureOr<std::optional<GemmLhsHeadsMerge>> merge =
          matchGemmLhsHeadsMerge(analysis.ops, matmul, &why);
      EXPECT_TRUE(succeeded(merge) && *merge) << why;
      if (succeeded(merge) && *merge) {
        analysis.lhsHeadsMerge = *merge;
        problem->lhsHeads = (*merge)->numHeads;
        problem->lhsHeadDim = (*merge)->headDim;
        problem->lhsSeqLen = (*merge)->seqLen;
        // Read by the main loop only, as stored.
        analysis.inputs.front().pattern = AccessPattern::Full;
      }
    }
    if (isHeadsLayout(c.epilogue)) {
      // As the fusion analysis has them: the layouts, and the positions
      // read by rope alone.
      FailureOr<SmallVector<GemmHeadsLayout, 2>> layouts =
          matchGemmHeadsLayouts(analysis.ops, resultType.getShape(),
                                problem->rhsOperands, &why);
      EXPECT_TRUE(succeeded(layouts)) << why;
      if (succeeded(layouts))
        analysis.headsLayouts = *layouts;
      for (KernelInput &input : analysis.inputs)
        if (cast<RankedTensorType>(input.value.getType())
                .getElementType()
                .isInteger(64)) {
          input.pattern = AccessPattern::Full;
          input.innerElements = 1;
        }
      // A rope needs whole heads in a tile.
      if (llvm::any_of(analysis.headsLayouts,
                       [](GemmHeadsLayout heads) { return bool(heads.rope); }))
        problem->epilogueColumnGroup = c.headDim;
    }
    problem->wgmmaRequested = c.wgmma;
    problem->warpSpecializedRequested = c.warpSpecialized;
    problem->fp8FastAccumulation = c.fp8FastAccumulation;
    analysis.gemm = *problem;
    int64_t epilogueValues = static_cast<int64_t>(analysis.ops.size());
    int64_t rowBufferBytes = c.wholeRows ? (c.f32 ? 4 : 2) : 0;
    FailureOr<GemmTiling> tiling =
        c.shape ? getGemmTiling(*problem, target, epilogueValues, *c.shape,
                                &why, rowBufferBytes)
                : chooseGemmTiling(*problem, target, epilogueValues, &why,
                                   c.wholeRows);
    EXPECT_TRUE(succeeded(tiling)) << why;
    analysis.tiling = *tiling;
    return analysis;
  }

  /// The function's outputs computed in double from the rounded inputs,
  /// with the epilogue in exact arithmetic on the unrounded product (as the
  /// kernel keeps it in f32), except that a norm's input is rounded to the
  /// element type first (the kernel holds it as the unfused graph stores
  /// it).
  std::vector<std::vector<double>>
  reference(const GemmCase &c, const std::vector<TensorData> &inputs) {
    int64_t batches = c.batch;
    // A heads-merged lhs is stored [B, H, S, D]: read it as [B·S, H·D].
    std::vector<double> merged;
    if (c.lhsHeadDim > 0) {
      int64_t d = c.lhsHeadDim, heads = c.k / d;
      merged.resize(inputs[0].values.size());
      for (int64_t z = 0; z < batches; ++z)
        for (int64_t i = 0; i < c.m; ++i)
          for (int64_t kk = 0; kk < c.k; ++kk)
            merged[(z * c.m + i) * c.k + kk] =
                inputs[0].values[((z * heads + kk / d) * c.m + i) * d + kk % d];
    }
    const std::vector<double> &a = merged.empty() ? inputs[0].values : merged,
                              &w = inputs[1].values;
    // A dual GEMM's inputs: lhs, gate weight, (gate bias,) up weight, (up
    // bias).
    bool dualBias = c.epilogue == Epilogue::BiasSwiGlu;
    const std::vector<double> *up =
        isDual(c.epilogue) ? &inputs[dualBias ? 3 : 2].values : nullptr;
    std::vector<std::vector<double>> outputs(
        c.epilogue == Epilogue::MidChainOutput ||
                c.epilogue == Epilogue::BiasResidualLayerNorm ||
                c.epilogue == Epilogue::DualHeadsRope
            ? 2
            : 1);
    for (int64_t z = 0; z < batches; ++z)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double x = 0, y = 0;
          for (int64_t kk = 0; kk < c.k; ++kk) {
            double lhs = c.transposeLhs ? a[(z * c.k + kk) * c.m + i]
                                        : a[(z * c.m + i) * c.k + kk];
            int64_t rz = c.batchedRhs ? z : 0;
            int64_t at = c.transposeRhs ? (rz * c.n + j) * c.k + kk
                                        : (rz * c.k + kk) * c.n + j;
            x += lhs * w[at];
            if (up)
              y += lhs * (*up)[at];
          }
          int64_t flat = (z * c.m + i) * c.n + j;
          // Ahead of a norm the kernel rounds the product (with its bias)
          // to the element type, as the unfused graph stores it.
          auto rounded = [&](double v) {
            if (c.f32)
              return v;
            return c.f16 ? double(simt::f16ToFloat(simt::floatToF16(v)))
                         : double(simt::bf16ToFloat(simt::floatToBf16(v)));
          };
          switch (c.epilogue) {
          case Epilogue::None:
            outputs[0].push_back(x);
            break;
          case Epilogue::Bias:
            outputs[0].push_back(x + inputs[2].values[j]);
            break;
          case Epilogue::BiasGeluErf: {
            double y = x + inputs[2].values[j];
            outputs[0].push_back(0.5 * y * (1 + std::erf(y / std::sqrt(2.0))));
            break;
          }
          case Epilogue::BiasResidual:
            outputs[0].push_back(x + inputs[2].values[j] +
                                 inputs[3].values[flat]);
            break;
          case Epilogue::ScaleCast:
            outputs[0].push_back(x * 0.125);
            break;
          case Epilogue::MidChainOutput: {
            double y = x + inputs[2].values[j];
            double g = 0.5 * y *
                       (1 + std::tanh(std::sqrt(2 / M_PI) *
                                      (y + 0.044715 * y * y * y)));
            outputs[0].push_back(y);
            outputs[1].push_back(g * inputs[3].values[z * c.m + i]);
            break;
          }
          case Epilogue::SiluScalar:
            outputs[0].push_back(x / (1 + std::exp(-x)) + inputs[2].values[0]);
            break;
          case Epilogue::BiasResidualLayerNorm:
            outputs[0].push_back(rounded(x + inputs[2].values[j]) +
                                 inputs[3].values[flat]);
            break;
          case Epilogue::RmsNormScale:
            outputs[0].push_back(rounded(x));
            break;
          case Epilogue::BiasLayerNormWithoutBias:
            outputs[0].push_back(rounded(x + inputs[2].values[j]));
            break;
          case Epilogue::BiasHeadsSplit:
            outputs[0].push_back(x + inputs[2].values[j]);
            break;
          case Epilogue::HeadsRope:
            outputs[0].push_back(x);
            break;
          case Epilogue::DualHeadsRope:
            outputs[0].push_back(x);
            outputs[1].push_back(y);
            break;
          case Epilogue::SwiGlu:
          case Epilogue::BiasSwiGlu: {
            if (dualBias) {
              x += inputs[2].values[j];
              y += inputs[4].values[j];
            }
            outputs[0].push_back(x / (1 + std::exp(-x)) * y);
            break;
          }
          }
        }
    if (isHeadsLayout(c.epilogue))
      headsLayoutReference(c, inputs, outputs);
    // Norms over each row of N.
    if (c.epilogue == Epilogue::BiasResidualLayerNorm ||
        c.epilogue == Epilogue::RmsNormScale ||
        c.epilogue == Epilogue::BiasLayerNormWithoutBias) {
      bool layerNorm = c.epilogue != Epilogue::RmsNormScale;
      std::vector<double> x = outputs[0];
      if (!c.f32)
        for (double &v : x)
          v = c.f16 ? simt::f16ToFloat(simt::floatToF16(v))
                    : simt::bf16ToFloat(simt::floatToBf16(v));
      std::vector<double> normalized(x.size());
      for (size_t row = 0; row * c.n < x.size(); ++row) {
        const double *v = &x[row * c.n];
        double mean = 0, variance = 0;
        if (layerNorm) {
          for (int64_t j = 0; j < c.n; ++j)
            mean += v[j] / c.n;
        }
        for (int64_t j = 0; j < c.n; ++j)
          variance += (v[j] - mean) * (v[j] - mean) / c.n;
        double rstd = 1 / std::sqrt(variance + (layerNorm ? 1e-5 : 1e-6));
        for (int64_t j = 0; j < c.n; ++j)
          normalized[row * c.n + j] =
              c.epilogue == Epilogue::BiasResidualLayerNorm
                  ? (v[j] - mean) * rstd * inputs[4].values[j] +
                        inputs[5].values[j]
              : layerNorm ? (v[j] - mean) * rstd * inputs[3].values[j]
                          : 2 * v[j] * rstd * inputs[2].values[j];
      }
      if (c.epilogue == Epilogue::BiasResidualLayerNorm)
        outputs[1] = normalized;
      else
        outputs[0] = normalized;
    }
    return outputs;
  }

  /// Heads-layout outputs from their values in the GEMM's layout: [B, S, H,
  /// D] moved to [B, H, S, D]; the first output rotated by rope (when the
  /// case has one) from its input rounded to the element type, as the
  /// unfused graph stores it: x_d cos θ ∓ x_{d ± D/2} sin θ, θ = position ·
  /// 10000^(-2 (d mod D/2) / D) (negated for the inverse).
  void headsLayoutReference(const GemmCase &c,
                            const std::vector<TensorData> &inputs,
                            std::vector<std::vector<double>> &outputs) {
    int64_t batches = c.batch, seq = c.m, d = c.headDim, heads = c.n / d;
    for (auto [o, values] : llvm::enumerate(outputs)) {
      std::vector<double> moved(values.size());
      for (int64_t b = 0; b < batches; ++b)
        for (int64_t s = 0; s < seq; ++s)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t e = 0; e < d; ++e)
              moved[((b * heads + h) * seq + s) * d + e] =
                  values[(b * seq + s) * c.n + h * d + e];
      values = std::move(moved);
      if (o != 0 || c.epilogue == Epilogue::BiasHeadsSplit)
        continue;
      std::vector<double> rounded = values;
      for (double &v : rounded)
        v = c.f16 ? double(simt::f16ToFloat(simt::floatToF16(v)))
                  : double(simt::bf16ToFloat(simt::floatToBf16(v)));
      const std::vector<double> &positions = inputs.back().values;
      for (int64_t b = 0; b < batches; ++b)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t s = 0; s < seq; ++s) {
            double position = positions[c.batchPositions ? b * seq + s : s];
            int64_t row = ((b * heads + h) * seq + s) * d;
            for (int64_t e = 0; e < d; ++e) {
              double angle = position *
                             std::pow(10000.0, -2.0 * (e % (d / 2)) / d) *
                             (c.inverseRope ? -1 : 1);
              bool first = e < d / 2;
              double partner = rounded[row + (first ? e + d / 2 : e - d / 2)];
              values[row + e] = rounded[row + e] * std::cos(angle) +
                                (first ? -1 : 1) * partner * std::sin(angle);
            }
          }
    }
  }

  /// Generates the kernel of `c` on `target`, runs it in the interpreter
  /// and compares every output with the reference; returns the tiling.
  GemmTiling check(const GemmCase &c, const GPUTarget &target,
                   const std::function<void(std::vector<std::vector<double>> &)>
                       &corruptReference = nullptr) {
    std::string text = source(c);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(text, context.get());
    EXPECT_TRUE(module) << text;
    if (!module)
      return {};
    auto func = *module->getOps<func::FuncOp>().begin();
    KernelAnalysis analysis = analyze(func, c, target);

    OpBuilder builder(context.get());
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(builder.getUnknownLoc());
    (*kernels)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                        builder.getUnitAttr());
    builder.setInsertionPointToStart(kernels->getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, builder.getUnknownLoc(), "kernels");
    bool splitK = analysis.tiling.splitK > 1;
    FailureOr<gpu::GPUFuncOp> kernel =
        emitGemmKernel(gpuModule, "gemm", analysis, analysis.outputs);
    EXPECT_TRUE(succeeded(kernel));
    if (failed(kernel))
      return {};
    EXPECT_TRUE(succeeded(verify(*kernels)));

    std::vector<TensorData> inputs;
    for (const KernelInput &input : analysis.inputs) {
      auto type = cast<RankedTensorType>(input.value.getType());
      inputs.push_back(
          randomTensor(type.getNumElements(), type.getElementType()));
    }
    if (!c.rhsStorage.empty()) {
      // The scales are last: the gate's (or only) rhs's, then the up's (or
      // the zero points).
      bool dual = isDual(c.epilogue);
      size_t scales = inputs.size() - (dual || c.zeroPoints ? 2 : 1);
      quantizeRhs(c, inputs[1], inputs[scales],
                  c.zeroPoints ? &inputs.back() : nullptr);
      if (dual)
        quantizeRhs(c, inputs[c.epilogue == Epilogue::BiasSwiGlu ? 3 : 2],
                    inputs.back());
    }
    std::vector<std::vector<uint8_t>> outputBytes;
    for (Value output : analysis.outputs) {
      auto type = cast<RankedTensorType>(output.getType());
      outputBytes.emplace_back(
          type.getNumElements() * type.getElementTypeBitWidth() / 8, 0xff);
    }
    std::vector<MutableArrayRef<uint8_t>> args;
    // Split K: the partials are garbage, as an arena's reused bytes would
    // be; the counters start at zero.
    std::vector<uint8_t> partials(
        getGemmSplitKPartialElements(analysis.tiling, analysis.gemm) * 4, 0xff);
    std::vector<uint8_t> counters(getGemmSplitKCounters(analysis.tiling) * 4,
                                  0);
    for (TensorData &input : inputs)
      args.push_back(input.bytes);
    for (std::vector<uint8_t> &bytes : outputBytes)
      args.push_back(bytes);
    if (splitK) {
      args.push_back(partials);
      args.push_back(counters);
    }
    simt::LaunchConfig launch;
    launch.grid = analysis.tiling.grid;
    launch.block = getGemmBlockSize(analysis.tiling);
    launch.dynamicSharedBytes = analysis.tiling.sharedBytes;
    // The wgmma kernel's operands: tensor maps over the inputs as row-major
    // matrices, as the host builds them.
    // The view has the box's rank: the tensor's inner dims, the leading
    // ones folded into the outermost (a 2-D [M, K], or a heads-merged lhs's
    // [B, H, S, D] as it is).
    for (auto [i, type] : llvm::enumerate(kernel->getArgumentTypes()))
      if (auto map = dyn_cast<nvgpu::TensorMapDescriptorType>(type)) {
        auto tensor =
            cast<RankedTensorType>(analysis.inputs[i].value.getType());
        int64_t inner = map.getTensor().getRank() - 1;
        std::vector<int64_t> shape(tensor.getShape().take_back(inner).begin(),
                                   tensor.getShape().take_back(inner).end());
        int64_t innerElements = 1;
        for (int64_t d : shape)
          innerElements *= d;
        shape.insert(shape.begin(), tensor.getNumElements() / innerElements);
        launch.tensorMaps.push_back({static_cast<unsigned>(i), shape, {}});
      }
    llvm::Error error = simt::runKernel(*kernel, launch, args);
    EXPECT_FALSE(error) << llvm::toString(std::move(error));
    // The last block of each tile set its counter back to zero.
    if (splitK) {
      EXPECT_TRUE(llvm::all_of(counters, [](uint8_t b) { return b == 0; }))
          << "a split-K launch left a tile's arrival counter nonzero";
    }

    std::vector<std::vector<double>> expected = reference(c, inputs);
    if (corruptReference)
      corruptReference(expected);
    for (auto [o, output] : llvm::enumerate(analysis.outputs)) {
      Type element = cast<RankedTensorType>(output.getType()).getElementType();
      // The product and epilogue run in f32; a 16-bit output is rounded
      // once (2^-9 relative for bf16, 2^-12 for f16).
      double relative = element.isF32()   ? 1e-5
                        : element.isF16() ? 1.0 / 1024
                                          : 1.0 / 128;
      // A norm's or rope's input is rounded to 16 bits from f32 in the
      // kernel and from double here: where the two round apart, one more
      // ulp.
      bool hasNorm = llvm::any_of(analysis.ops, [](Operation *op) {
        return isa<LayerNormOp, RmsNormOp, RopeOp>(op);
      });
      if (hasNorm && !element.isF32())
        relative *= 2;
      int64_t mismatches = 0;
      std::string firstMismatches;
      for (auto [i, want] : llvm::enumerate(expected[o])) {
        double got = readElement(outputBytes[o], i, element);
        if (std::fabs(got - want) <= relative * std::max(1.0, std::fabs(want)))
          continue;
        if (mismatches++ < 5)
          firstMismatches += llvm::formatv("\n  element {0}: got {1}, "
                                           "expected {2}",
                                           i, got, want);
      }
      EXPECT_EQ(mismatches, 0) << "output " << o << firstMismatches;
    }
    return analysis.tiling;
  }

  /// The stored rhs of a quantized case: random finite bytes of its type
  /// (i8: [-127, 127]) in `stored.bytes`, and in `stored.values` what
  /// memwall.dequantize defines: the decoded value times its block's scale
  /// from `scales`, in f32, rounded once to the operand type.
  void quantizeRhs(const GemmCase &c, TensorData &stored,
                   const TensorData &scales,
                   const TensorData *zeroPoints = nullptr) {
    int64_t rows = c.transposeRhs ? c.n : c.k;
    int64_t columns = c.transposeRhs ? c.k : c.n;
    bool e4m3 = c.rhsStorage == "f8E4M3FN";
    bool packed = c.rhsStorage == "i4";
    std::uniform_int_distribution<int> byteDistribution(0, 255);
    // Packed i4: two a byte, the even element in the low nibble.
    stored.bytes.assign(packed ? (rows * columns + 1) / 2 : rows * columns, 0);
    stored.values.assign(rows * columns, 0);
    for (int64_t i = 0; i < rows * columns; ++i) {
      uint8_t byte;
      double decoded;
      if (packed) {
        decoded = std::uniform_int_distribution<int>(-8, 7)(rng);
        stored.bytes[i / 2] |= static_cast<uint8_t>(
            (static_cast<unsigned>(decoded) & 0xF) << (4 * (i % 2)));
      } else if (c.rhsStorage == "i8") {
        decoded = std::uniform_int_distribution<int>(-127, 127)(rng);
        byte = static_cast<uint8_t>(static_cast<int8_t>(decoded));
      } else {
        do
          byte = static_cast<uint8_t>(byteDistribution(rng));
        while (!isFiniteFp8(byte, e4m3));
        decoded = decodeFp8(byte, e4m3);
      }
      if (!packed)
        stored.bytes[i] = byte;
      int64_t row = i / columns, column = i % columns;
      int64_t scaleIndex = row / (rows / c.scaleRows) * c.scaleColumns +
                           column / (columns / c.scaleColumns);
      float shifted = static_cast<float>(decoded);
      if (zeroPoints)
        shifted -= static_cast<float>(zeroPoints->values[scaleIndex]);
      float product = shifted * static_cast<float>(scales.values[scaleIndex]);
      stored.values[i] =
          c.f16 ? double(simt::f16ToFloat(simt::floatToF16(product)))
                : double(simt::bf16ToFloat(simt::floatToBf16(product)));
    }
  }

  /// Whether a dual GEMM (bf16, 256x256x256) can take `shape` on `target`.
  bool dualFits(const GemmTileShape &shape, const GPUTarget &target,
                std::string *why = nullptr) {
    GemmProblem problem;
    problem.m = problem.n = problem.k = 256;
    problem.elementType = BFloat16Type::get(context.get());
    problem.transposeRhs = true;
    problem.rhsOperands = 2;
    return succeeded(getGemmTiling(problem, target, 4, shape, why));
  }

  /// The PTX of `c`'s kernel on `target`, through the kernels-to-PTX
  /// pipeline as memwall-compile runs it (registerPtxLowering first);
  /// `analysis` receives the kernel's analysis. Empty on a failure.
  std::string lowerToPtx(const GemmCase &c, const GPUTarget &target,
                         KernelAnalysis &analysis) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source(c), context.get());
    EXPECT_TRUE(module);
    if (!module)
      return "";
    analysis = analyze(*module->getOps<func::FuncOp>().begin(), c, target);
    OpBuilder builder(context.get());
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(builder.getUnknownLoc());
    (*kernels)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                        builder.getUnitAttr());
    builder.setInsertionPointToStart(kernels->getBody());
    auto targetAttr = NVVM::NVVMTargetAttr::get(
        context.get(), /*optLevel=*/3, "nvptx64-nvidia-cuda", target.smArch,
        target.smArch == "sm_80" ? "+ptx70" : "+ptx80");
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, builder.getUnknownLoc(), "kernels",
                                 builder.getArrayAttr({targetAttr}));
    bool emitted = succeeded(
        emitGemmKernel(gpuModule, "gemm", analysis, analysis.outputs));
    EXPECT_TRUE(emitted);
    PassManager pm(context.get());
    buildKernelsToPTXPipeline(pm, "");
    bool lowered = emitted && succeeded(pm.run(*kernels));
    EXPECT_TRUE(lowered);
    if (!lowered)
      return "";
    std::string ptx;
    for (auto binary : kernels->getOps<gpu::BinaryOp>())
      for (Attribute object : binary.getObjects())
        ptx += cast<gpu::ObjectAttr>(object).getObject().getValue().str();
    return ptx;
  }

  std::unique_ptr<MLIRContext> context;
  std::mt19937 rng{1234};
  const GPUTarget &h100 = *lookupBuiltinGPUTarget("h100-sxm");
  const GPUTarget &a100 = *lookupBuiltinGPUTarget("a100-80gb");
};

/// What memwall-compile registers for the PTX pipeline: the to-LLVM
/// conversion interfaces, the NVVM target and the LLVM IR translations.
void registerPtxLowering(MLIRContext &context) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  context.appendDialectRegistry(registry);
}

/// ptxas, where the CUDA toolkit is installed.
std::optional<std::string> findPtxas() {
  std::string ptxas = "/usr/local/cuda/bin/ptxas";
  if (!llvm::sys::fs::can_execute(ptxas))
    return std::nullopt;
  return ptxas;
}

/// Runs `ptxas -arch=<arch> -v` on `ptx`, writing the cubin to `cubin`
/// (/dev/null when empty); returns its exit status and output.
std::pair<int, std::string> assemble(StringRef ptxas, StringRef ptx,
                                     StringRef arch, StringRef cubin = "") {
  SmallString<64> ptxPath, logPath;
  if (llvm::sys::fs::createTemporaryFile("gemm", "ptx", ptxPath) ||
      llvm::sys::fs::createTemporaryFile("gemm", "log", logPath))
    return {-1, "cannot create temporary files"};
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    os << ptx;
  }
  std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                          logPath.str()};
  std::string output = cubin.empty() ? "/dev/null" : cubin.str();
  int rc = llvm::sys::ExecuteAndWait(
      ptxas,
      {ptxas, ("-arch=" + arch).str(), "-v", ptxPath.str().str(), "-o",
       output},
      std::nullopt, redirects);
  auto log = llvm::MemoryBuffer::getFile(logPath);
  std::string text = log ? (*log)->getBuffer().str() : "no ptxas log";
  llvm::sys::fs::remove(ptxPath);
  llvm::sys::fs::remove(logPath);
  return {rc, text};
}

/// Expects `ptx` to assemble for `arch` without spills in at most the
/// registers `analysis`' tiling estimates; returns the registers used (-1
/// when ptxas failed).
int64_t expectAssemblesWithoutSpills(StringRef ptxas, StringRef ptx,
                                     StringRef arch,
                                     const KernelAnalysis &analysis) {
  auto [rc, text] = assemble(ptxas, ptx, arch);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("0 bytes spill stores, 0 bytes spill loads"),
            std::string::npos)
      << text;
  size_t used = text.find("Used ");
  EXPECT_NE(used, std::string::npos) << text;
  if (rc != 0 || used == std::string::npos)
    return -1;
  int64_t registers = std::atoll(text.c_str() + used + 5);
  EXPECT_LE(registers, analysis.tiling.registersPerThread) << text;
  return registers;
}

/// An m x n x k GEMM with `epilogue` (bf16, rhs [N, K]).
GemmCase gemmCase(int64_t m, int64_t n, int64_t k, Epilogue epilogue) {
  GemmCase c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.epilogue = epilogue;
  return c;
}

GemmCase ragged(Epilogue epilogue) { return gemmCase(37, 72, 40, epilogue); }

} // namespace

TEST_F(GemmKernelTest, PlainProductWithRaggedMAndNMatches) {
  check(ragged(Epilogue::None), h100);
}

TEST_F(GemmKernelTest, BiasMatches) { check(ragged(Epilogue::Bias), h100); }

TEST_F(GemmKernelTest, BiasAndErfGeluMatch) {
  check(ragged(Epilogue::BiasGeluErf), a100);
}

TEST_F(GemmKernelTest, BiasAndResidualAddMatch) {
  GemmCase c = ragged(Epilogue::BiasResidual);
  c.m = 130;
  c.n = 66;
  c.k = 64;
  check(c, h100);
}

TEST_F(GemmKernelTest, ScaleAndCastToF32Match) {
  GemmCase c = ragged(Epilogue::ScaleCast);
  c.f16 = true;
  check(c, h100);
}

TEST_F(GemmKernelTest, IntermediateOutputAndPerRowScaleMatch) {
  GemmCase c = ragged(Epilogue::MidChainOutput);
  c.batch = 2;
  check(c, h100);
}

TEST_F(GemmKernelTest, SiluAndScalarAddOnOddNUseScalarStores) {
  GemmCase c = ragged(Epilogue::SiluScalar);
  c.n = 45;
  c.f16 = true;
  check(c, h100);
}

TEST_F(GemmKernelTest, RowMajorRhsMatches) {
  GemmCase c = ragged(Epilogue::Bias);
  c.transposeRhs = false;
  check(c, h100);
}

TEST_F(GemmKernelTest, TransposedLhsMatches) {
  GemmCase c = ragged(Epilogue::Bias);
  c.m = 40;
  c.transposeLhs = true;
  c.transposeRhs = false;
  c.f16 = true;
  check(c, a100);
}

TEST_F(GemmKernelTest, BatchedGemmOnGridZMatches) {
  GemmCase c = ragged(Epilogue::BiasGeluErf);
  c.batch = 3;
  c.batchedRhs = true;
  c.transposeRhs = false;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.grid[2], 3);
}

TEST_F(GemmKernelTest, BatchedTransposedLhsOverSharedRhsMatches) {
  GemmCase c = ragged(Epilogue::None);
  c.batch = 2;
  c.m = 24;
  c.transposeLhs = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.grid[2], 2);
}

// f32 operands run on the FFMA kernel: exact fp32 (f32 tolerance), any K,
// unaligned rows.
TEST_F(GemmKernelTest, F32FfmaWithBiasAndErfGeluMatches) {
  GemmCase c = ragged(Epilogue::BiasGeluErf);
  c.f32 = true;
  c.n = 45;
  c.k = 20;
  GemmTiling tiling = check(c, a100);
  EXPECT_EQ(tiling.blockK, 16);
  EXPECT_EQ(tiling.threads, 256);
}

TEST_F(GemmKernelTest, F32FfmaBatchedTransposedOperandsMatch) {
  GemmCase c = ragged(Epilogue::BiasResidual);
  c.f32 = true;
  c.batch = 2;
  c.batchedRhs = true;
  c.transposeLhs = true;
  c.transposeRhs = false;
  c.m = 70;
  c.n = 67;
  c.k = 37;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.grid, (std::array<int64_t, 3>{2, 2, 2}));
}

// A norm in the epilogue when the tile holds whole rows (N <= blockN): the
// residual stream and its LayerNorm from one kernel.
TEST_F(GemmKernelTest, ResidualAndLayerNormOfWholeRowsMatch) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.shape = GemmTileShape{64, 128, 2, 2, 3};
  check(c, h100);
}

TEST_F(GemmKernelTest, RmsNormOfBatchedWholeRowsMatches) {
  GemmCase c = ragged(Epilogue::RmsNormScale);
  c.batch = 2;
  c.f16 = true;
  c.n = 200;
  c.shape = GemmTileShape{128, 256, 2, 4, 3};
  check(c, a100);
}

TEST_F(GemmKernelTest, F32FfmaRmsNormMatches) {
  GemmCase c = ragged(Epilogue::RmsNormScale);
  c.f32 = true;
  c.n = 45;
  check(c, h100);
}

// The tile chooseGemmTiling gives a norm: N = 72 needs blockN >= 128.
TEST_F(GemmKernelTest, LayerNormOnTheChosenWholeRowTileMatches) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.wholeRows = true;
  GemmTiling tiling = check(c, a100);
  EXPECT_GE(tiling.blockN, 72);
}

// Rows wider than every tile: the CTA owns blockM whole rows and loops over
// the column chunks, the norm's input waiting in the shared row buffer (in
// the element type: the reference rounds it too).
TEST_F(GemmKernelTest, RowChunkedResidualAndLayerNormWriteBothOutputs) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.n = 264;
  c.wholeRows = true;
  // sm_80: no clusters, one CTA owns the rows.
  GemmTiling tiling = check(c, a100);
  EXPECT_GT(tiling.rowChunks, 1);
  EXPECT_EQ(tiling.grid[0], 1);
  EXPECT_EQ(tiling.rowBufferBytes, tiling.blockM * (264 + 8) * 2);
}

// A cluster of 4 CTAs shares each block of rows (N = 1000: 250 columns
// each, two 128-wide chunks, so the last CTA's columns 768..1023 run past
// N): each CTA's partial sums meet through distributed shared memory.
TEST_F(GemmKernelTest, ClusterRowChunkedLayerNormAddsPartialsAcrossCtas) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.m = 70;
  c.n = 1000;
  c.wholeRows = true;
  GemmTileShape shape{64, 128, 2, 2, 3};
  shape.clusterN = 4;
  c.shape = shape;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.clusterN, 4);
  EXPECT_EQ(tiling.grid[0], 4);
  EXPECT_EQ(tiling.rowChunks, 2);
}

TEST_F(GemmKernelTest, ClusterRowChunkedRmsNormOfF16Matches) {
  GemmCase c = ragged(Epilogue::RmsNormScale);
  c.f16 = true;
  c.n = 520;
  c.wholeRows = true;
  GemmTileShape shape{128, 64, 4, 2, 4};
  shape.clusterN = 2;
  c.shape = shape;
  EXPECT_EQ(check(c, h100).rowChunks, 5);
}

// An odd N (301, bf16): the row buffer's rows round up to 304 columns so
// each row's statistics sit 16-byte aligned in its padding; alone (sm_80)
// and in a cluster (sm_90a).
TEST_F(GemmKernelTest, RowChunkedLayerNormOfOddWidthMatches) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.n = 301;
  c.wholeRows = true;
  GemmTiling alone = check(c, a100);
  EXPECT_EQ(alone.clusterN, 1);
  EXPECT_EQ(alone.rowBufferBytes, alone.blockM * (304 + 8) * 2);
  GemmTileShape shape{64, 128, 2, 2, 3};
  shape.clusterN = 2;
  c.shape = shape;
  EXPECT_EQ(check(c, h100).clusterN, 2);
}

TEST_F(GemmKernelTest, RowChunkedLayerNormWithoutBiasOnRaggedChunksMatches) {
  GemmCase c = ragged(Epilogue::BiasLayerNormWithoutBias);
  c.m = 70;
  c.n = 1000;
  c.wholeRows = true;
  GemmTiling tiling = check(c, a100);
  EXPECT_EQ(tiling.rowChunks, llvm::divideCeil(1000, tiling.blockN));
}

TEST_F(GemmKernelTest, RowChunkedRmsNormOfBatchedF16RowsMatches) {
  GemmCase c = ragged(Epilogue::RmsNormScale);
  c.batch = 2;
  c.batchedRhs = true;
  c.f16 = true;
  c.n = 320;
  c.wholeRows = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.grid[2], 2);
  EXPECT_GT(tiling.rowChunks, 1);
}

TEST_F(GemmKernelTest, RowChunkedF32FfmaLayerNormMatches) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.f32 = true;
  c.n = 100;
  c.k = 37;
  c.wholeRows = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.rowChunks, 2);
  // Rows of 104 (100 rounded up to 8) + 8 f32.
  EXPECT_EQ(tiling.rowBufferBytes, 64 * (104 + 8) * 4);
}

// Every tensor-core tile row-chunked, N not a multiple of blockN, more
// rows than one tile and more k-steps than stages.
TEST_F(GemmKernelTest, EveryTileConfigurationRowChunkedMatches) {
  for (const GemmTileShape &shape : getGemmTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2} stages", shape.blockM,
                               shape.blockN, shape.stages)
                     .str());
    GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
    c.m = shape.blockM + 5;
    c.n = shape.blockN + 24;
    c.k = 136;
    c.f16 = shape.stages == 4;
    c.shape = shape;
    c.wholeRows = true;
    EXPECT_EQ(check(c, h100).rowChunks, 2);
  }
}

// Every tile configuration, on ragged M and N with more k-steps than
// stages (K = 200: 7 k-steps, the last one partial).
TEST_F(GemmKernelTest, EveryTileConfigurationMatches) {
  for (const GemmTileShape &shape : getGemmTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2}x{3} warps, {4} stages",
                               shape.blockM, shape.blockN, shape.warpsM,
                               shape.warpsN, shape.stages)
                     .str());
    GemmCase c;
    c.m = shape.blockM + 3;
    // A row-major rhs needs N a multiple of 8.
    c.transposeRhs = shape.stages == 3;
    c.n = shape.blockN + (c.transposeRhs ? 10 : 24);
    c.k = 200;
    c.epilogue = Epilogue::BiasGeluErf;
    c.f16 = shape.blockN == 64;
    c.shape = shape;
    check(c, h100);
  }
}

// A dual GEMM (Llama's gate and up projections, both reading x): one lhs
// ring, two rhs rings and accumulator sets, SwiGLU in the epilogue.
TEST_F(GemmKernelTest, DualGemmSwiGluWithRaggedMAndNMatches) {
  check(ragged(Epilogue::SwiGlu), h100);
}

TEST_F(GemmKernelTest, DualGemmBiasesAndRowMajorRhsMatch) {
  GemmCase c = ragged(Epilogue::BiasSwiGlu);
  c.transposeRhs = false;
  c.f16 = true;
  check(c, a100);
}

TEST_F(GemmKernelTest, DualGemmTransposedLhsMatches) {
  GemmCase c = ragged(Epilogue::BiasSwiGlu);
  c.m = 40;
  c.transposeLhs = true;
  check(c, h100);
}

TEST_F(GemmKernelTest, DualGemmBatchedOnGridZMatches) {
  GemmCase c = ragged(Epilogue::BiasSwiGlu);
  c.batch = 2;
  c.batchedRhs = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.grid[2], 2);
}

// Two accumulator sets: the 64x64 warp tiles of 128x256 and 128x128 would
// hold 256 accumulator registers per thread (and 128x256's two staged f32
// tiles 270 KB), so a dual takes the other tiles, each checked on ragged M
// and N with more k-steps than stages.
TEST_F(GemmKernelTest, DualGemmOnEveryTileItCanTakeMatches) {
  int64_t taken = 0;
  for (const GemmTileShape &shape : getGemmTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2} stages", shape.blockM,
                               shape.blockN, shape.stages)
                     .str());
    std::string why;
    if (!dualFits(shape, h100, &why)) {
      EXPECT_EQ(shape.blockM, 128);
      EXPECT_GE(shape.blockN, 128);
      // 128x256's two f32 staging tiles exceed shared memory first.
      EXPECT_NE(why.find(shape.blockN == 256 ? "bytes of shared memory"
                                             : "2 accumulator sets"),
                std::string::npos)
          << why;
      continue;
    }
    ++taken;
    GemmCase c;
    c.m = shape.blockM + 3;
    c.transposeRhs = shape.stages == 3;
    c.n = shape.blockN + (c.transposeRhs ? 10 : 24);
    c.k = 200;
    c.epilogue = Epilogue::BiasSwiGlu;
    c.f16 = shape.blockN == 64;
    c.shape = shape;
    check(c, h100);
  }
  EXPECT_EQ(taken, 6);
}

// An analysis the kernel cannot run gets one error at the matmul, no kernel.
TEST_F(GemmKernelTest, TilingWithTooLittleSharedMemoryIsRefused) {
  GemmCase c = ragged(Epilogue::Bias);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source(c), context.get());
  ASSERT_TRUE(module);
  KernelAnalysis analysis =
      analyze(*module->getOps<func::FuncOp>().begin(), c, h100);
  analysis.tiling.sharedBytes = 1024;
  std::string message;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diagnostic) {
    message = diagnostic.str();
    return success();
  });
  OpBuilder builder(context.get());
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToStart(kernels->getBody());
  auto gpuModule =
      gpu::GPUModuleOp::create(builder, builder.getUnknownLoc(), "kernels");
  EXPECT_TRUE(
      failed(emitGemmKernel(gpuModule, "gemm", analysis, analysis.outputs)));
  EXPECT_EQ(message, "cannot generate the GEMM kernel: the tiling's shared "
                     "memory is too small");
  EXPECT_TRUE(gpuModule.getBody()->without_terminator().empty());
}

TEST_F(GemmKernelTest, WrongReferenceIsCaught) {
  EXPECT_NONFATAL_FAILURE(check(ragged(Epilogue::Bias), h100,
                                [](std::vector<std::vector<double>> &expected) {
                                  expected[0][37 * 72 - 1] += 0.5;
                                }),
                          "element 2663");
}

// The PTX of every tile configuration (both operand layouts), and of the
// row-chunked LayerNorm kernel (N = 512 over a 64x128 tile, and the FFMA
// kernel's), assembles for sm_90a and sm_80 without spills, in at most the
// registers the tiling estimates.
TEST_F(GemmKernelTest, PtxOfEveryTileConfigurationAssemblesWithoutSpills) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  // The tensor-core tiles, the FFMA kernel's, the tiles a dual GEMM takes
  // (with a SwiGLU epilogue), then row-chunked LayerNorm.
  struct Configuration {
    GemmTileShape shape;
    bool f32 = false, dual = false, rowChunked = false;
  };
  SmallVector<Configuration> configurations;
  for (const GemmTileShape &shape : getGemmTileShapes())
    configurations.push_back({shape});
  configurations.push_back({getGemmSimtTileShape(), true});
  for (const GemmTileShape &shape : getGemmTileShapes())
    if (dualFits(shape, h100) && dualFits(shape, a100))
      configurations.push_back({shape, false, true});
  configurations.push_back({GemmTileShape{64, 128, 2, 2, 3}, false, false,
                            true});
  configurations.push_back({getGemmSimtTileShape(), true, false, true});
  for (auto [target, arch] :
       {std::pair{&h100, "sm_90a"}, std::pair{&a100, "sm_80"}})
    for (auto [shape, f32, dual, rowChunked] : configurations)
      for (bool transposeRhs : {true, false}) {
        std::string name = llvm::formatv(
            "{0} {1}{2} {3}x{4}, {5} stages, rhs {6}{7}", arch,
            f32 ? "f32" : "bf16", dual ? " dual" : "", shape.blockM,
            shape.blockN, shape.stages, transposeRhs ? "[N, K]" : "[K, N]",
            rowChunked ? ", row-chunked LayerNorm" : "");
        SCOPED_TRACE(name);
        GemmCase c;
        c.m = c.n = 256;
        c.k = 256;
        c.epilogue = dual ? Epilogue::BiasSwiGlu : Epilogue::BiasGeluErf;
        if (rowChunked) {
          c.n = 512;
          c.epilogue = Epilogue::BiasResidualLayerNorm;
          c.wholeRows = true;
        }
        c.transposeRhs = transposeRhs;
        c.f32 = f32;
        c.shape = shape;
        KernelAnalysis analysis;
        std::string ptx = lowerToPtx(c, *target, analysis);
        ASSERT_FALSE(ptx.empty());
        if (f32) {
          EXPECT_NE(ptx.find("fma.rn.f32"), std::string::npos);
        } else {
          EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
          EXPECT_NE(ptx.find("ldmatrix"), std::string::npos);
          EXPECT_NE(ptx.find("cp.async.cg.shared.global"), std::string::npos);
        }
        int64_t registers =
            expectAssemblesWithoutSpills(*ptxas, ptx, arch, analysis);
        if (getenv("GEMM_PTXAS_VERBOSE"))
          llvm::errs() << name << ": " << registers << " registers (estimate "
                       << analysis.tiling.registersPerThread << ")\n";
      }
}

//===----------------------------------------------------------------------===//
// sm_90a: wgmma from TMA-loaded swizzled tiles
//===----------------------------------------------------------------------===//

namespace {
/// A wgmma case ragged in M, N and K against `shape`: two row tiles, two
/// column tiles (N a multiple of 8 for a [K, N] rhs), and K = 296, five
/// k-steps of 64 (the ring wraps at 3 and at 4 stages) of which the last
/// is zero-filled past K.
GemmCase raggedWgmma(const GemmTileShape &shape, Epilogue epilogue) {
  GemmCase c;
  c.m = shape.blockM + 37;
  c.n = shape.blockN + 24;
  c.k = 296;
  c.epilogue = epilogue;
  c.wgmma = true;
  c.shape = shape;
  return c;
}
} // namespace

TEST_F(GemmKernelTest, WgmmaIsChosenOnlyWhenRequestedOnSm90a) {
  GemmCase c;
  c.m = 1000;
  c.n = 512;
  c.k = 512;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source(c), context.get());
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(analyze(func, c, h100).tiling.variant, GemmVariant::MmaSync);
  c.wgmma = true;
  KernelAnalysis hopper = analyze(func, c, h100);
  EXPECT_EQ(hopper.tiling.variant, GemmVariant::Wgmma);
  EXPECT_EQ(hopper.tiling.blockK, 64);
  EXPECT_EQ(hopper.tiling.threads, 128);
  // The ring's tiles start 1024-byte aligned.
  EXPECT_EQ(hopper.tiling.sharedBytes % 1024, 0);
  EXPECT_EQ(analyze(func, c, a100).tiling.variant, GemmVariant::MmaSync);
}

TEST_F(GemmKernelTest, WgmmaRequestOnAnLhsStoredKByMFallsBackToMmaSync) {
  GemmCase c = ragged(Epilogue::Bias);
  c.transposeLhs = true;
  c.m = 40;
  c.wgmma = true;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source(c), context.get());
  ASSERT_TRUE(module);
  KernelAnalysis analysis =
      analyze(*module->getOps<func::FuncOp>().begin(), c, h100);
  EXPECT_EQ(analysis.tiling.variant, GemmVariant::MmaSync);
  EXPECT_EQ(whyNotWgmmaGemm(analysis.gemm, h100),
            "wgmma reads lhs K-major: lhs must be [M, K]");
  EXPECT_EQ(whyNotWgmmaGemm(analysis.gemm, a100),
            "wgmma needs sm_90a, the target is sm_80");
  check(c, h100);
}

TEST_F(GemmKernelTest, WgmmaEveryTileConfigurationMatches) {
  for (const GemmTileShape &shape : getGemmWgmmaTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2} stages", shape.blockM,
                               shape.blockN, shape.stages)
                     .str());
    GemmCase c = raggedWgmma(shape, Epilogue::BiasGeluErf);
    // Both rhs layouts, both element types.
    c.transposeRhs = shape.stages == 3;
    c.f16 = shape.blockN != 128;
    EXPECT_EQ(check(c, h100).variant, GemmVariant::Wgmma);
  }
}

TEST_F(GemmKernelTest, WgmmaRowMajorRhsWithBiasAndResidualMatches) {
  GemmCase c = raggedWgmma(getGemmWgmmaTileShapes().front(),
                           Epilogue::BiasResidual);
  c.transposeRhs = false;
  EXPECT_EQ(check(c, h100).variant, GemmVariant::Wgmma);
}

TEST_F(GemmKernelTest, WgmmaChosenTileWithLinearLayerBatchAndLayerNormMatches) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.batch = 3;
  c.m = 50;
  c.n = 200;
  c.k = 136;
  c.f16 = true;
  c.wgmma = true;
  c.wholeRows = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
  EXPECT_GE(tiling.blockN, 200);
}

TEST_F(GemmKernelTest, WgmmaKernelTakesItsOperandsAsSwizzledTensorMaps) {
  GemmCase c = raggedWgmma(getGemmWgmmaTileShapes().front(), Epilogue::Bias);
  c.transposeRhs = false;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source(c), context.get());
  ASSERT_TRUE(module);
  KernelAnalysis analysis =
      analyze(*module->getOps<func::FuncOp>().begin(), c, h100);
  OpBuilder builder(context.get());
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToStart(kernels->getBody());
  auto gpuModule =
      gpu::GPUModuleOp::create(builder, builder.getUnknownLoc(), "kernels");
  FailureOr<gpu::GPUFuncOp> kernel =
      emitGemmKernel(gpuModule, "gemm", analysis, analysis.outputs);
  ASSERT_TRUE(succeeded(kernel));
  std::string params;
  llvm::raw_string_ostream os(params);
  llvm::interleaveComma(kernel->getArgumentTypes(), os);
  EXPECT_EQ(params,
            "!nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, "
            "swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, "
            "interleave = none>, !nvgpu.tensormap.descriptor<tensor = "
            "memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = "
            "l2promo_256b, oob = zero, interleave = none>, memref<152xbf16>, "
            "memref<25080xbf16>");
}

namespace {
/// What the SASS of a wgmma kernel must hold besides HGMMA and UTMALDG.
struct WgmmaSassChecks {
  std::vector<std::string> ptx, sass;
};
} // namespace

/// Whether the wgmma kernel of `shape` holds a promoted fp8 GEMM's two
/// accumulator sets (getGemmTiling's register estimate decides).
static bool holdsPromotedFp8(const GemmTileShape &shape) {
  MLIRContext context;
  GemmProblem problem;
  problem.m = problem.n = 1024;
  problem.k = 1024;
  problem.transposeRhs = true;
  problem.elementType = Float8E4M3FNType::get(&context);
  problem.wgmmaRequested = true;
  problem.warpSpecializedRequested =
      shape.variant == GemmVariant::WgmmaWarpSpecialized;
  return succeeded(
      getGemmTiling(problem, *lookupBuiltinGPUTarget("h100-sxm"), 1, shape));
}

// Lowers every configuration in `shapes` (both rhs layouts) to PTX, checks
// that it holds wgmma, TMA and mbarrier waits (and `checks.ptx`), that
// ptxas accepts it for sm_90a without spills and, with cuobjdump (CUDA's,
// or PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm on PATH), that
// the SASS runs HGMMA, QGMMA for fp8 (and `checks.sass`).
// With `fp8` (an operand format), fp8 operands: both K-major, k32.
static void assembleWgmmaConfigurations(
    StringRef ptxas, ArrayRef<GemmTileShape> shapes, bool warpSpecialized,
    const WgmmaSassChecks &checks,
    llvm::function_ref<std::string(const GemmCase &, KernelAnalysis &)>
        lowerToPtx,
    StringRef fp8 = "") {
  std::string cuobjdump = "/usr/local/cuda/bin/cuobjdump";
  if (!llvm::sys::fs::can_execute(cuobjdump)) {
    llvm::ErrorOr<std::string> found =
        llvm::sys::findProgramByName("cuobjdump");
    cuobjdump = found ? *found : "";
  }
  for (const GemmTileShape &shape : shapes)
    for (bool transposeRhs : {true, false}) {
      if (!fp8.empty() && !transposeRhs)
        continue;
      std::string name = llvm::formatv("{0}x{1}, {2} stages, rhs {3}",
                                       shape.blockM, shape.blockN, shape.stages,
                                       transposeRhs ? "[N, K]" : "[K, N]");
      SCOPED_TRACE(name);
      GemmCase c;
      c.m = c.n = c.k = 512;
      c.epilogue = Epilogue::BiasGeluErf;
      c.transposeRhs = transposeRhs;
      c.f16 = !transposeRhs;
      c.wgmma = true;
      c.warpSpecialized = warpSpecialized;
      c.shape = shape;
      c.fp8 = fp8.str();
      c.fp8FastAccumulation = !fp8.empty() && !holdsPromotedFp8(shape);
      // PTX's and SASS's name of the fp8 format.
      std::string format = fp8 == "f8E4M3FN" ? "e4m3" : "e5m2";
      KernelAnalysis analysis;
      std::string ptx = lowerToPtx(c, analysis);
      ASSERT_FALSE(ptx.empty());
      std::string instruction =
          "wgmma.mma_async.sync.aligned.m64n" + std::to_string(shape.blockN) +
          (fp8.empty() ? "k16.f32" : "k32.f32." + format + "." + format);
      EXPECT_NE(ptx.find(instruction), std::string::npos) << instruction;
      EXPECT_NE(ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
      EXPECT_NE(ptx.find("mbarrier.try_wait.parity"), std::string::npos);
      for (const std::string &expected : checks.ptx)
        EXPECT_NE(ptx.find(expected), std::string::npos) << expected;
      SmallString<64> cubin;
      ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("gemm", "cubin", cubin));
      auto [rc, text] = assemble(ptxas, ptx, "sm_90a", cubin);
      ASSERT_EQ(rc, 0) << text;
      EXPECT_NE(text.find("0 bytes spill stores, 0 bytes spill loads"),
                std::string::npos)
          << text;
      // wgmma in a branch ptxas cannot prove warp-uniform is serialized.
      EXPECT_EQ(text.find("C7520"), std::string::npos) << text;
      if (getenv("GEMM_PTXAS_VERBOSE"))
        llvm::errs() << name << ": " << text << "\n";
      if (!cuobjdump.empty()) {
        SmallString<64> sassPath;
        ASSERT_FALSE(
            llvm::sys::fs::createTemporaryFile("gemm", "sass", sassPath));
        std::optional<StringRef> redirects[] = {std::nullopt, sassPath.str(),
                                                sassPath.str()};
        int dumped = llvm::sys::ExecuteAndWait(
            cuobjdump, {cuobjdump, "--dump-sass", cubin.str()}, std::nullopt,
            redirects);
        auto sass = llvm::MemoryBuffer::getFile(sassPath);
        ASSERT_TRUE(bool(sass));
        std::string text = (*sass)->getBuffer().str();
        llvm::sys::fs::remove(sassPath);
        ASSERT_EQ(dumped, 0) << text;
        // f16 inputs are HGMMA's default: no suffix after the F32 result;
        // fp8 runs as QGMMA.
        std::string hgmma =
            fp8.empty() ? llvm::formatv("HGMMA.64x{0}x16.F32{1}", shape.blockN,
                                        c.f16 ? " " : ".BF16")
                              .str()
                        : llvm::formatv("QGMMA.64x{0}x32.F32.{1}.{1}",
                                        shape.blockN, StringRef(format).upper())
                              .str();
        EXPECT_NE(text.find(hgmma), std::string::npos) << hgmma;
        EXPECT_NE(text.find("UTMALDG.2D"), std::string::npos);
        for (const std::string &expected : checks.sass)
          EXPECT_NE(text.find(expected), std::string::npos) << expected;
        if (getenv("GEMM_PTXAS_VERBOSE"))
          for (StringRef line : llvm::split(text, '\n'))
            if (line.contains("GMMA"))
              llvm::errs() << name << ": " << line.trim() << "\n";
      }
      llvm::sys::fs::remove(cubin);
    }
}

TEST_F(GemmKernelTest, WgmmaPtxOfEveryConfigurationAssemblesToHgmma) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  assembleWgmmaConfigurations(*ptxas, getGemmWgmmaTileShapes(),
                              /*warpSpecialized=*/false, {},
                              [&](const GemmCase &c, KernelAnalysis &analysis) {
                                return lowerToPtx(c, h100, analysis);
                              });
}

//===----------------------------------------------------------------------===//
// sm_90a: the warp-specialized wgmma kernel (TMA producer warpgroup, two
// consumer warpgroups)
//===----------------------------------------------------------------------===//

namespace {
GemmCase raggedWarpSpecialized(const GemmTileShape &shape, Epilogue epilogue) {
  GemmCase c = raggedWgmma(shape, epilogue);
  c.warpSpecialized = true;
  return c;
}
} // namespace

TEST_F(GemmKernelTest, WarpSpecializedIsChosenOnlyWhenRequestedOnSm90a) {
  GemmCase c;
  c.m = 1000;
  c.n = 512;
  c.k = 512;
  c.wgmma = true;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source(c), context.get());
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(analyze(func, c, h100).tiling.variant, GemmVariant::Wgmma);
  c.warpSpecialized = true;
  GemmTiling tiling = analyze(func, c, h100).tiling;
  EXPECT_EQ(tiling.variant, GemmVariant::WgmmaWarpSpecialized);
  // 256 consumer threads compute; 128 more produce; blocks of 128 x 3.
  EXPECT_EQ(tiling.threads, 256);
  EXPECT_EQ(tiling.producerThreads, 128);
  EXPECT_EQ(getGemmBlockSize(tiling), (std::array<int64_t, 3>{128, 3, 1}));
  EXPECT_EQ(tiling.blockM, 128);
  // 384 threads launch with 65536 / 384 = 170 registers, rounded down to 8.
  EXPECT_EQ(tiling.registersPerThread, 168);
  EXPECT_EQ(tiling.ctasPerSM, 1);
  EXPECT_EQ(analyze(func, c, a100).tiling.variant, GemmVariant::MmaSync);
}

TEST_F(GemmKernelTest, WarpSpecializedSharedMemoryHoldsRingOrStagedTile) {
  GemmCase c;
  c.m = c.n = c.k = 1024;
  c.wgmma = c.warpSpecialized = true;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source(c), context.get());
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  for (const GemmTileShape &shape : getGemmWarpSpecializedTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2} stages", shape.blockM,
                               shape.blockN, shape.stages)
                     .str());
    c.shape = shape;
    GemmTiling tiling = analyze(func, c, h100).tiling;
    // By hand: a stage is (128 + blockN) rows of 128 bytes; the staging is
    // the dense 128 x blockN f32 tile and 128 x 2 f32 of norm statistics;
    // 1024 bytes of alignment slack.
    int64_t ring = shape.stages * (128 + shape.blockN) * 128;
    int64_t staging = 128 * shape.blockN * 4 + 128 * 2 * 4;
    EXPECT_EQ(tiling.sharedBytes, 1024 + std::max(ring, staging));
  }
}

TEST_F(GemmKernelTest, WarpSpecializedEveryTileConfigurationMatches) {
  for (const GemmTileShape &shape : getGemmWarpSpecializedTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2} stages", shape.blockM,
                               shape.blockN, shape.stages)
                     .str());
    GemmCase c = raggedWarpSpecialized(shape, Epilogue::BiasGeluErf);
    // Both rhs layouts, both element types.
    c.transposeRhs = shape.stages == 3;
    c.f16 = shape.blockN != 128;
    EXPECT_EQ(check(c, h100).variant, GemmVariant::WgmmaWarpSpecialized);
  }
}

TEST_F(GemmKernelTest, WarpSpecializedMultiOutputEpiloguesMatch) {
  const GemmTileShape &shape = getGemmWarpSpecializedTileShapes().front();
  for (Epilogue epilogue : {Epilogue::BiasResidual, Epilogue::MidChainOutput,
                            Epilogue::ScaleCast}) {
    GemmCase c = raggedWarpSpecialized(shape, epilogue);
    c.transposeRhs = false;
    EXPECT_EQ(check(c, h100).variant, GemmVariant::WgmmaWarpSpecialized);
  }
}

// A norm whose rows fit one tile runs in the consumers' epilogue, its
// barriers the consumers' named barrier.
TEST_F(GemmKernelTest, WarpSpecializedResidualAndLayerNormOfWholeRowsMatch) {
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.m = 300;
  c.n = 200;
  c.k = 136;
  c.wgmma = c.warpSpecialized = true;
  c.wholeRows = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.variant, GemmVariant::WgmmaWarpSpecialized);
  EXPECT_EQ(tiling.blockN, 256);
}

// One k-step (K <= 64): the producer never waits for a release; and K long
// enough that every slot is refilled several times.
TEST_F(GemmKernelTest, WarpSpecializedShortAndLongKMatch) {
  for (int64_t k : {40, 1032}) {
    SCOPED_TRACE(k);
    GemmCase c = raggedWarpSpecialized(getGemmWarpSpecializedTileShapes()[2],
                                       Epilogue::Bias);
    c.k = k;
    EXPECT_EQ(check(c, h100).variant, GemmVariant::WgmmaWarpSpecialized);
  }
}

TEST_F(GemmKernelTest, WarpSpecializedWrongReferenceIsCaught) {
  GemmCase c = raggedWarpSpecialized(getGemmWarpSpecializedTileShapes()[2],
                                     Epilogue::None);
  // Element (100, 7) of the 165 x 152 output: a consumer warpgroup 1 row.
  EXPECT_NONFATAL_FAILURE(check(c, h100,
                                [](std::vector<std::vector<double>> &expected) {
                                  expected[0][100 * 152 + 7] += 0.5;
                                }),
                          "element 15207");
}

// The warp-specialized kernel's PTX moves registers with setmaxnreg and
// syncs its consumers on named barrier 1; ptxas keeps its wgmma
// asynchronous (no C7520) and the SASS allocates and frees registers.
TEST_F(GemmKernelTest, WarpSpecializedPtxOfEveryConfigurationAssemblesToHgmma) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  WgmmaSassChecks checks;
  checks.ptx = {"setmaxnreg.dec.sync.aligned.u32 \t40;",
                "setmaxnreg.inc.sync.aligned.u32 \t232;", "bar.sync \t1, 256;",
                "mbarrier.arrive.shared.b64"};
  checks.sass = {"USETMAXREG.DEALLOC.CTAPOOL 0x28",
                 "USETMAXREG.TRY_ALLOC.CTAPOOL"};
  assembleWgmmaConfigurations(*ptxas, getGemmWarpSpecializedTileShapes(),
                              /*warpSpecialized=*/true, checks,
                              [&](const GemmCase &c, KernelAnalysis &analysis) {
                                return lowerToPtx(c, h100, analysis);
                              });
}

//===----------------------------------------------------------------------===//
// Split K: skinny and decode shapes
//===----------------------------------------------------------------------===//

namespace {
/// A decode-shaped case: 5 rows, N over a few tiles, K long.
GemmCase decodeShaped(Epilogue epilogue) {
  return gemmCase(5, 200, 1000, epilogue);
}
} // namespace

TEST_F(GemmKernelTest, SplitKFillsTheSMsTheTilesLeaveIdle) {
  GemmCase c = decodeShaped(Epilogue::None);
  c.wgmma = true;
  for (const GPUTarget *target : {&h100, &a100}) {
    SCOPED_TRACE(target->name);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source(c), context.get());
    ASSERT_TRUE(module);
    GemmTiling tiling =
        analyze(*module->getOps<func::FuncOp>().begin(), c, *target).tiling;
    // By hand: enough splits for every SM, each at least 4 k-steps, at
    // most 16, the partials' 8 bytes per split and output within a quarter
    // of the operands' (5 + 200) x 1000 x 2 bytes (12 splits).
    int64_t tiles = tiling.grid[0] * tiling.grid[1];
    int64_t steps = (1000 + tiling.blockK - 1) / tiling.blockK;
    int64_t sms = target->smCount;
    int64_t expected =
        std::min<int64_t>({(sms + tiles - 1) / tiles, steps / 4, 16,
                           (5 + 200) * 1000 * 2 / (4 * 8 * 5 * 200)});
    ASSERT_GE(expected, 2);
    EXPECT_EQ(tiling.splitK, expected);
    EXPECT_EQ(tiling.grid[2], expected);
    EXPECT_EQ(
        getGemmKStepsPerSplit(
            tiling,
            analyze(*module->getOps<func::FuncOp>().begin(), c, *target).gemm),
        (steps + expected - 1) / expected);
    // One arrival counter per tile.
    EXPECT_EQ(getGemmSplitKCounters(tiling), tiles);
  }
}

TEST_F(GemmKernelTest, SplitKIsNotChosenWhereTilesFillTheSMs) {
  GemmCase big;
  big.m = big.n = 2048;
  big.k = 1024;
  GemmCase shortK = decodeShaped(Epilogue::None);
  shortK.k = 64;
  GemmCase batched = decodeShaped(Epilogue::None);
  batched.batch = 2;
  batched.batchedRhs = true;
  for (const GemmCase &c : {big, shortK, batched}) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source(c), context.get());
    ASSERT_TRUE(module);
    EXPECT_EQ(
        analyze(*module->getOps<func::FuncOp>().begin(), c, h100).tiling.splitK,
        1);
  }
}

TEST_F(GemmKernelTest, SplitKDecodeShapesWithEpiloguesMatch) {
  for (bool wgmma : {true, false})
    for (Epilogue epilogue : {Epilogue::BiasGeluErf, Epilogue::BiasResidual,
                              Epilogue::MidChainOutput}) {
      SCOPED_TRACE(llvm::formatv("wgmma {0}, epilogue {1}", wgmma,
                                 static_cast<int>(epilogue))
                       .str());
      GemmCase c = decodeShaped(epilogue);
      c.wgmma = wgmma;
      c.transposeRhs = epilogue != Epilogue::BiasResidual;
      c.f16 = epilogue == Epilogue::MidChainOutput;
      GemmTiling tiling = check(c, h100);
      EXPECT_GT(tiling.splitK, 1);
      EXPECT_EQ(tiling.variant,
                wgmma ? GemmVariant::Wgmma : GemmVariant::MmaSync);
    }
}

TEST_F(GemmKernelTest, SplitKOnAmpereWithLayerNormOfWholeRowsMatches) {
  GemmCase c = decodeShaped(Epilogue::BiasResidualLayerNorm);
  c.m = 3;
  c.n = 120;
  c.k = 2000;
  c.wholeRows = true;
  GemmTiling tiling = check(c, a100);
  EXPECT_GT(tiling.splitK, 1);
  EXPECT_GE(tiling.blockN, 120);
}

// A partial left out of the sum is caught: the reduce kernel must read every
// split.
TEST_F(GemmKernelTest, SplitKWrongReferenceIsCaught) {
  GemmCase c = decodeShaped(Epilogue::None);
  EXPECT_NONFATAL_FAILURE(check(c, h100,
                                [](std::vector<std::vector<double>> &expected) {
                                  expected[0][3 * 200 + 17] += 0.5;
                                }),
                          "element 617");
}

// Llama's decode gate and up projections as one dual GEMM, K split: both
// products' partials summed, SwiGLU (with both biases) in the reduce kernel.
TEST_F(GemmKernelTest, SplitKDualGemmSwiGluMatches) {
  for (Epilogue epilogue : {Epilogue::SwiGlu, Epilogue::BiasSwiGlu}) {
    GemmCase c = decodeShaped(epilogue);
    c.transposeRhs = epilogue == Epilogue::SwiGlu;
    GemmTiling tiling = check(c, h100);
    EXPECT_GT(tiling.splitK, 1);
    EXPECT_EQ(tiling.variant, GemmVariant::MmaSync);
  }
}

//===----------------------------------------------------------------------===//
// Heads layouts: results written [B, H, S, D] (and rotated by rope)
//===----------------------------------------------------------------------===//

/// Attention's projection of `batch` sequences of `seq` tokens into heads of
/// `headDim` (N = heads x headDim).
GemmCase headsCase(Epilogue epilogue, int64_t batch, int64_t seq, int64_t n,
                   int64_t headDim, int64_t k = 40) {
  GemmCase c = gemmCase(seq, n, k, epilogue);
  c.batch = batch;
  c.headDim = headDim;
  return c;
}

// v: a bias, then each element stored at its head's row, on ragged
// sequences (M = 2 x 37 rows, tiles straddle the sequences) with the
// mma.sync and the wgmma kernels.
TEST_F(GemmKernelTest, HeadsSplitEpilogueWritesEachHeadsRows) {
  for (bool wgmma : {false, true}) {
    SCOPED_TRACE(wgmma ? "wgmma" : "mma.sync");
    GemmCase c = headsCase(Epilogue::BiasHeadsSplit, 2, 37, 96, 32);
    c.wgmma = wgmma;
    c.f16 = wgmma;
    GemmTiling tiling = check(c, h100);
    EXPECT_EQ(tiling.variant,
              wgmma ? GemmVariant::Wgmma : GemmVariant::MmaSync);
  }
}

// q and k: the rotation pairs d with d + D/2 across the staged tile; every
// tile the chooser may take holds whole heads (D = 64 and 128), positions
// per sequence or per token, the inverse rotation, bf16 and f16.
TEST_F(GemmKernelTest, RopeEpilogueRotatesWholeHeadsInTheTile) {
  struct Variant {
    int64_t headDim, n;
    bool wgmma, batchPositions, inverse, f16;
  };
  for (Variant v : {Variant{64, 128, false, false, false, false},
                    Variant{64, 192, false, true, true, true},
                    Variant{128, 256, false, false, false, true},
                    Variant{64, 128, true, true, false, false},
                    Variant{128, 256, true, false, true, false}}) {
    SCOPED_TRACE(
        llvm::formatv("D {0}, N {1}, wgmma {2}", v.headDim, v.n, v.wgmma)
            .str());
    GemmCase c = headsCase(Epilogue::HeadsRope, 2, 37, v.n, v.headDim, 72);
    c.wgmma = v.wgmma;
    c.batchPositions = v.batchPositions;
    c.inverseRope = v.inverse;
    c.f16 = v.f16;
    GemmTiling tiling = check(c, h100);
    EXPECT_EQ(tiling.blockN % v.headDim, 0);
    EXPECT_EQ(tiling.variant,
              v.wgmma ? GemmVariant::Wgmma : GemmVariant::MmaSync);
  }
}

// The warp-specialized kernel's consumers rotate from its dense staged
// tile, meeting on their named barrier.
TEST_F(GemmKernelTest, WarpSpecializedRopeEpilogueMatches) {
  GemmCase c = headsCase(Epilogue::HeadsRope, 2, 70, 256, 128, 136);
  c.wgmma = c.warpSpecialized = true;
  c.batchPositions = true;
  EXPECT_EQ(check(c, h100).variant, GemmVariant::WgmmaWarpSpecialized);
}

// Every mma.sync tile wide enough for a 64-wide head runs the rope.
TEST_F(GemmKernelTest, RopeEpilogueOnEveryTileHoldingWholeHeadsMatches) {
  for (const GemmTileShape &shape : getGemmTileShapes()) {
    if (shape.stages != 3)
      continue;
    SCOPED_TRACE(llvm::formatv("{0}x{1}", shape.blockM, shape.blockN).str());
    GemmCase c = headsCase(Epilogue::HeadsRope, 1, 77, 128, 64);
    c.shape = shape;
    check(c, h100);
  }
}

// Decode: one token per sequence, K split; the reduce kernel rotates.
TEST_F(GemmKernelTest, RopeEpilogueOfASplitKGemmMatches) {
  for (bool wgmma : {false, true}) {
    SCOPED_TRACE(wgmma ? "wgmma" : "mma.sync");
    GemmCase c = headsCase(Epilogue::HeadsRope, 4, 1, 256, 128, 2048);
    c.wgmma = wgmma;
    c.batchPositions = true;
    GemmTiling tiling = check(c, h100);
    EXPECT_GT(tiling.splitK, 1);
  }
}

// Llama's k and v as one dual GEMM: k rotated from the first product's
// tile, v from the second's, each written heads-split; prefill and a
// split-K decode.
TEST_F(GemmKernelTest, DualGemmWritesKRotatedAndVHeadsSplit) {
  for (bool wgmma : {false, true}) {
    SCOPED_TRACE(wgmma ? "wgmma" : "mma.sync");
    GemmCase c = headsCase(Epilogue::DualHeadsRope, 2, 37, 128, 64, 72);
    c.wgmma = wgmma;
    check(c, h100);
    GemmCase decode = headsCase(Epilogue::DualHeadsRope, 2, 1, 256, 128, 2048);
    decode.wgmma = wgmma;
    decode.batchPositions = true;
    EXPECT_GT(check(decode, h100).splitK, 1);
  }
}

// Attention's output [B, H, S, D] read as the output projection's lhs
// [B·S, H·D] through the lhs addressing (no transpose kernel): ragged
// sequences, heads of 32 and 64, a residual add; every mma.sync tile and a
// split-K decode. wgmma is asked for and declined (one 2-D tensor map).
TEST_F(GemmKernelTest, HeadsMergedLhsIsReadThroughItsHeads) {
  for (const GemmTileShape &shape : getGemmTileShapes()) {
    if (shape.stages != 3)
      continue;
    SCOPED_TRACE(llvm::formatv("{0}x{1}", shape.blockM, shape.blockN).str());
    GemmCase c = gemmCase(37, 72, 96, Epilogue::BiasResidual);
    c.batch = 2;
    c.lhsHeadDim = 32;
    c.shape = shape;
    check(c, h100);
  }
  // Sequences of 70 rows: no wgmma tile lies within one, so mma.sync.
  GemmCase chosen = gemmCase(70, 128, 256, Epilogue::None);
  chosen.batch = 2;
  chosen.lhsHeadDim = 64;
  chosen.wgmma = true;
  EXPECT_EQ(check(chosen, h100).variant, GemmVariant::MmaSync);
  GemmCase decode = gemmCase(1, 256, 2048, Epilogue::BiasResidual);
  decode.batch = 4;
  decode.lhsHeadDim = 128;
  EXPECT_GT(check(decode, h100).splitK, 1);
}

// On sm_90a the wgmma kernels load a heads-merged lhs through a 4-D tensor
// map over [B, H, S, D] (a head's 64 columns of a sequence's rows a box):
// heads of 64 and 128, ragged N, both tile heights, the warp-specialized
// kernel, a norm epilogue.
TEST_F(GemmKernelTest, WgmmaReadsAHeadsMergedLhsThroughA4DTensorMap) {
  struct Variant {
    int64_t seq, n, k, headDim;
    std::optional<GemmTileShape> shape;
    bool warpSpecialized;
    Epilogue epilogue;
  };
  for (Variant v :
       {Variant{128, 72, 256, 64,
                GemmTileShape{128, 64, 4, 1, 3, GemmVariant::Wgmma}, false,
                Epilogue::BiasResidual},
        Variant{64, 128, 256, 128,
                GemmTileShape{64, 128, 4, 1, 3, GemmVariant::Wgmma}, false,
                Epilogue::None},
        Variant{128, 256, 384, 128, std::nullopt, true, Epilogue::None},
        Variant{128, 96, 128, 64, std::nullopt, false,
                Epilogue::BiasLayerNormWithoutBias}}) {
    SCOPED_TRACE(
        llvm::formatv("S {0}, N {1}, K {2}, D {3}", v.seq, v.n, v.k, v.headDim)
            .str());
    GemmCase c = gemmCase(v.seq, v.n, v.k, v.epilogue);
    c.batch = 2;
    c.lhsHeadDim = v.headDim;
    c.wgmma = true;
    c.warpSpecialized = v.warpSpecialized;
    c.shape = v.shape;
    c.wholeRows = v.epilogue == Epilogue::BiasLayerNormWithoutBias;
    GemmTiling tiling = check(c, h100);
    EXPECT_EQ(tiling.variant, v.warpSpecialized
                                  ? GemmVariant::WgmmaWarpSpecialized
                                  : GemmVariant::Wgmma);
  }
}

TEST_F(GemmKernelTest, WgmmaHeadsMergedLhsPtxLoadsFourDimensionalBoxes) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  GemmCase c = gemmCase(1024, 4096, 4096, Epilogue::BiasResidual);
  c.batch = 2;
  c.lhsHeadDim = 128;
  c.wgmma = true;
  KernelAnalysis analysis;
  std::string ptx = lowerToPtx(c, h100, analysis);
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(analysis.tiling.variant, GemmVariant::Wgmma);
  EXPECT_NE(ptx.find("cp.async.bulk.tensor.4d"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
  expectAssemblesWithoutSpills(*ptxas, ptx, "sm_90a", analysis);
}

// A rotated element read from the wrong half is caught.
TEST_F(GemmKernelTest, RopeWrongReferenceIsCaught) {
  GemmCase c = headsCase(Epilogue::HeadsRope, 1, 5, 128, 64);
  EXPECT_NONFATAL_FAILURE(check(c, h100,
                                [](std::vector<std::vector<double>> &expected) {
                                  // Head 1, token 2, element 3.
                                  expected[0][(1 * 5 + 2) * 64 + 3] += 0.5;
                                }),
                          "element 451");
}

// A head no tile holds whole (D = 96: no tile is a multiple of 96 wide)
// runs no rope in the epilogue, and the chooser says why.
TEST_F(GemmKernelTest, RopeOverHeadsNoTileHoldsIsRefusedWithWhy) {
  GemmProblem problem;
  problem.m = 256;
  problem.n = 384;
  problem.k = 256;
  problem.elementType = BFloat16Type::get(context.get());
  problem.transposeRhs = true;
  problem.epilogueColumnGroup = 96;
  std::string why;
  EXPECT_TRUE(failed(chooseGemmTiling(problem, h100, 4, &why)));
  EXPECT_NE(why.find("needs whole heads of 96 columns in a tile"),
            std::string::npos)
      << why;
  problem.epilogueColumnGroup = 128;
  FailureOr<GemmTiling> tiling = chooseGemmTiling(problem, h100, 4, &why);
  ASSERT_TRUE(succeeded(tiling)) << why;
  EXPECT_EQ(tiling->blockN % 128, 0);
}

TEST_F(GemmKernelTest, RopeEpiloguePtxAssemblesWithoutSpills) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  for (bool wgmma : {false, true})
    for (Epilogue epilogue : {Epilogue::HeadsRope, Epilogue::DualHeadsRope}) {
      SCOPED_TRACE(llvm::formatv("wgmma {0}, dual {1}", wgmma,
                                 epilogue == Epilogue::DualHeadsRope)
                       .str());
      GemmCase c = headsCase(epilogue, 4, 512, 1024, 128, 512);
      c.wgmma = wgmma;
      KernelAnalysis analysis;
      std::string ptx = lowerToPtx(c, wgmma ? h100 : a100, analysis);
      ASSERT_FALSE(ptx.empty());
      expectAssemblesWithoutSpills(*ptxas, ptx, wgmma ? "sm_90a" : "sm_80",
                                   analysis);
    }
}

//===----------------------------------------------------------------------===//
// Weight-only quantization: the rhs prologue (memwall.dequantize)
//===----------------------------------------------------------------------===//

/// A ragged GEMM whose rhs is stored as `storage` with per-output-channel
/// scales.
GemmCase dequantized(StringRef storage, bool transposeRhs, Epilogue epilogue) {
  GemmCase c = gemmCase(37, 96, 160, epilogue);
  c.transposeRhs = transposeRhs;
  c.rhsStorage = storage.str();
  c.scaleRows = transposeRhs ? c.n : 1;
  c.scaleColumns = transposeRhs ? 1 : c.n;
  return c;
}

TEST_F(GemmKernelTest, DequantizedI8PerChannelRhsMatchesInBothLayouts) {
  for (bool transposeRhs : {true, false}) {
    SCOPED_TRACE(transposeRhs ? "rhs [N, K]" : "rhs [K, N]");
    check(dequantized("i8", transposeRhs, Epilogue::Bias), h100);
    check(dequantized("i8", transposeRhs, Epilogue::BiasGeluErf), a100);
  }
}

TEST_F(GemmKernelTest, DequantizedFp8RhsMatchesEveryFiniteByte) {
  // Random bytes over every finite value, subnormals included.
  for (StringRef storage : {"f8E4M3FN", "f8E5M2"})
    for (bool transposeRhs : {true, false}) {
      SCOPED_TRACE((storage + (transposeRhs ? " [N, K]" : " [K, N]")).str());
      check(dequantized(storage, transposeRhs, Epilogue::BiasResidual), h100);
    }
}

TEST_F(GemmKernelTest, DequantizedGroupScalesAlongKAndPerElementScalesMatch) {
  // Groups of 32 along K (the K-steps' width) and of 48 (across K-steps),
  // then one scale per element; f16 operands once.
  GemmCase grouped = dequantized("i8", true, Epilogue::None);
  grouped.scaleColumns = grouped.k / 32;
  check(grouped, h100);
  grouped.scaleColumns = grouped.k / 80;
  grouped.f16 = true;
  check(grouped, a100);
  GemmCase rowMajor = dequantized("f8E4M3FN", false, Epilogue::Bias);
  rowMajor.scaleRows = rowMajor.k / 16;
  check(rowMajor, h100);
  GemmCase perElement = dequantized("f8E5M2", true, Epilogue::None);
  perElement.scaleRows = perElement.n;
  perElement.scaleColumns = perElement.k;
  check(perElement, h100);
}

// Packed int4 (two a byte, [-8, 7]) with groups of 32 along K (AWQ/GPTQ's
// groupwise scales, at the k-step's width) and per output channel, both
// layouts, bf16 and f16.
TEST_F(GemmKernelTest, DequantizedPackedI4GroupwiseMatchesInBothLayouts) {
  for (bool transposeRhs : {true, false}) {
    SCOPED_TRACE(transposeRhs ? "rhs [N, K]" : "rhs [K, N]");
    GemmCase grouped = dequantized("i4", transposeRhs, Epilogue::Bias);
    if (transposeRhs)
      grouped.scaleColumns = grouped.k / 32;
    else
      grouped.scaleRows = grouped.k / 32;
    check(grouped, h100);
    GemmCase perChannel =
        dequantized("i4", transposeRhs, Epilogue::BiasGeluErf);
    perChannel.f16 = true;
    check(perChannel, a100);
  }
}

// Asymmetric quantization: (q - z) s with a zero point per block, i8 with
// K = 144 (the last k-step half past K: the zero-filled weight bytes give
// -z s there, which multiplies the lhs's zero fill) and packed i4 in groups
// of 32 (AWQ's layout); split K on a decode shape.
TEST_F(GemmKernelTest, DequantizedWithZeroPointsMatches) {
  for (bool transposeRhs : {true, false}) {
    SCOPED_TRACE(transposeRhs ? "rhs [N, K]" : "rhs [K, N]");
    GemmCase i8 = dequantized("i8", transposeRhs, Epilogue::Bias);
    i8.k = 144;
    i8.zeroPoints = true;
    check(i8, h100);
    GemmCase i4 = dequantized("i4", transposeRhs, Epilogue::BiasGeluErf);
    if (transposeRhs)
      i4.scaleColumns = i4.k / 32;
    else
      i4.scaleRows = i4.k / 32;
    i4.zeroPoints = true;
    check(i4, a100);
  }
  GemmCase decode = dequantized("i4", true, Epilogue::None);
  decode.m = 1;
  decode.n = 256;
  decode.k = 2048;
  decode.scaleRows = decode.n;
  decode.scaleColumns = decode.k / 128;
  decode.zeroPoints = true;
  EXPECT_GT(check(decode, h100).splitK, 1);
}

// A decode shape splits K; a dual (gate and up) dequantizes both packed
// weights.
TEST_F(GemmKernelTest, DequantizedPackedI4DecodeAndDualMatch) {
  GemmCase decode = dequantized("i4", true, Epilogue::BiasResidual);
  decode.m = 1;
  decode.n = 256;
  decode.k = 2048;
  decode.scaleRows = decode.n;
  decode.scaleColumns = decode.k / 128;
  EXPECT_GT(check(decode, h100).splitK, 1);
  GemmCase dual = dequantized("i4", true, Epilogue::SwiGlu);
  dual.n = 96;
  dual.scaleRows = dual.n;
  dual.scaleColumns = dual.k / 32;
  check(dual, a100);
}

// Every tile, i8 per channel and packed i4 in groups of 32 along K: where a
// tile's 16-byte chunks of packed i4 do not split over its threads (e.g.
// 64x64 with K-major rows: 64 chunks, 128 threads) the copies take 8 bytes.
TEST_F(GemmKernelTest, DequantizedRhsOnEveryMmaSyncTileMatches) {
  for (StringRef storage : {"i8", "i4"})
    for (const GemmTileShape &shape : getGemmTileShapes())
      for (bool transposeRhs : {true, false}) {
        SCOPED_TRACE(llvm::formatv("{0} {1}x{2}, {3} stages, rhs {4}", storage,
                                   shape.blockM, shape.blockN, shape.stages,
                                   transposeRhs ? "[N, K]" : "[K, N]")
                         .str());
        GemmCase c = dequantized(storage, transposeRhs, Epilogue::Bias);
        c.m = 130;
        c.n = 288;
        c.k = 96;
        int64_t groups = storage == "i4" ? c.k / 32 : 1;
        c.scaleRows = transposeRhs ? c.n : groups;
        c.scaleColumns = transposeRhs ? groups : c.n;
        c.shape = shape;
        check(c, a100);
      }
}

TEST_F(GemmKernelTest, DequantizedDecodeShapeSplitsKAndMatches) {
  GemmCase c = dequantized("i8", true, Epilogue::BiasResidual);
  c.m = 1;
  c.n = 256;
  c.k = 2048;
  c.scaleRows = c.n;
  c.scaleColumns = c.k / 128;
  GemmTiling tiling = check(c, h100);
  EXPECT_GT(tiling.splitK, 1);
}

TEST_F(GemmKernelTest, DequantizedRhsRunsOnMmaSyncWhenWgmmaIsRequested) {
  GemmCase c = dequantized("f8E4M3FN", true, Epilogue::Bias);
  c.m = 256;
  c.n = 256;
  c.k = 256;
  c.scaleRows = c.n;
  c.wgmma = true;
  c.warpSpecialized = true;
  EXPECT_EQ(check(c, h100).variant, GemmVariant::MmaSync);
}

TEST_F(GemmKernelTest, UnalignedStoredRowsAreRefusedWithWhy) {
  auto refusal = [&](StringRef source) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, context.get());
    EXPECT_TRUE(module);
    MatmulOp matmul;
    module->walk([&](MatmulOp op) { matmul = op; });
    std::string why;
    EXPECT_TRUE(failed(getGemmProblem(matmul, &why)));
    return why;
  };
  EXPECT_EQ(refusal(R"(
    func.func @f(%a: tensor<4x48xbf16>, %q: tensor<64x48xi4>, %s: tensor<64x1xbf16>) -> tensor<4x64xbf16> {
      %w = memwall.dequantize %q, %s : tensor<64x48xi4>, tensor<64x1xbf16> -> tensor<64x48xbf16>
      %r = memwall.matmul %a, %w {transpose_rhs} : tensor<4x48xbf16>, tensor<64x48xbf16> -> tensor<4x64xbf16>
      return %r : tensor<4x64xbf16>
    })"),
            "the generated GEMM: needs K a multiple of 32 for packed i4 "
            "weights, got 48");
  EXPECT_EQ(refusal(R"(
    func.func @f(%a: tensor<4x256xbf16>, %q: tensor<256x24xi8>, %s: tensor<1x24xbf16>) -> tensor<4x24xbf16> {
      %w = memwall.dequantize %q, %s : tensor<256x24xi8>, tensor<1x24xbf16> -> tensor<256x24xbf16>
      %r = memwall.matmul %a, %w : tensor<4x256xbf16>, tensor<256x24xbf16> -> tensor<4x24xbf16>
      return %r : tensor<4x24xbf16>
    })"),
            "the generated GEMM: needs N a multiple of 16 for 1-byte weights, "
            "got 24");
}

TEST_F(GemmKernelTest, DequantizedRhsPtxAssemblesWithoutSpills) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  for (auto [target, arch] :
       {std::pair{&h100, "sm_90a"}, std::pair{&a100, "sm_80"}})
    for (StringRef storage : {"i8", "f8E4M3FN", "f8E5M2", "i4"})
      for (const GemmTileShape &shape : getGemmTileShapes()) {
        std::string name =
            llvm::formatv("{0} {1} {2}x{3}, {4} stages", arch, storage,
                          shape.blockM, shape.blockN, shape.stages);
        SCOPED_TRACE(name);
        GemmCase c = dequantized(storage, true, Epilogue::BiasGeluErf);
        c.m = c.n = c.k = 256;
        c.scaleRows = c.n;
        c.scaleColumns = 2;
        c.shape = shape;
        KernelAnalysis analysis;
        std::string ptx = lowerToPtx(c, *target, analysis);
        ASSERT_FALSE(ptx.empty());
        EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
        expectAssemblesWithoutSpills(*ptxas, ptx, arch, analysis);
      }
}

TEST_F(GemmKernelTest, DequantizedDualGemmSwiGluMatches) {
  // Llama's gate and up projections stored int8 (fp8 once) as one dual
  // GEMM dequantizing both weights, ragged M and N, both layouts.
  for (Epilogue epilogue : {Epilogue::SwiGlu, Epilogue::BiasSwiGlu}) {
    GemmCase c = dequantized(epilogue == Epilogue::SwiGlu ? "i8" : "f8E4M3FN",
                             epilogue == Epilogue::SwiGlu, epilogue);
    c.n = 80;
    c.scaleRows = c.transposeRhs ? c.n : 1;
    c.scaleColumns = c.transposeRhs ? 1 : c.n;
    SCOPED_TRACE(c.rhsStorage);
    EXPECT_EQ(check(c, a100).variant, GemmVariant::MmaSync);
  }
  // A decode shape: K split, the reduce kernel runs SwiGLU.
  GemmCase decode = dequantized("i8", true, Epilogue::SwiGlu);
  decode.m = 5;
  decode.n = 208;
  decode.k = 1024;
  decode.scaleRows = decode.n;
  decode.scaleColumns = decode.k / 128;
  EXPECT_GT(check(decode, h100).splitK, 1);
}

// The wgmma kernel row-chunked in a cluster: its ring and mbarrier phases
// run on across the chunks (K = 296: 5 k-steps a chunk, 2 chunks, so the
// 3-stage ring wraps mid-chunk), the epilogue reads the dense staged tile.
TEST_F(GemmKernelTest, ClusterRowChunkedWgmmaLayerNormMatches) {
  GemmTileShape shape = getGemmWgmmaTileShapes().front();
  GemmCase c = raggedWgmma(shape, Epilogue::BiasResidualLayerNorm);
  c.n = 3 * shape.blockN + 40;
  c.wholeRows = true;
  shape.clusterN = 2;
  c.shape = shape;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
  EXPECT_EQ(tiling.rowChunks, 2);
  EXPECT_EQ(tiling.grid[0], 2);
}

TEST_F(GemmKernelTest, RowChunkedWgmmaWithoutClusterMatches) {
  GemmTileShape shape = getGemmWgmmaTileShapes()[4];
  GemmCase c = raggedWgmma(shape, Epilogue::BiasLayerNormWithoutBias);
  c.n = 2 * shape.blockN + 8;
  c.wholeRows = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
  EXPECT_EQ(tiling.rowChunks, 3);
  EXPECT_EQ(tiling.clusterN, 1);
}

// The cluster kernels' PTX (mma.sync and wgmma, LayerNorm over N = 4096 as
// the seed's fc2 + ln) assembles for sm_90a without spills and holds the
// cluster size, the cluster barrier and the distributed shared memory load.
TEST_F(GemmKernelTest, PtxOfClusterRowChunkedKernelsAssembles) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  for (bool wgmma : {false, true}) {
    SCOPED_TRACE(wgmma ? "wgmma" : "mma.sync");
    GemmCase c = gemmCase(256, 4096, 256, Epilogue::BiasResidualLayerNorm);
    c.wholeRows = true;
    c.wgmma = wgmma;
    // The tiles the seed's fc2 + ln takes on an H100 (wgmma) and one of
    // mma.sync's.
    GemmTileShape shape =
        wgmma ? GemmTileShape{64, 256, 4, 1, 4, GemmVariant::Wgmma}
              : GemmTileShape{64, 128, 2, 2, 4};
    shape.clusterN = 8;
    c.shape = shape;
    KernelAnalysis analysis;
    std::string ptx = lowerToPtx(c, h100, analysis);
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(analysis.tiling.clusterN, 8);
    for (const char *expected :
         {".reqnctapercluster 8, 1, 1", "barrier.cluster.arrive.aligned",
          "barrier.cluster.wait.aligned", "mapa.shared::cluster",
          "ld.shared::cluster"})
      EXPECT_NE(ptx.find(expected), std::string::npos) << expected;
    if (wgmma) {
      EXPECT_NE(ptx.find("fence.proxy.async.shared::cta"), std::string::npos);
    }
    expectAssemblesWithoutSpills(*ptxas, ptx, "sm_90a", analysis);
  }
}

// A dual GEMM (gate and up, then SwiGLU) on the wgmma kernel: both rhs
// rings fill in one stage on one mbarrier, two accumulator sets, each
// product staged through the dense tile; ragged M, N and K (K = 296: the
// ring wraps), both rhs layouts, bf16 and f16.
TEST_F(GemmKernelTest, WgmmaDualGemmSwiGluMatches) {
  for (const GemmTileShape &shape :
       {GemmTileShape{128, 64, 4, 1, 3, GemmVariant::Wgmma},
        GemmTileShape{64, 128, 4, 1, 4, GemmVariant::Wgmma}})
    for (bool transposeRhs : {true, false}) {
      SCOPED_TRACE(llvm::formatv("{0}x{1}, rhs {2}", shape.blockM, shape.blockN,
                                 transposeRhs ? "[N, K]" : "[K, N]")
                       .str());
      GemmCase c = raggedWgmma(shape, transposeRhs ? Epilogue::SwiGlu
                                                   : Epilogue::BiasSwiGlu);
      c.transposeRhs = transposeRhs;
      c.f16 = !transposeRhs;
      GemmTiling tiling = check(c, h100);
      EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
    }
}

// The chooser gives a dual the wgmma kernel on sm_90a, never a tile whose
// two accumulator sets exceed 128 registers a thread (128x128 would need
// 256), nor the warp-specialized kernel; a decode-shaped dual splits K.
TEST_F(GemmKernelTest, WgmmaDualTilesHoldBothAccumulatorSets) {
  GemmCase c = gemmCase(2048, 1024, 512, Epilogue::SwiGlu);
  c.wgmma = c.warpSpecialized = true;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source(c), context.get());
  ASSERT_TRUE(module);
  GemmTiling tiling =
      analyze(*module->getOps<func::FuncOp>().begin(), c, h100).tiling;
  EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
  EXPECT_LE(tiling.blockM * tiling.blockN, 8192);
  // By hand: the 1024-byte alignment slack, then the larger of the ring
  // (stages x (an lhs and two rhs tiles) of 128-byte rows) and the staging
  // (two padded f32 accumulator tiles and the dense one).
  int64_t bm = tiling.blockM, bn = tiling.blockN;
  EXPECT_EQ(tiling.sharedBytes,
            1024 + std::max(tiling.stages * (bm + 2 * bn) * 128,
                            2 * bm * (bn + 8) * 4 + bm * bn * 4));
  GemmCase decode = gemmCase(5, 208, 1024, Epilogue::SwiGlu);
  decode.wgmma = true;
  GemmTiling split = check(decode, h100);
  EXPECT_EQ(split.variant, GemmVariant::Wgmma);
  EXPECT_GT(split.splitK, 1);
}

TEST_F(GemmKernelTest, WgmmaDualPtxAssemblesToHgmmaWithoutSpills) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  for (const GemmTileShape &shape :
       {GemmTileShape{128, 64, 4, 1, 4, GemmVariant::Wgmma},
        GemmTileShape{64, 128, 4, 1, 4, GemmVariant::Wgmma}}) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}", shape.blockM, shape.blockN).str());
    GemmCase c = gemmCase(512, 512, 512, Epilogue::BiasSwiGlu);
    c.wgmma = true;
    c.shape = shape;
    KernelAnalysis analysis;
    std::string ptx = lowerToPtx(c, h100, analysis);
    ASSERT_FALSE(ptx.empty());
    EXPECT_EQ(analysis.tiling.variant, GemmVariant::Wgmma);
    EXPECT_NE(ptx.find("wgmma.mma_async.sync.aligned.m64n" +
                       std::to_string(shape.blockN) + "k16.f32"),
              std::string::npos);
    auto [rc, text] = assemble(*ptxas, ptx, "sm_90a");
    ASSERT_EQ(rc, 0) << text;
    EXPECT_NE(text.find("0 bytes spill stores, 0 bytes spill loads"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("C7520"), std::string::npos) << text;
  }
}

//===----------------------------------------------------------------------===//
// sm_90a: fp8 operands (wgmma m64nNk32, both operands K-major)
//===----------------------------------------------------------------------===//

namespace {
/// An fp8 wgmma case ragged in M, N and K against `shape`: two row and two
/// column tiles, K = 592: five k-steps of 128 (the ring wraps at 3 and 4
/// stages), the last zero-filled past K.
GemmCase raggedFp8(const GemmTileShape &shape, Epilogue epilogue,
                   StringRef format) {
  GemmCase c = raggedWgmma(shape, epilogue);
  c.k = 592;
  c.fp8 = format.str();
  return c;
}
} // namespace

TEST_F(GemmKernelTest, Fp8WgmmaEveryTileConfigurationMatches) {
  int64_t promoted = 0;
  for (const GemmTileShape &shape : getGemmWgmmaTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2} stages", shape.blockM,
                               shape.blockN, shape.stages)
                     .str());
    // Both formats (the product is bf16, as memwall.matmul infers);
    // promoted where the tile holds two accumulator sets, else fast.
    GemmCase c = raggedFp8(shape, Epilogue::BiasGeluErf,
                           shape.stages == 3 ? "f8E4M3FN" : "f8E5M2");
    c.fp8FastAccumulation = !holdsPromotedFp8(shape);
    promoted += !c.fp8FastAccumulation;
    GemmTiling tiling = check(c, h100);
    EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
    // A stage is one 128-byte row of each operand: 128 fp8 elements of K.
    EXPECT_EQ(tiling.blockK, 128);
  }
  // 128x64 and 64x128, with 3 and 4 stages.
  EXPECT_EQ(promoted, 4);
}

TEST_F(GemmKernelTest, Fp8WarpSpecializedEveryTileConfigurationMatches) {
  int64_t promoted = 0;
  for (const GemmTileShape &shape : getGemmWarpSpecializedTileShapes()) {
    SCOPED_TRACE(llvm::formatv("{0}x{1}, {2} stages", shape.blockM,
                               shape.blockN, shape.stages)
                     .str());
    GemmCase c = raggedFp8(shape, Epilogue::BiasResidual,
                           shape.stages == 3 ? "f8E5M2" : "f8E4M3FN");
    c.warpSpecialized = true;
    c.fp8FastAccumulation = !holdsPromotedFp8(shape);
    promoted += !c.fp8FastAccumulation;
    EXPECT_EQ(check(c, h100).variant, GemmVariant::WgmmaWarpSpecialized);
  }
  // 128x128, with 3 and 4 stages.
  EXPECT_EQ(promoted, 2);
}

TEST_F(GemmKernelTest, Fp8ProductRoundedToBf16AheadOfALayerNormMatches) {
  // The norm's input is the bf16 product as the unfused graph stores it,
  // not rounded to the operands' fp8.
  GemmCase c = ragged(Epilogue::BiasResidualLayerNorm);
  c.m = 90;
  c.n = 200;
  c.k = 272;
  c.fp8 = "f8E4M3FN";
  c.wgmma = true;
  c.wholeRows = true;
  // Whole rows of 200 in one tile: 64x256, which holds one accumulator set
  // (fast accumulation) but not a promoted GEMM's two.
  c.fp8FastAccumulation = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
  EXPECT_EQ(tiling.blockN, 256);
  // Promoted, the rows run row-chunked on 128x64 tiles.
  c.fp8FastAccumulation = false;
  c.shape = *llvm::find_if(getGemmWgmmaTileShapes(), holdsPromotedFp8);
  tiling = check(c, h100);
  EXPECT_GT(tiling.rowChunks, 1);
}

TEST_F(GemmKernelTest, Fp8DecodeShapeSplitsKAndMatches) {
  GemmCase c = gemmCase(5, 200, 2048, Epilogue::Bias);
  c.fp8 = "f8E4M3FN";
  c.wgmma = true;
  GemmTiling tiling = check(c, h100);
  EXPECT_EQ(tiling.variant, GemmVariant::Wgmma);
  EXPECT_GT(tiling.splitK, 1);
}

TEST_F(GemmKernelTest, Fp8HeadsSplitRopeEpilogueMatches) {
  GemmCase c = gemmCase(64, 256, 256, Epilogue::HeadsRope);
  c.batch = 2;
  c.headDim = 64;
  c.fp8 = "f8E4M3FN";
  c.wgmma = true;
  EXPECT_EQ(check(c, h100).variant, GemmVariant::Wgmma);
}

TEST_F(GemmKernelTest, Fp8WrongReferenceIsCaught) {
  GemmCase c =
      raggedFp8(*llvm::find_if(getGemmWgmmaTileShapes(), holdsPromotedFp8),
                Epilogue::Bias, "f8E4M3FN");
  EXPECT_NONFATAL_FAILURE(check(c, h100,
                                [](std::vector<std::vector<double>> &expected) {
                                  expected[0][777] += 0.5;
                                }),
                          "output 0");
}

TEST_F(GemmKernelTest, Fp8OperandsTheKernelCannotReadAreRefusedWithWhy) {
  auto why = [&](const GemmCase &c, const GPUTarget &target) -> std::string {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source(c), context.get());
    if (!module)
      return "did not parse";
    MatmulOp matmul;
    module->walk([&](MatmulOp op) { matmul = op; });
    std::string reason;
    FailureOr<GemmProblem> problem = getGemmProblem(matmul, &reason);
    if (failed(problem))
      return reason;
    problem->wgmmaRequested = c.wgmma;
    if (failed(chooseGemmTiling(*problem, target, 1, &reason)))
      return reason;
    return "";
  };
  GemmCase c = gemmCase(256, 256, 256, Epilogue::None);
  c.fp8 = "f8E4M3FN";
  c.wgmma = true;
  EXPECT_EQ(why(c, h100), "");
  // mma.sync multiplies 16-bit operands.
  EXPECT_EQ(why(c, a100),
            "the generated GEMM: fp8 operands run on the wgmma kernel only, "
            "and wgmma needs sm_90a, the target is sm_80");
  GemmCase off = c;
  off.wgmma = false;
  EXPECT_EQ(why(off, h100),
            "the generated GEMM: fp8 operands run on the wgmma kernel only, "
            "and the wgmma kernel is turned off (memwall.gemm_wgmma)");
  // wgmma reads fp8 K-major only.
  GemmCase rowMajorRhs = c;
  rowMajorRhs.transposeRhs = false;
  EXPECT_EQ(why(rowMajorRhs, h100),
            "the generated GEMM: reads fp8 operands K-major only (lhs [M, K], "
            "rhs [N, K] with transpose_rhs), as wgmma does");
  GemmCase oddK = c;
  oddK.k = 264;
  EXPECT_EQ(why(oddK, h100),
            "the generated GEMM: needs K a multiple of 16 for fp8 operands "
            "(16-byte TMA rows), got 264");
}

TEST_F(GemmKernelTest, Fp8WgmmaPtxAssemblesToQgmma) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    GTEST_SKIP() << "no ptxas";
  registerPtxLowering(*context);
  auto lower = [&](const GemmCase &c, KernelAnalysis &analysis) {
    return lowerToPtx(c, h100, analysis);
  };
  // Every shape: the promoted kernel where the tile holds it, else fast
  // accumulation.
  assembleWgmmaConfigurations(*ptxas, getGemmWgmmaTileShapes(),
                              /*warpSpecialized=*/false, {}, lower, "f8E4M3FN");
  assembleWgmmaConfigurations(*ptxas, getGemmWarpSpecializedTileShapes(),
                              /*warpSpecialized=*/true, {}, lower, "f8E5M2");
}
