//===- memwall-compile.cpp - memwall model -> runnable bundle -------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   memwall-compile model.mlir --target=h100-sxm -o model.bundle
//   memwall-compile model.mlir --emit=ptx -o kernels.ptx
//
// Fuses the model (unless --no-fuse), generates a kernel per fusion group and
// per remaining op, lowers them to PTX through LLVM's NVPTX backend, plans
// one memory arena and writes the bundle memwall-run executes
// (docs/bundle-format.md). A thin driver over the `memwall-lower-to-bundle`
// pipeline (memwall/Pipelines.h): upstream's pass-manager flags apply, e.g.
// -mlir-print-ir-after-all and --mlir-pass-pipeline-crash-reproducer.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Pipelines.h"
#include "memwall/Registration.h"
#include "memwall/Support/InputLimits.h"
#include "memwall/Support/OutputFile.h"
#include "memwall/Support/Version.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

static llvm::cl::OptionCategory category("memwall-compile options");

static llvm::cl::opt<std::string> inputFilename(llvm::cl::Positional,
                                                llvm::cl::desc("<model.mlir>"),
                                                llvm::cl::init("-"),
                                                llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    outputPath("o", llvm::cl::desc("Bundle directory (or file for --emit)"),
               llvm::cl::value_desc("path"), llvm::cl::init(""),
               llvm::cl::cat(category));
static llvm::cl::opt<std::string> targetName(
    "target", llvm::cl::desc("GPU target (default h100-sxm; docs/targets.md)"),
    llvm::cl::value_desc("name"), llvm::cl::init(""), llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    targetFile("target-file", llvm::cl::desc("JSON file describing the GPU"),
               llvm::cl::value_desc("file"), llvm::cl::init(""),
               llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    gemmBackend("gemm",
                llvm::cl::desc("Which kernel runs matmuls: auto (default: the "
                               "faster by the cost model), cublaslt, memwall"),
                llvm::cl::value_desc("auto|cublaslt|memwall"),
                llvm::cl::init(""), llvm::cl::cat(category));
static llvm::cl::opt<std::string> dequantizePolicy(
    "dequantize",
    llvm::cl::desc("Where a weight-only quantized GEMM dequantizes its weight: "
                   "auto (default: by the cost model), prologue (in its main "
                   "loop), kernel (a dequantize kernel before it)"),
    llvm::cl::value_desc("auto|prologue|kernel"), llvm::cl::init(""),
    llvm::cl::cat(category));
static llvm::cl::opt<bool> noFuse("no-fuse",
                                  llvm::cl::desc("One kernel per op"),
                                  llvm::cl::init(false),
                                  llvm::cl::cat(category));
enum class Emit { Bundle, Fused, GPU, PTX };
static llvm::cl::opt<Emit> emit(
    "emit", llvm::cl::desc("What to write"), llvm::cl::init(Emit::Bundle),
    llvm::cl::values(
        clEnumValN(Emit::Bundle, "bundle", "the bundle directory (default)"),
        clEnumValN(Emit::Fused, "fused", "the fused memwall IR"),
        clEnumValN(Emit::GPU, "gpu", "the generated gpu.module"),
        clEnumValN(Emit::PTX, "ptx", "the PTX of the generated kernels")),
    llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    cudaRoot("cuda-path",
             llvm::cl::desc("CUDA toolkit root, for libdevice (default "
                            "$CUDA_HOME or /usr/local/cuda)"),
             llvm::cl::value_desc("dir"), llvm::cl::init(""),
             llvm::cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "memwall-compile") << message << "\n";
  return EXIT_FAILURE;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Registered before the flags are read: -mlir-print-ir-after=PASS names
  // passes.
  registerAllPasses();
  memwall::registerMemWallPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  llvm::cl::HideUnrelatedOptions(category);
  memwall::setVersionPrinter();
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "memwall-compile: compile a memwall model into a bundle\n");

  llvm::Expected<memwall::GPUTarget> target = memwall::resolveGPUTarget(
      targetName.empty() && targetFile.empty() ? memwall::kDefaultGPUTargetName
                                               : targetName.getValue(),
      targetFile);
  if (!target)
    return fail(llvm::toString(target.takeError()));
  if (emit == Emit::Bundle && outputPath.empty())
    return fail("-o BUNDLE_DIR is required");
  if (!gemmBackend.empty() && !memwall::symbolizeGemmBackend(gemmBackend))
    return fail("--gemm='" + gemmBackend +
                "' must be auto, cublaslt or memwall");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  memwall::registerMemWallDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // An error names its op by location; printing the op (a whole function
  // for a function-level error) buries it.
  context.printOpOnDiagnostic(false);

  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> input =
      memwall::readIRInput(inputFilename);
  if (!input)
    return fail(llvm::toString(input.takeError()));
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module)))
    return EXIT_FAILURE;

  memwall::LowerToBundleOptions options;
  options.target = targetName;
  options.targetFile = targetFile;
  options.gemm = gemmBackend;
  options.dequantize = dequantizePolicy;
  options.fuse = !noFuse;
  options.ptx = emit != Emit::GPU;
  options.cudaPath = cudaRoot;
  if (emit == Emit::Bundle)
    options.output = outputPath;
  auto run = [&](llvm::function_ref<void(OpPassManager &)> build) {
    PassManager pm(&context, ModuleOp::getOperationName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    build(pm);
    return pm.run(*module);
  };
  // --emit=fused prints the fused model, once the rest of the pipeline
  // showed that codegen runs it.
  OwningOpRef<ModuleOp> fused;
  bool hadTarget = (*module)->hasAttr(memwall::kTargetAttrName);
  if (emit == Emit::Fused) {
    if (failed(run([&](OpPassManager &pm) {
          memwall::buildBundleFrontendPipeline(pm, options);
        })))
      return EXIT_FAILURE;
    fused = module->clone();
    for (StringRef name : {memwall::MemWallDialect::kReferenceAttrName,
                           memwall::MemWallDialect::kOutputNamesAttrName})
      (*fused)->removeAttr(name);
    if (!hadTarget)
      (*fused)->removeAttr(memwall::kTargetAttrName);
    options.ptx = false;
  }
  if (failed(run([&](OpPassManager &pm) {
        if (emit == Emit::Fused)
          memwall::buildBundleBackendPipeline(pm, options);
        else
          memwall::buildLowerToBundlePipeline(pm, options);
      })))
    return EXIT_FAILURE;
  if (emit == Emit::Bundle)
    return EXIT_SUCCESS;

  FailureOr<memwall::Bundle> bundle =
      memwall::readLoweredBundle(*module, *target);
  if (failed(bundle))
    return EXIT_FAILURE;
  if (llvm::Error error = memwall::writeOutputFile(
          outputPath.empty() ? "-" : outputPath.getValue(), "",
          [&](llvm::raw_ostream &os) {
            if (emit == Emit::Fused)
              fused->print(os);
            else if (emit == Emit::GPU)
              os << bundle->gpuModuleText << "\n";
            else
              os << bundle->ptx;
          }))
    return fail(llvm::toString(std::move(error)));
  return EXIT_SUCCESS;
}
