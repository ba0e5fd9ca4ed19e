//===- memwall-run.cpp - Runs, times and checks a memwall bundle ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-run BUNDLE_DIR [options]: executes a bundle written by
// memwall-compile (docs/bundle-format.md) on the GPU, reports measured against
// predicted times and memory, and with --check compares its outputs with the
// CPU reference interpreter. --reference-only needs no GPU. docs/runtime.md
// describes how it works.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Calibrate.h"
#include "memwall-runtime/Check.h"
#include "memwall-version.h"

#include "memwall-runtime/Executor.h"
#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/OutputFile.h"
#include "memwall-runtime/Report.h"
#include "memwall-runtime/Targets.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

using namespace memwall::runtime;

namespace {

enum ExitCode {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitNoDevice = 3,
  kExitCheckFailed = 4,
};

constexpr const char *kUsage =
    "usage: memwall-run BUNDLE_DIR [--inputs=FILE|random] [--check]\n"
    "                   [--iters=N] [--report=FILE.json] [--reference-only]\n"
    "                   [--dump-outputs=DIR] [--seed=N] [--rtol=X]\n"
    "       memwall-run --calibrate=FILE.json [--calibrate-base=NAME]\n"
    "                   [--calibrate-name=NAME] [--iters=N] "
    "[--report=FILE.json]\n";

constexpr const char *kHelp =
    "Runs a memwall bundle (manifest.json + kernels.ptx) on the GPU and\n"
    "reports its measured against its predicted time and memory.\n"
    "\n"
    "  --inputs=FILE|random  input values: an inputs file (docs/bundle-\n"
    "                        format.md) or a fixed-seed generator (default)\n"
    "  --seed=N              seed of the generator (default 0)\n"
    "  --check               check the numerics against the CPU reference\n"
    "                        interpreter: every step once more on the\n"
    "                        reference values of what it reads (within the\n"
    "                        tolerance of the reference), and every output\n"
    "                        against the reference evaluated in f32 (within\n"
    "                        max(tolerance, 1.5 x the reference's own\n"
    "                        error)); exit 4 if one is out of tolerance\n"
    "  --rtol=X              --check tolerance instead of 1e-2 (bf16, f16)\n"
    "                        or 1e-5 (f32)\n"
    "  --iters=N             timed runs after one warm-up (default 20)\n"
    "  --report=FILE.json    write the report as JSON instead of a table\n"
    "  --reference-only      no GPU: evaluate the reference graph on the CPU\n"
    "                        and print statistics of every output\n"
    "  --dump-outputs=DIR    write every output to DIR/<name>.bin and\n"
    "                        DIR/outputs.json (the inputs-file format)\n"
    "  --calibrate=FILE.json measure this GPU with memwall's runtime (device\n"
    "                        copy bandwidth, cuBLASLt bf16/f16 GEMM rates on\n"
    "                        a grid of shapes, empty-kernel launch overhead\n"
    "                        on a stream and in a CUDA graph), print a table\n"
    "                        and write a target file for --target-file\n"
    "                        (docs/targets.md, \"Calibration files\"); no\n"
    "                        BUNDLE_DIR. --iters sets the timed repetitions\n"
    "                        and --report writes every raw measurement\n"
    "  --calibrate-base=NAME the built-in target the file refines (default:\n"
    "                        chosen from the device's name)\n"
    "  --calibrate-name=NAME the file's target name (default <base>-measured)\n"
    "  --help                this text\n"
    "  --version             memwall's version and commit\n"
    "\n"
    "Exit codes: 0 ok, 1 error (with --calibrate: a failed measurement, or\n"
    "a figure above the base's datasheet: no file written), 2 usage error,\n"
    "3 no CUDA driver or device,\n"
    "4 --check found an output out of tolerance.\n";

struct Options {
  std::string bundleDir;
  std::string inputs = "random";
  bool check = false;
  int iters = 20;
  std::string reportPath;
  bool referenceOnly = false;
  std::string dumpDir;
  uint64_t seed = 0;
  double rtol = 0; // 0: the dtype's tolerance
  std::string calibratePath, calibrateBase, calibrateName;
  /// Options given that only a bundle run takes, for --calibrate's message.
  std::vector<std::string> bundleOnly;
};

int usageError(const std::string &message) {
  std::fprintf(stderr, "memwall-run: error: %s\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

int error(const std::string &message) {
  std::fprintf(stderr, "memwall-run: error: %s\n", message.c_str());
  return kExitError;
}

int error(const Status &status) { return error(status.message()); }

bool parseUnsigned(const std::string &text, uint64_t &value) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  value = parsed;
  return true;
}

/// Returns -1 when the options are fine, else the exit code.
int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto valueOf = [&](const char *flag, std::string &value) {
      std::string prefix = std::string(flag) + "=";
      if (arg.compare(0, prefix.size(), prefix) != 0)
        return false;
      value = arg.substr(prefix.size());
      return true;
    };
    std::string value;
    auto bundleOnly = [&] {
      options.bundleOnly.push_back(arg.substr(0, arg.find('=')));
    };
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n%s", kUsage, kHelp);
      return kExitOk;
    }
    if (arg == "--version") {
      // As the compiler's tools print it (memwall/Support/Version.h), without
      // LLVM: the runtime has none.
      std::printf("memwall %s (commit %s)\n  memwall-run (no LLVM)\n",
                  MEMWALL_VERSION, MEMWALL_COMMIT);
      return kExitOk;
    }
    if (arg == "--check") {
      options.check = true;
      bundleOnly();
    } else if (arg == "--reference-only") {
      options.referenceOnly = true;
      bundleOnly();
    } else if (valueOf("--calibrate", value)) {
      if (value.empty())
        return usageError("--calibrate needs a file name");
      options.calibratePath = value;
    } else if (valueOf("--calibrate-base", value)) {
      if (!findBuiltinTarget(value))
        return usageError("--calibrate-base must name a built-in target (" +
                          builtinTargetNames() + "), not '" + value + "'");
      options.calibrateBase = value;
    } else if (valueOf("--calibrate-name", value)) {
      if (!isTargetName(value))
        return usageError("--calibrate-name must be lowercase letters, "
                          "digits and dashes, not '" +
                          value + "'");
      options.calibrateName = value;
    } else if (valueOf("--inputs", value)) {
      bundleOnly();
      if (value.empty())
        return usageError("--inputs needs a file or 'random'");
      options.inputs = value;
    } else if (valueOf("--iters", value)) {
      uint64_t iters = 0;
      if (!parseUnsigned(value, iters) || iters == 0 || iters > 1000000)
        return usageError("--iters must be an integer from 1 to 1000000, "
                          "not '" +
                          value + "'");
      options.iters = static_cast<int>(iters);
    } else if (valueOf("--report", value)) {
      if (value.empty())
        return usageError("--report needs a file name");
      options.reportPath = value;
    } else if (valueOf("--dump-outputs", value)) {
      bundleOnly();
      if (value.empty())
        return usageError("--dump-outputs needs a directory");
      options.dumpDir = value;
    } else if (valueOf("--rtol", value)) {
      bundleOnly();
      char *end = nullptr;
      options.rtol = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(options.rtol > 0) ||
          options.rtol >= 1)
        return usageError("--rtol must be a number in (0, 1), not '" + value +
                          "'");
    } else if (valueOf("--seed", value)) {
      bundleOnly();
      if (!parseUnsigned(value, options.seed))
        return usageError("--seed must be a non-negative integer, not '" +
                          value + "'");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (options.bundleDir.empty()) {
      options.bundleDir = arg;
    } else {
      return usageError("more than one bundle directory ('" +
                        options.bundleDir + "' and '" + arg + "')");
    }
  }
  bool calibrating = !options.calibratePath.empty();
  if (!calibrating &&
      (!options.calibrateBase.empty() || !options.calibrateName.empty()))
    return usageError("--calibrate-base and --calibrate-name need "
                      "--calibrate=FILE.json");
  if (calibrating && !options.bundleDir.empty())
    return usageError("--calibrate measures the GPU, not a bundle: it takes "
                      "no bundle directory ('" +
                      options.bundleDir + "')");
  if (calibrating && !options.bundleOnly.empty())
    return usageError("--calibrate cannot be combined with " +
                      options.bundleOnly.front() +
                      " (an option of bundle "
                      "runs)");
  if (options.bundleDir.empty() && !calibrating)
    return usageError("no bundle directory given");
  if (options.referenceOnly && (options.check || !options.reportPath.empty()))
    return usageError("--reference-only runs no GPU: it cannot be combined "
                      "with --check or --report");
  return -1;
}

std::vector<std::string> outputNames(const Manifest &manifest) {
  std::vector<std::string> names;
  for (const Binding &binding : manifest.outputs)
    names.push_back(binding.name);
  return names;
}

/// --calibrate: measures, prints the table, writes the report and, when the
/// target parser would accept it, the target file.
int calibrate(const Options &options) {
  CalibrateOptions calibrateOptions;
  calibrateOptions.base = options.calibrateBase;
  calibrateOptions.name = options.calibrateName;
  calibrateOptions.iters = options.iters;
  Calibration calibration;
  Status status = memwall::runtime::calibrate(calibrateOptions, calibration);
  if (status.code() == ErrorCode::NoDevice) {
    std::fprintf(stderr,
                 "memwall-run: error: no CUDA driver/device: %s; --calibrate "
                 "measures a GPU and needs one\n",
                 status.message().c_str());
    return kExitNoDevice;
  }
  if (!status.ok())
    return error("--calibrate: " + status.message());
  printCalibrationTable(stdout, calibration);
  if (!options.reportPath.empty())
    if (Status written = writeOutputFile(
            options.reportPath, calibrationReportJson(calibration), "report");
        !written.ok())
      return error(written);
  if (std::string refused = checkCalibration(calibration); !refused.empty())
    return error("--calibrate: " + refused + "; '" + options.calibratePath +
                 "' not written");
  if (Status written =
          writeOutputFile(options.calibratePath,
                          calibrationTargetJson(calibration), "target file");
      !written.ok())
    return error(written);
  std::printf("wrote %s (target '%s', base '%s')\n",
              options.calibratePath.c_str(), calibration.name.c_str(),
              calibration.base.c_str());
  return kExitOk;
}

int run(int argc, char **argv) {
  Options options;
  if (int exitCode = parseOptions(argc, argv, options); exitCode >= 0)
    return exitCode;
  if (!options.calibratePath.empty())
    return calibrate(options);

  Manifest manifest;
  if (Status status = loadManifest(options.bundleDir, manifest); !status.ok())
    return error(status);
  if ((options.referenceOnly || options.check) && !manifest.hasReference)
    return error(options.bundleDir +
                 "/manifest.json has no \"reference\" graph to evaluate");

  std::vector<HostInput> inputs;
  if (options.inputs == "random") {
    if (Status status = makeRandomInputs(manifest, options.seed, inputs);
        !status.ok())
      return error(status);
  } else if (Status status = loadInputsFile(manifest, options.inputs, inputs);
             !status.ok()) {
    return error(status);
  }

  if (options.referenceOnly) {
    std::vector<memwall::reference::Tensor> outputs;
    if (Status status = evaluateReference(manifest, inputs, outputs);
        !status.ok())
      return error(status);
    printTensorStats(stdout, outputNames(manifest), outputs);
    if (!options.dumpDir.empty())
      if (Status status =
              writeTensorDir(options.dumpDir, outputNames(manifest), outputs);
          !status.ok())
        return error(status);
    return kExitOk;
  }

  GpuRunOptions gpuOptions;
  gpuOptions.bundleDir = options.bundleDir;
  gpuOptions.iters = options.iters;
  // --check: the reference first, as the GPU run's isolated pass loads its
  // values.
  CheckReference checkReference;
  std::vector<StepBuffers> stepPlan;
  if (options.check) {
    if (Status status = evaluateCheckReference(
            manifest, inputs, /*keepF32Values=*/true, checkReference);
        !status.ok())
      return error(status);
    stepPlan = planStepBuffers(manifest);
    gpuOptions.isolatedPass = isolatedPass(stepPlan, checkReference.values);
  }
  GpuRunResult gpu;
  Status gpuStatus = runOnGpu(manifest, inputs, gpuOptions, gpu);
  if (gpuStatus.code() == ErrorCode::NoDevice) {
    // One line (the error contract), with where to go without a GPU.
    std::fprintf(stderr,
                 "memwall-run: error: no CUDA driver/device: %s; without a "
                 "GPU, run the bundle's kernels on the CPU with "
                 "'memwall-simulate %s', or only its reference graph with "
                 "'memwall-run %s --reference-only'\n",
                 gpuStatus.message().c_str(), options.bundleDir.c_str(),
                 options.bundleDir.c_str());
    return kExitNoDevice;
  }
  if (!gpuStatus.ok())
    return error(gpuStatus);

  RunReport report;
  report.bundle = options.bundleDir;
  report.manifest = &manifest;
  report.gpu = &gpu;
  report.iters = options.iters;
  bool passed = true;
  if (options.check) {
    report.checked = true;
    report.checks =
        checkOutputs(manifest, gpu.outputs, checkReference, options.rtol);
    report.stepChecks = checkIsolatedSteps(
        manifest, stepPlan, gpu.isolatedOutputs, checkReference.values,
        options.rtol, &checkReference.f32Values);
    passed = allPassed(report.checks) && allPassed(report.stepChecks);
  }

  if (!options.dumpDir.empty())
    if (Status status =
            writeTensorDir(options.dumpDir, outputNames(manifest), gpu.outputs);
        !status.ok())
      return error(status);
  if (options.reportPath.empty()) {
    printTimingTable(stdout, report);
  } else if (Status status = writeOutputFile(options.reportPath,
                                             reportJson(report), "report");
             !status.ok()) {
    return error(status);
  }
  if (report.checked) {
    printStepTable(stdout, report.stepChecks);
    printCheckTable(stdout, report.checks);
  }
  if (!passed) {
    std::fprintf(stderr,
                 "memwall-run: error: --check: out of tolerance: %s (see the "
                 "tables)\n",
                 describeFailures(report.stepChecks, report.checks).c_str());
    return kExitCheckFailed;
  }
  return kExitOk;
}

} // namespace

int main(int argc, char **argv) {
  // The size checks (validateManifest, checkHostMemory) come first; this is
  // the last resort for an allocation they did not foresee.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    return error("out of host memory (an allocation failed)");
  } catch (const std::length_error &failure) {
    return error(std::string("a host buffer is too large: ") + failure.what());
  }
}
