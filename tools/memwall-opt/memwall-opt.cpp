//===- memwall-opt.cpp - memwall optimizer driver -------------------------===//
//
// mlir-opt with every upstream dialect and pass plus memwall's, and the
// memwall options users reach for first:
//
//   memwall-opt model.mlir --target=h100-sxm --report=report.json
//   memwall-opt model.mlir --fuse --report=report.json
//   memwall-opt train.mlir --budget=40GB --zero-stage=3 --devices=8 \
//       --report=report.json --memory-timeline=memory.svg
//   memwall-opt train.mlir --fuse --budget=40GB --report=report.json
//
// A training function (forward + loss) is differentiated first
// (memwall-autodiff), so reports and budgets describe the whole step.
//
//===----------------------------------------------------------------------===//

#include "memwall/Pipelines.h"
#include "memwall/Registration.h"
#include "memwall/Support/InputLimits.h"
#include "memwall/Support/OutputFile.h"
#include "memwall/Support/Version.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

static llvm::cl::OptionCategory memwallCategory("memwall options");

static llvm::cl::opt<std::string>
    targetName("target",
               llvm::cl::desc("GPU target of the roofline model (default "
                              "h100-sxm; see docs/targets.md)"),
               llvm::cl::value_desc("name"), llvm::cl::init(""),
               llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string>
    targetFile("target-file",
               llvm::cl::desc("JSON file describing the GPU target"),
               llvm::cl::value_desc("file"), llvm::cl::init(""),
               llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> reportPath(
    "report",
    llvm::cl::desc("Write the roofline report after the pipeline: .json, "
                   ".txt, .svg, or - for a text table on stdout"),
    llvm::cl::value_desc("file"), llvm::cl::init(""),
    llvm::cl::cat(memwallCategory));

static llvm::cl::opt<bool>
    fuse("fuse",
         llvm::cl::desc("Fuse ops into kernels (memwall-fuse) before the "
                        "command-line pipeline"),
         llvm::cl::init(false), llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string>
    budget("budget",
           llvm::cl::desc("Per-device memory budget (e.g. 40GB, 80GiB): report "
                          "whether the step fits and, if not, what to do; with "
                          "--fuse, recompute (memwall-remat) until it fits"),
           llvm::cl::value_desc("size"), llvm::cl::init(""),
           llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> precision(
    "precision",
    llvm::cl::desc("Precision policy applied first (memwall-precision): "
                   "fp32, bf16-mixed, fp16-mixed, fp8-mixed, int8-weights, "
                   "fp8-weights, int4-weights"),
    llvm::cl::value_desc("policy"), llvm::cl::init(""),
    llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> kvCacheDtype(
    "kv-cache-dtype",
    llvm::cl::desc("KV-cache element type for inference graphs (bf16, f16, "
                   "f8E4M3FN, ...)"),
    llvm::cl::value_desc("type"), llvm::cl::init(""),
    llvm::cl::cat(memwallCategory));

static llvm::cl::opt<int64_t>
    devices("devices",
            llvm::cl::desc("Data-parallel devices for ZeRO/FSDP accounting"),
            llvm::cl::init(1), llvm::cl::cat(memwallCategory));

static llvm::cl::opt<int>
    zeroStage("zero-stage",
              llvm::cl::desc("ZeRO stage 0-3 (3 = FSDP full-shard)"),
              llvm::cl::init(0), llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string>
    offload("offload",
            llvm::cl::desc("Offload to host memory: none, optimizer or params"),
            llvm::cl::init("none"), llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> rematSolver(
    "remat-solver",
    llvm::cl::desc("With --fuse and --budget: recomputation solver (auto, "
                   "milp, dp, greedy)"),
    llvm::cl::init("auto"), llvm::cl::cat(memwallCategory));

static llvm::cl::opt<double> rematTimeLimit(
    "remat-time-limit",
    llvm::cl::desc("Time limit of the recomputation MILP in seconds"),
    llvm::cl::init(20), llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> rematPareto(
    "remat-pareto",
    llvm::cl::desc("With --fuse and --budget: write the recompute overhead "
                   "across budgets as SVG"),
    llvm::cl::value_desc("file.svg"), llvm::cl::init(""),
    llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> memoryTimeline(
    "memory-timeline",
    llvm::cl::desc("Write the memory timeline (live bytes per step) as SVG"),
    llvm::cl::value_desc("file.svg"), llvm::cl::init(""),
    llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> measuredRun(
    "measured",
    llvm::cl::desc("A memwall-run --report JSON file: show each measured "
                   "kernel beside the report's prediction"),
    llvm::cl::value_desc("run.json"), llvm::cl::init(""),
    llvm::cl::cat(memwallCategory));

static llvm::cl::opt<bool> maxBatch(
    "max-batch",
    llvm::cl::desc("Report the largest batch (and context at the given "
                   "batch) whose peak fits --budget, or the target's memory"),
    llvm::cl::init(false), llvm::cl::cat(memwallCategory));

static llvm::cl::opt<std::string> launchMode(
    "launch",
    llvm::cl::desc("How kernels are launched in predictions: stream (one by "
                   "one) or graph (replayed from a CUDA graph, as serving "
                   "stacks run decode steps)"),
    llvm::cl::value_desc("stream|graph"), llvm::cl::init(""),
    llvm::cl::cat(memwallCategory));

/// One "memwall-opt: error: ..." line; the exit status.
static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "memwall-opt") << message << "\n";
  return EXIT_FAILURE;
}
static int fail(llvm::Error error) {
  return fail(llvm::toString(std::move(error)));
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAllPasses();
  memwall::registerMemWallPasses();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // memwall-lower-to-bundle translates its kernels to LLVM IR for PTX.
  registerAllGPUToLLVMIRTranslations(registry);
  memwall::registerMemWallDialects(registry);

  memwall::setVersionPrinter();
  // Unlike mlir-opt, errors do not print their op (a function-level error
  // printed the whole function): --mlir-print-op-on-diagnostic=true asks.
  std::vector<char *> arguments(argv, argv + argc);
  static char noOpOnDiagnostic[] = "--mlir-print-op-on-diagnostic=false";
  if (llvm::none_of(arguments, [](const char *argument) {
        return llvm::StringRef(argument).contains("print-op-on-diagnostic");
      }))
    arguments.insert(arguments.begin() + 1, noOpOnDiagnostic);
  int argumentCount = static_cast<int>(arguments.size());
  char **argumentValues = arguments.data();
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argumentCount, argumentValues, "memwall optimizer driver\n", registry);
  std::optional<memwall::LaunchMode> launch;
  if (!launchMode.empty()) {
    launch = memwall::symbolizeLaunchMode(launchMode);
    if (!launch)
      return fail("--launch='" + launchMode + "' must be stream or graph");
  }
  memwall::setDefaultPassTarget(targetName, targetFile, launch);

  // Validate the target up front so a typo fails before the model is read.
  if (llvm::Expected<memwall::GPUTarget> target =
          memwall::resolveTargetOrDefault(targetName, targetFile);
      !target)
    return fail(target.takeError());

  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // The flags are memwall-default's options; the pipeline is built by the
  // same code the named pipeline, the plugin and the C API use.
  auto options = std::make_shared<memwall::DefaultPipelineOptions>();
  options->target = targetName;
  options->targetFile = targetFile;
  options->precision = precision;
  options->kvCacheDtype = kvCacheDtype;
  options->fuse = fuse;
  options->report = reportPath;
  options->budget = budget;
  options->devices = devices;
  options->zeroStage = zeroStage;
  options->offload = offload;
  options->memoryTimeline = memoryTimeline;
  options->measured = measuredRun;
  options->maxBatch = maxBatch;
  options->rematSolver = rematSolver;
  options->rematTimeLimit = rematTimeLimit;
  options->rematPareto = rematPareto;
  // Option values are checked before the model is read, and reported as this
  // tool's errors (the passes would report them without a location).
  if (llvm::Error error = memwall::validateDefaultPipelineOptions(*options)) {
    return fail(std::move(error));
  }
  auto given = [](llvm::StringRef flag) {
    auto &options = llvm::cl::getRegisteredOptions();
    auto it = options.find(flag);
    return it != options.end() && it->second->getNumOccurrences() > 0;
  };
  for (const std::string &warning :
       memwall::describeIneffectiveOptions(*options, given))
    llvm::WithColor::warning(llvm::errs(), "memwall-opt") << warning << "\n";
  // Without a memwall flag memwall-opt is a plain mlir-opt.
  if (fuse || !options->reportPath().empty() || !precision.empty() ||
      !kvCacheDtype.empty()) {
    // The command-line pipeline runs after fusion, before the report.
    MlirOptMainConfig userPipeline = config;
    config.setPassPipelineSetupFn([=](PassManager &pm) {
      return memwall::buildDefaultPipeline(pm, *options, [&](OpPassManager &) {
        return userPipeline.setupPassPipeline(pm);
      });
    });
  }
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> input =
      memwall::readIRInput(inputFilename);
  if (!input) {
    return fail(input.takeError());
  }
  // Only a successful run leaves (or replaces) the output file.
  memwall::OutputFileStream output;
  if (llvm::Error error = output.open(outputFilename)) {
    return fail(std::move(error));
  }
  if (failed(MlirOptMain(output, std::move(*input), registry, config)))
    return EXIT_FAILURE;
  if (llvm::Error error = output.commit()) {
    return fail(std::move(error));
  }
  return EXIT_SUCCESS;
}
