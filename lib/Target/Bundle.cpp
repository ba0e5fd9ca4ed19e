//===- Bundle.cpp - Compile a memwall function into a runnable bundle -----===//

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
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace memwall;

namespace {
constexpr int64_t kArenaAlignment = 256;

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
      Operation *op = value.getDefiningOp();
      std::string loc = formatLocationForReport(op->getLoc());
      base = loc == "?" || loc.find(':') != std::string::npos
                 ? "v" + std::to_string(names.size())
                 : loc;
      if (op->getNumResults() > 1)
        base += "#" + std::to_string(cast<OpResult>(value).getResultNumber());
    }
    std::string unique = base;
    for (int suffix = 1; !used.insert(unique).second; ++suffix)
      unique = base + "." + std::to_string(suffix);
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
memwall::exportReferenceGraph(func::FuncOp function) {
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
  // Largest first (ties: earliest defined) packs best in practice.
  llvm::stable_sort(order, [&](size_t x, size_t y) {
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
  for (BundleBuffer &buffer : buffers)
    if (buffer.aliasOf >= 0)
      buffer.offset = buffers[buffer.aliasOf].offset;
  return arena;
}

namespace {
class BundleCompiler {
public:
  BundleCompiler(ModuleOp module, const GPUTarget &target,
                 const CompileOptions &options)
      : module(module), target(target), options(options) {}

  FailureOr<Bundle> run() {
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    if (functions.size() != 1)
      return mlir::emitError(module.getLoc(),
                             "memwall-compile needs exactly one function, "
                             "found ")
             << functions.size();
    func::FuncOp function = functions.front();
    bundle.model = module.getSymName() ? module.getSymName()->str()
                                       : function.getSymName().str();
    bundle.target = target.name;
    bundle.arch = target.smArch;

    // The reference is the model as written, before fusion.
    FailureOr<llvm::json::Value> reference = exportReferenceGraph(function);
    if (failed(reference))
      return failure();
    bundle.reference = std::move(*reference);
    // Attention runs only in its tiled form; tiling is not fusion, so it
    // happens with --no-fuse too.
    tileAttention(module, target);
    if (options.fuse)
      fuseModule(module, target);

    if (failed(planSteps(function)) || failed(emitPTX()))
      return failure();
    std::optional<int64_t> arena = planArena(bundle.buffers);
    if (!arena)
      return mlir::emitError(function.getLoc())
             << "the buffers of @" << function.getSymName()
             << " need an arena larger than memwall can count (int64)";
    bundle.arenaBytes = *arena;
    for (const BundleStep &step : bundle.steps)
      bundle.predictedSeconds += step.predictedSeconds;
    return std::move(bundle);
  }

private:
  int bufferFor(Value value, StringRef role) {
    if (auto it = bufferOf.find(value); it != bufferOf.end())
      return it->second;
    int buffer = addBuffer(names.name(value),
                           cast<RankedTensorType>(value.getType()), role);
    bufferOf[value] = buffer;
    return buffer;
  }

  /// A new buffer; intermediates live from the step being added.
  int addBuffer(std::string name, RankedTensorType type, StringRef role) {
    BundleBuffer buffer;
    buffer.name = std::move(name);
    buffer.dtype = dtypeName(type.getElementType());
    buffer.shape.assign(type.getShape().begin(), type.getShape().end());
    buffer.bytes = getTensorByteSize(type);
    buffer.role = role.str();
    buffer.firstStep = role == "intermediate" ? stepIndex() : 0;
    buffer.lastStep = buffer.firstStep;
    bundle.buffers.push_back(buffer);
    return bundle.buffers.size() - 1;
  }

  /// A kernel step named after its position and `what`, implementing `ops`.
  BundleStep kernelStep(StringRef what, ArrayRef<Operation *> ops,
                        double predictedSeconds) {
    BundleStep step;
    step.kind = "kernel";
    step.name =
        "kernel" + std::to_string(bundle.steps.size()) + "_" + what.str();
    step.function = step.name;
    step.ops = locsOf(ops);
    step.predictedSeconds = predictedSeconds;
    return step;
  }

  /// Passes `value`'s buffer to `step` as an input.
  void readArg(BundleStep &step, Value value) {
    int buffer = bufferOf.lookup(value);
    use(buffer);
    step.args.push_back(buffer);
  }

  int64_t stepIndex() const { return bundle.steps.size(); }

  /// Fails, at `op`, unless CUDA can launch `grid`.
  static LogicalResult checkGrid(Operation *op,
                                 const std::array<int64_t, 3> &grid) {
    if (std::string why = whyGridCannotLaunch(grid); !why.empty())
      return op->emitError("codegen cannot run '")
             << op->getName() << "': " << why;
    return success();
  }

  /// Marks `buffer` (and what it views) used by the step being added.
  void use(int buffer) {
    BundleBuffer &b = bundle.buffers[buffer];
    b.lastStep = std::max<int64_t>(b.lastStep, stepIndex());
    if (b.aliasOf >= 0)
      use(b.aliasOf);
  }

  std::vector<std::string> locsOf(ArrayRef<Operation *> ops) {
    std::vector<std::string> locs;
    for (Operation *op : ops)
      locs.push_back(formatLocationForReport(op->getLoc()));
    return locs;
  }

  LogicalResult planSteps(func::FuncOp function) {
    MLIRContext *ctx = module.getContext();
    // Every dialect the kernel generators build with, so compileBundle works
    // in any context (an embedder's registry may hold only memwall's).
    ctx->loadDialect<arith::ArithDialect, gpu::GPUDialect, math::MathDialect,
                     memref::MemRefDialect, scf::SCFDialect,
                     vector::VectorDialect, LLVM::LLVMDialect,
                     NVVM::NVVMDialect, nvgpu::NVGPUDialect>();
    OpBuilder builder(ctx);
    kernels = ModuleOp::create(builder.getUnknownLoc());
    (*kernels)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                        builder.getUnitAttr());
    builder.setInsertionPointToStart(kernels->getBody());
    auto targetAttr = NVVM::NVVMTargetAttr::get(
        ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", target.smArch,
        target.smArch == "sm_80" ? "+ptx70" : "+ptx80");
    gpuModule =
        gpu::GPUModuleOp::create(builder, builder.getUnknownLoc(), "kernels",
                                 builder.getArrayAttr({targetAttr}));

    for (auto [i, argument] : llvm::enumerate(function.getArguments())) {
      auto kind = function.getArgAttrOfType<ArgKindAttr>(
          i, MemWallDialect::kArgKindAttrName);
      bool isWeight = kind && kind.getValue() == ArgKind::Weight;
      int buffer = bufferFor(argument, isWeight ? "weight" : "input");
      bundle.inputs.push_back(
          {bundle.buffers[buffer].name, buffer, bundle.buffers[buffer].name});
    }
    if (failed(planOps(function)))
      return failure();
    auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      // Every value has a buffer: arguments, and results of planned ops.
      int buffer = bufferOf.lookup(value);
      BundleBuffer &b = bundle.buffers[buffer];
      if (b.role == "intermediate")
        b.role = "output";
      b.lastStep = std::numeric_limits<int32_t>::max();
      if (b.aliasOf >= 0)
        bundle.buffers[b.aliasOf].lastStep = b.lastStep;
      bundle.outputs.push_back(
          {"result" + std::to_string(i), buffer, outputReferenceNames[i]});
    }
    for (BundleBuffer &buffer : bundle.buffers)
      if (buffer.role == "input" || buffer.role == "weight")
        buffer.lastStep = std::numeric_limits<int32_t>::max();
    return success();
  }

  /// Plans every op of `function` but its return. One error per unsupported
  /// op would flood a training step (hundreds of lines, one per layer): each
  /// distinct message is shown once, at its first op, and the repeats are
  /// counted.
  LogicalResult planOps(func::FuncOp function) {
    bool ok = true;
    unsigned repeats = 0;
    {
      llvm::StringSet<> shown;
      ScopedDiagnosticHandler firstOfEach(
          module.getContext(), [&](Diagnostic &diag) {
            if (diag.getSeverity() != DiagnosticSeverity::Error ||
                shown.insert(diag.str()).second)
              return failure(); // pass it on
            ++repeats;
            return success();
          });
      for (Operation &op : function.getBody().front().without_terminator())
        if (failed(planOp(&op)))
          ok = false;
    }
    if (repeats > 0)
      function.emitError() << "codegen cannot run " << repeats << " more op"
                           << (repeats == 1 ? "" : "s") << " of @"
                           << function.getName() << " for the reasons above";
    return success(ok);
  }

  LogicalResult planOp(Operation *op) {
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      int source = bufferOf.lookup(reshape.getInput());
      int view = bufferFor(reshape.getResult(), "intermediate");
      bundle.buffers[view].aliasOf = source;
      bundle.buffers[view].firstStep = bundle.buffers[source].firstStep;
      return success();
    }
    if (auto attention = dyn_cast<FlashAttentionOp>(op))
      return planAttention(attention);
    if (isLayoutOp(op))
      return planLayout(op);
    if (isa<AttentionOp>(op))
      return op->emitError("codegen runs attention only in its tiled form "
                           "(memwall.flash_attention); this one stayed "
                           "untiled");
    std::string whyNot;
    FailureOr<KernelAnalysis> analysis = failure();
    SmallVector<Value> outputs;
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      analysis = analyzeFusion(fusion, target, &whyNot);
      if (failed(analysis))
        return op->emitError("codegen cannot run this fusion: ") << whyNot;
      auto yield = cast<YieldOp>(fusion.getBodyBlock().getTerminator());
      outputs.assign(yield.getValues().begin(), yield.getValues().end());
    } else if (isElementwiseOp(op) || isRowReductionOp(op) ||
               isa<MatmulOp>(op)) {
      analysis = analyzeKernel({op}, target, &whyNot);
      if (failed(analysis))
        return op->emitError("codegen cannot run '")
               << op->getName() << "': " << whyNot;
      outputs.push_back(op->getResult(0));
    } else {
      return op->emitError("codegen does not support '")
             << op->getName() << "' yet";
    }
    // Body values map to the op's results and operands.
    DenseMap<Value, Value> outer;
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      for (auto [argument, input] : llvm::zip_equal(
               fusion.getBodyBlock().getArguments(), fusion.getInputs()))
        outer[argument] = input;
      for (auto [inner, result] : llvm::zip_equal(outputs, fusion.getResults()))
        outer[inner] = result;
    }
    auto outerOf = [&](Value value) {
      auto it = outer.find(value);
      return it == outer.end() ? value : it->second;
    };
    BundleStep step;
    step.ops = locsOf(analysis->ops);
    step.predictedSeconds = analysis->timeSeconds;
    if (analysis->kind == FusionKind::MatmulEpilogue)
      return planGemm(*analysis, outerOf(outputs.front()), outerOf, step);

    step = kernelStep(stringifyFusionKind(analysis->kind), analysis->ops,
                      analysis->timeSeconds);
    FailureOr<gpu::GPUFuncOp> func =
        emitKernel(gpuModule, step.function, *analysis, outputs);
    if (failed(func))
      return failure();
    const KernelGeometry &geometry = analysis->geometry;
    step.grid = {geometry.gridSize, 1, 1};
    if (failed(checkGrid(op, step.grid)))
      return failure();
    step.block = {geometry.threadsPerBlock, 1, 1};
    step.sharedBytes = 0; // static shared memory is part of the kernel
    for (const KernelInput &input : analysis->inputs)
      readArg(step, outerOf(input.value));
    for (Value output : outputs)
      step.args.push_back(bufferFor(outerOf(output), "intermediate"));
    bundle.steps.push_back(step);
    return success();
  }

  /// A data-movement kernel: transpose, slice, embedding, rope,
  /// kv_cache_append.
  LogicalResult planLayout(Operation *op) {
    LayoutKernelPlan plan = planLayoutKernel(op);
    if (failed(checkGrid(op, plan.grid)))
      return failure();
    BundleStep step = kernelStep(
        op->getName().stripDialect(), {op},
        estimateOpRoofline(cast<CostOpInterface>(op), target).timeSeconds);
    emitLayoutKernel(gpuModule, step.function, op, plan);
    step.grid = plan.grid;
    step.block = {plan.threads, 1, 1};
    for (Value operand : op->getOperands())
      readArg(step, operand);
    step.args.push_back(bufferFor(op->getResult(0), "intermediate"));
    bundle.steps.push_back(step);
    return success();
  }

  /// The tensor-core attention kernel, and with split keys the kernel that
  /// combines the splits.
  LogicalResult planAttention(FlashAttentionOp op) {
    if (std::string why = whyNoAttentionKernel(op); !why.empty())
      return op.emitError("codegen cannot run this attention: ") << why;
    AttentionKernelPlan plan = planAttentionKernel(op);
    auto cost = cast<CostOpInterface>(op.getOperation());
    BundleStep step = kernelStep("attention", {op.getOperation()},
                                 estimateOpRoofline(cost, target).timeSeconds);
    emitAttentionKernel(gpuModule, step.function, op, plan);
    step.grid = plan.grid;
    step.block = {plan.threads(), 1, 1};
    step.sharedBytes = plan.sharedBytes;
    for (Value input : op->getOperands())
      readArg(step, input);
    int out = bufferFor(op.getResult(), "intermediate");
    int lse = bufferFor(op.getLse(), "intermediate");
    if (plan.splits == 1) {
      step.args.push_back(out);
      step.args.push_back(lse);
      bundle.steps.push_back(step);
      return success();
    }
    // Split keys: fp32 partials per split, then the combine.
    ArrayRef<int64_t> outShape = op.getResult().getType().getShape();
    SmallVector<int64_t> partialShape{plan.splits};
    partialShape.append(outShape.begin(), outShape.end());
    Type f32 = Float32Type::get(op.getContext());
    int partialOut =
        addBuffer(step.name + "_partial_out",
                  RankedTensorType::get(partialShape, f32), "intermediate");
    partialShape.pop_back();
    int partialLse =
        addBuffer(step.name + "_partial_lse",
                  RankedTensorType::get(partialShape, f32), "intermediate");
    step.args.push_back(partialOut);
    step.args.push_back(partialLse);
    // The op's cost counts the partials' round trip and the final write:
    // the combine reads the partials and writes the output and lse.
    int64_t partialBytes =
        bundle.buffers[partialOut].bytes + bundle.buffers[partialLse].bytes;
    int64_t resultBytes = bundle.buffers[out].bytes + bundle.buffers[lse].bytes;
    KernelWork splitWork = cost.getKernelWork(target);
    splitWork.bytesRead -= static_cast<double>(partialBytes);
    splitWork.bytesWritten -= static_cast<double>(resultBytes);
    step.predictedSeconds = estimateKernelTime(splitWork, target).timeSeconds;
    bundle.steps.push_back(step);

    KernelWork combineWork;
    combineWork.bytesRead = static_cast<double>(partialBytes);
    combineWork.bytesWritten = static_cast<double>(resultBytes);
    BundleStep combine =
        kernelStep("attention_combine", {op.getOperation()},
                   estimateKernelTime(combineWork, target).timeSeconds);
    emitAttentionCombineKernel(gpuModule, combine.function, op, plan);
    combine.grid = plan.combineGrid;
    combine.block = {plan.combineThreads, 1, 1};
    for (int buffer : {partialOut, partialLse}) {
      use(buffer);
      combine.args.push_back(buffer);
    }
    combine.args.push_back(out);
    combine.args.push_back(lse);
    bundle.steps.push_back(combine);
    return success();
  }

  LogicalResult planGemm(const KernelAnalysis &analysis, Value result,
                         function_ref<Value(Value)> outerOf, BundleStep step) {
    auto matmul = cast<MatmulOp>(analysis.anchor);
    step.kind = "gemm";
    step.name = "gemm" + std::to_string(bundle.steps.size());
    auto lhs = matmul.getLhs().getType(), rhs = matmul.getRhs().getType();
    auto out = matmul.getType();
    MatmulOp::Dims dims = matmul.getDims();
    step.transA = matmul.getTransposeLhs();
    step.transB = matmul.getTransposeRhs();
    step.k = dims.k;
    step.n = dims.n;
    auto batchOf = [](RankedTensorType type) {
      int64_t batch = 1;
      for (int64_t d : type.getShape().drop_back(2))
        batch *= d;
      return batch;
    };
    int64_t lhsBatch = batchOf(lhs), rhsBatch = batchOf(rhs),
            outBatch = batchOf(out);
    if (rhsBatch == 1 && !step.transA) {
      // A weight shared by every batch: one GEMM over all rows.
      step.m = dims.m * outBatch;
      step.batch = 1;
    } else {
      if ((lhsBatch != 1 && lhsBatch != outBatch) ||
          (rhsBatch != 1 && rhsBatch != outBatch))
        return matmul.emitError("codegen supports batch dimensions that are "
                                "either all broadcast or all present");
      step.m = dims.m;
      step.batch = outBatch;
      step.strideA = lhsBatch == 1 ? 0 : dims.m * dims.k;
      step.strideB = rhsBatch == 1 ? 0 : dims.k * dims.n;
      step.strideD = dims.m * dims.n;
    }
    step.dtype = dtypeName(out.getElementType());
    step.a = bufferOf.lookup(outerOf(matmul.getLhs()));
    step.b = bufferOf.lookup(outerOf(matmul.getRhs()));
    use(step.a);
    use(step.b);
    const GemmEpilogue &epilogue = analysis.epilogue;
    if (epilogue.bias) {
      step.bias = bufferOf.lookup(outerOf(epilogue.bias));
      use(step.bias);
    }
    if (epilogue.residual) {
      step.c = bufferOf.lookup(outerOf(epilogue.residual));
      step.strideC = step.strideD;
      use(step.c);
    }
    std::string activation =
        epilogue.activation == GemmEpilogue::Activation::Relu
            ? "relu"
            : (epilogue.activation == GemmEpilogue::Activation::GeluTanh
                   ? "gelu"
                   : "");
    if (activation.empty())
      step.epilogue = epilogue.bias ? "bias" : "none";
    else
      step.epilogue = epilogue.bias ? activation + "_bias" : activation;
    step.d = bufferFor(result, "intermediate");
    bundle.steps.push_back(step);
    return success();
  }

  LogicalResult emitPTX() {
    std::string text;
    llvm::raw_string_ostream os(text);
    gpuModule->print(os);
    bundle.gpuModuleText = text;
    if (options.skipPTX || gpuModule.getBody()->empty())
      return success();
    std::string cudaRoot = options.cudaRoot;
    if (cudaRoot.empty())
      if (std::optional<std::string> home =
              llvm::sys::Process::GetEnv("CUDA_HOME"))
        cudaRoot = *home;
    if (cudaRoot.empty())
      cudaRoot = "/usr/local/cuda";
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    std::string pipeline =
        "gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,"
        "convert-vector-to-llvm,"
        "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
        "canonicalize,cse,reconcile-unrealized-casts),"
        "gpu-module-to-binary{format=isa toolkit=" +
        cudaRoot + "}";
    if (failed(parsePassPipeline(pipeline, pm))) {
      return mlir::emitError(module.getLoc(),
                             "internal error: bad lowering pipeline");
    }
    if (failed(pm.run(*kernels)))
      return mlir::emitError(module.getLoc(),
                             "lowering the generated kernels to PTX failed "
                             "(is the CUDA toolkit's libdevice under ")
             << cudaRoot << "/nvvm/libdevice?)";
    for (auto binary : kernels->getBody()->getOps<gpu::BinaryOp>())
      for (Attribute object : binary.getObjects())
        bundle.ptx +=
            cast<gpu::ObjectAttr>(object).getObject().getValue().str();
    // gpu-module-to-binary keeps the terminating NUL of the PTX string.
    while (!bundle.ptx.empty() && bundle.ptx.back() == '\0')
      bundle.ptx.pop_back();
    return success();
  }

public:
  SmallVector<std::string> outputReferenceNames;

private:
  ModuleOp module;
  const GPUTarget &target;
  const CompileOptions &options;
  Bundle bundle;
  ValueNamer names;
  DenseMap<Value, int> bufferOf;
  OwningOpRef<ModuleOp> kernels;
  gpu::GPUModuleOp gpuModule;
};
} // namespace

FailureOr<Bundle> memwall::compileBundle(ModuleOp module,
                                         const GPUTarget &target,
                                         const CompileOptions &options) {
  // Buffer, FLOP and byte totals that fit int64 keep every offset, arena
  // and prediction below countable.
  if (failed(verifyCountableTotals(module)))
    return failure();
  BundleCompiler compiler(module, target, options);
  // The reference names of the returned values, taken from the unfused IR.
  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    FailureOr<llvm::json::Value> reference = exportReferenceGraph(function);
    if (failed(reference))
      return failure();
    // The exporter names values deterministically; recover the names of the
    // returned values from the last op results it listed.
    auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
    const llvm::json::Object *graph = reference->getAsObject();
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
    for (Value value : ret.getOperands()) {
      if (auto argument = dyn_cast<BlockArgument>(value)) {
        ValueNamer namer;
        compiler.outputReferenceNames.push_back(namer.name(argument));
      } else {
        compiler.outputReferenceNames.push_back(resultNames.lookup(value));
      }
    }
  }
  return compiler.run();
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
