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

#endif // MEMWALL_TRANSFORMS_PASSES_TD
