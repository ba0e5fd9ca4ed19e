//===- ModelConfig.cpp - presets, HF configs, validation, param counts ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/ModelGen/ModelConfig.h"

#include "memwall/Support/JSONDiagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace memwall;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::StringRef memwall::stringifyModelFamily(ModelFamily family) {
  switch (family) {
  case ModelFamily::GPT2:
    return "gpt2";
  case ModelFamily::Llama:
    return "llama";
  case ModelFamily::BERT:
    return "bert";
  }
  return "?";
}

std::optional<ModelFamily> memwall::symbolizeModelFamily(llvm::StringRef name) {
  for (ModelFamily family :
       {ModelFamily::GPT2, ModelFamily::Llama, ModelFamily::BERT})
    if (name == stringifyModelFamily(family))
      return family;
  return std::nullopt;
}

llvm::StringRef memwall::stringifyGenerationMode(GenerationMode mode) {
  switch (mode) {
  case GenerationMode::Prefill:
    return "prefill";
  case GenerationMode::Decode:
    return "decode";
  case GenerationMode::Train:
    return "train";
  }
  return "?";
}

std::optional<GenerationMode>
memwall::symbolizeGenerationMode(llvm::StringRef name) {
  for (GenerationMode mode :
       {GenerationMode::Prefill, GenerationMode::Decode, GenerationMode::Train})
    if (name == stringifyGenerationMode(mode))
      return mode;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

namespace {
struct Preset {
  llvm::StringRef name;
  ModelFamily family;
  int64_t layers, hidden, heads, kvHeads, ffn, vocab, maxPositions;
  double normEpsilon, ropeTheta;
};

// Sources: the Hugging Face config.json of each checkpoint (openai-community/
// gpt2*, meta-llama/Llama-2-*-hf, meta-llama/Meta-Llama-3-8B,
// google-bert/bert-*-uncased) and Brown et al. 2020, Table 2.1 (GPT-3 175B).
constexpr Preset kPresets[] = {
    {"gpt2", ModelFamily::GPT2, 12, 768, 12, 12, 3072, 50257, 1024, 1e-5, 0},
    {"gpt2-medium", ModelFamily::GPT2, 24, 1024, 16, 16, 4096, 50257, 1024,
     1e-5, 0},
    {"gpt2-large", ModelFamily::GPT2, 36, 1280, 20, 20, 5120, 50257, 1024, 1e-5,
     0},
    {"gpt2-xl", ModelFamily::GPT2, 48, 1600, 25, 25, 6400, 50257, 1024, 1e-5,
     0},
    {"gpt3-175b", ModelFamily::GPT2, 96, 12288, 96, 96, 49152, 50257, 2048,
     1e-5, 0},
    {"llama-2-7b", ModelFamily::Llama, 32, 4096, 32, 32, 11008, 32000, 4096,
     1e-5, 10000},
    {"llama-2-13b", ModelFamily::Llama, 40, 5120, 40, 40, 13824, 32000, 4096,
     1e-5, 10000},
    {"llama-2-70b", ModelFamily::Llama, 80, 8192, 64, 8, 28672, 32000, 4096,
     1e-5, 10000},
    {"llama-3-8b", ModelFamily::Llama, 32, 4096, 32, 8, 14336, 128256, 8192,
     1e-5, 500000},
    {"bert-base", ModelFamily::BERT, 12, 768, 12, 12, 3072, 30522, 512, 1e-12,
     0},
    {"bert-large", ModelFamily::BERT, 24, 1024, 16, 16, 4096, 30522, 512, 1e-12,
     0},
};

/// Fills the per-step defaults: a full context, one sequence, and for decode
/// a cache one token short of the context.
void applyStepDefaults(ModelConfig &config) {
  config.seq = config.maxPositions;
  config.batch = 1;
  config.kvLen = config.maxPositions - 1;
}
} // namespace

llvm::ArrayRef<llvm::StringRef> memwall::getPresetNames() {
  static const std::vector<llvm::StringRef> names = [] {
    std::vector<llvm::StringRef> result;
    for (const Preset &preset : kPresets)
      result.push_back(preset.name);
    return result;
  }();
  return names;
}

llvm::Expected<ModelConfig> memwall::lookupPreset(llvm::StringRef name) {
  const Preset *preset = llvm::find_if(kPresets, [&](const Preset &candidate) {
    return candidate.name == name;
  });
  if (preset == std::end(kPresets))
    return makeError("unknown preset '" + name +
                     "'; valid presets: " + llvm::join(getPresetNames(), ", "));
  ModelConfig config;
  config.name = preset->name.str();
  config.family = preset->family;
  config.layers = preset->layers;
  config.hidden = preset->hidden;
  config.heads = preset->heads;
  config.kvHeads = preset->kvHeads;
  config.ffn = preset->ffn;
  config.vocab = preset->vocab;
  config.maxPositions = preset->maxPositions;
  config.normEpsilon = preset->normEpsilon;
  config.ropeTheta = preset->ropeTheta;
  config.tieEmbeddings = preset->family != ModelFamily::Llama;
  config.typeVocab = preset->family == ModelFamily::BERT ? 2 : 0;
  applyStepDefaults(config);
  return config;
}

//===----------------------------------------------------------------------===//
// Hugging Face config.json
//===----------------------------------------------------------------------===//

/// The config.json keys of each size, for messages; the step's sizes are
/// memwall-gen's flags (a config.json has no batch or sequence).
static ConfigFieldNames huggingFaceKeyNames(ModelFamily family) {
  ConfigFieldNames names;
  if (family == ModelFamily::GPT2) {
    names.layers = "\"n_layer\"";
    names.hidden = "\"n_embd\"";
    names.heads = names.kvHeads = "\"n_head\"";
    names.ffn = "\"n_inner\"";
    names.maxPositions = "\"n_positions\"";
  } else {
    names.layers = "\"num_hidden_layers\"";
    names.hidden = "\"hidden_size\"";
    names.heads = "\"num_attention_heads\"";
    names.kvHeads = family == ModelFamily::Llama
                        ? "\"num_key_value_heads\""
                        : "\"num_attention_heads\"";
    names.ffn = "\"intermediate_size\"";
    names.maxPositions = "\"max_position_embeddings\"";
  }
  names.vocab = "\"vocab_size\"";
  return names;
}

llvm::Expected<ModelConfig>
memwall::parseHuggingFaceConfig(llvm::StringRef jsonText,
                                llvm::StringRef bufferName) {
  llvm::Expected<llvm::json::Object> object =
      parseJSONObjectWithLocation(jsonText, bufferName, "a config.json");
  if (!object)
    return object.takeError();
  // Hugging Face writes null for "use the default" (n_inner, head_dim, ...),
  // so a null key counts as absent.
  llvm::SmallVector<std::string> nullKeys;
  for (const auto &[key, value] : *object)
    if (value.kind() == llvm::json::Value::Null)
      nullKeys.push_back(key.str());
  for (const std::string &key : nullKeys)
    object->erase(key);
  std::optional<llvm::StringRef> modelType = object->getString("model_type");
  if (!modelType)
    return makeError(bufferName +
                     ": \"model_type\" is missing or not a string");

  ModelConfig config;
  JSONObjectReader reader(*object, bufferName);
  // Reads required positive sizes, in order, into `fields`.
  auto sizes =
      [&](std::initializer_list<std::pair<llvm::StringRef, int64_t *>> fields) {
        for (const auto &[key, field] : fields) {
          reader.requireKeys({key});
          reader.readInteger(key, *field, /*positive=*/true);
        }
      };
  if (*modelType == "gpt2") {
    config.family = ModelFamily::GPT2;
    sizes({{"n_layer", &config.layers},
           {"n_embd", &config.hidden},
           {"n_head", &config.heads},
           {"vocab_size", &config.vocab},
           {"n_positions", &config.maxPositions}});
    config.ffn = 4 * config.hidden; // the default of n_inner
    reader.readInteger("n_inner", config.ffn, /*positive=*/true);
    reader.readNumber("layer_norm_epsilon", config.normEpsilon, true);
    config.kvHeads = config.heads;
    config.tieEmbeddings = true;
  } else if (llvm::is_contained({"llama", "mistral"}, *modelType)) {
    config.family = ModelFamily::Llama;
    sizes({{"num_hidden_layers", &config.layers},
           {"hidden_size", &config.hidden},
           {"num_attention_heads", &config.heads},
           {"intermediate_size", &config.ffn},
           {"vocab_size", &config.vocab},
           {"max_position_embeddings", &config.maxPositions}});
    config.kvHeads = config.heads;
    reader.readInteger("num_key_value_heads", config.kvHeads, true);
    reader.readNumber("rms_norm_eps", config.normEpsilon, true);
    reader.readNumber("rope_theta", config.ropeTheta, true);
    reader.readBoolean("tie_word_embeddings", config.tieEmbeddings);
    // Some derivatives decouple the head size from hidden / heads, or add
    // biases to the projections; the builder has neither, so refuse rather
    // than build the wrong model.
    int64_t headDim = 0;
    reader.readInteger("head_dim", headDim, true);
    if (headDim && config.heads && config.hidden / config.heads != headDim)
      reader.fail("head_dim", "must equal hidden_size / num_attention_heads "
                              "(other head sizes are not supported)");
    for (llvm::StringRef biasKey : {"attention_bias", "mlp_bias"}) {
      bool hasBias = false;
      reader.readBoolean(biasKey, hasBias);
      if (hasBias)
        reader.fail(biasKey, "must be false (projection biases are not "
                             "supported)");
    }
  } else if (*modelType == "bert") {
    config.family = ModelFamily::BERT;
    sizes({{"num_hidden_layers", &config.layers},
           {"hidden_size", &config.hidden},
           {"num_attention_heads", &config.heads},
           {"intermediate_size", &config.ffn},
           {"vocab_size", &config.vocab},
           {"max_position_embeddings", &config.maxPositions}});
    config.typeVocab = 2;
    reader.readInteger("type_vocab_size", config.typeVocab, true);
    config.normEpsilon = 1e-12;
    reader.readNumber("layer_norm_eps", config.normEpsilon, true);
    config.kvHeads = config.heads;
    config.tieEmbeddings = true;
  } else {
    return makeError(bufferName + ": model_type '" + *modelType +
                     "' is not supported (gpt2, llama, mistral, bert)");
  }
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  config.name = object->getString("_name_or_path").value_or(*modelType).str();
  applyStepDefaults(config);
  config.sourceFile = bufferName.str();
  config.names = huggingFaceKeyNames(config.family);
  return config;
}

//===----------------------------------------------------------------------===//
// Validation and parameter counts
//===----------------------------------------------------------------------===//

/// The closed-form parameter count of each family, in `Number` arithmetic:
/// int64_t for the count, double for the size check (which must not
/// overflow).
template <typename Number>
static Number parameterFormula(const ModelConfig &config, GenerationMode mode) {
  Number d = config.hidden, f = config.ffn, v = config.vocab;
  Number layers = config.layers, positions = config.maxPositions;
  Number kvWidth = Number(config.kvHeads) * config.headDim();
  switch (config.family) {
  case ModelFamily::GPT2: {
    // Per layer: ln_1 (2d), c_attn (d*3d + 3d), c_proj (d*d + d), ln_2 (2d),
    // c_fc (d*f + f), mlp c_proj (f*d + d).
    Number layer = 4 * d * d + 2 * d * f + 9 * d + f;
    return v * d + positions * d + layers * layer + 2 * d;
  }
  case ModelFamily::Llama: {
    // Per layer: q and o (d*d each), k and v (d*kvWidth each), gate/up/down
    // (3*d*f), two RMSNorm weights (2d).
    Number layer = 2 * d * d + 2 * d * kvWidth + 3 * d * f + 2 * d;
    Number head = config.tieEmbeddings ? 0 : v * d;
    return v * d + layers * layer + d + head;
  }
  case ModelFamily::BERT: {
    Number embeddings = (v + positions + config.typeVocab) * d + 2 * d;
    // Per layer: q, k, v, o with biases (4d^2 + 4d), attention LayerNorm
    // (2d), intermediate (d*f + f), output (f*d + d), output LayerNorm (2d).
    Number layer = 4 * d * d + 2 * d * f + 9 * d + f;
    Number pooler = d * d + d;
    // Masked-LM head: transform dense (d^2 + d), LayerNorm (2d), decoder
    // bias (v); the decoder weight is the tied word embedding. No pooler.
    Number mlmHead = d * d + 3 * d + v;
    return embeddings + layers * layer +
           (mode == GenerationMode::Train ? mlmHead : pooler);
  }
  }
  return 0;
}

namespace {
/// Generous upper bounds of what the cost analysis counts for a step, summed
/// over its ops.
struct StepWork {
  double flops, bytes;
};
} // namespace

/// Estimated in double, which cannot overflow, to refuse steps whose 64-bit
/// counts would.
static StepWork estimateStepWork(const ModelConfig &config,
                                 GenerationMode mode) {
  bool decode = mode == GenerationMode::Decode;
  double rows = double(config.batch) * (decode ? 1 : config.seq);
  double context = decode ? double(config.kvLen) + 1 : double(config.seq);
  double params = parameterFormula<double>(config, mode);
  double layers = config.layers, d = config.hidden, v = config.vocab;
  double kvWidth = double(config.kvHeads) * config.headDim();
  // Activation elements per token: fewer than 64 tensors a layer, none wider
  // than 3d + ffn, then logits and loss.
  double activations = layers * 64 * (3 * d + config.ffn) + 4 * v;
  // 2 FLOPs per weight and token (plus a tied head's second use), 4d per
  // attention (query, key) pair, a few per activation element.
  double flops = rows * (2 * (params + v * d) + 4 * d * context * layers +
                         8 * activations);
  // 4 bytes an element (f32, the widest dtype); decode reads and writes the
  // caches.
  double bytes = 4 * (params + rows * activations +
                      4 * layers * config.batch * context * kvWidth);
  return {flops, bytes};
}

/// The most layers a generated module may have.
static constexpr int64_t kMaxLayers = 1024;

/// The checks of validateModelConfig; the caller adds the file's name.
static llvm::Error checkModelConfig(const ModelConfig &config,
                                    GenerationMode mode) {
  const ConfigFieldNames &names = config.names;
  struct Size {
    const std::string &name;
    int64_t value;
  };
  for (Size size :
       {Size{names.layers, config.layers}, Size{names.hidden, config.hidden},
        Size{names.heads, config.heads}, Size{names.kvHeads, config.kvHeads},
        Size{names.ffn, config.ffn}, Size{names.vocab, config.vocab},
        Size{names.batch, config.batch},
        // Decode takes one new token whatever the sequence length.
        Size{names.seq, mode == GenerationMode::Decode ? 1 : config.seq}})
    if (size.value <= 0)
      return makeError(llvm::formatv("{0} must be positive, got {1}", size.name,
                                     size.value));
  if (config.hidden % config.heads != 0)
    return makeError(llvm::formatv("{0} ({1}) must be a multiple of {2} ({3})",
                                   names.hidden, config.hidden, names.heads,
                                   config.heads));
  if (config.heads % config.kvHeads != 0)
    return makeError(llvm::formatv("{0} ({1}) must be a multiple of {2} ({3})",
                                   names.heads, config.heads, names.kvHeads,
                                   config.kvHeads));
  if (config.family != ModelFamily::Llama && config.kvHeads != config.heads)
    return makeError(llvm::formatv("{0} has no grouped-query attention: {1} "
                                   "must equal {2}",
                                   stringifyModelFamily(config.family),
                                   names.kvHeads, names.heads));
  if (config.family == ModelFamily::Llama && config.headDim() % 2 != 0)
    return makeError(llvm::formatv("rotary embeddings need an even head "
                                   "dimension, got {0}",
                                   config.headDim()));
  if (!llvm::is_contained({"bf16", "f16", "f32"}, config.dtype))
    return makeError(names.dtype + " must be bf16, f16 or f32, got '" +
                     config.dtype + "'");
  if (!(config.dropout >= 0 && config.dropout < 1))
    return makeError(
        llvm::formatv("{0} must be in [0, 1), got {1}", names.dropout,
                      config.dropout));
  if (mode == GenerationMode::Decode) {
    if (config.family == ModelFamily::BERT)
      return makeError("bert is an encoder: --mode=decode needs a decoder "
                       "(gpt2 or llama)");
    if (config.kvLen <= 0)
      return makeError(llvm::formatv("{0} must be positive, got {1}",
                                     names.kvLen, config.kvLen));
  }
  // Learned position tables end at the context length.
  if (config.family != ModelFamily::Llama) {
    if (config.maxPositions <= 0)
      return makeError(names.maxPositions +
                       " (the context length) must be positive");
    int64_t lastPosition =
        mode == GenerationMode::Decode ? config.kvLen : config.seq - 1;
    if (lastPosition >= config.maxPositions)
      return makeError(llvm::formatv(
          "{0} learns {1} positions: {2} exceeds the context",
          stringifyModelFamily(config.family), config.maxPositions,
          mode == GenerationMode::Decode
              ? llvm::formatv("{0}={1} plus the new token", names.kvLen,
                              config.kvLen)
                    .str()
              : llvm::formatv("{0}={1}", names.seq, config.seq).str()));
  }
  // The module holds ~30 ops per layer; far beyond any real model, it would
  // only exhaust memory.
  if (config.layers > kMaxLayers)
    return makeError(llvm::formatv("{0} must be at most {1}, got {2}",
                                   names.layers, kMaxLayers, config.layers));
  // Shapes, FLOPs and bytes are 64-bit integers from here to the report;
  // a quarter of their range leaves room for the backward pass.
  constexpr double kMaxWork = 0x1p61;
  StepWork work = estimateStepWork(config, mode);
  if (work.flops > kMaxWork || work.bytes > kMaxWork)
    return makeError(llvm::formatv(
        "the step is too large to cost: about {0:e2} FLOPs and {1:e2} bytes "
        "(at most {2:e2} each); reduce {3}, {4}, {5} or the model",
        work.flops, work.bytes, kMaxWork, names.batch, names.seq,
        names.kvLen));
  return llvm::Error::success();
}

llvm::Error memwall::validateModelConfig(const ModelConfig &config,
                                         GenerationMode mode) {
  llvm::Error error = checkModelConfig(config, mode);
  if (!error || config.sourceFile.empty())
    return error;
  return makeError(config.sourceFile + ": " + llvm::toString(std::move(error)));
}

int64_t memwall::countParameters(const ModelConfig &config,
                                 GenerationMode mode) {
  return parameterFormula<int64_t>(config, mode);
}
