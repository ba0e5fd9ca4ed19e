//===- memwall-opt.cpp - memwall optimizer driver -------------------------===//
//
// mlir-opt with every upstream dialect and pass plus memwall's, and the
// memwall options users reach for first:
//
//   memwall-opt model.mlir --target=h100-sxm --report=report.json
//   memwall-opt model.mlir --fuse --report=report.json
//
//===----------------------------------------------------------------------===//

#include "memwall/Registration.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
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

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAllPasses();
  memwall::registerMemWallPasses();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  memwall::registerMemWallDialects(registry);

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "memwall optimizer driver\n", registry);
  memwall::setDefaultPassTarget(targetName, targetFile);

  // Validate the target up front so a typo fails before the model is read.
  if (llvm::Expected<memwall::GPUTarget> target =
          memwall::resolveTargetOrDefault(targetName, targetFile);
      !target) {
    llvm::WithColor::error(llvm::errs(), "memwall-opt")
        << llvm::toString(target.takeError()) << "\n";
    return EXIT_FAILURE;
  }

  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (fuse || !reportPath.empty()) {
    // --fuse, then the command-line pipeline, then the report of the result.
    MlirOptMainConfig userPipeline = config;
    std::string output = reportPath;
    bool runFuse = fuse;
    config.setPassPipelineSetupFn(
        [userPipeline, output, runFuse](PassManager &pm) {
          if (runFuse)
            pm.addPass(memwall::createFuse());
          if (failed(userPipeline.setupPassPipeline(pm)))
            return failure();
          if (!output.empty()) {
            memwall::RooflineReportOptions options;
            options.output = output;
            pm.addPass(memwall::createRooflineReport(options));
          }
          return success();
        });
  }
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::WithColor::error(llvm::errs(), "memwall-opt") << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "memwall-opt") << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  // Only a successful run leaves the output file behind.
  output->keep();
  return EXIT_SUCCESS;
}
