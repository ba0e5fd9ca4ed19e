//===- ModelConfig.cpp - presets, HF configs, validation, param counts ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/ModelGen/ModelConfig.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Support/JSONDiagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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
  case ModelFamily::Qwen2:
    return "qwen2";
  case ModelFamily::Mixtral:
    return "mixtral";
  case ModelFamily::Qwen2Moe:
    return "qwen2_moe";
  case ModelFamily::BERT:
    return "bert";
  }
  return "?";
}

std::optional<ModelFamily> memwall::symbolizeModelFamily(llvm::StringRef name) {
  for (ModelFamily family :
       {ModelFamily::GPT2, ModelFamily::Llama, ModelFamily::Qwen2,
        ModelFamily::Mixtral, ModelFamily::Qwen2Moe, ModelFamily::BERT})
    if (name == stringifyModelFamily(family))
      return family;
  return std::nullopt;
}

bool memwall::isRotaryFamily(ModelFamily family) {
  return family != ModelFamily::GPT2 && family != ModelFamily::BERT;
}

/// Families whose MLPs are mixtures of experts.
static bool isMixtureFamily(ModelFamily family) {
  return family == ModelFamily::Mixtral || family == ModelFamily::Qwen2Moe;
}

void memwall::applyFamilyDefaults(ModelConfig &config) {
  ModelFamily family = config.family;
  config.tieEmbeddings = !isRotaryFamily(family);
  config.typeVocab = family == ModelFamily::BERT ? 2 : 0;
  bool qwen = family == ModelFamily::Qwen2 || family == ModelFamily::Qwen2Moe;
  config.normEpsilon = family == ModelFamily::BERT ? 1e-12 : qwen ? 1e-6 : 1e-5;
  config.ropeTheta = qwen || family == ModelFamily::Mixtral ? 1e6 : 10000.0;
  config.qkvBias = qwen;
  // Mixtral renormalizes its top-2 weights; Qwen2-MoE's norm_topk_prob
  // defaults to false.
  config.normalizeTopK = family != ModelFamily::Qwen2Moe;
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
  int64_t experts = 0, expertsPerToken = 0;
};

// Sources: the Hugging Face config.json of each checkpoint (openai-community/
// gpt2*, meta-llama/Llama-2-*-hf, meta-llama/Meta-Llama-3-8B,
// mistralai/Mistral-7B-v0.3 (no sliding window), Qwen/Qwen2.5-7B-Instruct,
// mistralai/Mixtral-8x7B-v0.1, mistralai/Mixtral-8x22B-v0.1,
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
    {"mistral-7b", ModelFamily::Llama, 32, 4096, 32, 8, 14336, 32768, 32768,
     1e-5, 1e6},
    {"qwen2.5-7b", ModelFamily::Qwen2, 28, 3584, 28, 4, 18944, 152064, 32768,
     1e-6, 1e6},
    {"mixtral-8x7b", ModelFamily::Mixtral, 32, 4096, 32, 8, 14336, 32000, 32768,
     1e-5, 1e6, 8, 2},
    {"mixtral-8x22b", ModelFamily::Mixtral, 56, 6144, 48, 8, 16384, 32768,
     65536, 1e-5, 1e6, 8, 2},
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
  applyFamilyDefaults(config);
  config.layers = preset->layers;
  config.hidden = preset->hidden;
  config.heads = preset->heads;
  config.kvHeads = preset->kvHeads;
  config.ffn = preset->ffn;
  config.vocab = preset->vocab;
  config.maxPositions = preset->maxPositions;
  config.normEpsilon = preset->normEpsilon;
  config.ropeTheta = preset->ropeTheta;
  config.experts = preset->experts;
  config.expertsPerToken = preset->expertsPerToken;
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
    names.kvHeads = isRotaryFamily(family) ? "\"num_key_value_heads\""
                                           : "\"num_attention_heads\"";
    names.headDim = "\"head_dim\"";
    names.slidingWindow = "\"sliding_window\"";
    names.ffn = "\"intermediate_size\"";
    names.maxPositions = "\"max_position_embeddings\"";
  }
  if (family == ModelFamily::Mixtral)
    names.experts = "\"num_local_experts\"";
  if (family == ModelFamily::Qwen2Moe) {
    names.experts = "\"num_experts\"";
    names.expertFfn = "\"moe_intermediate_size\"";
  }
  if (family == ModelFamily::Mixtral || family == ModelFamily::Qwen2Moe)
    names.expertsPerToken = "\"num_experts_per_tok\"";
  names.vocab = "\"vocab_size\"";
  return names;
}

/// Keys of a config.json that leave the computation as it is: token ids,
/// labels, metadata, caching and output switches, initialization,
/// tensor-parallel pretraining's slicing (the same products), the default
/// dtype (memwall's is --dtype).
static constexpr llvm::StringLiteral kNoEffectKeys[] = {
    "_name_or_path",
    "_attn_implementation_autoset",
    "architectures",
    "auto_map",
    "bad_words_ids",
    "bos_token_id",
    "classifier_dropout",
    "decoder_start_token_id",
    "dtype",
    "eos_token_id",
    "finetuning_task",
    "gradient_checkpointing",
    "id2label",
    "initializer_range",
    "label2id",
    "model_type",
    "output_attentions",
    "output_hidden_states",
    "pad_token_id",
    "pretraining_tp",
    "problem_type",
    "return_dict",
    "sep_token_id",
    "task_specific_params",
    "tokenizer_class",
    "torch_dtype",
    "transformers_version",
    "use_cache",
};

namespace {
/// How memwall treats the keys of a config.json it does not read as sizes:
/// keys that never change the model (ids, metadata, runtime switches); keys
/// whose expected value is what memwall builds (warned about otherwise); and
/// dropout rates, which matter only to a training step. Any other key is
/// reported as unknown, since it may change the model.
class ConfigFieldAudit {
public:
  ConfigFieldAudit(const llvm::json::Object &object, llvm::StringRef bufferName,
                   ModelConfig &config)
      : object(object), bufferName(bufferName), config(config) {}

  const llvm::json::Object &getObject() const { return object; }
  llvm::StringRef getBufferName() const { return bufferName; }

  /// Keys read into `config` or judged by the caller.
  void handled(std::initializer_list<llvm::StringRef> keys) {
    for (llvm::StringRef key : keys)
      handledKeys.insert(key);
  }

  /// Warns unless `key` is absent or equals `expected` (a string, a
  /// boolean or a number); `builds` says what memwall builds instead.
  void expect(llvm::StringRef key, const llvm::json::Value &expected,
              llvm::StringRef builds) {
    handledKeys.insert(key);
    const llvm::json::Value *value = object.get(key);
    if (value && *value != expected)
      warn(key, *value, builds);
  }

  /// A dropout rate: a warning for train mode when nonzero.
  void dropout(llvm::StringRef key, llvm::StringRef where) {
    handledKeys.insert(key);
    const llvm::json::Value *value = object.get(key);
    std::optional<double> rate = value ? value->getAsNumber() : std::nullopt;
    if (!rate || *rate == 0)
      return;
    config.trainingWarnings.push_back(llvm::formatv(
        "{0}: \"{1}\" is {2} ({3}); memwall-gen applies --dropout "
        "(0 unless given) after the embeddings and each residual branch "
        "instead, and no attention-probability dropout",
        bufferName, key, show(*value), where));
  }

  void warn(llvm::StringRef key, const llvm::json::Value &value,
            llvm::StringRef builds) {
    config.warnings.push_back(llvm::formatv(
        "{0}: \"{1}\" is {2}: {3}", bufferName, key, show(value), builds));
  }

  /// Warns about every key nobody handled.
  void reportUnknownKeys() {
    // The object is a DenseMap: sort for a stable order.
    llvm::SmallVector<llvm::StringRef> unknown;
    for (const auto &[key, value] : object)
      if (!handledKeys.contains(key) &&
          !llvm::is_contained(kNoEffectKeys, llvm::StringRef(key)))
        unknown.push_back(key);
    llvm::sort(unknown);
    for (llvm::StringRef key : unknown)
      config.warnings.push_back(llvm::formatv(
          "{0}: \"{1}\" is {2}: memwall does not read it; if it changes the "
          "model, the generated step is not that model",
          bufferName, key, show(*object.get(key))));
  }

private:
  /// A value as JSON, shortened to one readable line.
  static std::string show(const llvm::json::Value &value) {
    // JSON prints 17 digits (0.10000000000000001); a rate reads as written.
    if (!value.getAsInteger())
      if (std::optional<double> number = value.getAsNumber())
        return llvm::formatv("{0}", llvm::format("%g", *number)).str();
    std::string text = llvm::formatv("{0}", value).str();
    constexpr size_t kMaxShown = 60;
    if (text.size() > kMaxShown)
      text = text.substr(0, kMaxShown - 3) + "...";
    return text;
  }

  const llvm::json::Object &object;
  llvm::StringRef bufferName;
  ModelConfig &config;
  llvm::StringSet<> handledKeys;
};
} // namespace

/// Reads rope_scaling: Llama-3.1's "llama3" frequency scaling is built; a
/// "default" one is none; other kinds (linear, dynamic NTK, YaRN, LongRoPE)
/// are warned about and left unscaled.
static void readRopeScaling(JSONObjectReader &reader, ConfigFieldAudit &audit,
                            ModelConfig &config) {
  audit.handled({"rope_scaling"});
  const llvm::json::Value *field = audit.getObject().get("rope_scaling");
  if (!field)
    return;
  const llvm::json::Object *scaling = field->getAsObject();
  if (!scaling)
    return reader.fail("rope_scaling", "must be an object or null");
  // Hugging Face renamed "type" to "rope_type".
  std::optional<llvm::StringRef> kind = scaling->getString("rope_type");
  if (!kind)
    kind = scaling->getString("type");
  if (kind && *kind == "default")
    return;
  if (!kind || *kind != "llama3")
    return audit.warn("rope_scaling", *field,
                      "memwall builds Llama-3.1's llama3 RoPE scaling only: "
                      "rotary frequencies are unscaled (FLOPs and bytes are "
                      "the same, values differ from the model's beyond its "
                      "original context)");
  JSONObjectReader nested(*scaling, audit.getBufferName(), "rope_scaling.");
  double factor = 0, low = 0, high = 0, original = 0;
  nested.requireKeys({"factor", "low_freq_factor", "high_freq_factor",
                      "original_max_position_embeddings"});
  nested.readNumber("factor", factor, true);
  nested.readNumber("low_freq_factor", low, true);
  nested.readNumber("high_freq_factor", high, true);
  nested.readNumber("original_max_position_embeddings", original, true);
  if (!nested.hasFailed() && !(high > low))
    nested.fail("high_freq_factor", "must exceed low_freq_factor");
  if (nested.hasFailed())
    return reader.adopt(nested.takeError());
  config.llama3RopeScaling = {factor, low, high, original};
}

/// Reads quantization_config: a bitsandbytes 4-bit NF4 checkpoint (the
/// base QLoRA trains on) is built as --base-dtype=nf4; other schemes are
/// warned about and built in --dtype.
static void readQuantizationConfig(ConfigFieldAudit &audit,
                                   ModelConfig &config) {
  audit.handled({"quantization_config"});
  const llvm::json::Value *field = audit.getObject().get("quantization_config");
  if (!field)
    return;
  const llvm::json::Object *quantization = field->getAsObject();
  if (!quantization ||
      quantization->getString("quant_method") != "bitsandbytes" ||
      !quantization->getBoolean("load_in_4bit").value_or(false) ||
      quantization->getString("bnb_4bit_quant_type") != "nf4")
    return audit.warn("quantization_config", *field,
                      "memwall builds bitsandbytes' 4-bit NF4 only "
                      "(--base-dtype=nf4): these weights are built in --dtype");
  config.baseDtype = "nf4";
  if (!quantization->getBoolean("bnb_4bit_use_double_quant").value_or(false))
    audit.warn("quantization_config", *field,
               "its absmax are f32 (4.5 bits a weight); memwall's NF4 "
               "double-quantizes them as QLoRA does (4.127 bits a weight)");
}

/// Reads the keys of a Llama, Mistral or Qwen2 config.json past the sizes:
/// grouped-query attention, norms, RoPE, tied head, head size, biases and
/// sliding windows.
static void readRotaryConfig(llvm::StringRef modelType,
                             JSONObjectReader &reader, ConfigFieldAudit &audit,
                             ModelConfig &config) {
  config.kvHeads = config.heads;
  reader.readInteger("num_key_value_heads", config.kvHeads, true);
  reader.readNumber("rms_norm_eps", config.normEpsilon, true);
  reader.readNumber("rope_theta", config.ropeTheta, true);
  reader.readBoolean("tie_word_embeddings", config.tieEmbeddings);
  audit.handled({"num_key_value_heads", "rms_norm_eps", "rope_theta",
                 "tie_word_embeddings"});
  // A head size other than hidden / heads (Mistral-Nemo, Qwen3): q and the
  // attention output are heads * head_dim wide.
  int64_t headDim = 0;
  reader.readInteger("head_dim", headDim, true);
  // (Compared by division: heads * head_dim may not fit int64.)
  if (headDim && !(config.hidden % headDim == 0 &&
                   config.hidden / headDim == config.heads))
    config.explicitHeadDim = headDim;
  // Llama's attention_bias puts biases on q, k, v and o; Qwen2 always has
  // them on q, k and v only.
  bool attentionBias = false;
  reader.readBoolean("attention_bias", attentionBias);
  bool qwen = config.family == ModelFamily::Qwen2 ||
              config.family == ModelFamily::Qwen2Moe;
  config.qkvBias = attentionBias || qwen;
  config.outputBias = attentionBias;
  reader.readBoolean("mlp_bias", config.mlpBias);
  audit.handled({"head_dim", "attention_bias", "mlp_bias"});
  // Mistral slides on every layer; Qwen2 only with use_sliding_window, from
  // layer max_window_layers on.
  bool slides = modelType == "mistral" || modelType == "mixtral";
  if (qwen) {
    slides = false;
    reader.readBoolean("use_sliding_window", slides);
    reader.readInteger("max_window_layers", config.slidingWindowFirstLayer);
  }
  audit.handled({"use_sliding_window", "max_window_layers", "sliding_window"});
  if (slides)
    reader.readInteger("sliding_window", config.slidingWindow, true);
  audit.expect("hidden_act", "silu", "memwall builds SiLU (SwiGLU) MLPs");
  readRopeScaling(reader, audit, config);
  readQuantizationConfig(audit, config);
  audit.expect("use_mrope", false,
               "memwall builds one-dimensional rotary positions");
  audit.expect("layer_types", nullptr,
               "memwall reads sliding windows from sliding_window (and "
               "Qwen2's use_sliding_window, max_window_layers) only");
  audit.dropout("attention_dropout", "on the attention probabilities");
}

/// Reads the mixture-of-experts keys of a Mixtral or Qwen2-MoE config.json.
/// The router's load-balancing loss and noise are training-only terms
/// memwall does not build.
static void readMixtureConfig(JSONObjectReader &reader, ConfigFieldAudit &audit,
                              ModelConfig &config) {
  bool qwen = config.family == ModelFamily::Qwen2Moe;
  llvm::StringRef expertsKey = qwen ? "num_experts" : "num_local_experts";
  reader.requireKeys({expertsKey, "num_experts_per_tok"});
  reader.readInteger(expertsKey, config.experts, true);
  reader.readInteger("num_experts_per_tok", config.expertsPerToken, true);
  audit.handled({expertsKey, "num_experts_per_tok"});
  if (qwen) {
    reader.requireKeys(
        {"moe_intermediate_size", "shared_expert_intermediate_size"});
    reader.readInteger("moe_intermediate_size", config.expertFfn, true);
    reader.readInteger("shared_expert_intermediate_size",
                       config.sharedExpertFfn, true);
    reader.readBoolean("norm_topk_prob", config.normalizeTopK);
    reader.readInteger("decoder_sparse_step", config.sparseStep, true);
    audit.handled({"moe_intermediate_size", "shared_expert_intermediate_size",
                   "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers"});
    if (const llvm::json::Value *layers =
            audit.getObject().get("mlp_only_layers")) {
      const llvm::json::Array *array = layers->getAsArray();
      if (!array)
        return reader.fail("mlp_only_layers", "must be an array of layers");
      for (const llvm::json::Value &layer : *array) {
        std::optional<int64_t> index = layer.getAsInteger();
        if (!index || *index < 0)
          return reader.fail("mlp_only_layers",
                             "must hold layer indices (integers >= 0)");
        config.denseLayers.push_back(*index);
      }
    }
  }
  // Hugging Face adds the auxiliary loss to a training step's loss only
  // when output_router_logits is set.
  audit.handled(
      {"router_aux_loss_coef", "output_router_logits", "router_jitter_noise"});
  const llvm::json::Object &object = audit.getObject();
  if (object.getBoolean("output_router_logits").value_or(false) &&
      object.getNumber("router_aux_loss_coef").value_or(0) != 0)
    config.trainingWarnings.push_back(
        (audit.getBufferName() +
         ": \"output_router_logits\" adds the router's load-balancing loss "
         "(\"router_aux_loss_coef\") to the training loss; memwall's step "
         "does not (its cost is a few FLOPs per token and expert)")
            .str());
  if (object.getNumber("router_jitter_noise").value_or(0) != 0)
    config.trainingWarnings.push_back(
        (audit.getBufferName() +
         ": \"router_jitter_noise\" perturbs the router in training; "
         "memwall routes without noise")
            .str());
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
  ConfigFieldAudit audit(*object, bufferName, config);
  // Reads required positive sizes, in order, into `fields`.
  auto sizes =
      [&](std::initializer_list<std::pair<llvm::StringRef, int64_t *>> fields) {
        for (const auto &[key, field] : fields) {
          reader.requireKeys({key});
          reader.readInteger(key, *field, /*positive=*/true);
          audit.handled({key});
        }
      };
  // The sizes every config but GPT-2's names alike.
  auto transformersSizes = [&] {
    sizes({{"num_hidden_layers", &config.layers},
           {"hidden_size", &config.hidden},
           {"num_attention_heads", &config.heads},
           {"intermediate_size", &config.ffn},
           {"vocab_size", &config.vocab},
           {"max_position_embeddings", &config.maxPositions}});
  };
  if (*modelType == "gpt2") {
    config.family = ModelFamily::GPT2;
    applyFamilyDefaults(config);
    sizes({{"n_layer", &config.layers},
           {"n_embd", &config.hidden},
           {"n_head", &config.heads},
           {"vocab_size", &config.vocab},
           {"n_positions", &config.maxPositions}});
    config.ffn = 4 * config.hidden; // the default of n_inner
    reader.readInteger("n_inner", config.ffn, /*positive=*/true);
    reader.readNumber("layer_norm_epsilon", config.normEpsilon, true);
    config.kvHeads = config.heads;
    // n_ctx is n_positions' old name; summary_* configure the
    // double-heads model's classifier, which the LM does not have.
    audit.handled({"n_inner", "layer_norm_epsilon", "n_ctx",
                   "summary_activation", "summary_first_dropout",
                   "summary_proj_to_labels", "summary_type",
                   "summary_use_proj"});
    audit.expect("activation_function", "gelu_new",
                 "memwall builds GPT-2's tanh GELU (gelu_new)");
    audit.expect("scale_attn_weights", true,
                 "memwall scales attention scores by 1/sqrt(head size)");
    audit.expect("scale_attn_by_inverse_layer_idx", false,
                 "memwall does not scale scores by the layer index");
    audit.expect("add_cross_attention", false,
                 "memwall builds a decoder without cross-attention");
    // Upcasting changes rounding, not the computation.
    audit.handled({"reorder_and_upcast_attn"});
    audit.dropout("resid_pdrop", "on each residual branch");
    audit.dropout("embd_pdrop", "after the embeddings");
    audit.dropout("attn_pdrop", "on the attention probabilities");
  } else if (llvm::is_contained(
                 {"llama", "mistral", "qwen2", "mixtral", "qwen2_moe"},
                 *modelType)) {
    config.family = *modelType == "qwen2"       ? ModelFamily::Qwen2
                    : *modelType == "mixtral"   ? ModelFamily::Mixtral
                    : *modelType == "qwen2_moe" ? ModelFamily::Qwen2Moe
                                                : ModelFamily::Llama;
    applyFamilyDefaults(config);
    transformersSizes();
    readRotaryConfig(*modelType, reader, audit, config);
    if (isMixtureFamily(config.family))
      readMixtureConfig(reader, audit, config);
  } else if (*modelType == "bert") {
    config.family = ModelFamily::BERT;
    applyFamilyDefaults(config);
    transformersSizes();
    reader.readInteger("type_vocab_size", config.typeVocab, true);
    reader.readNumber("layer_norm_eps", config.normEpsilon, true);
    audit.handled({"type_vocab_size", "layer_norm_eps"});
    config.kvHeads = config.heads;
    audit.expect("hidden_act", "gelu", "memwall builds BERT's erf GELU");
    audit.expect("position_embedding_type", "absolute",
                 "memwall builds learned absolute positions");
    audit.expect("is_decoder", false,
                 "memwall builds BERT as a bidirectional encoder");
    audit.expect("add_cross_attention", false,
                 "memwall builds an encoder without cross-attention");
    audit.dropout("hidden_dropout_prob",
                  "after the embeddings and each residual branch");
    audit.dropout("attention_probs_dropout_prob",
                  "on the attention probabilities");
  } else {
    return makeError(bufferName + ": model_type '" + *modelType +
                     "' is not supported (gpt2, llama, mistral, qwen2, "
                     "mixtral, qwen2_moe, bert)");
  }
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  audit.reportUnknownKeys();
  config.name = object->getString("_name_or_path").value_or(*modelType).str();
  applyStepDefaults(config);
  config.sourceFile = bufferName.str();
  config.names = huggingFaceKeyNames(config.family);
  return config;
}

//===----------------------------------------------------------------------===//
// Validation and parameter counts
//===----------------------------------------------------------------------===//

llvm::ArrayRef<llvm::StringRef> memwall::getLoraTargetNames() {
  static constexpr llvm::StringRef names[] = {"q",    "k",  "v",   "o",
                                              "gate", "up", "down"};
  return names;
}

/// The [in, out] weight of rotary projection `target` (q, k, v, o, gate,
/// up, down).
template <typename Number>
static std::pair<Number, Number> getProjectionShape(const ModelConfig &config,
                                                    llvm::StringRef target) {
  Number d = config.hidden, f = config.ffn;
  Number qWidth = Number(config.heads) * config.headDim();
  Number kvWidth = Number(config.kvHeads) * config.headDim();
  Number in = target == "o" ? qWidth : target == "down" ? f : d;
  Number out = target == "q"                        ? qWidth
               : target == "k" || target == "v"     ? kvWidth
               : target == "gate" || target == "up" ? f
                                                    : d;
  return {in, out};
}

/// Parameters of the LoRA adapters: rank · (in + out) per targeted
/// projection and layer.
template <typename Number>
static Number loraFormula(const ModelConfig &config) {
  if (config.loraRank == 0)
    return 0;
  Number perLayer = 0;
  for (const std::string &target : config.loraTargets) {
    auto [in, out] = getProjectionShape<Number>(config, target);
    perLayer += Number(config.loraRank) * (in + out);
  }
  return Number(config.layers) * perLayer;
}

std::optional<std::pair<int64_t, int64_t>>
memwall::getNF4ScaleBlock(int64_t in, int64_t out) {
  if (in <= 0 || out <= 0 || in % kNF4BlockSize != 0)
    return std::nullopt;
  int64_t columns = std::gcd(out, kNF4ScaleBlockSize);
  int64_t rows = kNF4ScaleBlockSize / columns;
  if (in / kNF4BlockSize % rows != 0)
    return std::nullopt;
  return std::pair{rows, columns};
}

/// --base-dtype: NF4 projections (llama, qwen2, dense) whose shapes split
/// into NF4's blocks; train mode trains adapters.
static llvm::Error checkBaseDtype(const ModelConfig &config,
                                  GenerationMode mode) {
  const ConfigFieldNames &names = config.names;
  if (config.baseDtype.empty())
    return llvm::Error::success();
  if (config.baseDtype != "nf4")
    return makeError(names.baseDtype +
                     " must be nf4 (QLoRA's 4-bit NormalFloat), got '" +
                     config.baseDtype + "'");
  if (!isRotaryFamily(config.family))
    return makeError(llvm::formatv(
        "{0}=nf4 quantizes llama and qwen2 projections, not {1}'s",
        names.baseDtype, stringifyModelFamily(config.family)));
  if (config.experts > 0)
    return makeError(llvm::formatv("{0}=nf4: NF4 experts are not built "
                                   "(memwall quantizes dense projections)",
                                   names.baseDtype));
  if (mode == GenerationMode::Train && config.loraRank == 0)
    return makeError(llvm::formatv(
        "{0}=nf4 freezes the base weights: --mode=train needs {1}=RANK "
        "adapters to train",
        names.baseDtype, names.lora));
  for (llvm::StringRef target : getLoraTargetNames()) {
    auto [in, out] = getProjectionShape<double>(config, target);
    // Far past any model; the size checks below report such configs.
    if (in > 0x1p62 || out > 0x1p62)
      continue;
    auto inWidth = static_cast<int64_t>(in),
         outWidth = static_cast<int64_t>(out);
    if (!getNF4ScaleBlock(inWidth, outWidth))
      return makeError(llvm::formatv(
          "{0}=nf4 stores {1} weights per absmax along a projection's input "
          "and {2} absmax per scale: '{3}' [{4}, {5}] does not split so",
          names.baseDtype, kNF4BlockSize, kNF4ScaleBlockSize, target, inWidth,
          outWidth));
  }
  return llvm::Error::success();
}

/// Layers whose MLP is a mixture of experts.
static int64_t countSparseLayers(const ModelConfig &config) {
  int64_t sparse = 0;
  for (int64_t layer = 0; layer < config.layers; ++layer)
    sparse += config.isSparse(layer);
  return sparse;
}

/// The closed-form parameter count of each family, in `Number` arithmetic:
/// int64_t for the count, double for the size check (which must not
/// overflow). `active`: only the routed experts a token is sent to.
template <typename Number>
static Number parameterFormula(const ModelConfig &config, GenerationMode mode,
                               bool active = false) {
  Number d = config.hidden, f = config.ffn, v = config.vocab;
  Number layers = config.layers, positions = config.maxPositions;
  Number qWidth = Number(config.heads) * config.headDim();
  Number kvWidth = Number(config.kvHeads) * config.headDim();
  switch (config.family) {
  case ModelFamily::GPT2: {
    // Per layer: ln_1 (2d), c_attn (d*3d + 3d), c_proj (d*d + d), ln_2 (2d),
    // c_fc (d*f + f), mlp c_proj (f*d + d).
    Number layer = 4 * d * d + 2 * d * f + 9 * d + f;
    return v * d + positions * d + layers * layer + 2 * d;
  }
  case ModelFamily::Llama:
  case ModelFamily::Qwen2:
  case ModelFamily::Mixtral:
  case ModelFamily::Qwen2Moe: {
    // Per layer: q and o (d*qWidth each), k and v (d*kvWidth each), two
    // RMSNorm weights (2d), and the biases the config has.
    Number layer = 2 * d * qWidth + 2 * d * kvWidth + 2 * d;
    if (config.qkvBias)
      layer += qWidth + 2 * kvWidth;
    if (config.outputBias)
      layer += d;
    // A dense MLP: gate/up/down (3*d*f) and their biases.
    Number dense = 3 * d * f;
    if (config.mlpBias)
      dense += 2 * f + d;
    // A sparse one: the router (d*E), the experts' gate/up/down (3*d*fe
    // each; k of them active), the shared expert and its gate (3*d*fs + d).
    Number experts = active ? config.expertsPerToken : config.experts;
    Number sparse =
        d * config.experts + experts * 3 * d * Number(config.routedExpertFfn());
    if (config.sharedExpertFfn)
      sparse += 3 * d * Number(config.sharedExpertFfn) + d;
    Number sparseLayers = countSparseLayers(config);
    Number head = config.tieEmbeddings ? 0 : v * d;
    return v * d + layers * layer + (layers - sparseLayers) * dense +
           sparseLayers * sparse + d + head + loraFormula<Number>(config);
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
  double width = std::max(d, double(config.heads) * config.headDim());
  // Activation elements per token: fewer than 64 tensors a layer, none wider
  // than 3 * width + ffn, then logits and loss.
  double mlpWidth = std::max<double>(
      config.ffn, double(config.expertsPerToken) * config.routedExpertFfn() +
                      config.sharedExpertFfn + config.experts);
  double activations = layers * 64 * (3 * width + mlpWidth) + 4 * v;
  // 2 FLOPs per weight and token (plus a tied head's second use), 4 per
  // query element and attention (query, key) pair, a few per activation
  // element.
  double flops = rows * (2 * (params + v * d) + 4 * width * context * layers +
                         8 * activations);
  // 4 bytes an element (f32, the widest dtype); decode reads and writes the
  // caches.
  double bytes = 4 * (params + rows * activations +
                      4 * layers * config.batch * context * kvWidth);
  return {flops, bytes};
}

/// The most layers a generated module may have.
static constexpr int64_t kMaxLayers = 1024;

/// The mixture-of-experts checks of validateModelConfig.
static llvm::Error checkMixture(const ModelConfig &config) {
  const ConfigFieldNames &names = config.names;
  for (auto [name, value] :
       {std::pair{names.experts, config.experts},
        std::pair{names.expertsPerToken, config.expertsPerToken},
        std::pair{names.expertFfn, config.expertFfn},
        std::pair{std::string("the shared expert's width"),
                  config.sharedExpertFfn}})
    if (value < 0)
      return makeError(
          llvm::formatv("{0} must be positive, got {1}", name, value));
  if (isMixtureFamily(config.family) && config.experts == 0)
    return makeError(llvm::formatv("{0} is a mixture of experts: give {1} "
                                   "and {2}",
                                   stringifyModelFamily(config.family),
                                   names.experts, names.expertsPerToken));
  if (config.experts == 0) {
    if (config.expertsPerToken || config.expertFfn || config.sharedExpertFfn)
      return makeError(llvm::formatv("{0} and {1} need {2}",
                                     names.expertsPerToken, names.expertFfn,
                                     names.experts));
    return llvm::Error::success();
  }
  if (!isRotaryFamily(config.family))
    return makeError(llvm::formatv(
        "{0}: mixtures of experts are built on llama, qwen2, mixtral and "
        "qwen2_moe, not {1}",
        names.experts, stringifyModelFamily(config.family)));
  if (config.expertsPerToken <= 0)
    return makeError(llvm::formatv("{0} must be positive, got {1}",
                                   names.expertsPerToken,
                                   config.expertsPerToken));
  if (config.expertsPerToken > config.experts)
    return makeError(llvm::formatv(
        "{0} ({1}) must be at most {2} ({3}): a token is routed to distinct "
        "experts",
        names.expertsPerToken, config.expertsPerToken, names.experts,
        config.experts));
  if (config.mlpBias)
    return makeError("mlp_bias on experts is not built: memwall's experts "
                     "have no biases");
  if (config.sparseStep <= 0)
    return makeError(
        llvm::formatv("\"decoder_sparse_step\" must be positive, got {0}",
                      config.sparseStep));
  bool anySparse = countSparseLayers(config) > 0;
  for (llvm::StringRef target : {"gate", "up", "down"})
    if (anySparse && config.loraRank > 0 &&
        llvm::is_contained(config.loraTargets, target))
      return makeError(llvm::formatv(
          "{0}: '{1}' is an expert projection here; LoRA adapters on experts "
          "are not built (target q, k, v, o)",
          names.loraTargets, target));
  return llvm::Error::success();
}

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
  bool rotary = isRotaryFamily(config.family);
  if (!rotary && (config.explicitHeadDim || config.qkvBias ||
                  config.outputBias || config.mlpBias || config.slidingWindow))
    return makeError(llvm::formatv(
        "{0} has fixed head sizes, biases and full attention: {1} and {2} are "
        "for llama and qwen2",
        stringifyModelFamily(config.family), names.headDim,
        names.slidingWindow));
  if (config.loraRank < 0)
    return makeError(llvm::formatv("{0} must be positive, got {1}", names.lora,
                                   config.loraRank));
  if (config.loraRank > 0) {
    if (!rotary)
      return makeError(llvm::formatv(
          "{0}: LoRA adapters are built on llama and qwen2 projections, not "
          "{1}'s",
          names.lora, stringifyModelFamily(config.family)));
    if (config.loraTargets.empty())
      return makeError(names.loraTargets + " names no projection");
    for (const auto &[index, target] : llvm::enumerate(config.loraTargets)) {
      if (llvm::is_contained(
              llvm::ArrayRef(config.loraTargets).take_front(index), target))
        return makeError(
            llvm::formatv("{0} names '{1}' twice", names.loraTargets, target));
      if (!llvm::is_contained(getLoraTargetNames(), target))
        return makeError(llvm::formatv(
            "{0}: '{1}' is not a projection of {2}; valid targets: {3}",
            names.loraTargets, target, stringifyModelFamily(config.family),
            llvm::join(getLoraTargetNames(), ", ")));
    }
    if (!(config.loraAlpha > 0) || !std::isfinite(config.loraAlpha))
      return makeError(llvm::formatv("{0} must be a positive number, got {1}",
                                     names.loraAlpha, config.loraAlpha));
  }
  if (llvm::Error error = checkMixture(config))
    return error;
  if (config.explicitHeadDim < 0)
    return makeError(llvm::formatv("{0} must be positive, got {1}",
                                   names.headDim, config.explicitHeadDim));
  if (config.slidingWindow < 0 || config.slidingWindowFirstLayer < 0)
    return makeError(llvm::formatv(
        "{0} must be positive, got {1}", names.slidingWindow,
        std::min(config.slidingWindow, config.slidingWindowFirstLayer)));
  if (!config.explicitHeadDim && config.hidden % config.heads != 0)
    return makeError(llvm::formatv("{0} ({1}) must be a multiple of {2} ({3})",
                                   names.hidden, config.hidden, names.heads,
                                   config.heads));
  if (config.heads % config.kvHeads != 0)
    return makeError(llvm::formatv("{0} ({1}) must be a multiple of {2} ({3})",
                                   names.heads, config.heads, names.kvHeads,
                                   config.kvHeads));
  if (!rotary && config.kvHeads != config.heads)
    return makeError(llvm::formatv("{0} has no grouped-query attention: {1} "
                                   "must equal {2}",
                                   stringifyModelFamily(config.family),
                                   names.kvHeads, names.heads));
  if (rotary && config.headDim() % 2 != 0)
    return makeError(llvm::formatv("rotary embeddings need an even head "
                                   "dimension, got {0}",
                                   config.headDim()));
  if (!llvm::is_contained({"bf16", "f16", "f32"}, config.dtype))
    return makeError(names.dtype + " must be bf16, f16 or f32, got '" +
                     config.dtype + "'");
  if (llvm::Error error = checkBaseDtype(config, mode))
    return error;
  if (!(config.dropout >= 0 && config.dropout < 1))
    return makeError(
        llvm::formatv("{0} must be in [0, 1), got {1}", names.dropout,
                      config.dropout));
  if (mode == GenerationMode::Decode) {
    if (config.family == ModelFamily::BERT)
      return makeError("bert is an encoder: --mode=decode needs a decoder "
                       "(gpt2, llama or qwen2)");
    if (config.kvLen <= 0)
      return makeError(llvm::formatv("{0} must be positive, got {1}",
                                     names.kvLen, config.kvLen));
  }
  // Learned position tables end at the context length.
  if (!rotary) {
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

int64_t memwall::countActiveParameters(const ModelConfig &config,
                                       GenerationMode mode) {
  return parameterFormula<int64_t>(config, mode, /*active=*/true);
}

int64_t memwall::countTrainableParameters(const ModelConfig &config,
                                          GenerationMode mode) {
  if (config.loraRank > 0)
    return loraFormula<int64_t>(config);
  return parameterFormula<int64_t>(config, mode);
}
