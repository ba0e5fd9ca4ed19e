//===- ModelGenTest.cpp - presets, configs and generated modules ----------===//

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
// bert-base/large-uncased with pooler) and GPT-3's "175B" (Brown et al. 2020).
TEST(ModelGenTest, PresetParameterCountsMatchPublishedFigures) {
  struct Published {
    const char *preset;
    int64_t params;
  } published[] = {
      {"gpt2", 124439808},          {"gpt2-medium", 354823168},
      {"gpt2-large", 774030080},    {"gpt2-xl", 1557611200},
      {"llama-2-7b", 6738415616},   {"llama-2-13b", 13015864320},
      {"llama-2-70b", 68976648192}, {"llama-3-8b", 8030261248},
      {"bert-base", 109482240},     {"bert-large", 335141888},
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

TEST(ModelGenTest, HuggingFaceConfigsReadEachFamily) {
  llvm::Expected<ModelConfig> gpt2 = parseHuggingFaceConfig(
      R"({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12,
          "n_inner": null, "n_positions": 1024, "vocab_size": 50257})",
      "gpt2.json");
  ASSERT_TRUE(static_cast<bool>(gpt2)) << llvm::toString(gpt2.takeError());
  EXPECT_EQ(gpt2->ffn, 3072);
  EXPECT_EQ(countParameters(*gpt2, GenerationMode::Prefill), 124439808);

  llvm::Expected<ModelConfig> llama = parseHuggingFaceConfig(
      R"({"_name_or_path": "meta-llama/Meta-Llama-3-8B", "model_type": "llama",
          "hidden_size": 4096, "intermediate_size": 14336,
          "num_attention_heads": 32, "num_key_value_heads": 8,
          "num_hidden_layers": 32, "vocab_size": 128256,
          "max_position_embeddings": 8192, "rope_theta": 500000.0,
          "rms_norm_eps": 1e-05, "tie_word_embeddings": false})",
      "llama.json");
  ASSERT_TRUE(static_cast<bool>(llama)) << llvm::toString(llama.takeError());
  EXPECT_EQ(llama->name, "meta-llama/Meta-Llama-3-8B");
  EXPECT_EQ(llama->kvHeads, 8);
  EXPECT_EQ(llama->ropeTheta, 500000.0);
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
            "bert)");
  EXPECT_EQ(parseError(R"({"model_type": "llama", "hidden_size": 64})"),
            "c.json: \"num_hidden_layers\" is required");
  EXPECT_EQ(parseError(R"({"model_type": "llama", "hidden_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 4,
                     "intermediate_size": 128, "vocab_size": 10,
                     "max_position_embeddings": 8, "head_dim": 32})"),
            "c.json: \"head_dim\" must equal hidden_size / num_attention_heads "
            "(other head sizes are not supported)");
  EXPECT_EQ(parseError(R"({"model_type": "gpt2", "n_layer": -1})"),
            "c.json: \"n_layer\" must be a positive integer");
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
}
