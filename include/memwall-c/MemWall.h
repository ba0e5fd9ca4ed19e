// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/*===-- memwall-c/MemWall.h - C API of memwall --------------------*- C -*-===*\
|*                                                                            *|
|* memwall for C (and Python ctypes, Rust, ...) in the style of MLIR's C API: *|
|* register the dialect, run the memwall-default pipeline on an MlirModule,  *|
|* get the roofline report as JSON. libMemWallCAPI also exports MLIR's core  *|
|* C API (mlir-c/IR.h, mlir-c/Pass.h), so a C program links only it.        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef MEMWALL_C_MEMWALL_H
#define MEMWALL_C_MEMWALL_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlirGetDialectHandle__memwall__(): the memwall dialect alone. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(MemWall, memwall);

/* Adds the memwall dialect and the upstream dialects its IR uses (func) to
 * `registry`. */
MLIR_CAPI_EXPORTED void
mlirMemWallRegisterDialects(MlirDialectRegistry registry);

/* Registers every memwall pass and the memwall-default pipeline with the
 * global pass registry, so that mlirParsePassPipeline can name them. Safe to
 * call more than once. */
MLIR_CAPI_EXPORTED void mlirMemWallRegisterPasses(void);

/* Runs memwall-default (precision if asked, autodiff of loss functions,
 * fusion, report) on `module`, in place. `options` holds the pipeline's
 * options as in `memwall-default{...}`, e.g. "target=a100-80gb budget=40GB
 * precision=bf16-mixed"; an empty string means the defaults.
 *
 * When `reportCallback` is not NULL, the JSON roofline report
 * (docs/report-schema.md) is passed to it, with `userData`, possibly in
 * several pieces, and the `report` option is ignored.
 *
 * Bad options and failing passes are reported as diagnostics on the
 * module's context (attach a handler with mlirContextAttachDiagnosticHandler)
 * and the result is a failure; the module may then be partly transformed. */
MLIR_CAPI_EXPORTED MlirLogicalResult mlirMemWallRunDefaultPipeline(
    MlirModule module, MlirStringRef options, MlirStringCallback reportCallback,
    void *userData);

#ifdef __cplusplus
}
#endif

#endif /* MEMWALL_C_MEMWALL_H */
