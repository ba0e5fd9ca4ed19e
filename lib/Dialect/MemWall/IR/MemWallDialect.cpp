//===- MemWallDialect.cpp - memwall dialect and attributes ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace mlir;
using namespace memwall;

#include "memwall/Dialect/MemWall/IR/MemWallDialect.cpp.inc"
#include "memwall/Dialect/MemWall/IR/MemWallEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallAttrs.cpp.inc"

void MemWallDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "memwall/Dialect/MemWall/IR/MemWallOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "memwall/Dialect/MemWall/IR/MemWallHostOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "memwall/Dialect/MemWall/IR/MemWallKernelOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "memwall/Dialect/MemWall/IR/MemWallAttrs.cpp.inc"
      >();
}

LogicalResult MemWallDialect::verifyRegionArgAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned argIndex,
                                                       NamedAttribute attr) {
  if (attr.getName() == kFrozenAttrName) {
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!isa<UnitAttr>(attr.getValue()) || !function ||
        getArgKind(function, argIndex) != ArgKind::Weight)
      return op->emitError()
             << "'" << kFrozenAttrName << "' of argument #" << argIndex
             << " must be a unit attribute on a weight";
    return success();
  }
  if (attr.getName() != kArgKindAttrName)
    return op->emitError() << "unknown memwall argument attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<ArgKindAttr>(attr.getValue()))
    return op->emitError() << "'" << kArgKindAttrName << "' of argument #"
                           << argIndex
                           << " must be #memwall.arg_kind<weight|input|"
                              "kv_cache|optimizer_state>, got "
                           << attr.getValue();
  return success();
}

LogicalResult MemWallDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  if (attr.getName() == kFusedAttrName) {
    // memwall-fuse marks the functions it ran on (whole modules before it
    // ran per function).
    if (!isa<ModuleOp, FunctionOpInterface>(op) ||
        !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << kFusedAttrName
                             << "' must be a unit attribute on a function "
                                "or module";
    return success();
  }
  if (attr.getName() == kPhaseAttrName) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!phase ||
        (phase.getValue() != "backward" && phase.getValue() != "optimizer"))
      return op->emitError() << "'" << kPhaseAttrName
                             << "' must be \"backward\" or \"optimizer\"";
    return success();
  }
  if (attr.getName() == kPrecisionAttrName) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kPrecisionAttrName
                             << "' must be a string attribute on a module";
    return success();
  }
  if (attr.getName() == kRematAttrName) {
    if (!isa<ModuleOp>(op) || !isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'" << kRematAttrName
                             << "' must be a dictionary attribute on a module";
    return success();
  }
  if (attr.getName() == kRecomputedAttrName) {
    if (!isa<UnitAttr>(attr.getValue()) || !op->hasAttr(kPhaseAttrName))
      return op->emitError() << "'" << kRecomputedAttrName
                             << "' must be a unit attribute on a backward op";
    return success();
  }
  if (attr.getName() == kAddedViewAttrName) {
    if (!isa<UnitAttr>(attr.getValue()) ||
        !isa<ReshapeOp, TransposeOp, SliceOp>(op) ||
        !isa_and_nonnull<FusionOp>(op->getParentOp()))
      return op->emitError() << "'" << kAddedViewAttrName
                             << "' must be a unit attribute on a reshape, "
                                "transpose or slice in a memwall.fusion";
    return success();
  }
  if (attr.getName() == kInPlaceAttrName) {
    auto append = dyn_cast<KVCacheAppendOp>(op);
    if (!isa<UnitAttr>(attr.getValue()) || !append)
      return op->emitError() << "'" << kInPlaceAttrName
                             << "' must be a unit attribute on a "
                                "memwall.kv_cache_append";
    if (!append.isCacheAnArgumentOnlyItReads())
      return op->emitError() << "'" << kInPlaceAttrName
                             << "' needs a cache that is a function argument "
                                "only this append reads";
    return success();
  }
  if (attr.getName() == kCountersAttrName) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!isa<UnitAttr>(attr.getValue()) || !alloc ||
        !alloc.getType().getElementType().isInteger(32))
      return op->emitError() << "'" << kCountersAttrName
                             << "' must be a unit attribute on a "
                                "memref.alloc of i32";
    return success();
  }
  // Codegen's attributes (memwall-lower-to-bundle).
  StringRef expected =
      llvm::StringSwitch<StringRef>(attr.getName().getValue())
          .Case(kKernelConfigAttrName,
                isa<KernelConfigAttr>(attr.getValue())
                    ? ""
                    : "a #memwall.kernel_config attribute")
          .Cases({kReferenceAttrName, kKernelsSourceAttrName, kBufferAttrName},
                 isa<StringAttr>(attr.getValue()) ? "" : "a string")
          .Cases({kOutputNamesAttrName, kReferenceNamesAttrName},
                 isa<ArrayAttr>(attr.getValue()) ? "" : "an array of strings")
          .Cases({kOffsetAttrName, kArenaBytesAttrName},
                 isa<IntegerAttr>(attr.getValue()) ? "" : "an integer")
          .Case(kArgumentOffsetsAttrName,
                isa<DenseI64ArrayAttr>(attr.getValue()) ? "" : "an array<i64>")
          .Cases({kGemmWgmmaAttrName, kGemmWarpSpecializedAttrName,
                  kGemmFp8FastAccumulationAttrName},
                 isa<UnitAttr, BoolAttr>(attr.getValue())
                     ? ""
                     : "a unit or boolean attribute")
          .Default("?");
  if (expected.empty())
    return success();
  if (expected != "?")
    return op->emitError() << "'" << attr.getName().getValue() << "' must be "
                           << expected;
  if (attr.getName() == kTargetAttrName) {
    if (!isa<TargetAttr>(attr.getValue()))
      return op->emitError() << "'" << kTargetAttrName
                             << "' must be a #memwall.target attribute";
    return success();
  }
  if (attr.getName() == kGemmBackendAttrName) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || !symbolizeGemmBackend(name.getValue()))
      return op->emitError() << "'" << kGemmBackendAttrName
                             << "' must be \"auto\", \"cublaslt\" or "
                                "\"memwall\"";
    return success();
  }
  if (attr.getName() != kCostAttrName)
    return op->emitError() << "unknown memwall attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<CostAttr>(attr.getValue()))
    return op->emitError() << "'" << kCostAttrName
                           << "' must be a #memwall.cost attribute";
  return success();
}

//===----------------------------------------------------------------------===//
// CostAttr
//===----------------------------------------------------------------------===//

LogicalResult CostAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t flops, int64_t bytesRead,
                               int64_t bytesWritten, APFloat intensity,
                               Bound bound, APFloat timeSeconds) {
  if (flops < 0 || bytesRead < 0 || bytesWritten < 0)
    return emitError() << "flops and bytes must be non-negative";
  if (intensity.isNegative() || !intensity.isFinite())
    return emitError() << "intensity must be finite and non-negative";
  if (timeSeconds.isNegative() || !timeSeconds.isFinite())
    return emitError() << "time_s must be finite and non-negative";
  return success();
}

Attribute CostAttr::parse(AsmParser &parser, Type) {
  int64_t flops = 0, bytesRead = 0, bytesWritten = 0;
  double intensity = 0, timeSeconds = 0;
  std::string boundName;
  auto parseField = [&](StringRef name) -> ParseResult {
    if (parser.parseKeyword(name) || parser.parseEqual())
      return failure();
    return success();
  };
  // Takes 8, -0.5 and 2.0e-06; a hex literal is a float's bit pattern as in
  // MLIR's own float attributes (0x7FF0000000000000 is +inf, which the
  // verifier then rejects). MLIR has no "8e0": an exponent needs a '.'.
  auto parseNumber = [&](double &value) -> ParseResult {
    bool negative = succeeded(parser.parseOptionalMinus());
    const char *text = parser.getCurrentLocation().getPointer();
    bool hex = text[0] == '0' && text[1] == 'x';
    int64_t integer;
    OptionalParseResult parsedInteger =
        hex ? OptionalParseResult() : parser.parseOptionalInteger(integer);
    if (parsedInteger.has_value()) {
      if (failed(*parsedInteger))
        return failure();
      value = static_cast<double>(integer);
    } else if (parser.parseFloat(value)) {
      return failure();
    }
    if (negative)
      value = -value;
    return success();
  };
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parseField("flops") || parser.parseInteger(flops) ||
      parser.parseComma() || parseField("bytes_read") ||
      parser.parseInteger(bytesRead) || parser.parseComma() ||
      parseField("bytes_written") || parser.parseInteger(bytesWritten) ||
      parser.parseComma() || parseField("intensity") ||
      parseNumber(intensity) || parser.parseComma() || parseField("bound") ||
      parser.parseKeywordOrString(&boundName) || parser.parseComma() ||
      parseField("time_s") || parseNumber(timeSeconds) || parser.parseGreater())
    return {};
  std::optional<Bound> bound = symbolizeBound(boundName);
  if (!bound) {
    parser.emitError(loc, "bound must be 'memory' or 'compute', got '")
        << boundName << "'";
    return {};
  }
  return parser.getChecked<CostAttr>(loc, parser.getContext(), flops, bytesRead,
                                     bytesWritten, APFloat(intensity), *bound,
                                     APFloat(timeSeconds));
}

/// Four significant digits, always in a form that reads back as a float.
static std::string formatFloat(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.4g", value);
  // MLIR float literals need a '.' before any exponent ("2.0e-06").
  if (text.find('.') == std::string::npos)
    text.insert(std::min(text.find('e'), text.size()), ".0");
  return text;
}

void CostAttr::print(AsmPrinter &printer) const {
  printer << "<flops = " << getFlops() << ", bytes_read = " << getBytesRead()
          << ", bytes_written = " << getBytesWritten()
          << ", intensity = " << formatFloat(getIntensity().convertToDouble())
          << ", bound = " << stringifyBound(getBound())
          << ", time_s = " << formatFloat(getTimeSeconds().convertToDouble())
          << ">";
}
