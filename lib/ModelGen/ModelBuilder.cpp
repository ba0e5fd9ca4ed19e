//===- ModelBuilder.cpp - memwall IR for GPT-2, Llama, Qwen2 and BERT -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/ModelGen/ModelBuilder.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

using namespace mlir;
using namespace memwall;

namespace {
/// Builds one function: arguments are appended as the body asks for them,
/// and the signature is fixed up at the end.
class ModelBuilder {
public:
  ModelBuilder(MLIRContext *ctx, const ModelConfig &config, GenerationMode mode)
      : ctx(ctx), builder(ctx), config(config), mode(mode) {
    if (config.dtype == "f32")
      dtype = builder.getF32Type();
    else if (config.dtype == "f16")
      dtype = builder.getF16Type();
    else
      dtype = builder.getBF16Type();
    tokens = mode == GenerationMode::Decode ? 1 : config.seq;
  }

  OwningOpRef<ModuleOp> build();

private:
  Location loc(const Twine &name) {
    return NameLoc::get(builder.getStringAttr(name));
  }

  Value argument(ArrayRef<int64_t> shape, Type elementType, ArgKind kind,
                 const Twine &name, bool frozen = false) {
    argKinds.push_back(kind);
    argFrozen.push_back(frozen);
    return body->addArgument(RankedTensorType::get(shape, elementType),
                             loc(name));
  }
  /// A weight of the model; with LoRA adapters the base is frozen.
  Value weight(ArrayRef<int64_t> shape, const Twine &name) {
    return argument(shape, dtype, ArgKind::Weight, name,
                    /*frozen=*/config.loraRank > 0);
  }
  Value input(ArrayRef<int64_t> shape, Type elementType, const Twine &name) {
    return argument(shape, elementType, ArgKind::Input, name);
  }

  template <typename OpTy, typename... Args>
  Value create(const Twine &name, Args &&...args) {
    return OpTy::create(builder, loc(name), std::forward<Args>(args)...)
        .getResult();
  }

  /// x @ W (+ b) with W stored [in, out] as in GPT-2 and Hugging Face.
  Value linear(Value x, int64_t in, int64_t out, bool hasBias,
               const Twine &name) {
    Value w = weight({in, out}, name + ".weight");
    Value b = hasBias ? weight({out}, name + ".bias") : Value();
    return create<MatmulOp>(name, x, w, b, false, false);
  }

  /// A projection's [in, out] weight in QLoRA's NF4 (--base-dtype=nf4),
  /// as bitsandbytes stores it: i4 codes into the NF4 codebook, one absmax
  /// per 64 weights along `in`, the absmax quantized to i8 with one f32
  /// scale per 256 of them; all frozen, dequantized at use.
  Value nf4Weight(int64_t in, int64_t out, const Twine &name) {
    std::optional<std::pair<int64_t, int64_t>> scaleBlock =
        getNF4ScaleBlock(in, out); // validateModelConfig checked it
    auto [blockRows, blockColumns] = *scaleBlock;
    int64_t blocks = in / kNF4BlockSize;
    Type f32 = builder.getF32Type();
    Value codes = argument({in, out}, builder.getIntegerType(4),
                           ArgKind::Weight, name, /*frozen=*/true);
    Value absmaxCodes =
        argument({blocks, out}, builder.getIntegerType(8), ArgKind::Weight,
                 name + ".absmax", /*frozen=*/true);
    Value absmaxScales =
        argument({blocks / blockRows, out / blockColumns}, f32, ArgKind::Weight,
                 name + ".absmax_scales", /*frozen=*/true);
    Value absmax = create<DequantizeOp>(
        name + ".absmax.dequantized", RankedTensorType::get({blocks, out}, f32),
        absmaxCodes, absmaxScales,
        /*zeroPoints=*/Value(), /*codebook=*/nullptr);
    return create<DequantizeOp>(name + ".dequantized",
                                RankedTensorType::get({in, out}, dtype), codes,
                                absmax, /*zeroPoints=*/Value(),
                                builder.getDenseF32ArrayAttr(getNF4Codebook()));
  }

  /// linear() of a rotary family's projection `target` (q, k, v, o, gate,
  /// up, down), plus its LoRA adapter when targeted: (alpha / rank) ·
  /// (x A) B, A and B trained.
  Value projection(Value x, int64_t in, int64_t out, bool hasBias,
                   StringRef target, const Twine &name) {
    Value y;
    if (config.baseDtype == "nf4") {
      Value w = nf4Weight(in, out, name + ".weight");
      Value b = hasBias ? weight({out}, name + ".bias") : Value();
      y = create<MatmulOp>(name, x, w, b, false, false);
    } else {
      y = linear(x, in, out, hasBias, name);
    }
    if (!llvm::is_contained(config.loraTargets, target))
      return y;
    int64_t rank = config.loraRank;
    Value a = argument({in, rank}, dtype, ArgKind::Weight, name + ".lora_a");
    Value b = argument({rank, out}, dtype, ArgKind::Weight, name + ".lora_b");
    Value down =
        create<MatmulOp>(name + ".lora_a", x, a, Value(), false, false);
    Value up =
        create<MatmulOp>(name + ".lora_b", down, b, Value(), false, false);
    Value scaled = create<ScaleOp>(
        name + ".lora_scale", up,
        builder.getF64FloatAttr(config.loraAlpha / static_cast<double>(rank)));
    return create<AddOp>(name + ".lora", y, scaled);
  }

  /// A SwiGLU MLP `width` wide: down(silu(gate(x)) * up(x)).
  Value swigluMlp(Value x, int64_t width, bool hasBias, const Twine &name) {
    int64_t d = config.hidden;
    Value gate = projection(x, d, width, hasBias, "gate", name + ".gate");
    Value up = projection(x, d, width, hasBias, "up", name + ".up");
    Value act = create<SwigluOp>(name + ".swiglu", gate, up);
    return projection(act, width, d, hasBias, "down", name + ".down");
  }

  /// A mixture of SwiGLU experts (docs/moe.md): the router's softmax top-k
  /// picks each token's experts, each token slot runs through its expert,
  /// and the slots are summed weighted by the routing weights; Qwen2-MoE
  /// adds a shared expert scaled by a sigmoid gate.
  Value mixtureOfExperts(Value x, const Twine &name) {
    int64_t d = config.hidden, experts = config.experts;
    int64_t k = config.expertsPerToken, width = config.routedExpertFfn();
    Value logits = linear(x, d, experts, false, name + ".router");
    auto gating = MoeGatingOp::create(
        builder, loc(name + ".gating"), logits, builder.getI64IntegerAttr(k),
        config.normalizeTopK ? builder.getUnitAttr() : nullptr);
    Value indices = gating.getIndices();
    auto expert = [&](Value input, int64_t in, int64_t out, StringRef what) {
      Value w = weight({experts, in, out}, name + ".experts." + what);
      return create<ExpertMatmulOp>(name + ".experts." + what, input, w,
                                    indices, UnitAttr());
    };
    Value gate = expert(x, d, width, "gate");
    Value up = expert(x, d, width, "up");
    Value act = create<SwigluOp>(name + ".experts.swiglu", gate, up);
    Value down = expert(act, width, d, "down"); // [B, T, k, d]
    Value weights = create<ReshapeOp>(
        name + ".combine.weights", gating.getWeights(),
        builder.getDenseI64ArrayAttr({config.batch, tokens, k, 1}));
    Value weighted = create<MulOp>(name + ".combine.scale", down, weights);
    Value y = create<ReduceOp>(name + ".combine", ReduceKind::Sum, weighted,
                               ArrayRef<int64_t>{2}, false);
    if (!config.sharedExpertFfn)
      return y;
    Value shared =
        swigluMlp(x, config.sharedExpertFfn, false, name + ".shared_expert");
    Value gateLogit = linear(x, d, 1, false, name + ".shared_expert_gate");
    Value scale =
        create<SigmoidOp>(name + ".shared_expert_gate.sigmoid", gateLogit);
    return create<AddOp>(
        name + ".shared", y,
        create<MulOp>(name + ".shared_expert.scale", shared, scale));
  }

  Value layerNorm(Value x, const Twine &name) {
    Value w = weight({config.hidden}, name + ".weight");
    Value b = weight({config.hidden}, name + ".bias");
    return create<LayerNormOp>(name, x, w, b,
                               builder.getF64FloatAttr(config.normEpsilon));
  }

  Value rmsNorm(Value x, const Twine &name) {
    Value w = weight({config.hidden}, name + ".weight");
    return create<RmsNormOp>(name, x, w,
                             builder.getF64FloatAttr(config.normEpsilon));
  }

  Value dropout(Value x, const Twine &name) {
    if (mode != GenerationMode::Train || config.dropout == 0)
      return x;
    return create<DropoutOp>(name, x, builder.getF64FloatAttr(config.dropout),
                             builder.getI64IntegerAttr(dropoutSeed++));
  }

  /// [B, T, H*Dh] -> [B, H, T, Dh].
  Value splitHeads(Value x, int64_t heads, const Twine &name) {
    Value split =
        create<ReshapeOp>(name + ".split", x,
                          builder.getDenseI64ArrayAttr(
                              {config.batch, tokens, heads, config.headDim()}));
    return create<TransposeOp>(name + ".heads", split,
                               builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
  }

  /// [B, H, T, Dh] -> [B, T, H*Dh].
  Value mergeHeads(Value x, const Twine &name) {
    Value transposed = create<TransposeOp>(
        name + ".heads", x, builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
    return create<ReshapeOp>(name + ".merge", transposed,
                             builder.getDenseI64ArrayAttr(
                                 {config.batch, tokens, config.queryWidth()}));
  }

  /// Appends this step's keys or values to `layer`'s cache in decode mode.
  Value withCache(Value kv, int64_t layer, const Twine &name) {
    if (mode != GenerationMode::Decode)
      return kv;
    Value cache = argument({config.batch, config.kvHeads,
                            config.cachedTokens(layer), config.headDim()},
                           dtype, ArgKind::KVCache, name);
    Value appended = create<KVCacheAppendOp>(name + ".append", cache, kv);
    extraResults.push_back(appended);
    return appended;
  }

  Value attention(Value q, Value k, Value v, Value mask, bool causal,
                  const Twine &name, int64_t layer = -1) {
    // A sliding window matters where a query could see more keys than it
    // spans: prefill and train past the window (decode caches hold it).
    IntegerAttr window;
    if (layer >= 0 && config.slides(layer) && mode != GenerationMode::Decode &&
        config.seq > config.slidingWindow)
      window = builder.getI64IntegerAttr(config.slidingWindow);
    return create<AttentionOp>(name, q, k, v, mask, causal, FloatAttr(),
                               window);
  }

  Value residual(Value x, Value update, const Twine &name) {
    return create<AddOp>(name, x, update);
  }

  /// Cross-entropy of `logits` against a labels input.
  Value loss(Value logits) {
    Value labels =
        input({config.batch, tokens}, builder.getI64Type(), "labels");
    return create<CrossEntropyOp>("loss", logits, labels, LossReduction::Mean,
                                  IntegerAttr());
  }

  SmallVector<Value> buildGPT2();
  SmallVector<Value> buildLlama();
  SmallVector<Value> buildBERT();

  MLIRContext *ctx;
  OpBuilder builder;
  const ModelConfig &config;
  GenerationMode mode;
  Type dtype;
  int64_t tokens = 0;
  Block *body = nullptr;
  SmallVector<ArgKind> argKinds;
  SmallVector<bool> argFrozen;
  SmallVector<Value> extraResults;
  int64_t dropoutSeed = 0;
};
} // namespace

SmallVector<Value> ModelBuilder::buildGPT2() {
  int64_t d = config.hidden;
  Type i64 = builder.getI64Type();
  Value h, wte;
  if (config.blocksOnly) {
    h = input({config.batch, tokens, d}, dtype, "hidden");
  } else {
    Value tokenIds = input({config.batch, tokens}, i64, "tokens");
    Value positions = input({tokens}, i64, "positions");
    wte = weight({config.vocab, d}, "embed.tokens");
    Value wpe = weight({config.maxPositions, d}, "embed.positions");
    // One IR-creating call per statement keeps op order independent of the
    // compiler's argument evaluation order.
    Value tokenEmbeddings = create<EmbeddingOp>("embed.tokens", wte, tokenIds);
    Value positionEmbeddings =
        create<EmbeddingOp>("embed.positions", wpe, positions);
    h = create<AddOp>("embed", tokenEmbeddings, positionEmbeddings);
    h = dropout(h, "embed.dropout");
  }

  for (int64_t layer = 0; layer < config.layers; ++layer) {
    std::string prefix = "layers." + std::to_string(layer);
    std::string attn = prefix + ".attn";
    Value a = layerNorm(h, prefix + ".ln_1");
    Value qkv = linear(a, d, 3 * d, /*hasBias=*/true, attn + ".qkv");
    auto part = [&](int64_t index, const char *name) {
      Value slice = create<SliceOp>(
          attn + "." + name, qkv,
          builder.getDenseI64ArrayAttr({0, 0, index * d}),
          builder.getDenseI64ArrayAttr({config.batch, tokens, d}),
          DenseI64ArrayAttr());
      return splitHeads(slice, config.heads, attn + "." + name);
    };
    Value q = part(0, "q");
    Value k = withCache(part(1, "k"), layer, attn + ".k_cache");
    Value v = withCache(part(2, "v"), layer, attn + ".v_cache");
    Value o = mergeHeads(attention(q, k, v, Value(), true, attn), attn);
    o = dropout(linear(o, d, d, true, attn + ".proj"), attn + ".dropout");
    h = residual(h, o, attn + ".residual");

    std::string mlp = prefix + ".mlp";
    Value m = layerNorm(h, prefix + ".ln_2");
    m = linear(m, d, config.ffn, true, mlp + ".fc");
    m = create<GeluOp>(mlp + ".gelu", m, GeluApproximation::Tanh);
    m = dropout(linear(m, config.ffn, d, true, mlp + ".proj"),
                mlp + ".dropout");
    h = residual(h, m, mlp + ".residual");
  }
  if (config.blocksOnly) {
    if (mode != GenerationMode::Train)
      return {h};
    // mean(out²) in f32: a loss that reads every element of the output.
    Value wide =
        create<CastOp>("loss.cast", h, TypeAttr::get(builder.getF32Type()));
    Value square = create<MulOp>("loss.square", wide, wide);
    return {create<ReduceOp>("loss", ReduceKind::Mean, square,
                             ArrayRef<int64_t>{0, 1, 2},
                             /*keep_dims=*/false)};
  }
  h = layerNorm(h, "ln_f");
  // Tied head: logits = h @ wte^T.
  Value logits = create<MatmulOp>("lm_head", h, wte, Value(), false, true);
  if (mode == GenerationMode::Train)
    return {loss(logits)};
  return {logits};
}

SmallVector<Value> ModelBuilder::buildLlama() {
  int64_t d = config.hidden;
  int64_t qWidth = config.queryWidth(), kvWidth = config.kvWidth();
  Type i64 = builder.getI64Type();
  Value tokenIds = input({config.batch, tokens}, i64, "tokens");
  Value positions = input({tokens}, i64, "positions");
  Value embed = weight({config.vocab, d}, "embed.tokens");
  Value h = create<EmbeddingOp>("embed.tokens", embed, tokenIds);
  h = dropout(h, "embed.dropout");
  FloatAttr theta = builder.getF64FloatAttr(config.ropeTheta);
  DenseF64ArrayAttr ropeScaling;
  if (!config.llama3RopeScaling.empty())
    ropeScaling = builder.getDenseF64ArrayAttr(config.llama3RopeScaling);

  for (int64_t layer = 0; layer < config.layers; ++layer) {
    std::string prefix = "layers." + std::to_string(layer);
    std::string attn = prefix + ".attn";
    Value a = rmsNorm(h, prefix + ".attn_norm");
    Value q =
        splitHeads(projection(a, d, qWidth, config.qkvBias, "q", attn + ".q"),
                   config.heads, attn + ".q");
    Value k =
        splitHeads(projection(a, d, kvWidth, config.qkvBias, "k", attn + ".k"),
                   config.kvHeads, attn + ".k");
    Value v =
        splitHeads(projection(a, d, kvWidth, config.qkvBias, "v", attn + ".v"),
                   config.kvHeads, attn + ".v");
    q = create<RopeOp>(attn + ".q.rope", q, positions, theta, UnitAttr(),
                       ropeScaling);
    k = create<RopeOp>(attn + ".k.rope", k, positions, theta, UnitAttr(),
                       ropeScaling);
    k = withCache(k, layer, attn + ".k_cache");
    v = withCache(v, layer, attn + ".v_cache");
    Value o = mergeHeads(attention(q, k, v, Value(), true, attn, layer), attn);
    o = dropout(projection(o, qWidth, d, config.outputBias, "o", attn + ".o"),
                attn + ".dropout");
    h = residual(h, o, attn + ".residual");

    std::string mlp = prefix + ".mlp";
    Value m = rmsNorm(h, prefix + ".mlp_norm");
    m = config.isSparse(layer) ? mixtureOfExperts(m, mlp)
                               : swigluMlp(m, config.ffn, config.mlpBias, mlp);
    m = dropout(m, mlp + ".dropout");
    h = residual(h, m, mlp + ".residual");
  }
  h = rmsNorm(h, "norm");
  // The head's weight has the embedding's layout [V, D] (Hugging Face's
  // lm_head.weight), tied or not: a chunk of the vocabulary is a run of its
  // rows (the fused linear cross-entropy's GEMMs read them in place).
  Value head = config.tieEmbeddings
                   ? embed
                   : weight({config.vocab, d}, "lm_head.weight");
  Value logits = create<MatmulOp>("lm_head", h, head, Value(), false, true);
  if (mode == GenerationMode::Train)
    return {loss(logits)};
  return {logits};
}

SmallVector<Value> ModelBuilder::buildBERT() {
  int64_t d = config.hidden;
  Type i64 = builder.getI64Type();
  Value tokenIds = input({config.batch, tokens}, i64, "tokens");
  Value tokenTypes = input({config.batch, tokens}, i64, "token_type_ids");
  Value positions = input({tokens}, i64, "positions");
  // Additive mask: 0 for tokens to attend to, a large negative for padding.
  Value mask = input({config.batch, 1, 1, tokens}, dtype, "attention_mask");
  Value words = weight({config.vocab, d}, "embed.words");
  Value positionTable = weight({config.maxPositions, d}, "embed.positions");
  Value typeTable = weight({config.typeVocab, d}, "embed.token_types");
  Value h = create<EmbeddingOp>("embed.words", words, tokenIds);
  Value positionEmbeddings =
      create<EmbeddingOp>("embed.positions", positionTable, positions);
  h = create<AddOp>("embed.add_positions", h, positionEmbeddings);
  Value typeEmbeddings =
      create<EmbeddingOp>("embed.token_types", typeTable, tokenTypes);
  h = create<AddOp>("embed.add_types", h, typeEmbeddings);
  h = dropout(layerNorm(h, "embed.norm"), "embed.dropout");

  for (int64_t layer = 0; layer < config.layers; ++layer) {
    std::string prefix = "layers." + std::to_string(layer);
    std::string attn = prefix + ".attn";
    auto project = [&](const char *name) {
      return splitHeads(linear(h, d, d, true, attn + "." + name), config.heads,
                        attn + "." + name);
    };
    Value q = project("q"), k = project("k"), v = project("v");
    Value o = mergeHeads(attention(q, k, v, mask, false, attn), attn);
    o = dropout(linear(o, d, d, true, attn + ".out"), attn + ".dropout");
    h = layerNorm(residual(h, o, attn + ".residual"), attn + ".norm");

    std::string mlp = prefix + ".mlp";
    Value m = linear(h, d, config.ffn, true, mlp + ".fc");
    m = create<GeluOp>(mlp + ".gelu", m, GeluApproximation::Erf);
    m = dropout(linear(m, config.ffn, d, true, mlp + ".out"), mlp + ".dropout");
    h = layerNorm(residual(h, m, mlp + ".residual"), mlp + ".norm");
  }

  if (mode == GenerationMode::Train) {
    // Masked-LM head: transform, then the tied word embedding with its own
    // bias, fused into the matmul rather than a pass over the logits.
    Value t = linear(h, d, d, true, "mlm.transform");
    t = create<GeluOp>("mlm.gelu", t, GeluApproximation::Erf);
    t = layerNorm(t, "mlm.norm");
    Value decoderBias = weight({config.vocab}, "mlm.decoder.bias");
    Value logits =
        create<MatmulOp>("mlm.decoder", t, words, decoderBias, false, true);
    return {loss(logits)};
  }

  // Pooler: tanh(W h[CLS] + b).
  Value cls = create<SliceOp>(
      "pooler.cls", h, builder.getDenseI64ArrayAttr({0, 0, 0}),
      builder.getDenseI64ArrayAttr({config.batch, 1, d}), DenseI64ArrayAttr());
  cls = create<ReshapeOp>("pooler.cls", cls,
                          builder.getDenseI64ArrayAttr({config.batch, d}));
  Value pooled =
      create<TanhOp>("pooler.tanh", linear(cls, d, d, true, "pooler.dense"));
  return {h, pooled};
}

OwningOpRef<ModuleOp> ModelBuilder::build() {
  std::string moduleName = config.name;
  for (char &c : moduleName)
    if (!llvm::isAlnum(c))
      c = '_';
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(loc(config.name), StringRef(moduleName));
  builder.setInsertionPointToEnd(module->getBody());
  const char *functionName = mode == GenerationMode::Prefill  ? "prefill"
                             : mode == GenerationMode::Decode ? "decode"
                                                              : "train_step";
  auto function = func::FuncOp::create(builder, loc(functionName), functionName,
                                       builder.getFunctionType({}, {}));
  body = function.addEntryBlock();
  builder.setInsertionPointToStart(body);

  SmallVector<Value> results;
  switch (config.family) {
  case ModelFamily::GPT2:
    results = buildGPT2();
    break;
  case ModelFamily::Llama:
  case ModelFamily::Qwen2:
  case ModelFamily::Mixtral:
  case ModelFamily::Qwen2Moe:
    results = buildLlama();
    break;
  case ModelFamily::BERT:
    results = buildBERT();
    break;
  }
  results.append(extraResults.begin(), extraResults.end());
  func::ReturnOp::create(builder, loc("return"), results);

  function.setFunctionType(builder.getFunctionType(
      body->getArgumentTypes(), ValueRange(results).getTypes()));
  // All at once: setArgAttr per argument would intern a new array of every
  // argument's attributes each time, quadratic in the layer count.
  SmallVector<DictionaryAttr> argAttrs;
  argAttrs.reserve(argKinds.size());
  for (auto [kind, frozen] : llvm::zip_equal(argKinds, argFrozen)) {
    SmallVector<NamedAttribute, 2> attrs{builder.getNamedAttr(
        MemWallDialect::kArgKindAttrName, ArgKindAttr::get(ctx, kind))};
    if (frozen)
      attrs.push_back(builder.getNamedAttr(MemWallDialect::kFrozenAttrName,
                                           builder.getUnitAttr()));
    argAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  function.setAllArgAttrs(argAttrs);
  return module;
}

OwningOpRef<ModuleOp> memwall::buildModel(MLIRContext *context,
                                          const ModelConfig &config,
                                          GenerationMode mode) {
  context->loadDialect<MemWallDialect, func::FuncDialect>();
  return ModelBuilder(context, config, mode).build();
}
