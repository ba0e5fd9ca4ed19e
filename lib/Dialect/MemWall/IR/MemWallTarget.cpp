//===- MemWallTarget.cpp - #memwall.target and getTargetOf ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace memwall;

//===----------------------------------------------------------------------===//
// GPUTarget <-> TargetAttr
//===----------------------------------------------------------------------===//

template <size_t N>
static SmallVector<APFloat> toAPFloats(const std::array<double, N> &values) {
  return llvm::map_to_vector(values,
                             [](double value) { return APFloat(value); });
}

template <size_t N>
static std::array<double, N> toDoubles(ArrayRef<APFloat> values) {
  std::array<double, N> doubles{};
  for (auto [index, value] : llvm::enumerate(values.take_front(N)))
    doubles[index] = value.convertToDouble();
  return doubles;
}

/// Calls `get` (TargetAttr::get or getChecked) with the figures of `target`,
/// typed as the generated builders take them.
template <typename GetFn>
static TargetAttr buildTargetAttr(const GPUTarget &target, GetFn get) {
  SmallVector<APFloat> peakFlops = toAPFloats(target.peakFlops);
  SmallVector<APFloat> gemmEfficiency =
      toAPFloats(target.achievable.gemmEfficiency);
  SmallVector<APFloat> generatedGemmEfficiency =
      toAPFloats(target.achievable.generatedGemmEfficiency);
  return get(StringRef(target.name), StringRef(target.description),
             StringRef(target.smArch), target.launchMode,
             ArrayRef<APFloat>(peakFlops), APFloat(target.memoryBandwidth),
             target.memoryCapacityBytes, target.l2Bytes,
             target.sharedMemoryPerSMBytes, target.smCount,
             APFloat(target.kernelLaunchSeconds),
             APFloat(target.graphKernelLaunchSeconds),
             APFloat(target.achievable.memoryBandwidth),
             ArrayRef<APFloat>(gemmEfficiency),
             ArrayRef<APFloat>(generatedGemmEfficiency),
             APFloat(target.achievable.attentionEfficiency),
             APFloat(target.interconnect.nvlinkBandwidth),
             APFloat(target.interconnect.pcieBandwidth),
             APFloat(target.interconnect.networkBandwidth),
             target.interconnect.gpusPerNode, StringRef(target.calibration),
             StringRef(target.baseName));
}

/// The target of a TargetAttr's parameters (in the order ODS declares them).
static GPUTarget toGPUTarget(
    StringRef name, StringRef description, StringRef smArch,
    LaunchMode launchMode, ArrayRef<APFloat> peakFlops,
    const APFloat &memoryBandwidth, uint64_t memoryCapacityBytes,
    uint64_t l2Bytes, uint64_t sharedMemoryPerSMBytes, unsigned smCount,
    const APFloat &kernelLaunchSeconds, const APFloat &graphKernelLaunchSeconds,
    const APFloat &achievableMemoryBandwidth, ArrayRef<APFloat> gemmEfficiency,
    ArrayRef<APFloat> generatedGemmEfficiency,
    const APFloat &attentionEfficiency, const APFloat &nvlinkBandwidth,
    const APFloat &pcieBandwidth, const APFloat &networkBandwidth,
    unsigned gpusPerNode, StringRef calibration, StringRef baseName) {
  GPUTarget target;
  target.name = name.str();
  target.description = description.str();
  target.smArch = smArch.str();
  target.launchMode = launchMode;
  target.peakFlops = toDoubles<kNumMathPrecisions>(peakFlops);
  target.memoryBandwidth = memoryBandwidth.convertToDouble();
  target.memoryCapacityBytes = memoryCapacityBytes;
  target.l2Bytes = l2Bytes;
  target.sharedMemoryPerSMBytes = sharedMemoryPerSMBytes;
  target.smCount = smCount;
  target.kernelLaunchSeconds = kernelLaunchSeconds.convertToDouble();
  target.graphKernelLaunchSeconds = graphKernelLaunchSeconds.convertToDouble();
  target.achievable.memoryBandwidth =
      achievableMemoryBandwidth.convertToDouble();
  target.achievable.gemmEfficiency =
      toDoubles<kNumGemmShapeClasses>(gemmEfficiency);
  target.achievable.generatedGemmEfficiency =
      toDoubles<kNumGemmShapeClasses>(generatedGemmEfficiency);
  target.achievable.attentionEfficiency = attentionEfficiency.convertToDouble();
  target.interconnect.nvlinkBandwidth = nvlinkBandwidth.convertToDouble();
  target.interconnect.pcieBandwidth = pcieBandwidth.convertToDouble();
  target.interconnect.networkBandwidth = networkBandwidth.convertToDouble();
  target.interconnect.gpusPerNode = gpusPerNode;
  target.calibration = calibration.str();
  target.baseName = baseName.str();
  return target;
}

TargetAttr memwall::getTargetAttr(MLIRContext *ctx, const GPUTarget &target) {
  return buildTargetAttr(target, [&](auto &&...figures) {
    return TargetAttr::get(ctx, figures...);
  });
}

GPUTarget TargetAttr::getTarget() const {
  return toGPUTarget(
      getName(), getDescription(), getSmArch(), getLaunchMode(), getPeakFlops(),
      getMemoryBandwidth(), getMemoryCapacityBytes(), getL2Bytes(),
      getSharedMemoryPerSMBytes(), getSmCount(), getKernelLaunchSeconds(),
      getGraphKernelLaunchSeconds(), getAchievableMemoryBandwidth(),
      getGemmEfficiency(), getGeneratedGemmEfficiency(),
      getAttentionEfficiency(), getNvlinkBandwidth(), getPcieBandwidth(),
      getNetworkBandwidth(), getGpusPerNode(), getCalibration(), getBaseName());
}

LogicalResult TargetAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef name,
    StringRef description, StringRef smArch, LaunchMode launchMode,
    ArrayRef<APFloat> peakFlops, APFloat memoryBandwidth,
    uint64_t memoryCapacityBytes, uint64_t l2Bytes,
    uint64_t sharedMemoryPerSMBytes, unsigned smCount,
    APFloat kernelLaunchSeconds, APFloat graphKernelLaunchSeconds,
    APFloat achievableMemoryBandwidth, ArrayRef<APFloat> gemmEfficiency,
    ArrayRef<APFloat> generatedGemmEfficiency, APFloat attentionEfficiency,
    APFloat nvlinkBandwidth, APFloat pcieBandwidth, APFloat networkBandwidth,
    unsigned gpusPerNode, StringRef calibration, StringRef baseName) {
  if (peakFlops.size() != kNumMathPrecisions ||
      gemmEfficiency.size() != kNumGemmShapeClasses ||
      generatedGemmEfficiency.size() != kNumGemmShapeClasses)
    return emitError() << "expects " << kNumMathPrecisions << " peak rates and "
                       << kNumGemmShapeClasses
                       << " GEMM efficiencies of each kind";
  GPUTarget target = toGPUTarget(
      name, description, smArch, launchMode, peakFlops, memoryBandwidth,
      memoryCapacityBytes, l2Bytes, sharedMemoryPerSMBytes, smCount,
      kernelLaunchSeconds, graphKernelLaunchSeconds, achievableMemoryBandwidth,
      gemmEfficiency, generatedGemmEfficiency, attentionEfficiency,
      nvlinkBandwidth, pcieBandwidth, networkBandwidth, gpusPerNode,
      calibration, baseName);
  if (llvm::Error error = target.validate())
    return emitError() << "invalid target '" << name
                       << "': " << llvm::toString(std::move(error));
  return success();
}

//===----------------------------------------------------------------------===//
// Assembly format
//===----------------------------------------------------------------------===//

namespace {
/// Visits every field of `target` after its name, in the order the attribute
/// prints them, under the target file's keys (docs/targets.md). The printer
/// and the parser both walk this one list.
template <typename TargetT, typename Visitor>
void visitTargetFields(TargetT &target, Visitor &visitor) {
  visitor.field("description", target.description);
  visitor.field("sm_arch", target.smArch);
  visitor.field("launch_mode", target.launchMode);
  visitor.group("peak_flops", [&] {
    for (unsigned index = 0; index < kNumMathPrecisions; ++index)
      visitor.field(stringifyMathPrecision(static_cast<MathPrecision>(index)),
                    target.peakFlops[index]);
  });
  visitor.field("memory_bandwidth_bytes_per_s", target.memoryBandwidth);
  visitor.field("memory_capacity_bytes", target.memoryCapacityBytes);
  visitor.field("l2_bytes", target.l2Bytes);
  visitor.field("shared_memory_per_sm_bytes", target.sharedMemoryPerSMBytes);
  visitor.field("sm_count", target.smCount);
  visitor.field("kernel_launch_s", target.kernelLaunchSeconds);
  visitor.field("graph_kernel_launch_s", target.graphKernelLaunchSeconds);
  visitor.group("achievable", [&] {
    visitor.field("memory_bandwidth_bytes_per_s",
                  target.achievable.memoryBandwidth);
    visitor.group("gemm_efficiency", [&] {
      for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
        visitor.field(
            stringifyGemmShapeClass(static_cast<GemmShapeClass>(index)),
            target.achievable.gemmEfficiency[index]);
    });
    visitor.group("generated_gemm_efficiency", [&] {
      for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
        visitor.field(
            stringifyGemmShapeClass(static_cast<GemmShapeClass>(index)),
            target.achievable.generatedGemmEfficiency[index]);
    });
    visitor.field("attention_efficiency",
                  target.achievable.attentionEfficiency);
  });
  visitor.group("interconnect", [&] {
    visitor.field("nvlink_bytes_per_s", target.interconnect.nvlinkBandwidth);
    visitor.field("pcie_bytes_per_s", target.interconnect.pcieBandwidth);
    visitor.field("network_bytes_per_s", target.interconnect.networkBandwidth);
    visitor.field("gpus_per_node", target.interconnect.gpusPerNode);
  });
  visitor.field("calibration", target.calibration);
  visitor.field("base", target.baseName);
}

/// Prints `key = value` fields separated by commas, groups in braces.
struct TargetFieldPrinter {
  AsmPrinter &printer;
  bool atGroupStart = false;

  void printKey(StringRef key) {
    if (!atGroupStart)
      printer << ", ";
    atGroupStart = false;
    printer << key << " = ";
  }
  void field(StringRef key, const std::string &value) {
    printKey(key);
    printer.printString(value);
  }
  // printFloat prints the shortest form that parses back to the same bits.
  void field(StringRef key, double value) {
    printKey(key);
    printer.printFloat(APFloat(value));
  }
  void field(StringRef key, uint64_t value) {
    printKey(key);
    printer << value;
  }
  void field(StringRef key, unsigned value) {
    printKey(key);
    printer << value;
  }
  void field(StringRef key, LaunchMode value) {
    printKey(key);
    printer << stringifyLaunchMode(value);
  }
  void group(StringRef key, function_ref<void()> printFields) {
    printKey(key);
    printer << "{";
    atGroupStart = true;
    printFields();
    printer << "}";
  }
};

/// Parses what TargetFieldPrinter prints, in the same order; stops at the
/// first error, which the parser has reported.
struct TargetFieldParser {
  AsmParser &parser;
  bool atGroupStart = false;
  bool failed = false;

  bool parseKey(StringRef key) {
    if (failed)
      return false;
    failed = (!atGroupStart && parser.parseComma()) ||
             parser.parseKeyword(key) || parser.parseEqual();
    atGroupStart = false;
    return !failed;
  }
  void field(StringRef key, std::string &value) {
    if (parseKey(key))
      failed = parser.parseString(&value).failed();
  }
  // Takes what printFloat prints, hex bit patterns included.
  void field(StringRef key, double &value) {
    if (parseKey(key))
      failed = parser.parseFloat(value).failed();
  }
  template <typename IntT>
  std::enable_if_t<std::is_integral_v<IntT>> field(StringRef key, IntT &value) {
    if (parseKey(key))
      failed = parser.parseInteger(value).failed();
  }
  void field(StringRef key, LaunchMode &value) {
    if (!parseKey(key))
      return;
    SMLoc loc = parser.getCurrentLocation();
    std::string name;
    if ((failed = parser.parseKeywordOrString(&name).failed()))
      return;
    std::optional<LaunchMode> mode = symbolizeLaunchMode(name);
    if ((failed = !mode)) {
      parser.emitError(loc) << "launch_mode must be stream or graph";
      return;
    }
    value = *mode;
  }
  void group(StringRef key, function_ref<void()> parseFields) {
    if (!parseKey(key) || (failed = parser.parseLBrace().failed()))
      return;
    atGroupStart = true;
    parseFields();
    if (!failed)
      failed = parser.parseRBrace().failed();
  }
};
} // namespace

void TargetAttr::print(AsmPrinter &printer) const {
  GPUTarget target = getTarget();
  printer << "<";
  printer.printString(target.name);
  TargetFieldPrinter fields{printer};
  visitTargetFields(target, fields);
  printer << ">";
}

Attribute TargetAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  GPUTarget target;
  if (parser.parseLess() || parser.parseString(&target.name))
    return {};
  // A built-in target may be given by its name alone.
  if (succeeded(parser.parseOptionalGreater())) {
    if (const GPUTarget *builtin = lookupBuiltinGPUTarget(target.name))
      return getTargetAttr(parser.getContext(), *builtin);
    parser.emitError(loc) << "'" << target.name
                          << "' is not a built-in target; give its figures";
    return {};
  }
  TargetFieldParser fields{parser};
  visitTargetFields(target, fields);
  if (fields.failed || parser.parseGreater())
    return {};
  return buildTargetAttr(target, [&](auto &&...figures) {
    return TargetAttr::getChecked([&] { return parser.emitError(loc); },
                                  parser.getContext(), figures...);
  });
}

//===----------------------------------------------------------------------===//
// getTargetOf
//===----------------------------------------------------------------------===//

FailureOr<GPUTarget> memwall::getTargetOf(Operation *op) {
  for (Operation *scope = op; scope; scope = scope->getParentOp()) {
    Attribute attr = scope->getDiscardableAttr(kTargetAttrName);
    if (!attr)
      continue;
    if (auto target = dyn_cast<TargetAttr>(attr))
      return target.getTarget();
    return op->emitError() << "'" << kTargetAttrName
                           << "' must be a #memwall.target attribute, got "
                           << attr;
  }
  return *lookupBuiltinGPUTarget(kDefaultGPUTargetName);
}

GemmBackend memwall::getGemmBackendOf(Operation *op) {
  for (Operation *scope = op; scope; scope = scope->getParentOp())
    if (auto name = scope->getAttrOfType<StringAttr>(kGemmBackendAttrName))
      return symbolizeGemmBackend(name.getValue()).value_or(GemmBackend::Auto);
  return GemmBackend::Auto;
}
