//===- TargetFuzzer.cpp - target JSON files -------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What `--target-file=gpu.json` does: parse and validate the target, then
// use it. A target that validates must give finite, positive times for every
// kind of kernel, and a report of a small model on it must be valid JSON;
// anything else aborts like a crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "memwall/Hardware/Roofline.h"
#include "memwall/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;

// One of each kind of kernel: elementwise, GEMM, attention, a reduction.
static const char kModel[] = R"mlir(
func.func @main(%x: tensor<8x512x768xbf16>, %w: tensor<768x768xbf16>,
                %q: tensor<1x12x512x64xbf16>) -> (tensor<8x512x768xbf16>, tensor<1x12x512x64xbf16>) {
  %0 = memwall.matmul %x, %w : tensor<8x512x768xbf16>, tensor<768x768xbf16> -> tensor<8x512x768xbf16>
  %1 = memwall.gelu %0 : tensor<8x512x768xbf16>
  %2 = memwall.softmax %1 : tensor<8x512x768xbf16>
  %3 = memwall.attention %q, %q, %q causal : tensor<1x12x512x64xbf16>, tensor<1x12x512x64xbf16>, tensor<1x12x512x64xbf16> -> tensor<1x12x512x64xbf16>
  return %2, %3 : tensor<8x512x768xbf16>, tensor<1x12x512x64xbf16>
}
)mlir";

static void requireSaneTime(const memwall::GPUTarget &target,
                            const memwall::KernelWork &work) {
  double seconds = memwall::estimateKernelTime(work, target).timeSeconds;
  if (!std::isfinite(seconds) || seconds <= 0) {
    llvm::errs() << "a valid target gave a kernel time of " << seconds << "\n";
    std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text;
  if (!memwall::fuzz::asText(data, size, text))
    return 0;
  llvm::Expected<memwall::GPUTarget> target =
      memwall::parseGPUTargetJSON(text, "fuzz.json");
  if (!target) {
    llvm::consumeError(target.takeError());
    return 0;
  }
  for (unsigned unit = 0; unit < 3; ++unit) {
    for (double flops : {0.0, 1.0, 1e15}) {
      memwall::KernelWork work;
      work.flops = flops;
      work.bytesRead = 1 << 20;
      work.bytesWritten = 1 << 20;
      work.precision = memwall::MathPrecision::BF16;
      work.unit = static_cast<memwall::ComputeUnit>(unit);
      requireSaneTime(*target, work);
    }
  }

  // The same file through a tool's pipeline and report.
  const std::string &scratch = memwall::fuzz::scratchDirectory();
  std::string targetPath = scratch + "/target.json";
  std::string reportPath = scratch + "/report.json";
  {
    std::error_code error;
    llvm::raw_fd_ostream os(targetPath, error);
    if (error)
      return 0;
    os << text;
  }
  std::unique_ptr<MLIRContext> context = memwall::fuzz::createContext();
  OwningOpRef<ModuleOp> module = memwall::fuzz::parseModule(*context, kModel);
  if (!module)
    std::abort(); // the fixed model must parse
  memwall::DefaultPipelineOptions options;
  options.targetFile = targetPath;
  options.fuse = true;
  options.budget = "1GB";
  options.rematSolver = "dp";
  options.report = reportPath;
  PassManager pm(context.get());
  memwall::buildDefaultPipeline(pm, options);
  if (succeeded(pm.run(*module)))
    memwall::fuzz::requireValidJSONFile(reportPath);
  return 0;
}
