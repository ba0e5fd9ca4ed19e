//===- Pipelines.cpp - memwall's named pass pipelines ---------------------===//

#include "memwall/Pipelines.h"

#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Target/Passes.h"
#include "memwall/Transforms/Passes.h"
#include "memwall/Transforms/Remat.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Process.h"

#include <mutex>

using namespace mlir;
using namespace memwall;

bool memwall::DefaultPipelineOptions::asksMemoryQuestion() const {
  return !budget.empty() || !memoryTimeline.empty() || devices != 1 ||
         zeroStage != 0 || offload != "none" || maxBatch;
}

std::string memwall::DefaultPipelineOptions::reportPath() const {
  if (!report.empty())
    return report;
  // A budget question (or measured times to compare) deserves an answer
  // even when no report was asked for.
  return asksMemoryQuestion() || !measured.empty() ? "-" : "";
}

llvm::Error memwall::validateDefaultPipelineOptions(
    const DefaultPipelineOptions &options) {
  if (llvm::Expected<MemoryOptions> memory = parseMemoryOptions(
          options.budget, options.devices, options.zeroStage, options.offload);
      !memory)
    return memory.takeError();
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

LogicalResult memwall::buildDefaultPipeline(
    OpPassManager &pm, const DefaultPipelineOptions &options,
    llvm::function_ref<LogicalResult(OpPassManager &)> extraPasses) {
  // Precision retypes forward graphs, so it runs before autodiff; fusion
  // needs the whole step, so it runs after.
  if (!options.precision.empty() || !options.kvCacheDtype.empty()) {
    PrecisionOptions precision;
    precision.policy = options.precision;
    precision.kvCacheDtype = options.kvCacheDtype;
    pm.addPass(createPrecision(precision));
  }
  AutodiffOptions autodiff;
  autodiff.onlyLossFunctions = true;
  pm.addPass(createAutodiff(autodiff));
  if (options.fuse) {
    // Attention first: its tiled form is one kernel fusion leaves alone.
    TileAttentionOptions tile;
    tile.targetName = options.target;
    tile.targetFile = options.targetFile;
    pm.addPass(createTileAttention(tile));
    FuseOptions fuse;
    fuse.targetName = options.target;
    fuse.targetFile = options.targetFile;
    pm.addPass(createFuse(fuse));
  }
  // Recomputation runs on the fused step: its simulated peak is the peak of
  // the kernels that will run, and it recomputes whole fused kernels.
  if (options.runsRemat()) {
    RematOptions remat;
    remat.targetName = options.target;
    remat.targetFile = options.targetFile;
    remat.budget = options.budget;
    remat.solver = options.rematSolver;
    remat.timeLimit = options.rematTimeLimit;
    remat.pareto = options.rematPareto;
    remat.devices = options.devices;
    remat.zeroStage = options.zeroStage;
    remat.offload = options.offload;
    pm.addPass(createRemat(remat));
  }
  if (extraPasses && failed(extraPasses(pm)))
    return failure();
  std::string report = options.reportPath();
  if (!report.empty()) {
    RooflineReportOptions reportOptions;
    reportOptions.targetName = options.target;
    reportOptions.targetFile = options.targetFile;
    reportOptions.output = report;
    reportOptions.budget = options.budget;
    reportOptions.devices = options.devices;
    reportOptions.zeroStage = options.zeroStage;
    reportOptions.offload = options.offload;
    reportOptions.timeline = options.memoryTimeline;
    reportOptions.measured = options.measured;
    reportOptions.maxBatch = options.maxBatch;
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
  pm.addPass(createSetTarget(target));
  // The reference is the model as written, before tiling and fusion.
  pm.addPass(createExportReference());
  // Attention runs only in its tiled form; tiling is not fusion, so it
  // happens without fusion too.
  TileAttentionOptions tile;
  tile.targetName = options.target;
  tile.targetFile = options.targetFile;
  pm.addPass(createTileAttention(tile));
  if (options.fuse) {
    FuseOptions fuse;
    fuse.targetName = options.target;
    fuse.targetFile = options.targetFile;
    pm.addPass(createFuse(fuse));
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
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertNVGPUToNVVMPass());
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
  });
}
