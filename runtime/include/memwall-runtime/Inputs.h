//===- Inputs.h - Host-side inputs and outputs of a bundle run --*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Makes the values of a bundle's inputs (a fixed-seed generator or an inputs
// file, docs/bundle-format.md), evaluates the reference graph on them, and
// writes outputs in the inputs-file format.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_INPUTS_H
#define MEMWALL_RUNTIME_INPUTS_H

#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Reference.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memwall::runtime {

/// One bundle input with its value, in the order of the manifest's "inputs".
struct HostInput {
  const Binding *binding = nullptr;
  const Buffer *buffer = nullptr;
  reference::Tensor tensor; // dtype and shape of the buffer
};

/// splitmix64: small, fast, and good enough for test data; every input gets
/// its own stream so adding an input does not change the others.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next();
  /// Uniform in [0, 1), from the top 53 bits.
  double nextUnit();

private:
  uint64_t state;
};

/// The generator state of input number `index` under `seed`.
uint64_t inputStreamSeed(uint64_t seed, size_t index);

/// The random value of one input: `input` buffers U(-1, 1); `weight` buffers
/// of rank >= 2 U(-a, a) with a = 1/sqrt(shape[0]); weights of rank <= 1
/// U(0.5, 1.5); integer and i1 inputs 0. Values are rounded to the dtype.
reference::Tensor randomTensor(DType dtype, const std::vector<int64_t> &shape,
                               BufferRole role, uint64_t streamSeed);

/// Adds to `total` the host bytes of a tensor of `shape` (its elements held
/// as doubles); `total` becomes -1, which checkHostMemory refuses, once the
/// sum does not fit in int64.
void addHostTensorBytes(const std::vector<int64_t> &shape, int64_t &total);

/// Fills every input of `manifest` from the generator. Returns "" or a
/// message saying that the inputs need more host memory than the machine
/// has.
Status makeRandomInputs(const Manifest &manifest, uint64_t seed,
                        std::vector<HostInput> &inputs);

/// Reads an inputs file (paths in it are relative to it). Returns "" or a
/// message naming the input and what was expected; a missing, extra or
/// duplicated input is an error too, and so is a tensor file that is not a
/// regular file of exactly the buffer's size.
Status loadInputsFile(const Manifest &manifest, const std::string &path,
                      std::vector<HostInput> &inputs);

/// loadInputsFile on `text`, the contents of the inputs file `path`.
Status parseInputsText(const Manifest &manifest, const std::string &text,
                       const std::string &path, std::vector<HostInput> &inputs);

/// Evaluates the manifest's reference graph on `inputs`; `outputs` receives
/// one tensor per manifest output, in order, shaped like its reference value;
/// `allValues`, when given, every value of the graph by name. `precision`
/// F32 computes every float value in f32 (reference::Precision).
Status evaluateReference(
    const Manifest &manifest, const std::vector<HostInput> &inputs,
    std::vector<reference::Tensor> &outputs,
    std::map<std::string, reference::Tensor> *allValues = nullptr,
    reference::Precision precision = reference::Precision::Declared);

/// Writes DIR/<name>.bin per tensor and DIR/outputs.json (the inputs-file
/// format) naming them, each through writeOutputFile; creates DIR if
/// needed.
Status writeTensorDir(const std::string &dir,
                      const std::vector<std::string> &names,
                      const std::vector<reference::Tensor> &tensors);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_INPUTS_H
