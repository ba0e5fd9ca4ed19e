//===- Pipelines.cpp - memwall's named pass pipelines ---------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Pipelines.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Analysis/ParallelismAnalysis.h"
#include "memwall/Report/RooflineReport.h"
#include "memwall/Target/Passes.h"
#include "memwall/Transforms/Passes.h"
#include "memwall/Transforms/Remat.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Process.h"

#include <mutex>

using namespace mlir;
using namespace memwall;

bool memwall::DefaultPipelineOptions::asksMemoryQuestion() const {
  return !budget.empty() || !memoryTimeline.empty() || devices != 1 ||
         zeroStage != 0 || offload != "none" || maxBatch ||
         tensorParallel != 1 || sequenceParallel || pipelineParallel != 1 ||
         expertParallel != 1 || microBatches != 1;
}

std::string memwall::DefaultPipelineOptions::reportPath() const {
  if (!report.empty())
    return report;
  // A budget question (or measured times to compare) deserves an answer
  // even when no report was asked for.
  return asksMemoryQuestion() || !measured.empty() ? "-" : "";
}

/// memwall-fuse's options for the pipelines' `dequantize` ("" is auto).
static FuseOptions fuseOptionsOf(StringRef dequantize) {
  FuseOptions options;
  if (!dequantize.empty())
    options.dequantize = dequantize.str();
  return options;
}

llvm::Error
memwall::validateDefaultPipelineOptions(const DefaultPipelineOptions &options) {
  if (!options.launch.empty() && !symbolizeLaunchMode(options.launch))
    return llvm::createStringError("--launch='" + options.launch +
                                   "' must be stream or graph");
  if (!options.gemm.empty() && !symbolizeGemmBackend(options.gemm))
    return llvm::createStringError("--gemm='" + options.gemm +
                                   "' must be auto, cublaslt or memwall");
  if (!llvm::is_contained({"", "auto", "prologue", "kernel"},
                          StringRef(options.dequantize)))
    return llvm::createStringError("--dequantize='" + options.dequantize +
                                   "' must be auto, prologue or kernel");
  if (!options.target.empty() || !options.targetFile.empty())
    if (llvm::Expected<GPUTarget> target =
            resolveGPUTarget(options.target, options.targetFile);
        !target)
      return target.takeError();
  if (llvm::Expected<MemoryOptions> memory = parseMemoryOptions(
          options.budget, options.devices, options.zeroStage, options.offload);
      !memory)
    return memory.takeError();
  if (llvm::Expected<ParallelismOptions> parallel = parseParallelismOptions(
          options.tensorParallel, options.sequenceParallel,
          options.pipelineParallel, options.pipelineSchedule,
          options.virtualStages, options.microBatches, options.expertParallel);
      !parallel)
    return parallel.takeError();
  if (llvm::Error error =
          validatePrecisionOptions(options.precision, options.kvCacheDtype))
    return error;
  if (!options.report.empty())
    if (llvm::Error error = checkReportPath(options.report))
      return error;
  if (!options.memoryTimeline.empty())
    if (llvm::Error error =
            checkSVGPath(options.memoryTimeline, "--memory-timeline:"))
      return error;
  return validateRematOptions(options.rematSolver, options.rematTimeLimit,
                              options.rematPareto);
}

std::vector<std::string> memwall::describeIneffectiveOptions(
    const DefaultPipelineOptions &options,
    llvm::function_ref<bool(llvm::StringRef)> given) {
  std::vector<std::string> warnings;
  if (!options.runsRemat())
    for (llvm::StringRef flag :
         {"remat-solver", "remat-time-limit", "remat-pareto"})
      if (given(flag))
        warnings.push_back(("--" + flag +
                            " has no effect without --fuse and --budget "
                            "(recomputation runs only then)")
                               .str());
  if (options.zeroStage != 0 && options.devices == 1)
    warnings.push_back("--zero-stage=" + std::to_string(options.zeroStage) +
                       " has no effect on one device (give --devices=N)");
  return warnings;
}

bool memwall::DefaultPipelineOptions::setsTarget() const {
  return !target.empty() || !targetFile.empty() || !launch.empty() ||
         !gemm.empty();
}

namespace {
/// A top-level command-line flag standing for an option of a pass pipeline:
/// the same name, help and value syntax; what it is given goes to the
/// pipeline's option.
class PipelineOptionFlag final : public llvm::cl::Option {
public:
  PipelineOptionFlag(llvm::cl::Option &option,
                     llvm::cl::OptionCategory &category)
      : Option(llvm::cl::Optional, llvm::cl::NotHidden), option(option) {
    setArgStr(option.ArgStr);
    setDescription(option.HelpStr);
    setValueStr(option.ValueStr);
    setValueExpectedFlag(option.getValueExpectedFlag());
    addCategory(category);
    addArgument();
  }
  ~PipelineOptionFlag() override { removeArgument(); }

  size_t getOptionWidth() const override { return option.getOptionWidth(); }
  void printOptionInfo(size_t globalWidth) const override {
    option.printOptionInfo(globalWidth);
  }
  void printOptionValue(size_t globalWidth, bool force) const override {
    option.printOptionValue(globalWidth, force);
  }
  // The value lives in the pipeline's option, which keeps its own default.
  void setDefault() override {}

private:
  bool handleOccurrence(unsigned position, llvm::StringRef name,
                        llvm::StringRef value) override {
    return option.addOccurrence(position, name, value);
  }

  llvm::cl::Option &option;
};
} // namespace

std::vector<std::unique_ptr<llvm::cl::Option>>
memwall::DefaultPipelineOptions::registerAsCommandLineFlags(
    llvm::cl::OptionCategory &category) {
  // The pipeline's options are registered in this object's own subcommand.
  std::vector<std::unique_ptr<llvm::cl::Option>> flags;
  for (llvm::cl::Option *option : llvm::make_second_range(OptionsMap))
    flags.push_back(std::make_unique<PipelineOptionFlag>(*option, category));
  return flags;
}

void memwall::addSetTargetPass(OpPassManager &pm,
                               const DefaultPipelineOptions &options) {
  if (!options.setsTarget())
    return;
  SetTargetOptions setTarget;
  setTarget.targetName = options.target;
  setTarget.targetFile = options.targetFile;
  setTarget.launch = options.launch;
  setTarget.gemm = options.gemm;
  pm.addPass(createSetTarget(setTarget));
}

LogicalResult memwall::buildDefaultPipeline(
    OpPassManager &pm, const DefaultPipelineOptions &options,
    llvm::function_ref<LogicalResult(OpPassManager &)> extraPasses) {
  // Every later pass reads the target from the module.
  addSetTargetPass(pm, options);
  // Precision retypes forward graphs, so it runs before autodiff; fusion
  // needs the whole step, so it runs after.
  if (!options.precision.empty() || !options.kvCacheDtype.empty()) {
    PrecisionOptions precision;
    precision.policy = options.precision;
    precision.kvCacheDtype = options.kvCacheDtype;
    pm.addPass(createPrecision(precision));
  }
  // Before autodiff, so the backward never materializes the logits either.
  if (options.fuse && options.fusedLinearCrossEntropy)
    pm.addNestedPass<func::FuncOp>(createFuseLinearCrossEntropy());
  AutodiffOptions autodiff;
  autodiff.onlyLossFunctions = true;
  pm.addPass(createAutodiff(autodiff));
  if (options.fuse) {
    // Attention first: its tiled form is one kernel fusion leaves alone.
    // Both run per function, in parallel.
    OpPassManager &functionPM = pm.nest<func::FuncOp>();
    functionPM.addPass(createTileAttention());
    functionPM.addPass(createFuse(fuseOptionsOf(options.dequantize)));
  }
  // Recomputation runs on the fused step: its simulated peak is the peak of
  // the kernels that will run, and it recomputes whole fused kernels.
  if (options.runsRemat()) {
    RematOptions remat;
    remat.budget = options.budget;
    remat.solver = options.rematSolver;
    remat.timeLimit = options.rematTimeLimit;
    remat.pareto = options.rematPareto;
    remat.devices = options.devices;
    remat.zeroStage = options.zeroStage;
    remat.offload = options.offload;
    pm.addPass(createRemat(remat));
  }
  // After recomputation: the peak its groups keep is the plan's.
  if (options.fuse)
    pm.addNestedPass<func::FuncOp>(createFuseHorizontal());
  if (extraPasses && failed(extraPasses(pm)))
    return failure();
  std::string report = options.reportPath();
  if (!report.empty()) {
    RooflineReportOptions reportOptions;
    reportOptions.output = report;
    reportOptions.budget = options.budget;
    reportOptions.devices = options.devices;
    reportOptions.zeroStage = options.zeroStage;
    reportOptions.offload = options.offload;
    reportOptions.timeline = options.memoryTimeline;
    reportOptions.measured = options.measured;
    reportOptions.maxBatch = options.maxBatch;
    reportOptions.tensorParallel = options.tensorParallel;
    reportOptions.sequenceParallel = options.sequenceParallel;
    reportOptions.pipelineParallel = options.pipelineParallel;
    reportOptions.pipelineSchedule = options.pipelineSchedule;
    reportOptions.virtualStages = options.virtualStages;
    reportOptions.microBatches = options.microBatches;
    reportOptions.expertParallel = options.expertParallel;
    pm.addPass(createRooflineReport(reportOptions));
  }
  return success();
}

void memwall::buildDefaultPipeline(OpPassManager &pm,
                                   const DefaultPipelineOptions &options) {
  (void)buildDefaultPipeline(pm, options, nullptr);
}

void memwall::buildBundleFrontendPipeline(OpPassManager &pm,
                                          const LowerToBundleOptions &options) {
  // Every pass below reads its target from the module.
  SetTargetOptions target;
  target.targetName = options.target;
  target.targetFile = options.targetFile;
  target.gemm = options.gemm;
  pm.addPass(createSetTarget(target));
  // The reference is the model as written, before tiling and fusion.
  pm.addPass(createExportReference());
  // Attention runs only in its tiled form; tiling is not fusion, so it
  // happens without fusion too.
  pm.addNestedPass<func::FuncOp>(createTileAttention());
  if (options.fuse) {
    pm.addNestedPass<func::FuncOp>(
        createFuse(fuseOptionsOf(options.dequantize)));
    pm.addNestedPass<func::FuncOp>(createFuseHorizontal());
  }
}

void memwall::buildKernelsToPTXPipeline(OpPassManager &pm, StringRef cudaPath) {
  std::string toolkit = cudaPath.str();
  if (toolkit.empty())
    if (std::optional<std::string> home =
            llvm::sys::Process::GetEnv("CUDA_HOME"))
      toolkit = *home;
  if (toolkit.empty())
    toolkit = "/usr/local/cuda";
  // Not upstream's buildLowerToNVVMPassPipeline: it outlines, attaches a
  // target and lowers the host too; these kernels are already outlined and
  // targeted, and the host is memwall-run.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  // LLVM has no fp8 type: conversions to and from it become integer
  // arithmetic first.
  kernels.addPass(createExpandFp8Conversions());
  kernels.addPass(createTensorMapParamsToPointers());
  kernels.addPass(createLowerKernelOps());
  // Before scf-to-cf: NVGPUToNVVM converts scf.for's iter_args (a wgmma
  // accumulator's) but not the block arguments cf would leave.
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createSCFToControlFlowPass());
  // The mbarrier and TMA ops NVGPUToNVVM emits are inline PTX.
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createConvertVectorToLLVMPass());
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(toNVVM));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = "isa";
  toBinary.toolkitPath = toolkit;
  pm.addPass(createGpuModuleToBinaryPass(toBinary));
}

void memwall::buildBundleBackendPipeline(OpPassManager &pm,
                                         const LowerToBundleOptions &options) {
  pm.addNestedPass<func::FuncOp>(createConfigureKernels());
  pm.addPass(createConvertToGPU());
  if (options.ptx)
    buildKernelsToPTXPipeline(pm, options.cudaPath);
  pm.addNestedPass<func::FuncOp>(createPlanArena());
  if (!options.output.empty())
    pm.addPass(createSerializeBundle({options.output}));
}

void memwall::buildLowerToBundlePipeline(OpPassManager &pm,
                                         const LowerToBundleOptions &options) {
  buildBundleFrontendPipeline(pm, options);
  buildBundleBackendPipeline(pm, options);
}

FailureOr<Bundle> memwall::compileBundle(ModuleOp module,
                                         const GPUTarget &target,
                                         const CompileOptions &options) {
  LowerToBundleOptions pipeline;
  pipeline.target = target.name;
  pipeline.fuse = options.fuse;
  pipeline.ptx = !options.skipPTX;
  pipeline.cudaPath = options.cudaRoot;
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  buildLowerToBundlePipeline(pm, pipeline);
  if (failed(pm.run(module)))
    return failure();
  return readLoweredBundle(module, target);
}

void memwall::buildPartitionPipeline(OpPassManager &pm,
                                     const PartitionPipelineOptions &options) {
  ShardOptions shard;
  shard.tensorParallel = options.tensorParallel;
  shard.grid = options.grid;
  pm.addPass(createShard(shard));
  OpPassManager &function = pm.nest<func::FuncOp>();
  // memwall-shard annotates every argument, so the splits flow forward
  // from them; backward first (upstream's default) would fix a GEMM from
  // its replicated users before a weight's split reached it through the
  // ops making its rhs (a dequantize).
  shard::ShardingPropagationOptions propagation;
  propagation.traversal = shard::TraversalOrder::Forward;
  function.addPass(shard::createShardingPropagation(propagation));
  function.addPass(shard::createPartition());
  function.addPass(createCanonicalizerPass());
  function.addPass(createCSEPass());
}

void memwall::registerMemWallPipelines() {
  // The registry aborts on a second registration of the same name; tools,
  // the plugin and C API users may all ask.
  static std::once_flag once;
  std::call_once(once, [] {
    PassPipelineRegistration<DefaultPipelineOptions>(
        "memwall-default",
        "What memwall-opt --fuse runs: precision (if asked), autodiff of "
        "loss functions, attention tiling, memwall-fuse, recomputation under "
        "a budget, then the roofline report",
        [](OpPassManager &pm, const DefaultPipelineOptions &options) {
          buildDefaultPipeline(pm, options);
        });
    PassPipelineRegistration<LowerToBundleOptions>(
        "memwall-lower-to-bundle",
        "What memwall-compile runs: keep the reference graph, tile "
        "attention, fuse, configure kernels, convert to GPU kernels and "
        "bundle steps, lower the kernels to PTX, plan the arena and write "
        "the bundle to `output`",
        buildLowerToBundlePipeline);
    PassPipelineRegistration<PartitionPipelineOptions>(
        "memwall-partition",
        "Split each function over a tensor-parallel grid: memwall-shard's "
        "annotations, upstream sharding-propagation and shard-partition, "
        "then canonicalize and CSE; the result is the per-device program",
        buildPartitionPipeline);
  });
}
