//===- Pipelines.h - memwall's named pass pipelines -------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The pipelines memwall's tools run, as C++ builders and as named pipelines
// (`memwall-default`) that any MLIR driver can name in --pass-pipeline once
// memwall::registerMemWallPasses() ran. memwall-opt builds its pipeline here
// too, so a tool, the plugin and the C API all run the same passes.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_PIPELINES_H
#define MEMWALL_PIPELINES_H

#include "memwall/Target/Bundle.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace memwall {

/// Options of `memwall-default`: the names and meanings of memwall-opt's
/// flags. From C++, assign the fields (`options.budget = "40GB";`); as text,
/// `memwall-default{target=a100-80gb budget=40GB precision=bf16-mixed}`.
/// Values are checked by the passes when the pipeline runs, with the
/// diagnostics memwall-opt gives for the same flags.
struct DefaultPipelineOptions
    : public mlir::PassPipelineOptions<DefaultPipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("GPU target of the roofline model (default h100-sxm; "
                     "see docs/targets.md)"),
      llvm::cl::value_desc("name"), llvm::cl::init("")};
  Option<std::string> targetFile{
      *this, "target-file",
      llvm::cl::desc("JSON file describing the GPU target"),
      llvm::cl::value_desc("file"), llvm::cl::init("")};
  Option<std::string> launch{
      *this, "launch",
      llvm::cl::desc("How kernels are launched in predictions: stream (one by "
                     "one) or graph (replayed from a CUDA graph, as serving "
                     "stacks run decode steps)"),
      llvm::cl::value_desc("stream|graph"), llvm::cl::init("")};
  Option<std::string> gemm{
      *this, "gemm",
      llvm::cl::desc("Which kernel runs matmuls: auto (the faster by the "
                     "cost model), cublaslt, or memwall (the generated GEMM "
                     "with its fused epilogue wherever it can run)"),
      llvm::cl::value_desc("auto|cublaslt|memwall"), llvm::cl::init("")};
  Option<std::string> dequantize{
      *this, "dequantize",
      llvm::cl::desc("Where a weight-only quantized GEMM dequantizes its "
                     "weight: auto (by the cost model), prologue (in its "
                     "main loop) or kernel (a dequantize kernel before it)"),
      llvm::cl::value_desc("auto|prologue|kernel"), llvm::cl::init("")};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("Precision policy applied first (memwall-precision): "
                     "fp32, bf16-mixed, fp16-mixed, fp8-mixed, int8-weights, "
                     "fp8-weights, int4-weights"),
      llvm::cl::value_desc("policy"), llvm::cl::init("")};
  Option<std::string> kvCacheDtype{
      *this, "kv-cache-dtype",
      llvm::cl::desc("KV-cache element type for inference graphs (bf16, f16, "
                     "f8E4M3FN, ...)"),
      llvm::cl::value_desc("type"), llvm::cl::init("")};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse ops into kernels (memwall-fuse) before the "
                     "command-line pipeline"),
      llvm::cl::init(true)};
  Option<bool> fusedLinearCrossEntropy{
      *this, "fused-linear-cross-entropy",
      llvm::cl::desc("With --fuse, compute a language-model head and its "
                     "cross-entropy as one chunked op that never stores the "
                     "logits (memwall-fuse-linear-cross-entropy, before "
                     "autodiff)"),
      llvm::cl::init(true)};
  Option<std::string> report{
      *this, "report",
      llvm::cl::desc("Write the roofline report after the pipeline: .json, "
                     ".txt, .svg, or - for a text table on stdout (default: "
                     "none, or - when a memory option is given)"),
      llvm::cl::value_desc("file"), llvm::cl::init("")};
  Option<std::string> budget{
      *this, "budget",
      llvm::cl::desc("Per-device memory budget (e.g. 40GB, 80GiB): report "
                     "whether the step fits and, if not, what to do; with "
                     "--fuse, recompute (memwall-remat) until it fits"),
      llvm::cl::value_desc("size"), llvm::cl::init("")};
  Option<int64_t> devices{
      *this, "devices",
      llvm::cl::desc("Data-parallel devices for ZeRO/FSDP accounting"),
      llvm::cl::init(1)};
  Option<int> zeroStage{*this, "zero-stage",
                        llvm::cl::desc("ZeRO stage 0-3 (3 = FSDP full-shard)"),
                        llvm::cl::init(0)};
  Option<std::string> offload{
      *this, "offload",
      llvm::cl::desc("Offload to host memory: none, optimizer or params"),
      llvm::cl::init("none")};
  Option<int64_t> tensorParallel{
      *this, "tensor-parallel",
      llvm::cl::desc("Tensor-parallel GPUs per replica (Megatron column/row "
                     "splits; docs/parallelism.md)"),
      llvm::cl::init(1)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("With --tensor-parallel: split the activations it "
                     "replicates along the sequence"),
      llvm::cl::init(false)};
  Option<int64_t> pipelineParallel{
      *this, "pipeline-parallel", llvm::cl::desc("Pipeline stages per replica"),
      llvm::cl::init(1)};
  Option<std::string> pipelineSchedule{
      *this, "pipeline-schedule",
      llvm::cl::desc("Pipeline schedule: 1f1b or interleaved"),
      llvm::cl::init("1f1b")};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Model chunks per device under the interleaved "
                     "schedule"),
      llvm::cl::init(2)};
  Option<int64_t> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Micro-batches per step (the model's batch is one "
                     "micro-batch)"),
      llvm::cl::init(1)};
  Option<int64_t> expertParallel{
      *this, "expert-parallel",
      llvm::cl::desc("Devices the experts of a mixture of experts are split "
                     "over"),
      llvm::cl::init(1)};
  Option<std::string> rematSolver{
      *this, "remat-solver",
      llvm::cl::desc("With --fuse and --budget: recomputation solver (auto, "
                     "milp, dp, greedy)"),
      llvm::cl::init("auto")};
  Option<double> rematTimeLimit{
      *this, "remat-time-limit",
      llvm::cl::desc("Time limit of the recomputation MILP in seconds"),
      llvm::cl::init(20)};
  Option<std::string> rematPareto{
      *this, "remat-pareto",
      llvm::cl::desc("With --fuse and --budget: write the recompute overhead "
                     "across budgets as SVG"),
      llvm::cl::value_desc("file.svg"), llvm::cl::init("")};
  Option<std::string> memoryTimeline{
      *this, "memory-timeline",
      llvm::cl::desc("Write the memory timeline (live bytes per step) as SVG"),
      llvm::cl::value_desc("file.svg"), llvm::cl::init("")};
  Option<std::string> measured{
      *this, "measured",
      llvm::cl::desc("A memwall-run --report JSON file: show each measured "
                     "kernel beside the report's prediction"),
      llvm::cl::value_desc("run.json"), llvm::cl::init("")};
  Option<bool> maxBatch{
      *this, "max-batch",
      llvm::cl::desc("Report the largest batch (and context at the given "
                     "batch) whose peak fits --budget, or the target's "
                     "memory"),
      llvm::cl::init(false)};

  /// Whether a target option is set: the pipeline then starts with
  /// memwall-set-target (without one, passes use the module's target, or
  /// h100-sxm).
  bool setsTarget() const;

  /// Registers every option as a top-level command-line flag of the same
  /// name, help and value, in `category`: a flag given sets this object's
  /// option. How a tool offers these options as its own flags without
  /// declaring them again. The flags are unregistered when the returned
  /// handles are destroyed; this object must outlive them.
  std::vector<std::unique_ptr<llvm::cl::Option>>
  registerAsCommandLineFlags(llvm::cl::OptionCategory &category);

  /// True when a memory option (budget, timeline, sharding, max-batch) is
  /// set: such a question gets a report even without `report`.
  bool asksMemoryQuestion() const;

  /// Where the report goes: `report`, else "-" for a memory question, else
  /// "" (no report pass).
  std::string reportPath() const;
  /// Whether memwall-remat runs: when optimizing (fuse) under a budget. A
  /// budget alone only asks whether the step fits.
  bool runsRemat() const { return fuse && !budget.empty(); }
};

/// Checks the options' values (budget, sharding, offload, precision, remat
/// solver), so a tool can refuse a typo before reading the model. The
/// message names the option.
llvm::Error
validateDefaultPipelineOptions(const DefaultPipelineOptions &options);

/// One line per option the user gave (`given("remat-solver")`) that the
/// other options make ineffective, for tools to warn about.
std::vector<std::string>
describeIneffectiveOptions(const DefaultPipelineOptions &options,
                           llvm::function_ref<bool(llvm::StringRef)> given);

/// Adds memwall-set-target with the target options to `pm` (anchored on
/// builtin.module) when they set a target (see setsTarget()).
void addSetTargetPass(mlir::OpPassManager &pm,
                      const DefaultPipelineOptions &options);

/// Adds `memwall-default` to `pm` (anchored on builtin.module): the target
/// (when a target option is set), precision
/// (when a policy or KV-cache type is given), autodiff of loss functions,
/// attention tiling and fusion (when `fuse`), recomputation to fit the
/// budget (see runsRemat()), then the roofline report (see reportPath()).
void buildDefaultPipeline(mlir::OpPassManager &pm,
                          const DefaultPipelineOptions &options);

/// The same, with `extraPasses` called between fusion and the report (where
/// memwall-opt puts its command-line pipeline). Fails when it fails.
mlir::LogicalResult buildDefaultPipeline(
    mlir::OpPassManager &pm, const DefaultPipelineOptions &options,
    llvm::function_ref<mlir::LogicalResult(mlir::OpPassManager &)> extraPasses);

/// Options of `memwall-lower-to-bundle`, memwall-compile's pipeline:
/// `memwall-lower-to-bundle{output=model.bundle target=a100-80gb}`.
struct LowerToBundleOptions
    : public mlir::PassPipelineOptions<LowerToBundleOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("Built-in GPU target (default h100-sxm; see "
                     "docs/targets.md)"),
      llvm::cl::init("")};
  Option<std::string> targetFile{
      *this, "target-file",
      llvm::cl::desc("JSON file describing the GPU target"),
      llvm::cl::init("")};
  Option<std::string> gemm{
      *this, "gemm",
      llvm::cl::desc("Which kernel runs matmuls: auto (the faster by the "
                     "cost model), cublaslt, or memwall (the generated GEMM "
                     "with its fused epilogue wherever it can run)"),
      llvm::cl::value_desc("auto|cublaslt|memwall"), llvm::cl::init("")};
  Option<std::string> dequantize{
      *this, "dequantize",
      llvm::cl::desc("Where a weight-only quantized GEMM dequantizes its "
                     "weight: auto (by the cost model), prologue (in its "
                     "main loop) or kernel (a dequantize kernel before it)"),
      llvm::cl::value_desc("auto|prologue|kernel"), llvm::cl::init("")};
  Option<std::string> output{
      *this, "output",
      llvm::cl::desc("Write the bundle to this directory (default: none; "
                     "the lowered module is the result)"),
      llvm::cl::init("")};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Fuse ops into kernels (memwall-fuse)"),
                    llvm::cl::init(true)};
  Option<bool> ptx{*this, "ptx",
                   llvm::cl::desc("Lower the kernels to PTX (false: keep the "
                                  "gpu.module, no kernels.ptx)"),
                   llvm::cl::init(true)};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit root, for libdevice (default $CUDA_HOME "
                     "or /usr/local/cuda)"),
      llvm::cl::init("")};
};

/// Adds the passes that lower memwall IR to the steps of a bundle, up to
/// and including memwall-fuse (when `fuse`): the reference graph is kept,
/// attention tiled, ops fused. memwall-compile --emit=fused stops here.
void buildBundleFrontendPipeline(mlir::OpPassManager &pm,
                                 const LowerToBundleOptions &options);

/// Adds the rest: kernel configuration, conversion to kernels and steps,
/// the kernels' lowering to PTX (when `ptx`), arena planning, and the
/// bundle's serialization (when `output` is given).
void buildBundleBackendPipeline(mlir::OpPassManager &pm,
                                const LowerToBundleOptions &options);

/// Adds `memwall-lower-to-bundle` to `pm` (anchored on builtin.module): the
/// frontend, then the backend above.
void buildLowerToBundlePipeline(mlir::OpPassManager &pm,
                                const LowerToBundleOptions &options);

/// Adds the lowering of `gpu.module`s to PTX (`gpu.binary`), the same
/// upstream passes and options the NVPTX path always used: SCF to CF, NVGPU,
/// vector and GPU to NVVM with bare-pointer memrefs, canonicalize, CSE,
/// then gpu-module-to-binary in `isa` format with libdevice from
/// `cudaPath` (empty: $CUDA_HOME, else /usr/local/cuda).
void buildKernelsToPTXPipeline(mlir::OpPassManager &pm,
                               llvm::StringRef cudaPath);

/// Runs memwall-lower-to-bundle (without writing) on the single function of
/// `module` for `target` and returns its bundle. Every op codegen cannot run
/// gets a diagnostic at its location; nothing is returned then.
mlir::FailureOr<Bundle> compileBundle(mlir::ModuleOp module,
                                      const GPUTarget &target,
                                      const CompileOptions &options);

/// Options of `memwall-partition`: memwall-shard's.
struct PartitionPipelineOptions
    : public mlir::PassPipelineOptions<PartitionPipelineOptions> {
  Option<int64_t> tensorParallel{
      *this, "tensor-parallel",
      llvm::cl::desc("Devices of the tensor-parallel grid"), llvm::cl::init(2)};
  Option<std::string> grid{*this, "grid", llvm::cl::desc("Symbol of the grid"),
                           llvm::cl::init("tensor")};
};

/// Adds `memwall-partition`: memwall-shard writes the tensor-parallel plan
/// as shard dialect annotations, then upstream's sharding-propagation,
/// shard-partition, canonicalize and CSE turn each function into the
/// per-device program with its collectives (docs/parallelism.md).
void buildPartitionPipeline(mlir::OpPassManager &pm,
                            const PartitionPipelineOptions &options);

/// Registers the named pipelines (`memwall-default`,
/// `memwall-lower-to-bundle`, `memwall-partition`) with the global pass
/// registry. Called by registerMemWallPasses(); safe to call again.
void registerMemWallPipelines();

} // namespace memwall

#endif // MEMWALL_PIPELINES_H
