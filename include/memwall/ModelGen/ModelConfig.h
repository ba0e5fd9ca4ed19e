//===- ModelConfig.h - transformer model configurations ---------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The shape of a GPT-2, Llama or BERT model and of the step to generate, from
// a preset, a Hugging Face config.json, or flags.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_MODELGEN_MODELCONFIG_H
#define MEMWALL_MODELGEN_MODELCONFIG_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace memwall {

enum class ModelFamily { GPT2, Llama, BERT };
enum class GenerationMode { Prefill, Decode, Train };

llvm::StringRef stringifyModelFamily(ModelFamily family);
std::optional<ModelFamily> symbolizeModelFamily(llvm::StringRef name);
llvm::StringRef stringifyGenerationMode(GenerationMode mode);
std::optional<GenerationMode> symbolizeGenerationMode(llvm::StringRef name);

/// What each size is called where the user set it, for messages: a
/// memwall-gen flag ("--hidden") or a config.json key ("\"n_embd\"").
struct ConfigFieldNames {
  std::string layers = "--layers", hidden = "--hidden", heads = "--heads",
              kvHeads = "--kv-heads", ffn = "--ffn", vocab = "--vocab",
              maxPositions = "--max-positions", batch = "--batch",
              seq = "--seq", kvLen = "--kv-len", dtype = "--dtype",
              dropout = "--dropout";
};

struct ModelConfig {
  std::string name;
  ModelFamily family = ModelFamily::GPT2;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  /// Key/value heads (grouped-query attention); equals heads without GQA.
  int64_t kvHeads = 0;
  /// Inner size of the MLP.
  int64_t ffn = 0;
  int64_t vocab = 0;
  /// Context length: the size of learned position tables (GPT-2, BERT).
  int64_t maxPositions = 0;
  /// BERT token-type (segment) vocabulary.
  int64_t typeVocab = 0;
  double normEpsilon = 1e-5;
  double ropeTheta = 10000.0;
  /// The LM head reuses the token embedding (GPT-2, BERT's MLM decoder).
  bool tieEmbeddings = false;

  /// The step to generate: tokens per sequence (prefill/train), sequences,
  /// cached tokens (decode), element type and dropout rate (train).
  int64_t seq = 0;
  int64_t batch = 1;
  int64_t kvLen = 0;
  std::string dtype = "bf16";
  double dropout = 0;
  /// GPT-2 only: the transformer blocks alone on a hidden-states input
  /// [batch, seq, hidden] (no embeddings, final norm or head); in train mode
  /// the loss is mean(out²), as ../bench/gpu/train_bench.py's stack.
  bool blocksOnly = false;

  /// Where the sizes came from: validation messages name these, prefixed
  /// with `sourceFile` (a config.json) when there is one.
  ConfigFieldNames names;
  std::string sourceFile;

  int64_t headDim() const { return heads > 0 ? hidden / heads : 0; }
};

/// Names of the built-in presets, in a stable order.
llvm::ArrayRef<llvm::StringRef> getPresetNames();

/// A preset with seq = its context length, batch 1, kvLen = seq - 1.
llvm::Expected<ModelConfig> lookupPreset(llvm::StringRef name);

/// Reads a Hugging Face config.json (model_type gpt2, llama, mistral or
/// bert). Errors carry `bufferName` and a line:column or the key.
llvm::Expected<ModelConfig> parseHuggingFaceConfig(llvm::StringRef jsonText,
                                                   llvm::StringRef bufferName);

/// Checks that the sizes describe a buildable model for `mode`, small enough
/// that its shapes, FLOPs and bytes fit 64-bit counts; the message names the
/// flag to fix.
llvm::Error validateModelConfig(const ModelConfig &config, GenerationMode mode);

/// Parameters of the model `mode` builds, from the closed-form count of each
/// family (independent of the IR builder, which tests compare against).
/// `config` must pass validateModelConfig, which rules out overflow.
int64_t countParameters(const ModelConfig &config, GenerationMode mode);

} // namespace memwall

#endif // MEMWALL_MODELGEN_MODELCONFIG_H
