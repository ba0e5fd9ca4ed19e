//===- memwall-simulate.cpp - run a bundle on the CPU ---------------------===//
//
//   memwall-simulate model.bundle [--inputs=FILE|random] [--seed=N]
//
// Runs a bundle's steps on the CPU (kernels in the SIMT interpreter from the
// bundle's kernels.mlir, GEMMs by a direct loop) and compares every output
// with the reference interpreter, like `memwall-run --check` does on a GPU.
// It checks the generated code without a GPU; it is slow and measures
// nothing. Exit codes as memwall-run: 0 ok, 1 error, 4 an output is out of
// tolerance.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Report.h"
#include "memwall/Simulator/BundleSimulator.h"
#include "memwall/Simulator/SimtInterpreter.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <set>

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
static llvm::cl::opt<bool> compareSteps(
    "compare-steps",
    llvm::cl::desc("After every step, compare what it wrote with the "
                   "reference value of the same name (a fused group: its "
                   "last op's value), to find the step that goes wrong"),
    llvm::cl::init(false), llvm::cl::cat(category));
static llvm::cl::opt<bool> isolateSteps(
    "isolate-steps",
    llvm::cl::desc("--compare-steps, and before every step load the "
                   "reference values into the buffers it reads, so each "
                   "comparison shows that step's own error, not the drift "
                   "of the steps before it"),
    llvm::cl::init(false), llvm::cl::cat(category));
static llvm::cl::opt<double>
    rtol("rtol",
         llvm::cl::desc("Tolerance instead of 1e-2 (bf16, f16) or 1e-5 (f32), "
                        "as memwall-run --rtol"),
         llvm::cl::init(0), llvm::cl::cat(category));
static llvm::cl::opt<uint64_t>
    seed("seed", llvm::cl::desc("Seed of the random inputs (default 0)"),
         llvm::cl::init(0), llvm::cl::cat(category));

namespace {
enum ExitCode { kExitOk = 0, kExitError = 1, kExitCheckFailed = 4 };

/// The reference value a step's buffer holds: the same name; an op's first
/// result "x#0"; a fused group's single result "a+b" is its last op's "b".
/// (Other results of multi-result fusions are not matched.)
const reference::Tensor *
referenceFor(const std::string &buffer,
             const std::map<std::string, reference::Tensor> &values) {
  std::string name = buffer;
  size_t hash = name.rfind('#');
  if (hash != std::string::npos) {
    if (name.find('+') != std::string::npos || name.substr(hash) != "#0")
      return nullptr;
    name = name.substr(0, hash);
  } else if (size_t plus = name.rfind('+'); plus != std::string::npos) {
    name = name.substr(plus + 1);
  }
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

int error(const std::string &message) {
  std::fprintf(stderr, "memwall-simulate: error: %s\n", message.c_str());
  return kExitError;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "memwall-simulate: run a bundle's kernels on the CPU and check them\n");

  if (rtol < 0 || rtol >= 1)
    return error("--rtol must be in (0, 1)");
  runtime::Manifest manifest;
  if (std::string message = runtime::loadManifest(bundleDir, manifest);
      !message.empty())
    return error(message);
  if (!manifest.hasReference)
    return error(bundleDir + "/manifest.json has no \"reference\" graph");
  std::string kernelsText;
  std::string kernelsPath = bundleDir + "/kernels.mlir";
  if (std::string message = runtime::readFile(kernelsPath, kernelsText);
      !message.empty())
    return error(message + " (bundles from memwall-compile carry their "
                           "generated gpu.module there)");
  std::unique_ptr<mlir::MLIRContext> context = simt::createContext();
  mlir::OwningOpRef<mlir::ModuleOp> kernels =
      simt::parseModule(*context, kernelsText, kernelsPath);
  if (!kernels)
    return error("cannot parse " + kernelsPath);

  std::vector<runtime::HostInput> inputs;
  if (std::string message =
          inputsOption == "random"
              ? runtime::makeRandomInputs(manifest, seed, inputs)
              : runtime::loadInputsFile(manifest, inputsOption, inputs);
      !message.empty())
    return error(message);

  // The reference, evaluated once: the outputs' values, and for
  // --compare-steps every value by name.
  std::vector<reference::Tensor> expected;
  std::map<std::string, reference::Tensor> values;
  if (std::string message =
          runtime::evaluateReference(manifest, inputs, expected, &values);
      !message.empty())
    return error(message);
  bool comparing = compareSteps || isolateSteps;
  if (comparing)
    std::printf("%-40s  %-32s  %12s  %12s  %s\n", "step", "buffer", "max abs",
                "max rel", "result");
  auto buffersOf = [](const runtime::Step &step) {
    if (step.kind == runtime::StepKind::Kernel)
      return step.kernel.args;
    std::vector<std::string> names;
    for (const std::string *name : {&step.gemm.a, &step.gemm.b, &step.gemm.c,
                                    &step.gemm.bias, &step.gemm.d})
      if (!name->empty())
        names.push_back(*name);
    return names;
  };
  // A buffer is compared after the step that first writes it.
  std::set<std::string> compared;
  auto isolateStep = [&](const runtime::Step &step,
                         std::vector<uint8_t> &arena) {
    for (const std::string &name : buffersOf(step)) {
      const runtime::Buffer &buffer = *manifest.findBuffer(name);
      const reference::Tensor *expected = referenceFor(name, values);
      if (!compared.count(name) || !expected ||
          expected->numElements() != runtime::numElements(buffer.shape))
        continue; // not written yet (an output of this step), or unknown
      std::vector<uint8_t> bytes = expected->toBytes();
      std::memcpy(arena.data() + buffer.offset, bytes.data(), bytes.size());
    }
  };
  auto compareStep = [&](const runtime::Step &step,
                         std::vector<uint8_t> &arena) {
    std::vector<std::string> written = buffersOf(step);
    for (const std::string &name : written) {
      const runtime::Buffer &buffer = *manifest.findBuffer(name);
      const reference::Tensor *expected = referenceFor(name, values);
      if (buffer.role == runtime::BufferRole::Input ||
          buffer.role == runtime::BufferRole::Weight ||
          !compared.insert(name).second || !expected ||
          expected->numElements() != runtime::numElements(buffer.shape))
        continue;
      reference::Tensor got = reference::Tensor::fromBytes(
          buffer.dtype, expected->shape, arena.data() + buffer.offset,
          buffer.bytes);
      reference::Comparison comparison =
          reference::compare(got, *expected, rtol);
      std::printf("%-40s  %-32s  %12.4g  %12.4g  %s\n", step.name.c_str(),
                  name.c_str(), comparison.maxAbsError, comparison.maxRelError,
                  comparison.passed ? "PASS" : "FAIL");
    }
  };

  std::vector<reference::Tensor> outputs;
  if (std::string message = simulator::simulateBundle(
          manifest, *kernels, inputs, outputs,
          isolateSteps ? simulator::StepHook(isolateStep) : nullptr,
          comparing ? simulator::StepHook(compareStep) : nullptr);
      !message.empty())
    return error(message);

  std::vector<runtime::OutputCheck> checks =
      runtime::checkOutputs(manifest, outputs, expected, rtol);
  std::printf("simulated %zu steps of %s on the CPU\n", manifest.steps.size(),
              manifest.model.c_str());
  runtime::printCheckTable(stdout, checks);
  if (!runtime::allPassed(checks)) {
    std::fprintf(stderr, "memwall-simulate: error: an output is out of "
                         "tolerance (see the table)\n");
    return kExitCheckFailed;
  }
  return kExitOk;
}
