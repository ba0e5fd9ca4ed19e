//===- MeasuredRun.cpp - a memwall-run report beside the predictions ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads the JSON `memwall-run --report=RUN.json` writes (docs/runtime.md) and
// matches each of its kernels to the report's op that runs the same ops: a
// bundle step lists the locations of the ops it runs, a report op (a fusion)
// joins them with "+".
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/RooflineReport.h"

#include "memwall/Support/InputLimits.h"
#include "memwall/Support/JSONDiagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace memwall;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A finite non-negative number at `key` of `object`.
static llvm::Expected<double> readSeconds(const llvm::json::Object &object,
                                          llvm::StringRef key,
                                          llvm::StringRef path,
                                          llvm::StringRef where) {
  std::optional<double> value = object.getNumber(key);
  if (!value || !std::isfinite(*value) || *value < 0)
    return makeError(path + ": " + where + " \"" + key +
                     "\" must be a non-negative number of seconds");
  return *value;
}

llvm::Expected<MeasuredRun>
memwall::readMeasuredRun(llvm::StringRef path, const RooflineReport &report) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readTextInput(path, "run report", kMaxJSONInputBytes);
  if (!buffer)
    return buffer.takeError();
  llvm::Expected<llvm::json::Object> object = parseJSONObjectWithLocation(
      (*buffer)->getBuffer(), path, "a memwall-run report");
  if (!object)
    return object.takeError();
  const llvm::json::Array *steps = object->getArray("steps");
  if (!steps)
    return makeError(path + ": \"steps\" must be an array (is this a "
                            "memwall-run --report file?)");

  llvm::StringMap<double> predictedByOps;
  for (const OpRecord &op : report.ops)
    predictedByOps[op.loc] += op.estimate.timeSeconds;

  MeasuredRun run;
  if (std::optional<llvm::StringRef> device = object->getString("device"))
    run.device = device->str();
  for (auto [index, value] : llvm::enumerate(*steps)) {
    std::string where = "steps[" + std::to_string(index) + "]";
    const llvm::json::Object *step = value.getAsObject();
    if (!step)
      return makeError(path + ": " + where + " must be an object");
    MeasuredKernel kernel;
    if (std::optional<llvm::StringRef> name = step->getString("name"))
      kernel.name = name->str();
    if (const llvm::json::Array *ops = step->getArray("ops")) {
      llvm::SmallVector<std::string> locs;
      for (const llvm::json::Value &op : *ops)
        if (std::optional<llvm::StringRef> loc = op.getAsString())
          locs.push_back(loc->str());
      kernel.ops = llvm::join(locs, "+");
    }
    llvm::Expected<double> measured =
        readSeconds(*step, "measured_time_s", path, where);
    if (!measured)
      return measured.takeError();
    llvm::Expected<double> predicted =
        readSeconds(*step, "predicted_time_s", path, where);
    if (!predicted)
      return predicted.takeError();
    kernel.measuredSeconds = *measured;
    kernel.bundlePredictedSeconds = *predicted;
    run.measuredSeconds += kernel.measuredSeconds;
    auto match = predictedByOps.find(kernel.ops);
    if (match != predictedByOps.end() && !kernel.ops.empty()) {
      kernel.predictedSeconds = match->second;
      run.predictedSeconds += match->second;
      run.matchedMeasuredSeconds += kernel.measuredSeconds;
    } else {
      ++run.unmatched;
    }
    run.kernels.push_back(std::move(kernel));
  }
  return run;
}
