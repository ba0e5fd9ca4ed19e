//===- ModelConfig.h - transformer model configurations ---------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The shape of a GPT-2, Llama (Mistral), Qwen2, Mixtral, Qwen2-MoE or BERT
// model and of the step
// to generate, from a preset, a Hugging Face config.json, or flags.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_MODELGEN_MODELCONFIG_H
#define MEMWALL_MODELGEN_MODELCONFIG_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

/// Llama and Qwen2 are one architecture (RMSNorm, rotary embeddings,
/// grouped-query attention, SwiGLU); Qwen2 adds biases to q, k and v.
/// Mixtral is Llama and Qwen2-MoE is Qwen2 with mixture-of-experts MLPs.
enum class ModelFamily { GPT2, Llama, Qwen2, Mixtral, Qwen2Moe, BERT };
enum class GenerationMode { Prefill, Decode, Train };

llvm::StringRef stringifyModelFamily(ModelFamily family);
/// Llama-style decoders: rotary positions, no learned position table; the
/// families that take head_dim, projection biases and sliding windows.
bool isRotaryFamily(ModelFamily family);
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
              dropout = "--dropout", headDim = "--head-dim",
              slidingWindow = "--sliding-window", lora = "--lora",
              loraTargets = "--lora-targets", loraAlpha = "--lora-alpha",
              baseDtype = "--base-dtype", experts = "--experts",
              expertsPerToken = "--experts-per-token",
              expertFfn = "--expert-ffn";
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
  /// Llama-3.1's RoPE frequency scaling (rope_scaling with rope_type
  /// "llama3"): factor, low_freq_factor, high_freq_factor and
  /// original_max_position_embeddings; empty for unscaled frequencies.
  std::vector<double> llama3RopeScaling;
  /// The LM head reuses the token embedding (GPT-2, BERT's MLM decoder).
  bool tieEmbeddings = false;
  /// The size of one attention head when it is not hidden / heads
  /// (Mistral-Nemo's head_dim); 0 when it is.
  int64_t explicitHeadDim = 0;
  /// Rotary families' projection biases: on q, k and v (Qwen2; Llama's
  /// attention_bias), on the attention output (attention_bias), on
  /// gate/up/down (mlp_bias). GPT-2 and BERT always have theirs.
  bool qkvBias = false, outputBias = false, mlpBias = false;
  /// Sliding-window attention (Mistral): a query sees the last
  /// `slidingWindow` tokens, itself included; 0 for full causal attention.
  /// Layers before `slidingWindowFirstLayer` attend to everything (Qwen2's
  /// max_window_layers).
  int64_t slidingWindow = 0;
  int64_t slidingWindowFirstLayer = 0;
  /// Mixture of experts (Mixtral, Qwen2-MoE; docs/moe.md): a sparse
  /// layer's MLP is `experts` SwiGLU experts `expertFfn` wide (ffn when 0),
  /// `expertsPerToken` of them per token, routed by the softmax of a
  /// [hidden, experts] router, top-k, renormalized under `normalizeTopK`.
  /// 0 experts: every MLP is dense.
  int64_t experts = 0, expertsPerToken = 0, expertFfn = 0;
  bool normalizeTopK = true;
  /// Qwen2-MoE's shared expert beside the routed ones (SwiGLU, this wide,
  /// scaled by the sigmoid of a [hidden, 1] gate); 0 for none.
  int64_t sharedExpertFfn = 0;
  /// Layer l is sparse when (l + 1) is a multiple of `sparseStep` and l is
  /// not in `denseLayers` (Qwen2-MoE's decoder_sparse_step,
  /// mlp_only_layers); dense layers have `ffn`-wide MLPs.
  int64_t sparseStep = 1;
  std::vector<int64_t> denseLayers;

  /// The step to generate: tokens per sequence (prefill/train), sequences,
  /// cached tokens (decode), element type and dropout rate (train).
  int64_t seq = 0;
  int64_t batch = 1;
  int64_t kvLen = 0;
  std::string dtype = "bf16";
  double dropout = 0;
  /// LoRA adapters (Hu et al. 2021) on the rotary families' projections
  /// named in `loraTargets` (q, k, v, o, gate, up, down): y = x W +
  /// (alpha / rank) · x A B with A [in, rank], B [rank, out]; every base
  /// weight is then frozen. Rank 0: no adapters.
  int64_t loraRank = 0;
  double loraAlpha = 8;
  std::vector<std::string> loraTargets;
  /// Storage of the decoder layers' projection weights: empty for `dtype`,
  /// or "nf4" for QLoRA's (Dettmers et al. 2023) 4-bit NormalFloat base:
  /// NF4 codes, one absmax per 64 weights along the input, those absmax
  /// quantized to i8 with one f32 scale per 256 (getNF4ScaleBlock), all
  /// frozen and dequantized at use. Embeddings, norms, biases, the head and
  /// the adapters keep `dtype`.
  std::string baseDtype;

  /// GPT-2 only: the transformer blocks alone on a hidden-states input
  /// [batch, seq, hidden] (no embeddings, final norm or head); in train mode
  /// the loss is mean(out²), as ../bench/gpu/train_bench.py's stack.
  bool blocksOnly = false;

  /// Where the sizes came from: validation messages name these, prefixed
  /// with `sourceFile` (a config.json) when there is one.
  ConfigFieldNames names;
  std::string sourceFile;

  /// What a config.json asks for that the generated step does not build,
  /// one message each, prefixed with the file: memwall-gen prints them as
  /// warnings. `trainingWarnings` matter in train mode only (dropout).
  std::vector<std::string> warnings, trainingWarnings;

  int64_t headDim() const {
    if (explicitHeadDim)
      return explicitHeadDim;
    return heads > 0 ? hidden / heads : 0;
  }
  /// Widths of the query (and attention output) and of keys/values.
  int64_t queryWidth() const { return heads * headDim(); }
  int64_t kvWidth() const { return kvHeads * headDim(); }
  bool slides(int64_t layer) const {
    return slidingWindow > 0 && layer >= slidingWindowFirstLayer;
  }
  bool isSparse(int64_t layer) const {
    return experts > 0 && sparseStep > 0 && (layer + 1) % sparseStep == 0 &&
           !llvm::is_contained(denseLayers, layer);
  }
  int64_t routedExpertFfn() const { return expertFfn ? expertFfn : ffn; }
  /// Tokens a decode step keeps in `layer`'s KV cache: all kvLen, or the
  /// window's slidingWindow - 1 most recent (a rolling buffer) when the
  /// layer slides; the new token makes it the window.
  int64_t cachedTokens(int64_t layer) const {
    return slides(layer) && kvLen > slidingWindow - 1 ? slidingWindow - 1
                                                      : kvLen;
  }
};

/// Sets what `config.family` implies (tied embeddings, norm epsilon, RoPE
/// theta, Qwen2's q/k/v biases, BERT's token types) before a preset, a
/// config.json or flags refine it.
void applyFamilyDefaults(ModelConfig &config);

/// Names of the built-in presets, in a stable order.
llvm::ArrayRef<llvm::StringRef> getPresetNames();

/// A preset with seq = its context length, batch 1, kvLen = seq - 1.
llvm::Expected<ModelConfig> lookupPreset(llvm::StringRef name);

/// Reads a Hugging Face config.json (model_type gpt2, llama, mistral, qwen2,
/// mixtral, qwen2_moe or bert). Errors carry `bufferName` and a line:column or
/// the key; fields that would change the model but that memwall does not build
/// become `warnings`.
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
/// The parameters one token runs through: all but the routed experts it is
/// not sent to (expertsPerToken of experts); all for a dense model.
int64_t countActiveParameters(const ModelConfig &config, GenerationMode mode);
/// The parameters training updates: the LoRA adapters' when there are,
/// else all.
int64_t countTrainableParameters(const ModelConfig &config,
                                 GenerationMode mode);

/// The projections a LoRA adapter may target, in the order layers use them.
llvm::ArrayRef<llvm::StringRef> getLoraTargetNames();

/// The second-level block of an NF4 weight [in, out]: its absmax grid
/// [in / 64, out] is quantized in blocks of 256 absmax, (rows, columns) of
/// that grid, as wide along `out` as 256 allows; nullopt when `in` is not
/// a multiple of 64 or the grid does not split into such blocks.
std::optional<std::pair<int64_t, int64_t>> getNF4ScaleBlock(int64_t in,
                                                            int64_t out);

} // namespace memwall

#endif // MEMWALL_MODELGEN_MODELCONFIG_H
