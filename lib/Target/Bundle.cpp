//===- Bundle.cpp - Compile a memwall function into a runnable bundle -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Bundle.h"

#include "AttentionCodegen.h"
#include "BundleManifest.h"
#include "KernelBuilding.h"
#include "KernelCodegen.h"
#include "LayoutCodegen.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Support/FiniteJSON.h"
#include "memwall/Support/OutputFile.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <functional>
#include <limits>

using namespace mlir;
using namespace memwall;

namespace {
constexpr int64_t kArenaAlignment = MemWallDialect::kArenaAlignment;

std::string dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (isa<Float8E4M3FNType>(type))
    return "f8e4m3fn";
  if (isa<Float8E5M2Type>(type))
    return "f8e5m2";
  if (type.isInteger(1))
    return "i1";
  if (type.isInteger(8))
    return "i8";
  if (type.isInteger(4))
    return "i4";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  return "";
}

/// Names values as bundles and reference graphs show them: arguments by
/// their name location (else "argN"), results by their op's location plus
/// the result number when an op has several, made unique.
class ValueNamer {
public:
  std::string name(Value value) {
    auto it = names.find(value);
    if (it != names.end())
      return it->second;
    std::string base;
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      if (auto nameLoc = dyn_cast<NameLoc>(argument.getLoc()))
        base = nameLoc.getName().str();
      else
        base = "arg" + std::to_string(argument.getArgNumber());
    } else {
      auto result = cast<OpResult>(value);
      Operation *op = result.getOwner();
      // A multi-output fusion's result is named as the op inside that
      // computes it (as the unfused reference graph names it).
      if (auto fusion = dyn_cast<FusionOp>(op); fusion && op->getNumResults() > 1)
        if (auto inner = dyn_cast<OpResult>(
                fusion.getBodyBlock().getTerminator()->getOperand(
                    result.getResultNumber()));
            inner && inner.getOwner()->getBlock() == &fusion.getBodyBlock())
          result = inner;
      op = result.getOwner();
      std::string loc = formatLocationForReport(op->getLoc());
      base = loc == "?" || loc.find(':') != std::string::npos
                 ? "v" + std::to_string(names.size())
                 : loc;
      if (op->getNumResults() > 1)
        base += "#" + std::to_string(result.getResultNumber());
    }
    return reserve(value, base);
  }

  /// Names `value` `base` (with a suffix if another value has it).
  std::string reserve(Value value, StringRef base) {
    std::string unique = base.str();
    for (int suffix = 1; !used.insert(unique).second; ++suffix)
      unique = base.str() + "." + std::to_string(suffix);
    names[value] = unique;
    return unique;
  }

private:
  DenseMap<Value, std::string> names;
  llvm::StringSet<> used;
};

llvm::json::Array shapeJSON(ArrayRef<int64_t> shape) {
  llvm::json::Array array;
  for (int64_t d : shape)
    array.push_back(d);
  return array;
}

/// An inherent attribute as the reference interpreter reads it: a unit
/// attribute as true, an element type by its dtype name.
llvm::json::Value referenceAttrJSON(Attribute attr) {
  if (auto flag = dyn_cast<BoolAttr>(attr))
    return flag.getValue();
  if (isa<UnitAttr>(attr))
    return true;
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getInt();
  if (auto number = dyn_cast<FloatAttr>(attr))
    return number.getValueAsDouble();
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.str();
  if (auto type = dyn_cast<TypeAttr>(attr))
    return dtypeName(type.getValue());
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr))
    return shapeJSON(ints.asArrayRef());
  if (auto floats = dyn_cast<DenseF32ArrayAttr>(attr)) {
    llvm::json::Array array;
    for (float value : floats.asArrayRef())
      array.push_back(static_cast<double>(value));
    return array;
  }
  std::string printed;
  llvm::raw_string_ostream os(printed);
  attr.print(os);
  return printed;
}

/// The op's inherent attributes (optional ones only when set), amended by
/// the op (ReferenceAttrsOpInterface) where its reference needs absent
/// flags, enum keywords, normalized axes, defaults or derived values.
llvm::json::Object referenceAttrs(Operation *op) {
  NamedAttrList attrs;
  if (std::optional<RegisteredOperationName> info = op->getRegisteredInfo())
    for (StringAttr name : info->getAttributeNames())
      if (Attribute value = op->getInherentAttr(name).value_or(Attribute()))
        attrs.append(name, value);
  if (auto amend = dyn_cast<ReferenceAttrsOpInterface>(op))
    amend.getReferenceAttrs(attrs);
  llvm::json::Object json;
  for (NamedAttribute attr : attrs)
    json[attr.getName().getValue()] = referenceAttrJSON(attr.getValue());
  return json;
}
} // namespace

FailureOr<llvm::json::Value>
memwall::exportReferenceGraph(func::FuncOp function, bool stampNames) {
  ValueNamer namer;
  llvm::json::Array values, ops;
  auto addValue = [&](Value value) {
    auto tensor = cast<RankedTensorType>(value.getType());
    values.push_back(
        llvm::json::Object{{"name", namer.name(value)},
                           {"dtype", dtypeName(tensor.getElementType())},
                           {"shape", shapeJSON(tensor.getShape())}});
  };
  for (BlockArgument argument : function.getArguments())
    addValue(argument);
  // Values inside a fusion body name the outer values they stand for.
  DenseMap<Value, Value> outer;
  auto resolve = [&](Value value) {
    auto it = outer.find(value);
    return it == outer.end() ? value : it->second;
  };
  WalkResult walk = function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      for (auto [argument, input] : llvm::zip_equal(
               fusion.getBodyBlock().getArguments(), fusion.getInputs()))
        outer[argument] = resolve(input);
      auto yield = cast<YieldOp>(fusion.getBodyBlock().getTerminator());
      for (auto [yielded, result] :
           llvm::zip_equal(yield.getValues(), fusion.getResults()))
        outer[yielded] = result;
      return WalkResult::advance();
    }
    if (isa<func::FuncOp, func::ReturnOp, YieldOp>(op))
      return WalkResult::advance();
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      // Splats only (autodiff's loss seed and zero gradients).
      auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (!splat || !isa<FloatType>(splat.getElementType())) {
        op->emitError("the reference interpreter runs only splat float "
                      "constants");
        return WalkResult::interrupt();
      }
      // JSON has no inf or nan.
      if (!splat.getSplatValue<APFloat>().isFinite()) {
        op->emitError("the reference interpreter runs only finite splat "
                      "constants");
        return WalkResult::interrupt();
      }
      addValue(constant.getResult());
      ops.push_back(llvm::json::Object{
          {"op", "constant"},
          {"loc", formatLocationForReport(op->getLoc())},
          {"operands", llvm::json::Array()},
          {"results", llvm::json::Array{namer.name(constant.getResult())}},
          {"attrs",
           llvm::json::Object{
               {"value", splat.getSplatValue<APFloat>().convertToDouble()}}}});
      return WalkResult::advance();
    }
    // A per-device program's sum over its group: the reference evaluates
    // one device (a group of one is the identity).
    if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
      SymbolTableCollection symbols;
      shard::GridOp grid =
          shard::getGridOrNull(op, allReduce.getGridAttr(), symbols);
      if (!grid || allReduce.getReduction() != shard::ReductionKind::Sum ||
          allReduce.getInput().getType() != allReduce.getResult().getType()) {
        op->emitError("the reference interpreter runs 'shard.all_reduce' "
                      "only as a sum over a grid, type unchanged");
        return WalkResult::interrupt();
      }
      addValue(allReduce.getResult());
      ops.push_back(llvm::json::Object{
          {"op", "all_reduce"},
          {"loc", formatLocationForReport(op->getLoc())},
          {"operands",
           llvm::json::Array{namer.name(resolve(allReduce.getInput()))}},
          {"results", llvm::json::Array{namer.name(allReduce.getResult())}},
          {"attrs", llvm::json::Object{
                        {"group_size", shard::collectiveProcessGroupSize(
                                           allReduce.getGridAxes(), grid)}}}});
      return WalkResult::advance();
    }
    if (op->getDialect()->getNamespace() != "memwall") {
      op->emitError("the reference interpreter runs only memwall ops");
      return WalkResult::interrupt();
    }
    llvm::json::Array operands, results;
    for (Value operand : op->getOperands())
      operands.push_back(namer.name(resolve(operand)));
    for (Value result : op->getResults()) {
      addValue(resolve(result));
      results.push_back(namer.name(resolve(result)));
    }
    ops.push_back(
        llvm::json::Object{{"op", op->getName().stripDialect().str()},
                           {"loc", formatLocationForReport(op->getLoc())},
                           {"operands", std::move(operands)},
                           {"results", std::move(results)},
                           {"attrs", referenceAttrs(op)}});
    return WalkResult::skip();
  });
  if (walk.wasInterrupted())
    return failure();
  if (stampNames) {
    Builder b(function.getContext());
    for (Operation &op : function.getBody().front().without_terminator()) {
      SmallVector<Attribute> names;
      for (Value result : op.getResults())
        names.push_back(b.getStringAttr(namer.name(result)));
      op.setAttr(MemWallDialect::kReferenceNamesAttrName,
                 b.getArrayAttr(names));
    }
  }
  llvm::json::Array inputs, outputs;
  for (BlockArgument argument : function.getArguments())
    inputs.push_back(namer.name(argument));
  for (Value result : function.getBody().front().getTerminator()->getOperands())
    outputs.push_back(namer.name(resolve(result)));
  return llvm::json::Value(llvm::json::Object{{"values", std::move(values)},
                                              {"ops", std::move(ops)},
                                              {"inputs", std::move(inputs)},
                                              {"outputs", std::move(outputs)}});
}

std::optional<int64_t> memwall::planArena(std::vector<BundleBuffer> &buffers) {
  // Offsets are checked: an end past int64 would wrap to a small arena.
  auto aligned = [](int64_t bytes) {
    return CheckedInt(llvm::divideCeil(bytes, kArenaAlignment)) *
           kArenaAlignment;
  };
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].aliasOf < 0)
      order.push_back(i);
  // Buffers live for the whole run (weights, inputs, optimizer state,
  // counters) first, packed at the bottom: placed among the intermediates,
  // each would split the space the intermediates share over time. Then
  // largest first (ties: earliest defined), which packs best in practice.
  int64_t firstStep = std::numeric_limits<int64_t>::max(), lastStep = 0;
  for (size_t i : order) {
    firstStep = std::min(firstStep, buffers[i].firstStep);
    lastStep = std::max(lastStep, buffers[i].lastStep);
  }
  auto permanent = [&](size_t i) {
    return buffers[i].firstStep <= firstStep && buffers[i].lastStep >= lastStep;
  };
  llvm::stable_sort(order, [&](size_t x, size_t y) {
    if (permanent(x) != permanent(y))
      return permanent(x);
    return buffers[x].bytes > buffers[y].bytes;
  });
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t i : order) {
    BundleBuffer &buffer = buffers[i];
    std::optional<int64_t> size = aligned(buffer.bytes).get();
    if (buffer.bytes < 0 || !size)
      return std::nullopt;
    // Occupied ranges of placed buffers whose lifetimes overlap this one
    // (placed buffers end within int64).
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const BundleBuffer &other = buffers[j];
      if (other.lastStep < buffer.firstStep ||
          buffer.lastStep < other.firstStep)
        continue;
      busy.push_back(
          {other.offset, (other.offset + aligned(other.bytes)).saturated()});
    }
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [start, end] : busy) {
      std::optional<int64_t> endHere = (CheckedInt(offset) + *size).get();
      if (endHere && *endHere <= start)
        break;
      offset = std::max(offset, end);
    }
    std::optional<int64_t> end = (CheckedInt(offset) + *size).get();
    if (!end)
      return std::nullopt;
    buffer.offset = offset;
    arena = std::max(arena, *end);
    placed.push_back(i);
  }
  // A view of a stacked source lies in the stack: resolve through chains.
  std::function<int64_t(size_t)> offsetOf = [&](size_t i) -> int64_t {
    const BundleBuffer &buffer = buffers[i];
    return buffer.aliasOf < 0 ? buffer.offset
                              : offsetOf(buffer.aliasOf) + buffer.aliasOffset;
  };
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].aliasOf >= 0)
      buffers[i].offset = offsetOf(i);
  return arena;
}

std::vector<std::string>
memwall::referenceOutputNames(func::FuncOp function,
                              const llvm::json::Value &reference) {
  // The exporter names values deterministically; recover the names of the
  // returned values from the op results it listed.
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  const llvm::json::Object *graph = reference.getAsObject();
  const llvm::json::Array *ops = graph->getArray("ops");
  DenseMap<Value, std::string> resultNames;
  size_t opIndex = 0;
  function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<FusionOp, func::FuncOp, func::ReturnOp, YieldOp>(op))
      return WalkResult::advance();
    const llvm::json::Object *entry = (*ops)[opIndex++].getAsObject();
    const llvm::json::Array *results = entry->getArray("results");
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      resultNames[result] = (*results)[i].getAsString()->str();
    return WalkResult::skip();
  });
  // A fusion's result has the name of the body op's result it yields.
  function.walk([&](FusionOp fusion) {
    auto yield = cast<YieldOp>(fusion.getBodyBlock().getTerminator());
    for (auto [yielded, result] :
         llvm::zip_equal(yield.getValues(), fusion.getResults()))
      if (std::string name = resultNames.lookup(yielded); !name.empty())
        resultNames[result] = name;
  });
  std::vector<std::string> names;
  for (Value value : ret.getOperands()) {
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      ValueNamer namer;
      names.push_back(namer.name(argument));
    } else {
      names.push_back(resultNames.lookup(value));
    }
  }
  return names;
}

DenseMap<Value, std::string> memwall::nameBundleValues(func::FuncOp function) {
  ValueNamer namer;
  DenseMap<Value, std::string> names;
  for (BlockArgument argument : function.getArguments())
    names[argument] = namer.name(argument);
  Block &body = function.getBody().front();
  // The reference's names first (ops memwall-export-reference stamped), so
  // that no value named in program order takes one: a value keeps its
  // reference name whatever ops tiling and fusion added or merged before it.
  auto stampedName = [](OpResult result) -> StringAttr {
    Operation *op = result.getOwner();
    auto stamped =
        op->getAttrOfType<ArrayAttr>(MemWallDialect::kReferenceNamesAttrName);
    if (!stamped || stamped.size() != op->getNumResults())
      return {};
    return dyn_cast<StringAttr>(stamped[result.getResultNumber()]);
  };
  auto namedByLocation = [](Operation *op) {
    std::string loc = formatLocationForReport(op->getLoc());
    return loc != "?" && loc.find(':') == std::string::npos;
  };
  for (Operation &op : body.without_terminator()) {
    auto fusion = dyn_cast<FusionOp>(op);
    for (OpResult result : op.getResults()) {
      if (StringAttr name = stampedName(result)) {
        names[result] = namer.reserve(result, name.getValue());
        continue;
      }
      if (!fusion)
        continue;
      // A fusion made after the export is named by its name locations
      // ("a+b", which checks read as b); without them, by the value of the
      // op inside that yields it, not by its position, which fusion
      // changed.
      auto source =
          dyn_cast<OpResult>(fusion.getBodyBlock().getTerminator()->getOperand(
              result.getResultNumber()));
      if (!source || source.getOwner()->getBlock() != &fusion.getBodyBlock())
        continue;
      Operation *named = fusion->getNumResults() > 1 ? source.getOwner()
                                                     : fusion.getOperation();
      if (namedByLocation(named))
        continue;
      if (StringAttr name = stampedName(source))
        names[result] = namer.reserve(result, name.getValue());
    }
  }
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults())
      if (!names.count(result))
        names[result] = namer.name(result);
  return names;
}

SmallVector<Value> memwall::getBundleBuffers(func::FuncOp function) {
  SmallVector<Value> buffers(function.getArguments());
  for (Operation &op : function.getBody().front())
    if (isa<memref::AllocOp, ViewOp, StackViewOp>(op))
      buffers.push_back(op.getResult(0));
  return buffers;
}

Value memwall::getLaunchBuffer(Value arg) {
  auto create = arg.getDefiningOp<nvgpu::TmaCreateDescriptorOp>();
  if (!create)
    return arg;
  Value view = create.getTensor();
  while (Operation *def = view.getDefiningOp()) {
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    // memwall.view is a buffer of its own (an alias the arena places).
    if (!viewLike || isa<ViewOp>(def))
      break;
    view = viewLike.getViewSource();
  }
  return view;
}

FailureOr<std::optional<BundleTensorMap>>
memwall::getLaunchTensorMap(Value arg) {
  auto create = arg.getDefiningOp<nvgpu::TmaCreateDescriptorOp>();
  if (!create)
    return std::optional<BundleTensorMap>();
  auto cast = create.getTensor().getDefiningOp<memref::CastOp>();
  auto view =
      cast ? dyn_cast<MemRefType>(cast.getSource().getType()) : MemRefType();
  if (!view)
    return create.emitError("a tensor map of the bundle must describe a "
                            "ranked view of a buffer (memref.cast to an "
                            "unranked memref)");
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (failed(view.getStridesAndOffset(strides, offset)) || offset != 0 ||
      llvm::any_of(strides, ShapedType::isDynamic) || strides.back() != 1)
    return create.emitError("the tensor map's view ")
           << view << " must have static strides, the innermost 1, and no "
           << "offset";
  nvgpu::TensorMapDescriptorType type = create.getTensorMap().getType();
  ArrayRef<int64_t> box = type.getTensor().getShape();
  SmallVector<int64_t> boxOperands;
  for (Value extent : create.getBoxDimensions())
    if (std::optional<int64_t> constant = getConstantIntValue(extent))
      boxOperands.push_back(*constant);
  if (box.size() != static_cast<size_t>(view.getRank()) ||
      ArrayRef<int64_t>(boxOperands) != box)
    return create.emitError("the tensor map's box must be constants equal to "
                            "its type's tensor shape, one per dim of ")
           << view;
  BundleTensorMap map;
  map.shape.assign(view.getShape().begin(), view.getShape().end());
  map.strides.assign(strides.begin(), strides.end());
  map.box.assign(box.begin(), box.end());
  // Upstream's names ("swizzle_128b", "none", ...) less their prefix are
  // the manifest's.
  auto manifestName = [](StringRef name, StringRef prefix) {
    name.consume_front(prefix);
    return name.str();
  };
  map.swizzle = manifestName(
      nvgpu::stringifyTensorMapSwizzleKind(type.getSwizzle()), "swizzle_");
  map.l2Promotion = manifestName(
      nvgpu::stringifyTensorMapL2PromoKind(type.getL2promo()), "l2promo_");
  map.oobFill = nvgpu::stringifyTensorMapOOBKind(type.getOob()).str();
  map.interleave = manifestName(
      nvgpu::stringifyTensorMapInterleaveKind(type.getInterleave()),
      "interleave_");
  return std::optional<BundleTensorMap>(std::move(map));
}

int64_t memwall::getBufferByteSize(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> shape(type.getShape());
  // A strided buffer (a KV cache appended in place) spans its outermost
  // dimension's whole pitch.
  if (!isDenseBuffer(type) && !shape.empty())
    shape = {shape.front(), type.getStridesAndOffset().first.front()};
  return getTensorByteSize(RankedTensorType::get(shape, type.getElementType()));
}

bool memwall::isDenseBuffer(MemRefType type) {
  if (type.getLayout().isIdentity())
    return true;
  auto layout = dyn_cast<StridedLayoutAttr>(type.getLayout());
  return layout && !ShapedType::isDynamic(layout.getOffset()) &&
         layout.getStrides() == ArrayRef(computeStrides(type.getShape()));
}

int64_t memwall::getWindowOffset(MemRefType type) {
  auto layout = dyn_cast<StridedLayoutAttr>(type.getLayout());
  return layout && isDenseBuffer(type) ? layout.getOffset() : 0;
}

FailureOr<Bundle> memwall::readLoweredBundle(ModuleOp module,
                                             const GPUTarget &target) {
  auto functions = llvm::to_vector(module.getOps<func::FuncOp>());
  auto referenceText =
      module->getAttrOfType<StringAttr>(MemWallDialect::kReferenceAttrName);
  auto outputNames =
      module->getAttrOfType<ArrayAttr>(MemWallDialect::kOutputNamesAttrName);
  if (functions.size() != 1 || !referenceText || !outputNames)
    return mlir::emitError(module.getLoc(),
                           "not a lowered model: expected one function and "
                           "the reference of memwall-export-reference");
  func::FuncOp function = functions.front();
  auto arena =
      function->getAttrOfType<IntegerAttr>(MemWallDialect::kArenaBytesAttrName);
  auto argumentOffsets = function->getAttrOfType<DenseI64ArrayAttr>(
      MemWallDialect::kArgumentOffsetsAttrName);
  if (!arena || !argumentOffsets)
    return function.emitError("the buffers have no arena: run "
                              "memwall-plan-arena first");
  Bundle bundle;
  bundle.model = module.getSymName() ? module.getSymName()->str()
                                     : function.getSymName().str();
  bundle.target = target.name;
  bundle.arch = target.smArch;
  llvm::Expected<llvm::json::Value> reference =
      llvm::json::parse(referenceText.getValue());
  if (!reference)
    return mlir::emitError(module.getLoc(), "the reference graph is not JSON: ")
           << llvm::toString(reference.takeError());
  bundle.reference = std::move(*reference);

  DenseMap<Value, int> bufferOf;
  ValueNamer argumentNames;
  for (Value value : getBundleBuffers(function)) {
    BundleBuffer buffer;
    auto type = cast<MemRefType>(value.getType());
    buffer.dtype = dtypeName(type.getElementType());
    buffer.shape.assign(type.getShape().begin(), type.getShape().end());
    buffer.bytes = getBufferByteSize(value);
    if (!isDenseBuffer(type)) {
      SmallVector<int64_t> strides = type.getStridesAndOffset().first;
      buffer.strides.assign(strides.begin(), strides.end());
    }
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      unsigned i = argument.getArgNumber();
      auto kind = function.getArgAttrOfType<ArgKindAttr>(
          i, MemWallDialect::kArgKindAttrName);
      buffer.name = argumentNames.name(argument);
      buffer.role =
          kind && kind.getValue() == ArgKind::Weight ? "weight" : "input";
      buffer.offset = argumentOffsets[i];
    } else {
      Operation *op = value.getDefiningOp();
      buffer.name =
          op->getAttrOfType<StringAttr>(MemWallDialect::kBufferAttrName)
              .getValue()
              .str();
      buffer.role = op->hasAttr(MemWallDialect::kCountersAttrName)
                        ? "counters"
                        : "intermediate";
      buffer.offset =
          op->getAttrOfType<IntegerAttr>(MemWallDialect::kOffsetAttrName)
              .getInt();
      if (auto view = dyn_cast<ViewOp>(op))
        buffer.aliasOf = bufferOf.lookup(view.getSource());
    }
    bufferOf[value] = bundle.buffers.size();
    bundle.buffers.push_back(buffer);
  }
  for (BlockArgument argument : function.getArguments()) {
    int buffer = bufferOf.lookup(argument);
    bundle.inputs.push_back(
        {bundle.buffers[buffer].name, buffer, bundle.buffers[buffer].name});
  }

  auto locations = [](ArrayAttr ops) {
    std::vector<std::string> locs;
    for (StringRef loc : ops.getAsValueRange<StringAttr>())
      locs.push_back(loc.str());
    return locs;
  };
  auto bufferIndex = [&](Value value) {
    return value ? bufferOf.lookup(value) : -1;
  };
  for (Operation &op : function.getBody().front()) {
    if (auto launch = dyn_cast<LaunchOp>(op)) {
      BundleStep step;
      step.kind = "kernel";
      step.name = launch.getStepName().str();
      step.function = step.name;
      step.ops = locations(launch.getOps());
      step.predictedSeconds = launch.getPredictedSeconds().convertToDouble();
      llvm::copy(launch.getGrid(), step.grid.begin());
      llvm::copy(launch.getBlock(), step.block.begin());
      step.sharedBytes = launch.getSharedBytes();
      for (auto [i, arg] : llvm::enumerate(launch.getArgs())) {
        FailureOr<std::optional<BundleTensorMap>> map = getLaunchTensorMap(arg);
        if (failed(map))
          return failure();
        if (*map) {
          (*map)->arg = static_cast<int>(i);
          step.tensorMaps.push_back(std::move(**map));
        }
        step.args.push_back(bufferIndex(getLaunchBuffer(arg)));
      }
      bundle.steps.push_back(step);
    } else if (auto gemm = dyn_cast<GemmOp>(op)) {
      GemmConfigAttr config = gemm.getConfig();
      BundleStep step;
      step.kind = "gemm";
      step.name = gemm.getName().str();
      step.ops = locations(gemm.getOps());
      step.predictedSeconds = gemm.getPredictedSeconds().convertToDouble();
      step.a = bufferIndex(gemm.getA());
      step.b = bufferIndex(gemm.getB());
      step.c = bufferIndex(gemm.getC());
      step.bias = bufferIndex(gemm.getBias());
      step.d = bufferIndex(gemm.getD());
      step.m = config.getM();
      step.n = config.getN();
      step.k = config.getK();
      step.batch = config.getBatch();
      step.strideA = config.getStrideA();
      step.strideB = config.getStrideB();
      step.strideC = config.getStrideC();
      step.strideD = config.getStrideD();
      step.transA = config.getTransA().getValue();
      step.transB = config.getTransB().getValue();
      step.dtype = dtypeName(gemm.getA().getType().getElementType());
      if (std::string out = dtypeName(gemm.getD().getType().getElementType());
          out != step.dtype)
        step.outDtype = out;
      step.epilogue = config.getEpilogue().str();
      bundle.steps.push_back(step);
    } else if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
      BundleStep step;
      step.kind = "all_reduce";
      step.name = allReduce.getName().str();
      step.ops = locations(allReduce.getOps());
      step.predictedSeconds = allReduce.getPredictedSeconds().convertToDouble();
      step.input = bufferIndex(allReduce.getInput());
      step.output = bufferIndex(allReduce.getOutput());
      MemRefType type = allReduce.getOutput().getType();
      step.count = type.getNumElements();
      step.dtype = dtypeName(type.getElementType());
      step.groupSize = allReduce.getGroupSize();
      bundle.steps.push_back(step);
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        int buffer = bufferOf.lookup(value);
        if (bundle.buffers[buffer].role == "intermediate")
          bundle.buffers[buffer].role = "output";
        bundle.outputs.push_back(
            {"result" + std::to_string(i), buffer,
             cast<StringAttr>(outputNames[i]).getValue().str()});
      }
    }
  }
  bundle.arenaBytes = arena.getInt();
  for (const BundleStep &step : bundle.steps)
    bundle.predictedSeconds += step.predictedSeconds;

  if (auto source = module->getAttrOfType<StringAttr>(
          MemWallDialect::kKernelsSourceAttrName))
    bundle.gpuModuleText = source.getValue().str();
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects())
      bundle.ptx += cast<gpu::ObjectAttr>(object).getObject().getValue().str();
  // gpu-module-to-binary keeps the terminating NUL of the PTX string.
  while (!bundle.ptx.empty() && bundle.ptx.back() == '\0')
    bundle.ptx.pop_back();
  return bundle;
}

llvm::Error memwall::writeBundle(const Bundle &bundle, StringRef path) {
  // Refuses to replace anything that is not a bundle; a failure, or a
  // signal, leaves no partial bundle and the old one intact.
  memwall::runtime::OutputDirectory directory;
  if (llvm::Error error =
          outputError(directory.open(path.str(), "bundle", "manifest.json")))
    return error;
  if (!bundle.ptx.empty())
    if (llvm::Error error =
            writeOutputFile(directory, "kernels.ptx",
                            [&](llvm::raw_ostream &os) { os << bundle.ptx; }))
      return error;
  // The generated gpu.module before lowering: memwall-simulate runs it on
  // the CPU, and it is the readable form of kernels.ptx.
  if (!bundle.gpuModuleText.empty())
    if (llvm::Error error = writeOutputFile(
            directory, "kernels.mlir",
            [&](llvm::raw_ostream &os) { os << bundle.gpuModuleText; }))
      return error;
  if (llvm::Error error = writeOutputFile(
          directory, "manifest.json",
          [&](llvm::raw_ostream &os) { writeManifest(bundle, os); }))
    return error;
  return outputError(directory.commit());
}
