//===- memwall-gen.cpp - generate memwall models --------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
//   memwall-gen --preset=llama-2-7b --mode=decode --kv-len=4095 -o model.mlir
//   memwall-gen --hf-config=config.json --seq=2048
//   memwall-gen --family=gpt2 --layers=2 --hidden=128 --heads=4 --ffn=512 \
//               --vocab=1000 --seq=64
//
//===----------------------------------------------------------------------===//

#include "memwall/ModelGen/ModelBuilder.h"
#include "memwall/Support/InputLimits.h"
#include "memwall/Support/OutputFile.h"
#include "memwall/Support/Version.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <optional>
#include <type_traits>

using namespace memwall;
namespace cl = llvm::cl;

static cl::OptionCategory category("memwall-gen options");

static cl::opt<std::string> presetName("preset", cl::desc("Model preset"),
                                       cl::value_desc("name"),
                                       cl::cat(category));
static cl::opt<std::string>
    hfConfigPath("hf-config", cl::desc("Read a Hugging Face config.json"),
                 cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> familyName(
    "family",
    cl::desc("Model family: gpt2, llama, qwen2, mixtral, qwen2_moe or bert"),
    cl::value_desc("name"), cl::cat(category));
static cl::opt<std::string> modeName("mode",
                                     cl::desc("prefill, decode or train"),
                                     cl::init("prefill"), cl::cat(category));
static cl::opt<bool> listPresets("list-presets",
                                 cl::desc("Print the preset names and exit"),
                                 cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::desc("bf16, f16 or f32"),
                                  cl::cat(category));
static cl::opt<std::string> baseDtypeFlag(
    "base-dtype",
    cl::desc("Storage of the decoder projections' weights: nf4 (QLoRA's "
             "4-bit NormalFloat, double-quantized, frozen; llama, qwen2)"),
    cl::value_desc("nf4"), cl::cat(category));

// Numeric knobs are read as text and converted by readKnobs(), so that a
// malformed number is reported like every other error (llvm::cl would print
// its own message).
#define NUMBER_FLAG(VAR, NAME, DESC)                                           \
  static cl::opt<std::string> VAR(NAME, cl::desc(DESC), cl::value_desc("n"),   \
                                  cl::cat(category))
NUMBER_FLAG(layersFlag, "layers", "Transformer layers");
NUMBER_FLAG(hiddenFlag, "hidden", "Hidden size (d_model)");
NUMBER_FLAG(headsFlag, "heads", "Attention heads");
NUMBER_FLAG(kvHeadsFlag, "kv-heads",
            "Key/value heads (grouped-query attention)");
NUMBER_FLAG(ffnFlag, "ffn", "MLP inner size");
NUMBER_FLAG(vocabFlag, "vocab", "Vocabulary size");
NUMBER_FLAG(seqFlag, "seq", "Tokens per sequence (prefill, train)");
NUMBER_FLAG(batchFlag, "batch", "Sequences per step");
NUMBER_FLAG(kvLenFlag, "kv-len", "Cached tokens per sequence (decode)");
NUMBER_FLAG(maxPositionsFlag, "max-positions", "Context length");
NUMBER_FLAG(dropoutFlag, "dropout", "Dropout rate in train mode");
NUMBER_FLAG(headDimFlag, "head-dim",
            "Size of one attention head when not --hidden / --heads "
            "(llama, qwen2)");
NUMBER_FLAG(loraFlag, "lora",
            "LoRA rank: adapters on --lora-targets, every base weight frozen "
            "(llama, qwen2)");
NUMBER_FLAG(loraAlphaFlag, "lora-alpha",
            "LoRA alpha: the adapters' output is scaled by alpha / rank "
            "(default 8)");
NUMBER_FLAG(slidingWindowFlag, "sliding-window",
            "Tokens a query attends to, itself included (llama, qwen2); a "
            "decode step's cache holds the window");
NUMBER_FLAG(expertsFlag, "experts",
            "Experts of each mixture-of-experts MLP (llama, qwen2, mixtral, "
            "qwen2_moe)");
NUMBER_FLAG(expertsPerTokenFlag, "experts-per-token",
            "Experts each token is routed to (top-k)");
NUMBER_FLAG(expertFfnFlag, "expert-ffn",
            "Inner size of each expert's MLP (default --ffn)");
#undef NUMBER_FLAG
static cl::opt<std::string> loraTargetsFlag(
    "lora-targets",
    cl::desc("Projections that get LoRA adapters, comma-separated: q, k, v, "
             "o, gate, up, down (default q,v)"),
    cl::value_desc("list"), cl::init("q,v"), cl::cat(category));
static cl::opt<bool> blocksOnlyFlag(
    "blocks-only",
    cl::desc("GPT-2: the transformer blocks alone on a hidden-states input "
             "(no embeddings, final norm or head); the train loss is "
             "mean(out^2)"),
    cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "memwall-gen") << message << "\n";
  return EXIT_FAILURE;
}

namespace {
/// The numeric knobs given on the command line (std::nullopt: not given).
struct Knobs {
  std::optional<int64_t> layers, hidden, heads, kvHeads, ffn, vocab, seq, batch,
      kvLen, maxPositions, headDim, slidingWindow, lora, experts,
      expertsPerToken, expertFfn;
  std::optional<double> dropout, loraAlpha;
};
} // namespace

/// Converts `flag` into `knob` when it was given; the first malformed value
/// is kept in `error`.
template <typename Number>
static void readKnob(const cl::opt<std::string> &flag,
                     std::optional<Number> &knob, std::string &error) {
  if (!flag.getNumOccurrences() || !error.empty())
    return;
  llvm::StringRef text = llvm::StringRef(flag).trim();
  Number value;
  bool malformed;
  if constexpr (std::is_integral_v<Number>)
    malformed = text.getAsInteger(10, value);
  else
    malformed = text.getAsDouble(value);
  if (malformed)
    error = ("--" + flag.ArgStr + " must be " +
             (std::is_integral_v<Number> ? "an integer" : "a number") +
             ", got '" + flag + "'")
                .str();
  else
    knob = value;
}

static llvm::Expected<Knobs> readKnobs() {
  Knobs knobs;
  std::string error;
  readKnob(layersFlag, knobs.layers, error);
  readKnob(hiddenFlag, knobs.hidden, error);
  readKnob(headsFlag, knobs.heads, error);
  readKnob(kvHeadsFlag, knobs.kvHeads, error);
  readKnob(ffnFlag, knobs.ffn, error);
  readKnob(vocabFlag, knobs.vocab, error);
  readKnob(seqFlag, knobs.seq, error);
  readKnob(batchFlag, knobs.batch, error);
  readKnob(kvLenFlag, knobs.kvLen, error);
  readKnob(maxPositionsFlag, knobs.maxPositions, error);
  readKnob(dropoutFlag, knobs.dropout, error);
  readKnob(headDimFlag, knobs.headDim, error);
  readKnob(slidingWindowFlag, knobs.slidingWindow, error);
  readKnob(loraFlag, knobs.lora, error);
  readKnob(loraAlphaFlag, knobs.loraAlpha, error);
  readKnob(expertsFlag, knobs.experts, error);
  readKnob(expertsPerTokenFlag, knobs.expertsPerToken, error);
  readKnob(expertFfnFlag, knobs.expertFfn, error);
  if (!error.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  return knobs;
}

/// The starting configuration: a preset, an HF config, or a bare family.
static llvm::Expected<ModelConfig> baseConfig() {
  int sources = !presetName.empty() + !hfConfigPath.empty();
  if (sources > 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "give either --preset or --hf-config");
  if (!presetName.empty())
    return lookupPreset(presetName);
  if (!hfConfigPath.empty()) {
    llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        readTextInput(hfConfigPath, "config", kMaxJSONInputBytes);
    if (!buffer)
      return buffer.takeError();
    return parseHuggingFaceConfig((*buffer)->getBuffer(), hfConfigPath);
  }
  if (familyName.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "give --preset=NAME, --hf-config=FILE or "
                                   "--family=gpt2|llama|qwen2|mixtral|"
                                   "qwen2_moe|bert");
  ModelConfig config;
  config.name = familyName;
  config.batch = 1;
  return config;
}

static void warn(const llvm::Twine &message) {
  llvm::WithColor::warning(llvm::errs(), "memwall-gen") << message << "\n";
}

/// A sequence length defaulted from a context longer than this is worth a
/// word: Llama-3.1's 131,072 tokens make a 1 TB step nobody runs.
static constexpr int64_t kLongContext = 8192;

/// Says what the generated step leaves out of the model it was asked for,
/// and which sizes it took by default that a user may not mean.
static void warnAboutTheStep(const ModelConfig &config, GenerationMode mode,
                             const Knobs &knobs) {
  for (const std::string &message : config.warnings)
    warn(message);
  if (mode == GenerationMode::Train && !knobs.dropout)
    for (const std::string &message : config.trainingWarnings)
      warn(message);
  bool decode = mode == GenerationMode::Decode;
  bool defaulted = decode ? !knobs.kvLen && !knobs.seq : !knobs.seq;
  if (defaulted && config.maxPositions > kLongContext)
    warn(llvm::formatv("{0} defaults to the model's context, {1} tokens ({2}); "
                       "give {0} for the step you run",
                       decode ? "--kv-len" : "--seq", config.maxPositions,
                       config.names.maxPositions));
  // Prefill and train steps carry the window on their attention.
  if (decode && config.slidingWindow && config.kvLen >= config.slidingWindow &&
      config.slidingWindowFirstLayer < config.layers)
    llvm::WithColor::remark(llvm::errs(), "memwall-gen") << llvm::formatv(
        "the sliding window ({0} tokens) bounds the KV cache: "
        "each sliding layer keeps the last {1} of the {2} "
        "cached tokens (a rolling buffer)\n",
        config.slidingWindow, config.slidingWindow - 1, config.kvLen);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  memwall::setVersionPrinter();
  std::string flagErrors;
  llvm::raw_string_ostream flagErrorStream(flagErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, "memwall model generator\n",
                                   &flagErrorStream)) {
    // llvm::cl says "memwall-gen: <problem>", then hints such as "Did you
    // mean"; the problem becomes this tool's error line. (A few problems,
    // such as a missing value, it prints to stderr itself.)
    if (flagErrors.empty())
      return EXIT_FAILURE;
    auto [problem, hints] = llvm::StringRef(flagErrors).split('\n');
    problem.consume_front(llvm::sys::path::filename(argv[0]).str() + ": ");
    fail(problem);
    llvm::errs() << hints;
    return EXIT_FAILURE;
  }

  if (listPresets) {
    for (llvm::StringRef name : getPresetNames())
      llvm::outs() << name << "\n";
    return EXIT_SUCCESS;
  }

  std::optional<GenerationMode> mode = symbolizeGenerationMode(modeName);
  if (!mode)
    return fail("unknown --mode '" + modeName +
                "'; valid modes: prefill, decode, train");
  llvm::Expected<Knobs> knobs = readKnobs();
  if (!knobs)
    return fail(llvm::toString(knobs.takeError()));
  // Flags that size another mode's step are accepted, but say so.
  if (knobs->kvLen && *mode != GenerationMode::Decode)
    llvm::WithColor::warning(llvm::errs(), "memwall-gen")
        << "--kv-len has no effect with --mode=" << modeName
        << " (it sizes the KV cache of --mode=decode)\n";
  if (knobs->dropout && *mode != GenerationMode::Train)
    llvm::WithColor::warning(llvm::errs(), "memwall-gen")
        << "--dropout has no effect with --mode=" << modeName
        << " (dropout is applied in --mode=train)\n";
  llvm::Expected<ModelConfig> parsed = baseConfig();
  if (!parsed)
    return fail(llvm::toString(parsed.takeError()));
  ModelConfig config = std::move(*parsed);

  if (!familyName.empty()) {
    std::optional<ModelFamily> family = symbolizeModelFamily(familyName);
    if (!family)
      return fail("unknown --family '" + familyName +
                  "'; valid families: gpt2, llama, qwen2, mixtral, "
                  "qwen2_moe, bert");
    if (presetName.empty() && hfConfigPath.empty()) {
      config.family = *family;
      applyFamilyDefaults(config);
    } else if (*family != config.family) {
      return fail("--family=" + familyName + " contradicts the " +
                  stringifyModelFamily(config.family) + " model given");
    }
  }
  // Every knob overrides the preset or config.json, and messages about
  // it name the flag.
  const ConfigFieldNames flagNames;
  auto override = [&](std::optional<int64_t> knob, int64_t &field,
                      std::string ConfigFieldNames::*name) {
    if (!knob)
      return;
    field = *knob;
    config.names.*name = flagNames.*name;
  };
  bool fromScratch = presetName.empty() && hfConfigPath.empty();
  // Without grouped-query attention in the starting point, changing --heads
  // changes the KV heads with it.
  bool groupedQuery = !fromScratch && config.kvHeads != config.heads;
  override(knobs->layers, config.layers, &ConfigFieldNames::layers);
  override(knobs->hidden, config.hidden, &ConfigFieldNames::hidden);
  override(knobs->heads, config.heads, &ConfigFieldNames::heads);
  if (!knobs->kvHeads && !groupedQuery) {
    config.kvHeads = config.heads;
    config.names.kvHeads = config.names.heads;
  }
  override(knobs->kvHeads, config.kvHeads, &ConfigFieldNames::kvHeads);
  override(knobs->ffn, config.ffn, &ConfigFieldNames::ffn);
  override(knobs->vocab, config.vocab, &ConfigFieldNames::vocab);
  override(knobs->batch, config.batch, &ConfigFieldNames::batch);
  override(knobs->seq, config.seq, &ConfigFieldNames::seq);
  override(knobs->maxPositions, config.maxPositions,
           &ConfigFieldNames::maxPositions);
  override(knobs->headDim, config.explicitHeadDim, &ConfigFieldNames::headDim);
  if (knobs->slidingWindow)
    config.slidingWindowFirstLayer = 0;
  override(knobs->slidingWindow, config.slidingWindow,
           &ConfigFieldNames::slidingWindow);
  override(knobs->experts, config.experts, &ConfigFieldNames::experts);
  override(knobs->expertsPerToken, config.expertsPerToken,
           &ConfigFieldNames::expertsPerToken);
  override(knobs->expertFfn, config.expertFfn, &ConfigFieldNames::expertFfn);
  // A model from scratch is as long as the step asks for: its sequence, or
  // its cache plus the new token. (Out-of-range sizes are left for
  // validateModelConfig to report.)
  int64_t maxSize = std::numeric_limits<int64_t>::max();
  if (fromScratch && !knobs->maxPositions)
    config.maxPositions = knobs->seq ? config.seq
                          : knobs->kvLen && *knobs->kvLen < maxSize
                              ? *knobs->kvLen + 1
                              : 0;
  if (fromScratch && !knobs->seq)
    config.seq = config.maxPositions;
  // The cache defaults to one token short of the sequence.
  if (knobs->kvLen)
    config.kvLen = *knobs->kvLen;
  else if (knobs->seq)
    config.kvLen = config.seq > 0 ? config.seq - 1 : 0;
  if (dtype.getNumOccurrences())
    config.dtype = dtype;
  if (baseDtypeFlag.getNumOccurrences())
    config.baseDtype = baseDtypeFlag;
  if (knobs->dropout)
    config.dropout = *knobs->dropout;
  if (knobs->lora) {
    if (*knobs->lora <= 0)
      return fail(
          llvm::formatv("--lora must be positive, got {0}", *knobs->lora));
    config.loraRank = *knobs->lora;
    config.loraTargets.clear();
    for (llvm::StringRef target : llvm::split(loraTargetsFlag, ','))
      config.loraTargets.push_back(target.trim().str());
    if (knobs->loraAlpha)
      config.loraAlpha = *knobs->loraAlpha;
  } else if (knobs->loraAlpha || loraTargetsFlag.getNumOccurrences()) {
    return fail("--lora-alpha and --lora-targets need --lora=RANK");
  }
  if (blocksOnlyFlag) {
    if (config.family != ModelFamily::GPT2 || *mode == GenerationMode::Decode)
      return fail("--blocks-only generates GPT-2's blocks in prefill or "
                  "train mode");
    config.blocksOnly = true;
  }

  if (llvm::Error error = validateModelConfig(config, *mode))
    return fail(llvm::toString(std::move(error)));
  warnAboutTheStep(config, *mode, *knobs);

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModel(&context, config, *mode);
  if (failed(mlir::verify(*module)))
    return fail("the generated module does not verify (a memwall-gen bug)");

  // A failure leaves no partial model and an old one intact.
  if (llvm::Error error =
          memwall::writeOutputFile(outputPath, "", [&](llvm::raw_ostream &os) {
            module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
          }))
    return fail(llvm::toString(std::move(error)));
  return EXIT_SUCCESS;
}
