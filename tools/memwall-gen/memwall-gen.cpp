//===- memwall-gen.cpp - generate memwall models
//---------------------------===//
//
//   memwall-gen --preset=llama-2-7b --mode=decode --kv-len=4095 -o model.mlir
//   memwall-gen --hf-config=config.json --seq=2048
//   memwall-gen --family=gpt2 --layers=2 --hidden=128 --heads=4 --ffn=512 \
//               --vocab=1000 --seq=64
//
//===----------------------------------------------------------------------===//

#include "memwall/ModelGen/ModelBuilder.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace memwall;
namespace cl = llvm::cl;

static cl::OptionCategory category("memwall-gen options");

static cl::opt<std::string> presetName("preset", cl::desc("Model preset"),
                                       cl::value_desc("name"),
                                       cl::cat(category));
static cl::opt<std::string>
    hfConfigPath("hf-config", cl::desc("Read a Hugging Face config.json"),
                 cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string>
    familyName("family", cl::desc("Model family: gpt2, llama or bert"),
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

#define SIZE_FLAG(VAR, NAME, DESC)                                             \
  static cl::opt<int64_t> VAR(NAME, cl::desc(DESC), cl::cat(category))
SIZE_FLAG(layers, "layers", "Transformer layers");
SIZE_FLAG(hidden, "hidden", "Hidden size (d_model)");
SIZE_FLAG(heads, "heads", "Attention heads");
SIZE_FLAG(kvHeads, "kv-heads", "Key/value heads (grouped-query attention)");
SIZE_FLAG(ffn, "ffn", "MLP inner size");
SIZE_FLAG(vocab, "vocab", "Vocabulary size");
SIZE_FLAG(seq, "seq", "Tokens per sequence (prefill, train)");
SIZE_FLAG(batch, "batch", "Sequences per step");
SIZE_FLAG(kvLen, "kv-len", "Cached tokens per sequence (decode)");
SIZE_FLAG(maxPositions, "max-positions", "Context length");
#undef SIZE_FLAG
static cl::opt<std::string> dtype("dtype", cl::desc("bf16, f16 or f32"),
                                  cl::cat(category));
static cl::opt<double> dropout("dropout",
                               cl::desc("Dropout rate in train mode"),
                               cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "memwall-gen") << message << "\n";
  return EXIT_FAILURE;
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
    auto buffer = llvm::MemoryBuffer::getFile(hfConfigPath, /*IsText=*/true);
    if (!buffer)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot read '" + hfConfigPath +
                                         "': " + buffer.getError().message());
    return parseHuggingFaceConfig((*buffer)->getBuffer(), hfConfigPath);
  }
  if (familyName.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "give --preset=NAME, --hf-config=FILE or --family=gpt2|llama|bert");
  ModelConfig config;
  config.name = familyName;
  config.batch = 1;
  return config;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "memwall model generator\n");

  if (listPresets) {
    for (llvm::StringRef name : getPresetNames())
      llvm::outs() << name << "\n";
    return EXIT_SUCCESS;
  }

  std::optional<GenerationMode> mode = symbolizeGenerationMode(modeName);
  if (!mode)
    return fail("unknown --mode '" + modeName +
                "'; valid modes: prefill, decode, train");
  llvm::Expected<ModelConfig> parsed = baseConfig();
  if (!parsed)
    return fail(llvm::toString(parsed.takeError()));
  ModelConfig config = std::move(*parsed);

  if (!familyName.empty()) {
    std::optional<ModelFamily> family = symbolizeModelFamily(familyName);
    if (!family)
      return fail("unknown --family '" + familyName +
                  "'; valid families: gpt2, llama, bert");
    if (presetName.empty() && hfConfigPath.empty()) {
      config.family = *family;
      config.tieEmbeddings = *family != ModelFamily::Llama;
      config.typeVocab = *family == ModelFamily::BERT ? 2 : 0;
      config.normEpsilon = *family == ModelFamily::BERT ? 1e-12 : 1e-5;
    } else if (*family != config.family) {
      return fail("--family=" + familyName + " contradicts the " +
                  stringifyModelFamily(config.family) + " model given");
    }
  }
  // Every knob overrides the preset or config.json.
  auto override = [](const cl::opt<int64_t> &flag, int64_t &field) {
    if (flag.getNumOccurrences())
      field = flag;
  };
  bool fromScratch = presetName.empty() && hfConfigPath.empty();
  // Without grouped-query attention in the starting point, changing --heads
  // changes the KV heads with it.
  bool groupedQuery = !fromScratch && config.kvHeads != config.heads;
  override(layers, config.layers);
  override(hidden, config.hidden);
  override(heads, config.heads);
  if (kvHeads.getNumOccurrences())
    config.kvHeads = kvHeads;
  else if (!groupedQuery)
    config.kvHeads = config.heads;
  override(ffn, config.ffn);
  override(vocab, config.vocab);
  override(batch, config.batch);
  override(seq, config.seq);
  override(maxPositions, config.maxPositions);
  // A model from scratch is as long as the step asks for.
  if (fromScratch && !maxPositions.getNumOccurrences())
    config.maxPositions = seq.getNumOccurrences() ? config.seq
                          : kvLen.getNumOccurrences()
                              ? static_cast<int64_t>(kvLen) + 1
                              : 0;
  if (fromScratch && !seq.getNumOccurrences())
    config.seq = config.maxPositions;
  // The cache defaults to one token short of the sequence.
  if (kvLen.getNumOccurrences())
    config.kvLen = kvLen;
  else if (seq.getNumOccurrences())
    config.kvLen = config.seq - 1;
  if (dtype.getNumOccurrences())
    config.dtype = dtype;
  if (dropout.getNumOccurrences())
    config.dropout = dropout;

  if (llvm::Error error = validateModelConfig(config, *mode))
    return fail(llvm::toString(std::move(error)));

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModel(&context, config, *mode);
  if (failed(mlir::verify(*module)))
    return fail("the generated module does not verify (a memwall-gen bug)");

  // Written through a temporary file: a failure leaves no partial model.
  if (llvm::Error error =
          llvm::writeToOutput(outputPath, [&](llvm::raw_ostream &os) {
            module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
            return llvm::Error::success();
          }))
    return fail("cannot write '" + outputPath +
                "': " + llvm::toString(std::move(error)));
  return EXIT_SUCCESS;
}
