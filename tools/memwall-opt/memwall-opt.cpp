//===- memwall-opt.cpp - memwall optimizer driver -------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
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
#ifdef MEMWALL_INCLUDE_TESTS
#include "TestPasses.h"
#endif

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
#ifdef MEMWALL_INCLUDE_TESTS
  memwall::test::registerTestPasses();
#endif

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // memwall-lower-to-bundle translates its kernels to LLVM IR for PTX.
  registerAllGPUToLLVMIRTranslations(registry);
  memwall::registerMemWallDialects(registry);

  // memwall's flags are memwall-default's options (declared once, in
  // DefaultPipelineOptions); the pipeline is built by the same code the
  // named pipeline, the plugin and the C API use. Unlike memwall-default,
  // memwall-opt fuses only when asked.
  auto options = std::make_shared<memwall::DefaultPipelineOptions>();
  options->fuse = false;
  std::vector<std::unique_ptr<llvm::cl::Option>> flags =
      options->registerAsCommandLineFlags(memwallCategory);

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

  // Option values (the target included) are checked before the model is
  // read, and reported as this tool's errors (the passes would report them
  // at the module).
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

  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  MlirOptMainConfig userPipeline = config;
  if (options->fuse || !options->reportPath().empty() ||
      !options->precision.empty() || !options->kvCacheDtype.empty()) {
    // The command-line pipeline runs after fusion, before the report.
    config.setPassPipelineSetupFn([=](PassManager &pm) {
      return memwall::buildDefaultPipeline(pm, *options, [&](OpPassManager &) {
        return userPipeline.setupPassPipeline(pm);
      });
    });
  } else if (options->setsTarget()) {
    // Only a target: memwall-set-target, then the command-line pipeline.
    config.setPassPipelineSetupFn([=](PassManager &pm) {
      memwall::addSetTargetPass(pm, *options);
      return userPipeline.setupPassPipeline(pm);
    });
  }
  // Without a memwall flag memwall-opt is a plain mlir-opt.
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
