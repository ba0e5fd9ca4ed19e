//===- HFConfigFuzzer.cpp - Hugging Face config.json files ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What `memwall-gen --hf-config=config.json` does: parse, validate for each
// generation mode, and build and verify the model. The layer count is capped
// at 2 for building (the builder repeats one layer; validation still sees
// the file's count).
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "memwall/ModelGen/ModelBuilder.h"
#include "memwall/ModelGen/ModelConfig.h"

#include "mlir/IR/Verifier.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text;
  if (!memwall::fuzz::asText(data, size, text))
    return 0;
  llvm::Expected<memwall::ModelConfig> config =
      memwall::parseHuggingFaceConfig(text, "config.json");
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }
  for (memwall::GenerationMode mode :
       {memwall::GenerationMode::Prefill, memwall::GenerationMode::Decode,
        memwall::GenerationMode::Train}) {
    memwall::ModelConfig sized = *config;
    sized.batch = 1;
    sized.seq = std::min<int64_t>(sized.maxPositions, 64);
    sized.kvLen = sized.seq > 0 ? sized.seq - 1 : 0;
    if (llvm::Error error = memwall::validateModelConfig(sized, mode)) {
      llvm::consumeError(std::move(error));
      continue;
    }
    (void)memwall::countParameters(sized, mode);
    sized.layers = std::min<int64_t>(sized.layers, 2);
    std::unique_ptr<MLIRContext> context = memwall::fuzz::createContext();
    OwningOpRef<ModuleOp> module =
        memwall::buildModel(context.get(), sized, mode);
    // A validated config must build a module that verifies.
    if (!module || failed(verify(*module)))
      std::abort();
  }
  return 0;
}
