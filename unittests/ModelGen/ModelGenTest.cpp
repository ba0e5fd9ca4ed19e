//===- ModelGenTest.cpp - presets, configs and generated modules ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/ModelGen/ModelBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace memwall;

namespace {
ModelConfig preset(llvm::StringRef name) {
  llvm::Expected<ModelConfig> config = lookupPreset(name);
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  return *config;
}

std::string errorOf(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : "";
}
} // namespace

// Published parameter counts: the Hugging Face checkpoints' num_parameters()
// (openai-community/gpt2*, meta-llama/Llama-2-*-hf, Meta-Llama-3-8B,
// mistralai/Mistral-7B-v0.3, Qwen/Qwen2.5-7B-Instruct (7.62B on its model
// card), mistralai/Mixtral-8x7B-v0.1 (46.7B) and Mixtral-8x22B-v0.1 (141B),
// bert-base/large-uncased with pooler; bert-base's 109,482,240 is also the sum
// over the original checkpoint in google-research/bert issue #1225) and GPT-3's
// "175B" (Brown et al. 2020, Table 2.1). Each also follows from the
// checkpoint's config.json by hand, which is how they were checked here.
TEST(ModelGenTest, PresetParameterCountsMatchPublishedFigures) {
  struct Published {
    const char *preset;
    int64_t params;
  } published[] = {
      {"gpt2", 124439808},           {"gpt2-medium", 354823168},
      {"gpt2-large", 774030080},     {"gpt2-xl", 1557611200},
      {"llama-2-7b", 6738415616},    {"llama-2-13b", 13015864320},
      {"llama-2-70b", 68976648192},  {"llama-3-8b", 8030261248},
      {"mistral-7b", 7248023552},    {"qwen2.5-7b", 7615616512},
      {"mixtral-8x7b", 46702792704}, {"mixtral-8x22b", 140630071296},
      {"bert-base", 109482240},      {"bert-large", 335141888},
  };
  for (const Published &p : published)
    EXPECT_EQ(countParameters(preset(p.preset), GenerationMode::Prefill),
              p.params)
        << p.preset;
  // GPT-3's paper rounds to 175.0B; the architecture of its Table 2.1 has
  // 174.6B, within 0.5%.
  int64_t gpt3 = countParameters(preset("gpt3-175b"), GenerationMode::Prefill);
  EXPECT_NEAR(static_cast<double>(gpt3), 175e9, 0.005 * 175e9);
}

TEST(ModelGenTest, GeneratedWeightsMatchTheClosedFormCountInEveryMode) {
  MLIRContext context;
  for (llvm::StringRef name : getPresetNames()) {
    for (GenerationMode mode : {GenerationMode::Prefill, GenerationMode::Decode,
                                GenerationMode::Train}) {
      ModelConfig config = preset(name);
      config.seq = 8;
      config.kvLen = 7;
      if (validateModelConfig(config, mode)) {
        // Only BERT refuses a mode (decode).
        EXPECT_EQ(config.family, ModelFamily::BERT) << name.str();
        continue;
      }
      OwningOpRef<ModuleOp> module = buildModel(&context, config, mode);
      ASSERT_TRUE(succeeded(verify(*module))) << name.str();
      EXPECT_EQ(summarizeParameters(*module).params,
                countParameters(config, mode))
          << name.str() << " " << stringifyGenerationMode(mode).str();
    }
  }
}

// Reports print locations, so every op and argument names what it is.
TEST(ModelGenTest, EveryOpAndArgumentHasANameLocation) {
  MLIRContext context;
  for (llvm::StringRef name : {"gpt2", "llama-3-8b", "bert-base"}) {
    for (GenerationMode mode : {GenerationMode::Prefill, GenerationMode::Decode,
                                GenerationMode::Train}) {
      ModelConfig config = preset(name);
      config.layers = 2;
      config.seq = 4;
      config.kvLen = 3;
      config.dropout = 0.1;
      if (validateModelConfig(config, mode))
        continue;
      OwningOpRef<ModuleOp> module = buildModel(&context, config, mode);
      module->walk([&](Operation *op) {
        EXPECT_TRUE(isa<NameLoc>(op->getLoc()))
            << name.str() << ": " << op->getName().getStringRef().str();
        for (Region &region : op->getRegions())
          for (BlockArgument argument : region.getArguments())
            EXPECT_TRUE(isa<NameLoc>(argument.getLoc())) << name.str();
      });
    }
  }
}

// Train-mode dropout follows the embeddings, each attention output and each
// MLP output, in every family.
TEST(ModelGenTest, TrainDropoutFollowsEmbeddingsAttentionAndMLP) {
  MLIRContext context;
  for (llvm::StringRef name : {"gpt2", "llama-2-7b", "bert-base"}) {
    ModelConfig config = preset(name);
    config.layers = 3;
    config.seq = 4;
    config.dropout = 0.1;
    OwningOpRef<ModuleOp> module =
        buildModel(&context, config, GenerationMode::Train);
    ASSERT_TRUE(succeeded(verify(*module))) << name.str();
    int dropouts = 0;
    module->walk([&](DropoutOp) { ++dropouts; });
    EXPECT_EQ(dropouts, 1 + 2 * 3) << name.str();
    // Inference has no dropout, whatever the rate.
    module = buildModel(&context, config, GenerationMode::Prefill);
    dropouts = 0;
    module->walk([&](DropoutOp) { ++dropouts; });
    EXPECT_EQ(dropouts, 0) << name.str();
  }
}

TEST(ModelGenTest, DecodeTakesTwoKVCachesPerLayer) {
  MLIRContext context;
  ModelConfig config = preset("llama-2-70b");
  config.layers = 3;
  config.batch = 2;
  config.kvLen = 100;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, config, GenerationMode::Decode);
  auto function = *module->getOps<func::FuncOp>().begin();
  int caches = 0;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto kind = function.getArgAttrOfType<ArgKindAttr>(
        i, MemWallDialect::kArgKindAttrName);
    ASSERT_TRUE(kind);
    if (kind.getValue() != ArgKind::KVCache)
      continue;
    ++caches;
    // [B, Hkv, kvLen, head dim] = [2, 8, 100, 128].
    EXPECT_EQ(
        cast<RankedTensorType>(function.getArgument(i).getType()).getShape(),
        ArrayRef<int64_t>({2, 8, 100, 128}));
  }
  EXPECT_EQ(caches, 6);
  // Logits plus every appended cache come back.
  EXPECT_EQ(function.getNumResults(), 1u + 6u);
}

// The config.json of openai-community/gpt2 as published on the Hugging Face
// hub: no n_inner (4 * n_embd), keys the generator does not need.
constexpr const char *kGPT2Config = R"({
  "activation_function": "gelu_new",
  "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1,
  "bos_token_id": 50256,
  "embd_pdrop": 0.1,
  "eos_token_id": 50256,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_layer": 12,
  "n_positions": 1024,
  "resid_pdrop": 0.1,
  "summary_activation": null,
  "summary_first_dropout": 0.1,
  "summary_proj_to_labels": true,
  "summary_type": "cls_index",
  "summary_use_proj": true,
  "task_specific_params": {
    "text-generation": {"do_sample": true, "max_length": 50}
  },
  "vocab_size": 50257
})";

// The config.json of meta-llama/Meta-Llama-3-8B: grouped-query attention,
// rope_theta 500000, untied head, a null rope_scaling.
constexpr const char *kLlama3Config = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

TEST(ModelGenTest, HuggingFaceConfigsReadEachFamily) {
  llvm::Expected<ModelConfig> gpt2 =
      parseHuggingFaceConfig(kGPT2Config, "gpt2.json");
  ASSERT_TRUE(static_cast<bool>(gpt2)) << llvm::toString(gpt2.takeError());
  EXPECT_EQ(gpt2->family, ModelFamily::GPT2);
  EXPECT_EQ(gpt2->name, "gpt2");
  EXPECT_EQ(gpt2->ffn, 3072);
  EXPECT_EQ(gpt2->maxPositions, 1024);
  EXPECT_TRUE(gpt2->tieEmbeddings);
  EXPECT_EQ(countParameters(*gpt2, GenerationMode::Prefill), 124439808);

  llvm::Expected<ModelConfig> llama =
      parseHuggingFaceConfig(kLlama3Config, "llama.json");
  ASSERT_TRUE(static_cast<bool>(llama)) << llvm::toString(llama.takeError());
  EXPECT_EQ(llama->family, ModelFamily::Llama);
  EXPECT_EQ(llama->layers, 32);
  EXPECT_EQ(llama->kvHeads, 8);
  EXPECT_EQ(llama->ffn, 14336);
  EXPECT_EQ(llama->ropeTheta, 500000.0);
  EXPECT_EQ(llama->normEpsilon, 1e-5);
  EXPECT_FALSE(llama->tieEmbeddings);
  EXPECT_EQ(countParameters(*llama, GenerationMode::Prefill), 8030261248);

  llvm::Expected<ModelConfig> bert = parseHuggingFaceConfig(
      R"({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12,
          "num_attention_heads": 12, "intermediate_size": 3072,
          "vocab_size": 30522, "max_position_embeddings": 512,
          "type_vocab_size": 2, "layer_norm_eps": 1e-12})",
      "bert.json");
  ASSERT_TRUE(static_cast<bool>(bert)) << llvm::toString(bert.takeError());
  EXPECT_EQ(countParameters(*bert, GenerationMode::Prefill), 109482240);
}

TEST(ModelGenTest, HuggingFaceNullMeansTheDefault) {
  // Mistral-7B as saved by recent transformers: "head_dim": null.
  llvm::Expected<ModelConfig> mistral = parseHuggingFaceConfig(
      R"({"_name_or_path": "mistralai/Mistral-7B-v0.1",
          "model_type": "mistral", "hidden_size": 4096,
          "intermediate_size": 14336, "num_attention_heads": 32,
          "num_key_value_heads": 8, "num_hidden_layers": 32,
          "vocab_size": 32000, "max_position_embeddings": 32768,
          "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "head_dim": null,
          "sliding_window": 4096, "tie_word_embeddings": false})",
      "mistral.json");
  ASSERT_TRUE(static_cast<bool>(mistral))
      << llvm::toString(mistral.takeError());
  EXPECT_EQ(mistral->name, "mistralai/Mistral-7B-v0.1");
  EXPECT_EQ(mistral->family, ModelFamily::Llama);
  // Mistral 7B's published size: 7,241,732,096 parameters.
  EXPECT_EQ(countParameters(*mistral, GenerationMode::Prefill), 7241732096);
}

TEST(ModelGenTest, BadConfigsNameTheProblem) {
  auto parseError = [](const char *json) {
    llvm::Expected<ModelConfig> config = parseHuggingFaceConfig(json, "c.json");
    return config ? std::string() : llvm::toString(config.takeError());
  };
  EXPECT_EQ(parseError("{\"model_type\": \"gpt2\",\n \"n_layer\": }"),
            "c.json:2:13: Invalid JSON value");
  EXPECT_EQ(parseError(R"({"n_layer": 2})"),
            "c.json: \"model_type\" is missing or not a string");
  EXPECT_EQ(parseError(R"({"model_type": "t5"})"),
            "c.json: model_type 't5' is not supported (gpt2, llama, mistral, "
            "qwen2, mixtral, qwen2_moe, bert)");
  EXPECT_EQ(parseError(R"({"model_type": "llama", "hidden_size": 64})"),
            "c.json: \"num_hidden_layers\" is required");
  EXPECT_EQ(parseError(R"({"model_type": "gpt2", "n_layer": -1})"),
            "c.json: \"n_layer\" must be a positive integer");
  EXPECT_EQ(parseError(R"({"model_type": "gpt2", "n_layer": "12"})"),
            "c.json: \"n_layer\" must be a positive integer");
  EXPECT_EQ(parseError(R"({"model_type": "gpt2", "n_layer": null})"),
            "c.json: \"n_layer\" is required");
  EXPECT_EQ(parseError("[]"), "c.json: a config.json must be a JSON object");
  std::string llama3 = kLlama3Config;
  auto withKey = [&](llvm::StringRef key, llvm::StringRef value) {
    std::string text = llama3;
    std::string field = "\"" + key.str() + "\": ";
    size_t start = text.find(field) + field.size();
    text.replace(start, text.find_first_of(",\n", start) - start, value.str());
    return text;
  };
  EXPECT_EQ(parseError(withKey("tie_word_embeddings", "\"no\"").c_str()),
            "c.json: \"tie_word_embeddings\" must be true or false");
  EXPECT_EQ(parseError(withKey("rope_theta", "0").c_str()),
            "c.json: \"rope_theta\" must be a positive number");
  EXPECT_EQ(parseError(withKey("attention_bias", "1").c_str()),
            "c.json: \"attention_bias\" must be true or false");
  EXPECT_EQ(parseError(R"({"model_type": "mistral", "hidden_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 4,
                     "intermediate_size": 128, "vocab_size": 10,
                     "max_position_embeddings": 8, "head_dim": -16})"),
            "c.json: \"head_dim\" must be a positive integer");
  EXPECT_EQ(parseError(R"({"model_type": "mistral", "hidden_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 4,
                     "intermediate_size": 128, "vocab_size": 10,
                     "max_position_embeddings": 8, "sliding_window": 0})"),
            "c.json: \"sliding_window\" must be a positive integer");
}

namespace {
/// Parses `json` as "c.json", failing the test on an error.
ModelConfig parseConfig(const char *json) {
  llvm::Expected<ModelConfig> config = parseHuggingFaceConfig(json, "c.json");
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  return config ? *config : ModelConfig();
}

/// The parameters of the module built for `config`, counted from its
/// weight arguments (independent of countParameters).
int64_t builtParameters(ModelConfig config) {
  MLIRContext context;
  config.seq = 8;
  config.kvLen = 7;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)), "");
  OwningOpRef<ModuleOp> module =
      buildModel(&context, config, GenerationMode::Prefill);
  EXPECT_TRUE(succeeded(verify(*module)));
  return summarizeParameters(*module).params;
}
} // namespace

// Qwen/Qwen2-0.5B's config.json: q/k/v biases, tied embeddings, no window
// (use_sliding_window false although sliding_window is set).
TEST(ModelGenTest, Qwen2ConfigHasQKVBiasesAndItsPublishedCount) {
  ModelConfig qwen = parseConfig(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
    "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
    "max_position_embeddings": 131072, "max_window_layers": 24,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 131072, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");
  EXPECT_EQ(qwen.family, ModelFamily::Qwen2);
  EXPECT_TRUE(qwen.qkvBias);
  EXPECT_FALSE(qwen.outputBias);
  EXPECT_EQ(qwen.slidingWindow, 0);
  EXPECT_EQ(qwen.normEpsilon, 1e-6);
  EXPECT_TRUE(qwen.warnings.empty());
  // By hand (head 64, kv width 128): per layer q 896² + 896, k and v
  // 896·128 + 128 each, o 896², MLP 3·896·4864, norms 2·896 = 14,912,384;
  // ×24 + the tied 151936·896 embedding + the final norm's 896 =
  // 494,032,768, Qwen2-0.5B's published count.
  EXPECT_EQ(countParameters(qwen, GenerationMode::Prefill), 494032768);
  EXPECT_EQ(builtParameters(qwen), 494032768);
}

// mistralai/Mistral-Nemo-Base-2407: head_dim 128 with hidden 5120 and 32
// heads, so q and o are 5120 x 4096.
TEST(ModelGenTest, DecoupledHeadDimSizesQAndTheOutputProjection) {
  ModelConfig nemo = parseConfig(R"({
    "model_type": "mistral", "hidden_size": 5120, "head_dim": 128,
    "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_hidden_layers": 40, "intermediate_size": 14336,
    "vocab_size": 131072, "max_position_embeddings": 1024000,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
    "tie_word_embeddings": false, "hidden_act": "silu"})");
  EXPECT_EQ(nemo.headDim(), 128);
  EXPECT_EQ(nemo.queryWidth(), 4096);
  // By hand: per layer 2·5120·4096 + 2·5120·1024 + 3·5120·14336 + 2·5120 =
  // 272,640,000; ×40 + 2·131072·5120 + 5120 = 12,247,782,400 (Mistral-NeMo
  // 12B's published count).
  EXPECT_EQ(countParameters(nemo, GenerationMode::Prefill), 12247782400);
  nemo.layers = 1;
  nemo.vocab = 16;
  EXPECT_EQ(builtParameters(nemo), 272640000 + 2 * 16 * 5120 + 5120);
  // hidden / heads is then no constraint, but an odd head is (RoPE pairs).
  nemo.heads = 7;
  nemo.kvHeads = 7;
  EXPECT_EQ(errorOf(validateModelConfig(nemo, GenerationMode::Prefill)), "");
  nemo.explicitHeadDim = 127;
  EXPECT_EQ(errorOf(validateModelConfig(nemo, GenerationMode::Prefill)),
            "c.json: rotary embeddings need an even head dimension, got 127");
  ModelConfig gpt2 = preset("gpt2");
  gpt2.explicitHeadDim = 128;
  EXPECT_EQ(errorOf(validateModelConfig(gpt2, GenerationMode::Prefill)),
            "gpt2 has fixed head sizes, biases and full attention: --head-dim "
            "and --sliding-window are for llama and qwen2");
}

TEST(ModelGenTest, LlamaAttentionAndMLPBiasesAreBuiltAndCounted) {
  ModelConfig config = parseConfig(R"({
    "model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 1,
    "intermediate_size": 128, "vocab_size": 10,
    "max_position_embeddings": 8, "attention_bias": true,
    "mlp_bias": true})");
  EXPECT_TRUE(config.qkvBias && config.outputBias && config.mlpBias);
  // By hand (head 16, kv width 32): weights 2·64·64 + 2·64·32 + 3·64·128 +
  // 2·64 = 36,992; biases q 64 + k, v 32 each + o 64 + gate, up 128 each +
  // down 64 = 512; + embedding and head 2·10·64 + final norm 64 = 38,848.
  EXPECT_EQ(countParameters(config, GenerationMode::Prefill), 38848);
  EXPECT_EQ(builtParameters(config), 38848);
}

TEST(ModelGenTest, SlidingWindowBoundsTheDecodeCacheOfSlidingLayers) {
  // Qwen2 with use_sliding_window: layers from max_window_layers on slide.
  ModelConfig config = parseConfig(R"({
    "model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 3,
    "intermediate_size": 128, "vocab_size": 10,
    "max_position_embeddings": 4096, "use_sliding_window": true,
    "sliding_window": 100, "max_window_layers": 2})");
  EXPECT_EQ(config.slidingWindow, 100);
  EXPECT_FALSE(config.slides(1));
  EXPECT_TRUE(config.slides(2));
  config.kvLen = 500;
  MLIRContext context;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, config, GenerationMode::Decode);
  ASSERT_TRUE(succeeded(verify(*module)));
  auto function = *module->getOps<func::FuncOp>().begin();
  SmallVector<int64_t> cacheTokens;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto kind = function.getArgAttrOfType<ArgKindAttr>(
        i, MemWallDialect::kArgKindAttrName);
    if (kind && kind.getValue() == ArgKind::KVCache)
      cacheTokens.push_back(
          cast<RankedTensorType>(function.getArgument(i).getType())
              .getDimSize(2));
  }
  // k and v of layers 0 and 1 hold all 500 tokens; layer 2 the window's 99
  // most recent (with the new token, the 100 a query sees).
  EXPECT_EQ(cacheTokens, SmallVector<int64_t>({500, 500, 500, 500, 99, 99}));
  // A cache shorter than the window is not cut.
  config.kvLen = 50;
  EXPECT_EQ(config.cachedTokens(2), 50);
  // Mistral slides on every layer.
  ModelConfig mistral = parseConfig(R"({
    "model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4,
    "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 10,
    "max_position_embeddings": 4096, "sliding_window": 16})");
  EXPECT_TRUE(mistral.slides(0));
}

TEST(ModelGenTest, ConfigFieldsMemwallDoesNotBuildAreWarnedAbout) {
  // The published configs memwall builds exactly warn about nothing; GPT-2's
  // dropout rates matter to training only.
  ModelConfig gpt2 = parseConfig(kGPT2Config);
  EXPECT_TRUE(gpt2.warnings.empty());
  ASSERT_EQ(gpt2.trainingWarnings.size(), 3u);
  EXPECT_EQ(gpt2.trainingWarnings[0],
            "c.json: \"resid_pdrop\" is 0.1 (on each residual branch); "
            "memwall-gen applies --dropout (0 unless given) after the "
            "embeddings and each residual branch instead, and no "
            "attention-probability dropout");
  EXPECT_TRUE(parseConfig(kLlama3Config).warnings.empty());
  EXPECT_TRUE(parseConfig(kLlama3Config).trainingWarnings.empty());

  std::string llama31 = kLlama3Config;
  llama31.replace(llama31.find("\"rope_scaling\": null"),
                  strlen("\"rope_scaling\": null"),
                  R"("rope_scaling": {"factor": 4.0, "rope_type": "yarn"})");
  llama31.replace(llama31.find("\"silu\""), strlen("\"silu\""), "\"gelu\"");
  llama31.replace(llama31.find("\"use_cache\""), 0,
                  "\"num_experts\": 8, \"quantization_config\": "
                  "{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": "
                  "128, \"zero_point\": true},\n");
  ModelConfig config = parseConfig(llama31.c_str());
  ASSERT_EQ(config.warnings.size(), 4u);
  EXPECT_EQ(config.warnings[0],
            "c.json: \"hidden_act\" is \"gelu\": memwall builds SiLU (SwiGLU) "
            "MLPs");
  EXPECT_EQ(config.warnings[1],
            "c.json: \"rope_scaling\" is {\"factor\":4,\"rope_type\":"
            "\"yarn\"}: memwall builds Llama-3.1's llama3 RoPE scaling only: "
            "rotary frequencies are unscaled (FLOPs and bytes are the same, "
            "values differ from the model's beyond its original context)");
  // A quantization other than bitsandbytes' NF4 (long values shortened).
  EXPECT_EQ(config.warnings[2],
            "c.json: \"quantization_config\" is {\"bits\":4,\"group_size\":"
            "128,\"quant_method\":\"awq\",\"zero_poi...: memwall builds "
            "bitsandbytes' 4-bit NF4 only (--base-dtype=nf4): these weights "
            "are built in --dtype");
  // Unknown keys, sorted.
  EXPECT_EQ(config.warnings[3],
            "c.json: \"num_experts\" is 8: memwall does not read it; if it "
            "changes the model, the generated step is not that model");
  EXPECT_EQ(config.baseDtype, "");
}

TEST(ModelGenTest, Llama31RopeScalingIsReadAndBuilt) {
  std::string llama31 = kLlama3Config;
  llama31.replace(llama31.find("\"rope_scaling\": null"),
                  strlen("\"rope_scaling\": null"),
                  R"("rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
          "rope_type": "llama3"})");
  ModelConfig config = parseConfig(llama31.c_str());
  EXPECT_TRUE(config.warnings.empty());
  EXPECT_EQ(config.llama3RopeScaling,
            std::vector<double>({8.0, 1.0, 4.0, 8192.0}));
  config.layers = 1;
  config.seq = 4;
  MLIRContext context;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, config, GenerationMode::Prefill);
  ASSERT_TRUE(succeeded(verify(*module)));
  int scaled = 0;
  module->walk([&](RopeOp rope) {
    EXPECT_EQ(rope.getLlama3Scaling(),
              ArrayRef<double>({8.0, 1.0, 4.0, 8192.0}));
    ++scaled;
  });
  EXPECT_EQ(scaled, 2);
  // An incomplete llama3 scaling is an error naming the key.
  std::string partial = kLlama3Config;
  partial.replace(partial.find("\"rope_scaling\": null"),
                  strlen("\"rope_scaling\": null"),
                  R"("rope_scaling": {"factor": 8.0, "rope_type": "llama3"})");
  llvm::Expected<ModelConfig> refused =
      parseHuggingFaceConfig(partial, "c.json");
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_EQ(llvm::toString(refused.takeError()),
            "c.json: \"rope_scaling.low_freq_factor\" is required");
}

// PEFT's print_trainable_parameters() for meta-llama/Llama-2-7b-hf: r 8 on
// q_proj and v_proj, "trainable params: 4,194,304 || all params:
// 6,742,609,920"; r 16 on all seven projections, 39,976,960 trainable.
TEST(ModelGenTest, LoraTrainableCountsMatchPeft) {
  ModelConfig config = preset("llama-2-7b");
  config.loraRank = 8;
  config.loraTargets = {"q", "v"};
  ASSERT_EQ(errorOf(validateModelConfig(config, GenerationMode::Train)), "");
  // By hand: 32 layers x 2 projections x 8 x (4096 + 4096).
  EXPECT_EQ(countTrainableParameters(config, GenerationMode::Train), 4194304);
  EXPECT_EQ(countParameters(config, GenerationMode::Train), 6742609920);
  // q, k, v, o: 8 x 16 x 8192 = 1,048,576; gate, up, down: 3 x 16 x (4096 +
  // 11008) = 724,992; x 32 layers = 39,976,960.
  config.loraRank = 16;
  config.loraTargets = {"q", "k", "v", "o", "gate", "up", "down"};
  EXPECT_EQ(countTrainableParameters(config, GenerationMode::Train), 39976960);
  // Without adapters everything trains.
  EXPECT_EQ(
      countTrainableParameters(preset("llama-2-7b"), GenerationMode::Train),
      6738415616);
}

TEST(ModelGenTest, LoraFreezesTheBaseAndTrainsTheAdapters) {
  // A small GQA model (head 16, kv width 32), r 4 on k and down.
  ModelConfig config = preset("llama-2-70b");
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.kvHeads = 2;
  config.ffn = 96;
  config.vocab = 10;
  config.seq = 8;
  config.loraRank = 4;
  config.loraTargets = {"k", "down"};
  ASSERT_EQ(errorOf(validateModelConfig(config, GenerationMode::Train)), "");
  MLIRContext context;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, config, GenerationMode::Train);
  ASSERT_TRUE(succeeded(verify(*module)));
  // 2 layers x (4 x (64 + 32) + 4 x (96 + 64)) = 2,048 trainable.
  ParameterSummary summary = summarizeParameters(*module);
  EXPECT_EQ(summary.trainableParams, 2048);
  EXPECT_EQ(countTrainableParameters(config, GenerationMode::Train), 2048);
  EXPECT_EQ(summary.params, countParameters(config, GenerationMode::Train));
  auto function = *module->getOps<func::FuncOp>().begin();
  int adapters = 0, frozen = 0;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    if (getArgKind(function, i) != ArgKind::Weight)
      continue;
    bool isAdapter = isTrainableWeight(function, i);
    adapters += isAdapter;
    frozen += !isAdapter;
  }
  EXPECT_EQ(adapters, 2 * 2 * 2);
  // Embedding, head, final norm; per layer two norms and seven projections.
  EXPECT_EQ(frozen, 3 + 2 * 9);
  // Bad adapters name the flag.
  config.loraTargets = {"k", "qkv"};
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Train)),
            "--lora-targets: 'qkv' is not a projection of llama; valid "
            "targets: q, k, v, o, gate, up, down");
  config.loraTargets = {"k", "k"};
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Train)),
            "--lora-targets names 'k' twice");
  ModelConfig gpt2 = preset("gpt2");
  gpt2.loraRank = 8;
  gpt2.loraTargets = {"q"};
  EXPECT_EQ(errorOf(validateModelConfig(gpt2, GenerationMode::Train)),
            "--lora: LoRA adapters are built on llama and qwen2 projections, "
            "not gpt2's");
}

// QLoRA (Dettmers et al. 2023) on Llama-2-7B with r 64 on all seven
// projections, as the paper trains it: the base projections stored in NF4
// with double-quantized absmax, everything else bf16.
TEST(ModelGenTest, QloraStoresTheBaseInNf4AndTrainsOnlyTheAdapters) {
  ModelConfig config = preset("llama-2-7b");
  config.seq = 16;
  config.loraRank = 64;
  config.loraTargets = {"q", "k", "v", "o", "gate", "up", "down"};
  config.baseDtype = "nf4";
  ASSERT_EQ(errorOf(validateModelConfig(config, GenerationMode::Train)), "");
  MLIRContext context;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, config, GenerationMode::Train);
  ASSERT_TRUE(succeeded(verify(*module)));
  ParameterSummary summary = summarizeParameters(*module);
  // By hand: 32 layers x (4 x 4096^2 + 3 x 4096 x 11008) projection
  // weights; adapters 32 x 64 x (4 x (4096 + 4096) + 3 x (4096 + 11008)).
  EXPECT_EQ(32LL * (4 * 4096 * 4096 + 3 * 4096 * 11008), 6476005376);
  EXPECT_EQ(32LL * 64 * (4 * 8192 + 3 * 15104), 159907840);
  // The absmax and their scales are not parameters.
  EXPECT_EQ(summary.params, 6738415616 + 159907840);
  EXPECT_EQ(summary.trainableParams, 159907840);
  // Bytes: half a byte a projection weight (3,238,002,688), an i8 absmax
  // per 64 (101,187,584), an f32 per 256 absmax (1,581,056: 4.127 bits a
  // weight in all); bf16 for the other 262,410,240 weights (embedding,
  // head, norms) and the adapters: 844,636,160.
  EXPECT_EQ(summary.bytes, 3238002688 + 101187584 + 1581056 + 844636160);
  // The NF4 codes, their absmax and the absmax scales are frozen; the
  // dequantize of the absmax and of the codes feeds each projection.
  auto function = *module->getOps<func::FuncOp>().begin();
  int nf4 = 0, metadata = 0;
  for (BlockArgument arg : function.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (getArgKind(function, arg.getArgNumber()) != ArgKind::Weight)
      continue;
    nf4 += type.getElementType().isInteger(4);
    metadata += isQuantizationMetadata(arg);
    if (type.getElementType().isInteger(4) || isQuantizationMetadata(arg))
      EXPECT_FALSE(isTrainableWeight(function, arg.getArgNumber()));
  }
  EXPECT_EQ(nf4, 32 * 7);
  EXPECT_EQ(metadata, 2 * 32 * 7);
  int codebooks = 0;
  module->walk([&](DequantizeOp dequantize) {
    if (std::optional<ArrayRef<float>> codebook = dequantize.getCodebook()) {
      EXPECT_EQ(*codebook, getNF4Codebook());
      EXPECT_TRUE(dequantize.getScales().getDefiningOp<DequantizeOp>());
      ++codebooks;
    }
  });
  EXPECT_EQ(codebooks, 32 * 7);
}

TEST(ModelGenTest, BadNf4BasesAreRefusedNamingTheFlag) {
  ModelConfig config = preset("llama-2-7b");
  config.baseDtype = "nf4";
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)), "");
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Train)),
            "--base-dtype=nf4 freezes the base weights: --mode=train needs "
            "--lora=RANK adapters to train");
  config.baseDtype = "int3";
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--base-dtype must be nf4 (QLoRA's 4-bit NormalFloat), got 'int3'");
  config.baseDtype = "nf4";
  config.ffn = 11000; // 11000 is not a multiple of 64
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--base-dtype=nf4 stores 64 weights per absmax along a "
            "projection's input and 256 absmax per scale: 'down' [11000, "
            "4096] does not split so");
  ModelConfig gpt2 = preset("gpt2");
  gpt2.baseDtype = "nf4";
  EXPECT_EQ(errorOf(validateModelConfig(gpt2, GenerationMode::Prefill)),
            "--base-dtype=nf4 quantizes llama and qwen2 projections, not "
            "gpt2's");
  ModelConfig mixtral = preset("mixtral-8x7b");
  mixtral.baseDtype = "nf4";
  EXPECT_EQ(errorOf(validateModelConfig(mixtral, GenerationMode::Prefill)),
            "--base-dtype=nf4: NF4 experts are not built (memwall quantizes "
            "dense projections)");
}

TEST(ModelGenTest, Nf4ScaleBlocksHold256AbsmaxAsWideAsTheOutputAllows) {
  // [4096, 11008]: 64 absmax rows; 11008 = 43 x 256: blocks of 1 x 256.
  using Block = std::optional<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(getNF4ScaleBlock(4096, 11008), Block({1, 256}));
  // [128, 64]: 2 absmax rows, 64 wide: would need 4 x 64 blocks.
  EXPECT_EQ(getNF4ScaleBlock(128, 64), std::nullopt);
  // [256, 64]: 4 rows x 64 columns.
  EXPECT_EQ(getNF4ScaleBlock(256, 64), Block({4, 64}));
  // In not a multiple of 64.
  EXPECT_EQ(getNF4ScaleBlock(100, 256), std::nullopt);
}

TEST(ModelGenTest, ValidationNamesTheFlagToFix) {
  ModelConfig config = preset("llama-2-7b");
  config.heads = 7;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--hidden (4096) must be a multiple of --heads (7)");
  config = preset("llama-2-7b");
  config.kvHeads = 3;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--heads (32) must be a multiple of --kv-heads (3)");
  config = preset("gpt2");
  config.layers = 0;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--layers must be positive, got 0");
  config = preset("bert-base");
  EXPECT_NE(errorOf(validateModelConfig(config, GenerationMode::Decode))
                .find("bert is an encoder"),
            std::string::npos);
  config = preset("gpt2");
  config.dtype = "fp64";
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--dtype must be bf16, f16 or f32, got 'fp64'");
  EXPECT_EQ(
      errorOf(validateModelConfig(preset("gpt3-175b"), GenerationMode::Train)),
      "");
  config = preset("llama-2-7b");
  config.kvLen = 0;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Decode)),
            "--kv-len must be positive, got 0");
  // Decode takes one new token, whatever --seq says.
  config.kvLen = 10;
  config.seq = 0;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Decode)), "");
}

TEST(ModelGenTest, SizesWhoseCountsWouldOverflowAreRefused) {
  // 3 * hidden overflows int64 in the fused QKV weight.
  ModelConfig config = preset("gpt2");
  config.hidden = 3074457345618258603;
  config.heads = 1;
  config.kvHeads = 1;
  EXPECT_NE(errorOf(validateModelConfig(config, GenerationMode::Prefill))
                .find("the step is too large to cost"),
            std::string::npos);
  // The parameter bytes alone exceed int64.
  config = preset("gpt2");
  config.vocab = int64_t(1) << 62;
  config.seq = 1;
  EXPECT_NE(errorOf(validateModelConfig(config, GenerationMode::Prefill))
                .find("the step is too large to cost"),
            std::string::npos);
  config = preset("gpt2");
  config.layers = 20000;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--layers must be at most 1024, got 20000");
  // GPT-3's own training batch (1536 sequences of 2048 tokens) still fits.
  config = preset("gpt3-175b");
  config.batch = 1536;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Train)), "");
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// The module's expert_matmul ops.
static int countExpertMatmuls(ModuleOp module) {
  int count = 0;
  module.walk([&](ExpertMatmulOp) { ++count; });
  return count;
}

// Mixtral's totals and the parameters a token runs through, by hand from its
// config: per layer attention 2·4096² + 2·4096·1024 = 41,943,040, router
// 4096·8 = 32,768, norms 8,192, each expert 3·4096·14336 = 176,160,768.
// 8x7B: 32 layers × (41,943,040 + 32,768 + 8,192 + 8 experts) + embeddings
// and head 2·32000·4096 + the final norm 4096 = 46,702,792,704 (46.7B);
// with 2 experts a layer, 12,879,925,248 (the "12.9B active" of the
// Mixtral paper). 8x22B: per layer attention 2·6144² + 2·6144·1024 =
// 88,080,384, router 49,152, norms 12,288, each expert 3·6144·16384 =
// 301,989,888; × 56 + 2·32768·6144 + 6144 = 140,630,071,296 total and
// 39,161,468,928 active (141B and 39B as published).
TEST(ModelGenTest, MixtralTotalAndActiveParametersAreExact) {
  struct Expected {
    const char *preset;
    int64_t total, active;
  } expected[] = {{"mixtral-8x7b", 46702792704, 12879925248},
                  {"mixtral-8x22b", 140630071296, 39161468928}};
  MLIRContext context;
  for (const Expected &e : expected) {
    ModelConfig config = preset(e.preset);
    EXPECT_EQ(config.family, ModelFamily::Mixtral);
    EXPECT_EQ(countParameters(config, GenerationMode::Prefill), e.total);
    EXPECT_EQ(countActiveParameters(config, GenerationMode::Prefill), e.active);
    config.seq = 8;
    OwningOpRef<ModuleOp> module =
        buildModel(&context, config, GenerationMode::Prefill);
    ASSERT_TRUE(succeeded(verify(*module)));
    ParameterSummary summary = summarizeParameters(*module);
    EXPECT_EQ(summary.params, e.total) << e.preset;
    ASSERT_TRUE(summary.mixture.has_value());
    EXPECT_EQ(summary.mixture->activeParams, e.active) << e.preset;
    // gate, up and down of every layer's experts.
    EXPECT_EQ(countExpertMatmuls(*module), 3 * config.layers);
    EXPECT_EQ(summary.mixture->expertParams,
              config.layers * 8 * 3 * config.hidden * config.ffn);
  }
  // A dense model has no mixture summary.
  ModelConfig dense = preset("llama-2-7b");
  dense.layers = 1;
  dense.seq = 8;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, dense, GenerationMode::Prefill);
  EXPECT_FALSE(summarizeParameters(*module).mixture.has_value());
}

// Qwen/Qwen1.5-MoE-A2.7B's config.json: 60 experts 1408 wide, 4 per token,
// not renormalized, a 5632-wide shared expert with a sigmoid gate.
constexpr const char *kQwenMoeConfig = R"({
  "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151643,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 5632, "max_position_embeddings": 8192,
  "max_window_layers": 21, "model_type": "qwen2_moe",
  "moe_intermediate_size": 1408, "norm_topk_prob": false,
  "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
  "num_hidden_layers": 24, "num_key_value_heads": 16,
  "output_router_logits": false, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "shared_expert_intermediate_size": 5632, "sliding_window": 32768,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

// By hand: per layer q, k, v, o 4·2048² + q/k/v biases 3·2048 = 16,783,360,
// router 2048·60 = 122,880, experts 60·3·2048·1408 = 519,045,120, shared
// expert 3·2048·5632 = 34,603,008 and its gate 2048, norms 4096:
// 570,560,512; × 24 + untied embeddings 2·151936·2048 + 2048 =
// 14,315,784,192 (14.3B). Active: 4 experts, 34,603,008 a layer, for
// 86,118,400 a layer and 2,689,173,504 in all (the "A2.7B").
TEST(ModelGenTest, Qwen2MoeConfigCountsTheSharedExpertAndActiveParameters) {
  ModelConfig qwen = parseConfig(kQwenMoeConfig);
  EXPECT_EQ(qwen.family, ModelFamily::Qwen2Moe);
  EXPECT_TRUE(qwen.warnings.empty());
  EXPECT_TRUE(qwen.trainingWarnings.empty());
  EXPECT_FALSE(qwen.normalizeTopK);
  EXPECT_TRUE(qwen.qkvBias);
  EXPECT_EQ(qwen.sharedExpertFfn, 5632);
  EXPECT_EQ(countParameters(qwen, GenerationMode::Prefill), 14315784192);
  EXPECT_EQ(countActiveParameters(qwen, GenerationMode::Prefill), 2689173504);
  EXPECT_EQ(builtParameters(qwen), 14315784192);
  // The gating is not renormalized; the shared expert is gated by a sigmoid.
  qwen.layers = 1;
  qwen.seq = 4;
  MLIRContext context;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, qwen, GenerationMode::Train);
  ASSERT_TRUE(succeeded(verify(*module)));
  int gatings = 0, sigmoids = 0;
  module->walk([&](MoeGatingOp gating) {
    ++gatings;
    EXPECT_FALSE(gating.getNormalize());
    EXPECT_EQ(gating.getExpertsPerToken(), 4u);
  });
  module->walk([&](SigmoidOp) { ++sigmoids; });
  EXPECT_EQ(gatings, 1);
  EXPECT_EQ(sigmoids, 1);
  // decoder_sparse_step 2 and mlp_only_layers [3] leave layers 0, 2 and 3
  // dense of 4.
  qwen.layers = 4;
  qwen.sparseStep = 2;
  qwen.denseLayers = {3};
  module = buildModel(&context, qwen, GenerationMode::Prefill);
  EXPECT_EQ(countExpertMatmuls(*module), 3);
  EXPECT_EQ(summarizeParameters(*module).params,
            countParameters(qwen, GenerationMode::Prefill));
  // The router's auxiliary loss is a training term memwall does not build.
  ModelConfig withLoss = parseConfig(R"({
    "model_type": "mixtral", "hidden_size": 64, "intermediate_size": 96,
    "num_attention_heads": 4, "num_hidden_layers": 1, "vocab_size": 10,
    "max_position_embeddings": 16, "num_local_experts": 4,
    "num_experts_per_tok": 2, "output_router_logits": true,
    "router_aux_loss_coef": 0.02, "router_jitter_noise": 0.1})");
  EXPECT_TRUE(withLoss.warnings.empty());
  ASSERT_EQ(withLoss.trainingWarnings.size(), 2u);
  EXPECT_NE(withLoss.trainingWarnings[0].find("load-balancing loss"),
            std::string::npos);
}

TEST(ModelGenTest, MixtureOfExpertsErrorsNameTheFlag) {
  ModelConfig config = preset("mixtral-8x7b");
  config.expertsPerToken = 9;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--experts-per-token (9) must be at most --experts (8): a token "
            "is routed to distinct experts");
  config.expertsPerToken = 0;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "--experts-per-token must be positive, got 0");
  config.experts = 0;
  EXPECT_EQ(errorOf(validateModelConfig(config, GenerationMode::Prefill)),
            "mixtral is a mixture of experts: give --experts and "
            "--experts-per-token");
  ModelConfig gpt2 = preset("gpt2");
  gpt2.experts = 8;
  gpt2.expertsPerToken = 2;
  EXPECT_EQ(errorOf(validateModelConfig(gpt2, GenerationMode::Prefill)),
            "--experts: mixtures of experts are built on llama, qwen2, "
            "mixtral and qwen2_moe, not gpt2");
  ModelConfig llama = preset("llama-2-7b");
  llama.expertsPerToken = 2;
  EXPECT_EQ(errorOf(validateModelConfig(llama, GenerationMode::Prefill)),
            "--experts-per-token and --expert-ffn need --experts");
  ModelConfig lora = preset("mixtral-8x7b");
  lora.loraRank = 8;
  lora.loraTargets = {"q", "up"};
  EXPECT_EQ(errorOf(validateModelConfig(lora, GenerationMode::Train)),
            "--lora-targets: 'up' is an expert projection here; LoRA adapters "
            "on experts are not built (target q, k, v, o)");
  // From a config.json the message names its key.
  llvm::Expected<ModelConfig> parsed = parseHuggingFaceConfig(
      R"({"model_type": "mixtral", "hidden_size": 64,
          "intermediate_size": 96, "num_attention_heads": 4,
          "num_hidden_layers": 1, "vocab_size": 10,
          "max_position_embeddings": 16, "num_local_experts": 4,
          "num_experts_per_tok": 5})",
      "config.json");
  ASSERT_TRUE(static_cast<bool>(parsed));
  EXPECT_EQ(errorOf(validateModelConfig(*parsed, GenerationMode::Prefill)),
            "config.json: \"num_experts_per_tok\" (5) must be at most "
            "\"num_local_experts\" (4): a token is routed to distinct "
            "experts");
}
