//===- Pipelines.cpp - memwall's named pass pipelines ---------------------===//

#include "memwall/Pipelines.h"

#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Report/RooflineReport.h"
#include "memwall/Transforms/Passes.h"
#include "memwall/Transforms/Remat.h"

#include "mlir/Pass/PassRegistry.h"

#include <mutex>

using namespace mlir;

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
  if (!options.launch.empty() && !symbolizeLaunchMode(options.launch))
    return llvm::createStringError("--launch='" + options.launch +
                                   "' must be stream or graph");
  if (!options.target.empty() || !options.targetFile.empty())
    if (llvm::Expected<GPUTarget> target =
            resolveGPUTarget(options.target, options.targetFile);
        !target)
      return target.takeError();
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

bool memwall::DefaultPipelineOptions::setsTarget() const {
  return !target.empty() || !targetFile.empty() || !launch.empty();
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
  AutodiffOptions autodiff;
  autodiff.onlyLossFunctions = true;
  pm.addPass(createAutodiff(autodiff));
  if (options.fuse) {
    // Attention first: its tiled form is one kernel fusion leaves alone.
    // Both run per function, in parallel.
    OpPassManager &functionPM = pm.nest<func::FuncOp>();
    functionPM.addPass(createTileAttention());
    functionPM.addPass(createFuse());
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
    pm.addPass(createRooflineReport(reportOptions));
  }
  return success();
}

void memwall::buildDefaultPipeline(OpPassManager &pm,
                                   const DefaultPipelineOptions &options) {
  (void)buildDefaultPipeline(pm, options, nullptr);
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
  });
}
