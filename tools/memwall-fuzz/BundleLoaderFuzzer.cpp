//===- BundleLoaderFuzzer.cpp - bundle manifests and inputs files ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What memwall-run and memwall-simulate do with a bundle before any kernel
// runs: load and validate manifest.json, read an inputs file, generate the
// random inputs and evaluate the reference graph. The input is a manifest,
// optionally followed by kInputsSeparator and an inputs file. A manifest that
// validates must keep what validation promises (every buffer inside the
// arena, its size its shape's), and sizes beyond this machine must be
// refused, never allocated; anything else aborts like a crash.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Checked.h"
#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Manifest.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace memwall::runtime;
namespace reference = memwall::reference;

namespace {

constexpr const char kInputsSeparator[] = "\n--- inputs.json ---\n";

// Relative tensor files of an inputs file resolve here: nowhere.
constexpr const char kBundleDir[] = "/nonexistent/memwall-fuzz.bundle";

// Host bytes (elements held as doubles) up to which inputs are generated and
// the reference graph is evaluated: enough for every op, small enough that
// one input stays fast.
constexpr int64_t kMaxEvaluatedHostBytes = int64_t(1) << 20;

[[noreturn]] void finding(const std::string &message) {
  std::fprintf(stderr, "bundle loader fuzzer: %s\n", message.c_str());
  std::abort();
}

// An oracle in 128-bit arithmetic, independent of the validator's checked
// int64 arithmetic.
void requireBuffersInsideTheArena(const Manifest &manifest) {
  for (const Buffer &buffer : manifest.buffers) {
    __int128 elements = 1;
    for (int64_t dim : buffer.shape) {
      if (dim < 0)
        finding("buffer '" + buffer.name + "' validated with a negative dim");
      elements *= dim;
      if (elements > INT64_MAX)
        finding("buffer '" + buffer.name + "' validated with a huge shape");
    }
    // A strided buffer spans its outermost dimension's pitch.
    if (!buffer.strides.empty())
      elements =
          static_cast<__int128>(buffer.shape.front()) * buffer.strides.front();
    __int128 bytes = elements * reference::dtypeBytes(buffer.dtype);
    __int128 end = static_cast<__int128>(buffer.offset) + buffer.bytes;
    if (bytes != buffer.bytes || buffer.offset < 0 || end > manifest.arenaBytes)
      finding("buffer '" + buffer.name + "' validated with a wrong range");
  }
}

bool beyondThisMachine(int64_t hostBytes) {
  return hostBytes < 0 ||
         static_cast<uint64_t>(hostBytes) > memwall::physicalMemoryBytes();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string inputsText;
  bool hasInputsFile = false;
  if (size_t at = text.find(kInputsSeparator); at != std::string::npos) {
    inputsText = text.substr(at + sizeof(kInputsSeparator) - 1);
    text.resize(at);
    hasInputsFile = true;
  }

  Manifest manifest;
  if (!parseManifestText(text, kBundleDir, manifest).ok())
    return 0;
  requireBuffersInsideTheArena(manifest);

  std::vector<HostInput> inputs;
  if (hasInputsFile)
    (void)parseInputsText(manifest, inputsText,
                          std::string(kBundleDir) + "/inputs.json", inputs);

  int64_t inputBytes = 0;
  for (const Binding &binding : manifest.inputs)
    addHostTensorBytes(manifest.findBuffer(binding.buffer)->shape, inputBytes);
  if (beyondThisMachine(inputBytes)) {
    if (makeRandomInputs(manifest, 0, inputs).ok())
      finding("inputs larger than this machine were allocated");
    return 0;
  }
  if (inputBytes > kMaxEvaluatedHostBytes ||
      !makeRandomInputs(manifest, 0, inputs).ok() || !manifest.hasReference)
    return 0;

  int64_t referenceBytes = 0;
  for (const reference::ValueInfo &value : manifest.reference.values)
    addHostTensorBytes(value.shape, referenceBytes);
  if (beyondThisMachine(referenceBytes)) {
    std::vector<reference::Tensor> outputs;
    if (evaluateReference(manifest, inputs, outputs).ok())
      finding("a reference graph larger than this machine was evaluated");
    return 0;
  }
  if (referenceBytes <= kMaxEvaluatedHostBytes) {
    std::vector<reference::Tensor> outputs;
    (void)evaluateReference(manifest, inputs, outputs);
  }
  return 0;
}
