//===- Passes.td - memwall passes --------------------------*- tablegen -*-===//

#ifndef MEMWALL_TRANSFORMS_PASSES_TD
#define MEMWALL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// Options every pass that consults the roofline model takes. Left empty,
// they fall back to the tool's --target / --target-file (h100-sxm when the
// tool was given neither).
defvar targetOptions = [
  Option<"targetName", "target", "std::string", /*default=*/"\"\"",
         "Built-in GPU target, e.g. h100-sxm (see docs/targets.md)">,
  Option<"targetFile", "target-file", "std::string", /*default=*/"\"\"",
         "JSON file describing a GPU target">
];

def AnnotateCosts : Pass<"memwall-annotate-costs", "mlir::ModuleOp"> {
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
  }];
  let options = targetOptions;
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

    `memwall-opt --report=FILE` appends this pass to the pipeline.
  }];
  let options = !listconcat(targetOptions, [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Report path (.json, .txt, .svg, or - for text on stdout)">
  ]);
}

def Fuse : Pass<"memwall-fuse", "mlir::ModuleOp"> {
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
    apply), would spill registers, or would create a cycle between kernels.
    Producers are never duplicated: a value needed outside its kernel
    becomes an extra result (a multi-output fusion).

    Each group of two or more ops becomes a `memwall.fusion`; the module is
    marked `memwall.fused` and the roofline report gains a `fusion` section.
    `memwall-opt --fuse` runs this pass.
  }];
  let options = targetOptions;
  let dependentDialects = ["::memwall::MemWallDialect"];
}

#endif // MEMWALL_TRANSFORMS_PASSES_TD
