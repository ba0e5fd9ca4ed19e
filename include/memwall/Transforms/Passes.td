//===- Passes.td - memwall passes --------------------------*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TRANSFORMS_PASSES_TD
#define MEMWALL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// Passes that consult the roofline model read the target from the module's
// `memwall.target` attribute (memwall-set-target; h100-sxm without one):
// no pass takes target options.

def SetTarget : Pass<"memwall-set-target", "mlir::ModuleOp"> {
  let summary = "Attach the GPU target to the module";
  let description = [{
    Sets the module's `memwall.target` attribute (`#memwall.target<...>`)
    to the built-in target `target` or the one described by `target-file`
    (docs/targets.md), with every figure, so the module says what it is
    compiled and predicted for. Every later memwall pass reads the target
    from it; without it they use h100-sxm. With neither option the
    module keeps the target it has, or gets h100-sxm. `launch` overrides
    how kernels are launched in predictions (the target's own mode when
    empty). `gemm` sets the module's `memwall.gemm` (which kernel runs
    matmuls: `auto`, `cublaslt` or `memwall`; docs/fusion.md). An unknown
    name, a bad file, launch mode or GEMM backend is an error.

    ```mlir
    module attributes {memwall.target = #memwall.target<"h100-sxm",
        description = "NVIDIA H100 SXM5 80GB", sm_arch = "sm_90a", ...>}
    ```

    `memwall-opt --target=NAME` and the `memwall-default` pipeline run this
    pass first.
  }];
  let options = [
    Option<"targetName", "target", "std::string", /*default=*/"\"\"",
           "Built-in GPU target, e.g. h100-sxm (see docs/targets.md)">,
    Option<"targetFile", "target-file", "std::string", /*default=*/"\"\"",
           "JSON file describing a GPU target">,
    Option<"launch", "launch", "std::string", /*default=*/"\"\"",
           "How kernels are launched in predictions: stream or graph "
           "(empty: the target's own)">,
    Option<"gemm", "gemm", "std::string", /*default=*/"\"\"",
           "Which kernel runs matmuls: auto (the faster by the cost model), "
           "cublaslt, or memwall (the generated GEMM wherever it can run); "
           "empty keeps the module's choice">
  ];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def AnnotateCosts : Pass<"memwall-annotate-costs", "mlir::func::FuncOp"> {
  let summary = "Attach FLOPs, bytes and roofline time to every memwall op";
  let description = [{
    Attaches `memwall.cost = #memwall.cost<...>` to every op implementing
    `CostOpInterface`: its FLOPs, DRAM bytes read and written, arithmetic
    intensity, whether it is memory- or compute-bound on the target, and its
    roofline time (max of compute and memory time plus the launch cost).

    ```mlir
    %0 = memwall.gelu %x tanh {memwall.cost = #memwall.cost<flops = 36,
        bytes_read = 16, bytes_written = 16, intensity = 1.125,
        bound = memory, time_s = 2e-06>} : tensor<4xf32>
    ```

    Runs on each function, with the target of the enclosing module
    (`memwall.target`, h100-sxm without one).
  }];
  let statistics = [
    Statistic<"numOpsAnnotated", "ops-annotated",
              "Ops given a memwall.cost">
  ];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def RooflineReport : Pass<"memwall-roofline-report", "mlir::ModuleOp"> {
  let summary = "Write the per-op roofline report of the module";
  let description = [{
    Writes the roofline report (docs/report-schema.md) of every
    `CostOpInterface` op in program order to `output`, in the format its
    extension selects: `.json`, `.txt`, `.svg`, or `-` for a text table on
    stdout. The IR is not changed. The report is written through a temporary
    file, so a failure never leaves a partial report.

    The report's `memory` section is the liveness simulation of the first
    function (docs/memory.md) under the sharding options; with `budget` it
    gains a `budget` section and, when the peak exceeds the budget, a warning
    at the peak op and the ranked fixes. `timeline` writes the memory
    timeline SVG.

    `memwall-opt --report=FILE` appends this pass to the pipeline.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Report path (.json, .txt, .svg, or - for text on stdout)">,
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "Per-device memory budget, e.g. 40GB or 80GiB">,
    Option<"devices", "devices", "int64_t", /*default=*/"1",
           "Data-parallel devices the model states are sharded over">,
    Option<"zeroStage", "zero-stage", "int", /*default=*/"0",
           "ZeRO stage 0-3 (3 = FSDP full-shard)">,
    Option<"offload", "offload", "std::string", /*default=*/"\"none\"",
           "none, optimizer or params">,
    Option<"timeline", "timeline", "std::string", /*default=*/"\"\"",
           "Write the memory timeline to this .svg file">,
    Option<"measured", "measured", "std::string", /*default=*/"\"\"",
           "A memwall-run --report JSON file: show each measured kernel "
           "beside this report's prediction">,
    Option<"maxBatch", "max-batch", "bool", /*default=*/"false",
           "Report the largest batch (and context) whose peak fits the "
           "budget, or the target's memory without one">,
    Option<"tensorParallel", "tensor-parallel", "int64_t", /*default=*/"1",
           "Tensor-parallel GPUs per replica (Megatron column/row splits)">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "Split the activations tensor parallelism replicates along the "
           "sequence">,
    Option<"pipelineParallel", "pipeline-parallel", "int64_t",
           /*default=*/"1", "Pipeline stages per replica">,
    Option<"pipelineSchedule", "pipeline-schedule", "std::string",
           /*default=*/"\"1f1b\"", "1f1b or interleaved">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"2",
           "Model chunks per device under the interleaved schedule">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Micro-batches per step (the model's batch is one micro-batch)">,
    Option<"expertParallel", "expert-parallel", "int64_t", /*default=*/"1",
           "Devices the experts of a mixture of experts are split over">
  ];
}

def Remat : Pass<"memwall-remat", "mlir::ModuleOp"> {
  let summary = "Recompute forward values in the backward so the step fits a byte budget";
  let description = [{
    On a training step (after `memwall-autodiff`), chooses which forward
    values the backward keeps and which it recomputes, so that the simulated
    per-device peak is at most `budget` at the least predicted recompute
    time (docs/remat.md). Recomputed ops are cloned, per layer, just before
    that layer's backward first needs them (`memwall.phase = "backward"`,
    `memwall.recomputed`), and the backward reads the clones. The transformed
    step is re-simulated; the plan is tightened until the simulated peak is
    within the budget. The result and the baselines (no recompute, per-layer
    checkpointing, Chen's sqrt(n) segments, Megatron's selective recompute)
    are recorded in the module attribute `memwall.remat`, which the report
    prints. A budget that no recomputation reaches is an error naming the
    smallest reachable peak, what dominates it, and the sharding or offload
    that would fit. Inference graphs are left alone.
  }];
  let options = [
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "Per-device memory budget (e.g. 40GB, 80GiB); required">,
    Option<"solver", "solver", "std::string", /*default=*/"\"auto\"",
           "auto, milp (exact, COIN-OR CBC), dp (per-layer dynamic program) "
           "or greedy">,
    Option<"timeLimit", "time-limit", "double", /*default=*/"20",
           "MILP time limit in seconds (a progress line every 2 s)">,
    Option<"pareto", "pareto", "std::string", /*default=*/"\"\"",
           "Write predicted recompute overhead across budgets as SVG">,
    Option<"devices", "devices", "int64_t", /*default=*/"1",
           "Data-parallel devices (ZeRO/FSDP accounting)">,
    Option<"zeroStage", "zero-stage", "int", /*default=*/"0",
           "ZeRO stage 0-3">,
    Option<"offload", "offload", "std::string", /*default=*/"\"none\"",
           "none, optimizer or params">
  ];
  let statistics = [
    Statistic<"numValuesRecomputed", "values-recomputed",
              "Forward values the backward recomputes">
  ];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def TileAttention : Pass<"memwall-tile-attention", "mlir::func::FuncOp"> {
  let summary = "Rewrite attention into its tiled FlashAttention form";
  let description = [{
    Turns every `memwall.attention` the tiled kernel supports into
    `memwall.flash_attention` (online softmax over key blocks; no `[Sq, Sk]`
    tensor in memory) and every `memwall.attention_grad` of a tiled
    attention into `memwall.flash_attention_grad`, which reads the forward's
    log-sum-exp. Tile sizes come from the target (docs/attention.md): the
    largest of 128x128, 128x64, 64x64 and 64x32 query x key blocks whose Q
    tile and double-buffered K and V tiles fit in half of the shared memory
    of an SM. When the query blocks of all heads fill less than one wave of
    SMs and there are several key blocks (decoding over a long KV cache),
    the key blocks are split (flash-decoding) so that about one wave runs.
    Attention the kernel does not support (element types other than bf16 and
    f16, head dimensions that are not a multiple of 16 or exceed 128) gets a
    warning and stays untiled; so does a backward that differentiates a
    trained mask. Runs on each function.
  }];
  let statistics = [
    Statistic<"numAttentionsTiled", "attentions-tiled",
              "Attention ops (forward and backward) rewritten tiled">,
    Statistic<"numAttentionsUntiled", "attentions-untiled",
              "Attention ops left untiled, with a warning">
  ];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def Fuse : Pass<"memwall-fuse", "mlir::func::FuncOp"> {
  let summary = "Group ops into memwall.fusion kernels by predicted time saved";
  let description = [{
    Decides kernel boundaries from the roofline model. Every elementwise op,
    row reduction (layer_norm, rms_norm, softmax or reduce over the last
    axis) and float matmul starts as its own kernel; then, greedily, the
    producer-consumer pair of kernels whose merge saves the most predicted
    time is merged, until no merge saves time. A candidate kernel is costed
    by `analyzeKernel` (docs/fusion.md): a soft roofline over the DRAM bytes
    it still moves, slowed when its estimated registers per thread leave too
    little occupancy, plus one launch. A merge is rejected when the kernel
    would not be legal (more than one row reduction or matmul, mismatched
    shapes, a broadcast codegen cannot index, an epilogue cuBLASLt cannot
    apply), would spill registers, or would create a cycle between kernels,
    and when it would carry a buffer across other kernels above the
    function's unfused peak memory (a kernel runs at its last op's step, so
    what its earlier ops read lives until then; docs/fusion.md,
    "Lifetimes").
    Producers are never duplicated: a value needed outside its kernel
    becomes an extra result (a multi-output fusion). Views are: a reshape,
    transpose or slice read by several ops that index views (attention, its
    backward, a rope) is first copied per reader, so each can fold it, and
    attention's backward reads the forward's output back through its heads
    merge; copies no kernel took are merged back after fusion, and none is
    made where the copies would raise the unfused peak (docs/fusion.md,
    "Layouts as views"). So are dequantizes at use: one read by several
    matmuls (a frozen NF4 weight's forward and input-gradient GEMMs) is
    copied per matmul, with the dequantize of its scales, and each copy
    runs in its GEMM's main loop, unless a dequantize kernel writing the
    weight and the GEMM reading it are predicted faster together: then the
    copy is marked `materialize` (at many rows, where every CTA row of tiles
    dequantizing the whole weight costs more than writing it once, or where
    the GEMM's main loop cannot dequantize it; docs/fusion.md, "Dequantize
    kernels"). `dequantize=prologue` or `kernel` forces one way wherever it
    can run (`memwall-opt --dequantize=...`, `memwall-compile
    --dequantize=...`).

    Each group of two or more ops becomes a `memwall.fusion`; the function is
    marked `memwall.fused` and the roofline report gains a `fusion` section.
    Runs on each function, so functions fuse in parallel.
    `memwall-opt --fuse` runs this pass.
  }];
  let statistics = [
    Statistic<"numKernelsFormed", "kernels-formed",
              "memwall.fusion kernels formed">,
    Statistic<"numOpsFused", "ops-fused", "Ops moved into fusion kernels">,
    Statistic<"predictedNanosecondsSaved", "predicted-ns-saved",
              "Predicted time saved by fusion, in nanoseconds">,
    Statistic<"numMergesKeptForMemory", "merges-kept-for-memory",
              "Merges that saved time but would have raised the peak memory">,
    Statistic<"numDequantizeKernels", "dequantize-kernels",
              "Dequantizes at use run as their own kernel before their GEMM">
  ];
  let options = [
    Option<"dequantize", "dequantize", "std::string", /*default=*/"\"auto\"",
           "Where a weight-only quantized GEMM dequantizes its weight: auto "
           "(by predicted time), prologue (in its main loop wherever that "
           "can run) or kernel (a dequantize kernel before it wherever that "
           "can run)">
  ];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def FuseHorizontal : Pass<"memwall-fuse-horizontal", "mlir::func::FuncOp"> {
  let summary = "Run short AdamW updates as multi-tensor launches";
  let description = [{
    Horizontal fusion (XLA's horizontal loop fusion, PyTorch's fused
    AdamW): each `memwall.adamw` whose predicted work (compute or memory) is
    shorter than the target's launch cost (a bias's, a norm weight's) joins
    the open group, in program order, into one `memwall.fusion horizontal`
    that runs at the group's last update: while one launch's 4 KiB of kernel
    parameters hold the group's buffers, and while the gradients the group
    carries to its last update keep every other step within the function's
    peak (`StepMemory`, docs/fusion.md "Lifetimes"); otherwise the update
    opens the next group. Updates that cover their launch stay where their
    gradient completes, so that it dies there (docs/autodiff.md).

    It runs after `memwall-remat` (the `memwall-default` pipeline runs it
    with `fuse`; memwall-compile after memwall-fuse): the peak it keeps is
    the one the recomputation plan reached. docs/fusion.md, "Multi-tensor
    AdamW".
  }];
  let statistics = [
    Statistic<"numKernelsFormed", "kernels-formed",
              "Multi-tensor AdamW kernels formed">,
    Statistic<"numUpdatesFused", "updates-fused",
              "AdamW updates moved into multi-tensor kernels">,
    Statistic<"numGroupsEndedForMemory", "groups-ended-for-memory",
              "Groups ended because carrying a gradient would raise the peak">
  ];
}

def FuseLinearCrossEntropy
    : Pass<"memwall-fuse-linear-cross-entropy", "mlir::func::FuncOp"> {
  let summary = "Compute a language-model head and its loss without the "
                "logits";
  let description = [{
    Rewrites `cross_entropy(matmul(h, W))` into one
    `memwall.linear_cross_entropy` (Liger-Kernel's fused linear
    cross-entropy, Apple's Cut Cross-Entropy): the `[..., V]` logits, and in
    a training step their gradient, are computed a chunk of the vocabulary
    at a time and never stored whole. At GPT-2-medium's batch 16 x 1024
    tokens they are 1.65 GB each in bf16.

    A matmul qualifies when the loss is its only reader (directly or through
    a widening cast, e.g. bf16 logits taken to f32 for the loss: exact), it
    has no bias, its lhs `[..., D]` is read as stored and its rhs is a
    2-D weight (`[V, D]` under `transpose_rhs`, else `[D, V]`) of the lhs's
    float type. Others are left as they are.

    It runs before `memwall-autodiff` (the `memwall-default` pipeline runs
    it with `fuse`, after `memwall-precision`), so the backward is
    `memwall.linear_cross_entropy_grad`.

    ```mlir
    %logits = memwall.matmul %h, %wte {transpose_rhs}
        : tensor<16x1024x1024xbf16>, tensor<50257x1024xbf16>
        -> tensor<16x1024x50257xbf16>
    %loss = memwall.cross_entropy %logits, %labels
        : tensor<16x1024x50257xbf16>, tensor<16x1024xi64> -> tensor<f32>
    // becomes
    %loss, %lse = memwall.linear_cross_entropy %h, %wte, %labels
        transpose_weight : ... -> tensor<f32>, tensor<16x1024xf32>
    ```
  }];
  let statistics = [
    Statistic<"numFused", "heads-fused",
              "Matmul + cross_entropy pairs made one linear_cross_entropy">
  ];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def Autodiff : Pass<"memwall-autodiff", "mlir::ModuleOp"> {
  let summary = "Append the backward pass and the optimizer step to a loss function";
  let description = [{
    Turns a training function (forward + loss: it returns one rank-0 f32
    value) into a whole training step. After the forward ops, in reverse
    order, it emits each op's vector-Jacobian product in the memwall dialect
    (docs/autodiff.md lists the rule of every op), summing the gradients of
    values used more than once as soon as the second one exists. The loss
    gradient is 1.

    With `optimizer=adamw` (the default) every `weight` argument gets the
    AdamW update after the backward, in argument order, as PyTorch's
    `optimizer.step()` runs after `loss.backward()`: the exp_avg and
    exp_avg_sq moments are new fp32 `optimizer_state` arguments, and weights
    stored below fp32 also get an fp32 master copy (mixed-precision Adam:
    2 + 2 + 12 = 16 bytes per parameter with the gradient). The function
    then returns the loss and, per weight, the new weight, moments and
    master. With `optimizer=none` it returns the loss and the gradient of
    every floating-point argument instead (gradient checking, embedding).

    Backward ops carry `memwall.phase = "backward"`, optimizer ops
    `"optimizer"`; the memory analysis reads the phases. An op without a
    rule (kv_cache_append, reduce max, a strided slice, an op from another
    dialect) gets one diagnostic and the module is left unchanged.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw (update the weights) or none (return the gradients)">,
    Option<"learningRate", "lr", "double", /*default=*/"1e-3",
           "AdamW learning rate">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.01",
           "AdamW decoupled weight decay">,
    Option<"onlyLossFunctions", "only-loss-functions", "bool",
           /*default=*/"false",
           "Skip functions that do not return a scalar loss or are already "
           "differentiated instead of failing (what memwall-opt uses)">
  ];
  let statistics = [
    Statistic<"numBackwardOps", "backward-ops",
               "Backward ops emitted (memwall.phase = \"backward\")">,
    Statistic<"numOptimizerOps", "optimizer-ops",
               "Optimizer ops emitted (memwall.phase = \"optimizer\")">
  ];
  let dependentDialects = ["::memwall::MemWallDialect",
                           "::mlir::arith::ArithDialect"];
}

def Precision : Pass<"memwall-precision", "mlir::ModuleOp"> {
  let summary = "Set the element types of weights, activations and caches by policy";
  let description = [{
    Retypes a forward graph (before `memwall-autodiff`) as a precision
    policy says, re-inferring every op's result type:

    | policy | weights | activations | gradients / optimizer (after autodiff) |
    |---|---|---|---|
    | `fp32` | f32 | f32 | f32 gradients, f32 moments (16 B/param) |
    | `bf16-mixed` | bf16 | bf16 | bf16 gradients, f32 master + moments (16 B/param) |
    | `fp16-mixed` | f16 | f16 | f16 gradients, f32 master + moments (16 B/param) |
    | `fp8-mixed` | bf16 | bf16, GEMM inputs cast once to f8E4M3FN (K-major: an operand stored the other way is also transposed) | as bf16-mixed |
    | `int8-weights` | i8, dequantized in the GEMM | bf16 | inference only |
    | `fp8-weights` | f8E4M3FN, dequantized in the GEMM | bf16 | inference only |
    | `int4-weights` | i4 (groups of 128), dequantized in the GEMM | bf16 | inference only |

    Weight-only policies cast each use of a weight to bf16; those casts are
    dequantize-at-use casts (no kernel, no buffer; the matmul reads the
    quantized bytes plus scales, docs/cost-model.md).
    `kv-cache-dtype` retypes `kv_cache` arguments (e.g. f8E4M3FN); new keys
    and values are cast to it before they are appended, and attention reads
    the cache as stored. The module is marked
    `memwall.precision = "<policy>"`.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"\"",
           "fp32, bf16-mixed, fp16-mixed, fp8-mixed, int8-weights, "
           "fp8-weights or int4-weights (empty: leave the types)">,
    Option<"kvCacheDtype", "kv-cache-dtype", "std::string",
           /*default=*/"\"\"", "Element type of kv_cache arguments">
  ];
  let statistics = [
    Statistic<"numValuesRetyped", "values-retyped",
              "Arguments and op results given a new type">
  ];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def Shard : Pass<"memwall-shard", "mlir::ModuleOp"> {
  let summary = "Emit the tensor-parallel plan as shard dialect annotations";
  let description = [{
    Writes Megatron-LM's tensor-parallel split of each function (the one
    the parallelism analysis prices, docs/parallelism.md) in MLIR's upstream
    `shard` dialect: a 1-D grid of `tensor-parallel` devices
    (`shard.grid @<grid>(shape = T)`) and a `shard.shard` of every tensor
    argument, split along a column-parallel GEMM's output width (and its
    bias) or a row-parallel GEMM's input width, replicated otherwise (the
    inputs, norms, the embedding and the head). Upstream's
    `sharding-propagation` then annotates every op through memwall's
    sharding rules (MemWallSharding.h) and `shard-partition` rewrites the
    function into the per-device program, with a `shard.all_reduce` where a
    row-parallel GEMM's partial sums are used; `memwall-partition` runs the
    three.

    ```mlir
    shard.grid @tensor(shape = 2)
    func.func @mlp(%x: tensor<8x768xbf16>, %w1: tensor<768x3072xbf16> ...) {
      %s = shard.sharding @tensor split_axes = [[], [0]] : !shard.sharding
      %w1s = shard.shard %w1 to %s : tensor<768x3072xbf16>
      ...
    ```

    Errors, each at the op or argument: tensor parallelism that does not
    divide the heads or a split GEMM's width; an op with no sharding rule
    (a fusion: shard before `memwall-fuse`; a training step's backward
    ops); a grid symbol already taken.
  }];
  let options = [
    Option<"tensorParallel", "tensor-parallel", "int64_t", /*default=*/"2",
           "Devices of the tensor-parallel grid">,
    Option<"grid", "grid", "std::string", /*default=*/"\"tensor\"",
           "Symbol of the grid">
  ];
  let statistics = [
    Statistic<"numSplitArguments", "split-arguments",
              "Weight arguments split over the grid">
  ];
  let dependentDialects = ["::memwall::MemWallDialect",
                           "::mlir::shard::ShardDialect"];
}

#endif // MEMWALL_TRANSFORMS_PASSES_TD
