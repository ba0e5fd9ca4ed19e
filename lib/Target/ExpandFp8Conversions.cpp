//===- ExpandFp8Conversions.cpp - fp8 conversions as integer arithmetic ---===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Kernels convert to and from fp8 with arith.truncf/extf, whose meaning the
// simulator and the reference share (round to nearest even, saturating to
// the largest finite value). LLVM has no fp8 type, so before the LLVM
// lowering every such conversion becomes i32 arithmetic on f32 bits (the
// Passes.td description has the recipe).
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace memwall {
#define GEN_PASS_DEF_EXPANDFP8CONVERSIONS
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {

/// The fields of an fp8 format: stored mantissa bits and exponent bias.
struct Fp8Format {
  int64_t mantissaBits, bias;
  /// e4m3fn has no infinities, and one NaN code per sign (0x7F); e5m2 is
  /// IEEE-like (0x7C infinity, 0x7D-0x7F NaN).
  bool ieee;
  /// The largest finite magnitude's code.
  int64_t maxCode() const { return ieee ? 0x7B : 0x7E; }
};

std::optional<Fp8Format> getFp8Format(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return Fp8Format{3, 7, false};
  if (isa<Float8E5M2Type>(type))
    return Fp8Format{2, 15, true};
  return std::nullopt;
}

/// i32 and f32 arithmetic for one conversion.
struct Bits {
  PatternRewriter &b;
  Location loc;

  Value i32(int64_t value) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), value);
  }
  Value f32(double value) {
    return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                          APFloat(static_cast<float>(value)));
  }
  Value andI(Value x, int64_t mask) {
    return arith::AndIOp::create(b, loc, x, i32(mask));
  }
  Value shl(Value x, int64_t by) {
    return arith::ShLIOp::create(b, loc, x, i32(by));
  }
  Value shr(Value x, int64_t by) {
    return arith::ShRUIOp::create(b, loc, x, i32(by));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return add(x, i32(y)); }
  Value cmp(arith::CmpIPredicate predicate, Value x, int64_t y) {
    return arith::CmpIOp::create(b, loc, predicate, x, i32(y));
  }
  Value select(Value condition, Value x, Value y) {
    return arith::SelectOp::create(b, loc, condition, x, y);
  }
  Value toBits(Value f) {
    return arith::BitcastOp::create(b, loc, b.getI32Type(), f);
  }
  Value toFloat(Value bits) {
    return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
  }

  /// The f32 of fp8 byte `byte` (zero-extended to i32).
  Value decode(Value byte, const Fp8Format &format) {
    int64_t m = format.mantissaBits;
    Value sign = shl(andI(byte, 0x80), 24);
    Value magnitude = andI(byte, 0x7F);
    // A normal byte: its exponent and mantissa are the f32's fields, the
    // exponent rebiased from the format's bias to 127.
    Value normal = add(shl(magnitude, 23 - m), (127 - format.bias) << 23);
    // A subnormal: mantissa x 2^(1 - bias - m), exact in f32.
    Value subnormal = toBits(arith::MulFOp::create(
        b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), magnitude),
        f32(std::ldexp(1.0, 1 - format.bias - m))));
    Value bits = select(cmp(arith::CmpIPredicate::ult, magnitude, 1 << m),
                        subnormal, normal);
    if (format.ieee) {
      // 0x7C: infinity; above: NaN.
      bits = select(cmp(arith::CmpIPredicate::eq, magnitude, 0x7C),
                    i32(0x7F800000), bits);
      bits = select(cmp(arith::CmpIPredicate::ugt, magnitude, 0x7C),
                    i32(0x7FC00000), bits);
    } else {
      bits = select(cmp(arith::CmpIPredicate::eq, magnitude, 0x7F),
                    i32(0x7FC00000), bits);
    }
    return toFloat(arith::OrIOp::create(b, loc, bits, sign));
  }

  /// The fp8 byte (in i32) of f32 `x`: round to nearest even, saturating.
  Value encode(Value x, const Fp8Format &format) {
    int64_t m = format.mantissaBits;
    Value bits = toBits(x);
    Value sign = andI(shr(bits, 24), 0x80);
    Value magnitude = andI(bits, 0x7FFFFFFF);
    // Normal: add half an fp8 ulp less one, plus the kept lsb (ties to
    // even), drop the low bits, rebias; carries move into the exponent.
    int64_t dropped = 23 - m;
    Value rounded = add(add(magnitude, (int64_t(1) << (dropped - 1)) - 1),
                        andI(shr(magnitude, dropped), 1));
    Value normal = add(shr(rounded, dropped), -((127 - format.bias) << m));
    normal = arith::MinSIOp::create(b, loc, normal, i32(format.maxCode()));
    // Below the smallest normal, f32 addition rounds to the subnormal
    // quantum 2^(1 - bias - m): |x| + 2^(24 - bias - m) has that ulp.
    int64_t quantum = 1 - format.bias - m;
    Value absolute = toFloat(magnitude);
    Value magic = f32(std::ldexp(1.0, quantum + 23));
    Value snapped = arith::SubFOp::create(
        b, loc, arith::AddFOp::create(b, loc, absolute, magic), magic);
    Value subnormal = arith::FPToUIOp::create(
        b, loc, b.getI32Type(),
        arith::MulFOp::create(b, loc, snapped, f32(std::ldexp(1.0, -quantum))));
    // The smallest normal's f32 bits: exponent 1 - bias.
    int64_t smallestNormal = (128 - format.bias) << 23;
    Value code =
        select(cmp(arith::CmpIPredicate::ult, magnitude, smallestNormal),
               subnormal, normal);
    code = select(cmp(arith::CmpIPredicate::ugt, magnitude, 0x7F800000),
                  i32(0x7F), code);
    return arith::OrIOp::create(b, loc, code, sign);
  }
};

struct ExpandExtF : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<Fp8Format> format = getFp8Format(op.getIn().getType());
    if (!format)
      return failure();
    Bits bits{rewriter, op.getLoc()};
    Value byte = arith::ExtUIOp::create(
        rewriter, op.getLoc(), rewriter.getI32Type(),
        arith::BitcastOp::create(rewriter, op.getLoc(), rewriter.getI8Type(),
                                 op.getIn()));
    Value widened = bits.decode(byte, *format);
    Type out = op.getType();
    if (!out.isF32())
      widened = out.getIntOrFloatBitWidth() > 32
                    ? Value(arith::ExtFOp::create(rewriter, op.getLoc(), out,
                                                  widened))
                    : Value(arith::TruncFOp::create(rewriter, op.getLoc(), out,
                                                    widened));
    rewriter.replaceOp(op, widened);
    return success();
  }
};

struct ExpandTruncF : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<Fp8Format> format = getFp8Format(op.getType());
    if (!format)
      return failure();
    Location loc = op.getLoc();
    Value in = op.getIn();
    // bf16 and f16 widen exactly; f64 rounds to f32 first (kernels compute
    // in f32).
    if (in.getType().getIntOrFloatBitWidth() < 32)
      in = arith::ExtFOp::create(rewriter, loc, rewriter.getF32Type(), in);
    else if (!in.getType().isF32())
      in = arith::TruncFOp::create(rewriter, loc, rewriter.getF32Type(), in);
    Bits bits{rewriter, loc};
    Value code = bits.encode(in, *format);
    rewriter.replaceOp(op, arith::BitcastOp::create(
                               rewriter, loc, op.getType(),
                               arith::TruncIOp::create(
                                   rewriter, loc, rewriter.getI8Type(), code)));
    return success();
  }
};

struct ExpandFp8ConversionsPass
    : public memwall::impl::ExpandFp8ConversionsBase<ExpandFp8ConversionsPass> {
  void runOnOperation() override {
    // Vectors of fp8 conversions are not emitted by memwall's kernels; one
    // would reach arith-to-llvm unconverted, so it is refused here.
    WalkResult vectors = getOperation().walk([&](Operation *op) {
      if (!isa<arith::ExtFOp, arith::TruncFOp>(op) ||
          !isa<VectorType>(op->getResult(0).getType()))
        return WalkResult::advance();
      Type in = getElementTypeOrSelf(op->getOperand(0).getType());
      Type out = getElementTypeOrSelf(op->getResult(0).getType());
      if (!getFp8Format(in) && !getFp8Format(out))
        return WalkResult::advance();
      op->emitOpError("converts a vector from or to fp8: only scalar fp8 "
                      "conversions are expanded");
      return WalkResult::interrupt();
    });
    if (vectors.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandExtF, ExpandTruncF>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
