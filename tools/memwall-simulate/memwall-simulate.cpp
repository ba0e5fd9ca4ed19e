//===- memwall-simulate.cpp - run a bundle on the CPU ---------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   memwall-simulate model.bundle [--inputs=FILE|random] [--seed=N]
//
// Runs a bundle's steps on the CPU (kernels in the SIMT interpreter from the
// bundle's kernels.mlir, GEMMs by a direct loop) and checks the numerics as
// `memwall-run --check` does on a GPU (runtime/Check.h): every step on the
// reference values of what it reads, then the whole bundle against the
// reference evaluated in f32. It checks the generated code without a GPU; it
// is slow and measures nothing. Exit codes as memwall-run: 0 ok, 1 error,
// 4 a step or an output is out of tolerance.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Check.h"
#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Manifest.h"
#include "memwall/Simulator/BundleSimulator.h"
#include "memwall/Simulator/SimtInterpreter.h"
#include "memwall/Support/InputLimits.h"
#include "memwall/Support/Version.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace memwall;

static llvm::cl::OptionCategory category("memwall-simulate options");
static llvm::cl::opt<std::string> bundleDir(llvm::cl::Positional,
                                            llvm::cl::desc("<bundle dir>"),
                                            llvm::cl::Required,
                                            llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    inputsOption("inputs",
                 llvm::cl::desc("Inputs file (docs/bundle-format.md) or "
                                "'random' (default)"),
                 llvm::cl::init("random"), llvm::cl::cat(category));
static llvm::cl::opt<bool> isolateSteps(
    "isolate-steps",
    llvm::cl::desc("Run only the per-step gate: every step on the reference "
                   "values of the buffers it reads, what it writes within "
                   "the tolerance of the reference (default: this and "
                   "--end-to-end)"),
    llvm::cl::init(false), llvm::cl::cat(category));
static llvm::cl::opt<bool> endToEnd(
    "end-to-end",
    llvm::cl::desc("Run only the end-to-end check: the outputs against the "
                   "reference evaluated in f32, within max(tolerance, 1.5 x "
                   "the reference's own error) (default: this and "
                   "--isolate-steps)"),
    llvm::cl::init(false), llvm::cl::cat(category));
static llvm::cl::opt<bool> compareSteps(
    "compare-steps",
    llvm::cl::desc("End to end, also judge what every step wrote like an "
                   "output (a fused group: its last op's value), to see "
                   "where a difference first appears"),
    llvm::cl::init(false), llvm::cl::cat(category));
static llvm::cl::opt<double>
    rtol("rtol",
         llvm::cl::desc("Tolerance instead of 1e-2 (bf16, f16) or 1e-5 (f32), "
                        "as memwall-run --rtol"),
         llvm::cl::init(0), llvm::cl::cat(category));
static llvm::cl::opt<int> fp8AccumulatorBits(
    "fp8-accumulator-bits",
    llvm::cl::desc("Emulate tensor cores that sum each fp8 wgmma k32 step "
                   "with N bits below its largest addend's leading bit, "
                   "truncating (Hopper is reported to keep about 14: "
                   "DeepSeek-V3); 0, the default: exact products, f32 sums. "
                   "A model of the hardware, not a measurement"),
    llvm::cl::init(0), llvm::cl::cat(category));
static llvm::cl::opt<uint64_t>
    seed("seed", llvm::cl::desc("Seed of the random inputs (default 0)"),
         llvm::cl::init(0), llvm::cl::cat(category));

namespace {
enum ExitCode { kExitOk = 0, kExitError = 1, kExitCheckFailed = 4 };

int error(const std::string &message) {
  std::fprintf(stderr, "memwall-simulate: error: %s\n", message.c_str());
  return kExitError;
}

/// Where a long simulation is, on stderr: "memwall-simulate: end to end:
/// step 12/48 'kernel11_layer_norm' (3.2 s)". On a terminal every step
/// (rewriting one line); elsewhere (logs, tests) at most once a second, from
/// a ticker thread, so that a run under a second prints nothing and a step
/// that takes minutes is named while it runs.
class Progress {
public:
  Progress() : terminal(isatty(fileno(stderr))) {
    if (!terminal)
      ticker = std::thread([this] { tick(); });
  }
  ~Progress() { finish(); }

  /// Stops reporting (clears the terminal's line).
  void finish() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    if (ticker.joinable())
      ticker.join();
    if (terminal && shown)
      std::fprintf(stderr, "\r\033[K");
    shown = false;
  }

  void startPass(const char *name) {
    std::lock_guard<std::mutex> lock(mutex);
    pass = name;
    passStart = std::chrono::steady_clock::now();
  }

  void step(size_t index, size_t count, const std::string &name) {
    std::lock_guard<std::mutex> lock(mutex);
    current = index;
    total = count;
    stepName = name;
    changed = true;
    if (terminal) {
      std::fprintf(stderr, "\r\033[K%s", line().c_str());
      shown = true;
    }
  }

private:
  const bool terminal;
  std::mutex mutex;
  std::condition_variable wake;
  std::thread ticker;
  bool stopping = false, changed = false, shown = false;
  std::string pass, stepName;
  size_t current = 0, total = 0;
  std::chrono::steady_clock::time_point passStart;

  std::string line() const {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - passStart)
                         .count();
    char text[64];
    std::snprintf(text, sizeof(text), " (%.1f s)", seconds);
    return "memwall-simulate: " + pass + ": step " +
           std::to_string(current + 1) + "/" + std::to_string(total) + " '" +
           stepName + "'" + text;
  }

  void tick() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      wake.wait_for(lock, std::chrono::seconds(1));
      if (stopping || !changed)
        continue;
      std::fprintf(stderr, "%s\n", line().c_str());
      changed = false;
    }
  }
};
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(category);
  memwall::setVersionPrinter();
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "memwall-simulate: run a bundle's kernels on the CPU and check them\n");

  if (rtol < 0 || rtol >= 1)
    return error("--rtol must be in (0, 1)");
  if (fp8AccumulatorBits < 0 || fp8AccumulatorBits > 40)
    return error(
        "--fp8-accumulator-bits=" + std::to_string(fp8AccumulatorBits) +
        " must be 0 (exact) or 1 to 40");
  simt::DeviceModel device;
  device.fp8AccumulatorBits = fp8AccumulatorBits;
  runtime::Manifest manifest;
  if (runtime::Status status = runtime::loadManifest(bundleDir, manifest);
      !status.ok())
    return error(status.message());
  if (!manifest.hasReference)
    return error(bundleDir + "/manifest.json has no \"reference\" graph");
  std::string kernelsText;
  std::string kernelsPath = bundleDir + "/kernels.mlir";
  if (runtime::Status status = runtime::readFile(kernelsPath, kernelsText);
      !status.ok())
    return error(status.message() +
                 " (bundles from memwall-compile carry their "
                 "generated gpu.module there)");
  // kernels.mlir is parsed by upstream MLIR, which recurses per nesting
  // level and crashes on some hostile ops (llvm.extractvalue at a position
  // of 2^40): limit the nesting, then parse once in a child process.
  if (llvm::Error tooDeep = checkNestingDepth(kernelsText, kernelsPath,
                                              TextSyntax::MLIR))
    return error(llvm::toString(std::move(tooDeep)));
  if (llvm::Error crash = checkRunsWithoutCrashing(
          [&] {
            std::unique_ptr<mlir::MLIRContext> probe = simt::createContext();
            (void)simt::parseModule(*probe, kernelsText, kernelsPath);
          },
          "parsing " + kernelsPath))
    return error(llvm::toString(std::move(crash)) +
                 " (recompile the bundle with memwall-compile)");
  std::unique_ptr<mlir::MLIRContext> context = simt::createContext();
  mlir::OwningOpRef<mlir::ModuleOp> kernels =
      simt::parseModule(*context, kernelsText, kernelsPath);
  if (!kernels)
    return error("cannot parse " + kernelsPath);

  std::vector<runtime::HostInput> inputs;
  if (runtime::Status status =
          inputsOption == "random"
              ? runtime::makeRandomInputs(manifest, seed, inputs)
              : runtime::loadInputsFile(manifest, inputsOption, inputs);
      !status.ok())
    return error(status.message());

  // Without either flag, both passes; --compare-steps is end to end.
  bool runIsolated = isolateSteps || !(endToEnd || compareSteps);
  bool runEndToEnd = endToEnd || compareSteps || !isolateSteps;

  runtime::CheckReference reference;
  if (runtime::Status status = runtime::evaluateCheckReference(
          manifest, inputs, /*keepF32Values=*/compareSteps || runIsolated,
          reference);
      !status.ok())
    return error(status.message());
  std::vector<runtime::StepBuffers> plan = runtime::planStepBuffers(manifest);

  Progress progress;
  // Stops the progress line first, so that the error is the last line.
  auto fail = [&](const std::string &message) {
    progress.finish();
    return error(message);
  };
  size_t stepCount = manifest.steps.size();
  auto showStep = [&](size_t index, const runtime::Step &step,
                      std::vector<uint8_t> &) {
    progress.step(index, stepCount, step.name);
  };

  // 1. The per-step gate.
  std::vector<runtime::StepCheck> stepChecks;
  if (runIsolated) {
    progress.startPass("isolated steps");
    std::vector<std::vector<reference::Tensor>> written;
    if (std::string message = simulator::simulateIsolatedPass(
            manifest, *kernels, inputs,
            runtime::isolatedPass(plan, reference.values), written, showStep,
            device);
        !message.empty())
      return fail(message);
    stepChecks = runtime::checkIsolatedSteps(
        manifest, plan, written, reference.values, rtol, &reference.f32Values);
  }

  // 2. End to end; with --compare-steps every step's writes judged like
  // outputs.
  std::vector<runtime::OutputCheck> outputChecks, driftChecks;
  if (runEndToEnd) {
    progress.startPass("end to end");
    auto judgeWrites = [&](size_t index, const runtime::Step &step,
                           std::vector<uint8_t> &arena) {
      for (const runtime::StepBuffer &write : plan[index].writes) {
        const reference::Tensor &declared = reference.values.at(write.value);
        reference::Tensor got = runtime::fromBufferBytes(
            *write.buffer, arena.data() + write.buffer->offset);
        got.shape = declared.shape; // same elements
        driftChecks.push_back(runtime::checkEndToEnd(
            step.name + " " + write.buffer->name, got, declared,
            reference.f32Values.at(write.value), rtol));
      }
    };
    std::vector<reference::Tensor> outputs;
    if (std::string message = simulator::simulateBundle(
            manifest, *kernels, inputs, outputs, showStep,
            compareSteps ? simulator::StepHook(judgeWrites) : nullptr, device);
        !message.empty())
      return fail(message);
    outputChecks = runtime::checkOutputs(manifest, outputs, reference, rtol);
  }

  progress.finish();
  std::printf("simulated %zu steps of %s on the CPU\n", stepCount,
              manifest.model.c_str());
  if (runIsolated)
    runtime::printStepTable(stdout, stepChecks);
  if (compareSteps)
    runtime::printCheckTable(stdout, driftChecks, "step buffer");
  if (runEndToEnd)
    runtime::printCheckTable(stdout, outputChecks);
  std::fflush(stdout);

  if (!runtime::allPassed(stepChecks) || !runtime::allPassed(outputChecks) ||
      !runtime::allPassed(driftChecks)) {
    std::string failed = runtime::describeFailures(stepChecks, outputChecks);
    if (!runtime::allPassed(driftChecks))
      failed += std::string(failed.empty() ? "" : ", ") +
                "a step end to end (--compare-steps)";
    std::fprintf(stderr,
                 "memwall-simulate: error: out of tolerance: %s (see the "
                 "tables)\n",
                 failed.c_str());
    return kExitCheckFailed;
  }
  return kExitOk;
}
