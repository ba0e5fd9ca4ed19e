// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/*===- capi-test.c - drive memwall through its C API ------------------===*\
|*                                                                        *|
|* Compiled as C. Registers the dialect, runs memwall-default on a module *|
|* with options, fetches the JSON report, and checks that bad options     *|
|* fail with the diagnostics memwall-opt gives. Exits nonzero on the      *|
|* first check that does not hold.                                        *|
\*===------------------------------------------------------------------===*/

#include "memwall-c/MemWall.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kModel =
    "func.func @chain(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>)"
    "    -> tensor<64x1024xbf16> {\n"
    "  %0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16>"
    " -> tensor<64x1024xbf16>\n"
    "  %1 = memwall.gelu %0 : tensor<64x1024xbf16>\n"
    "  %2 = memwall.scale %1 by 2.0 : tensor<64x1024xbf16>\n"
    "  return %2 : tensor<64x1024xbf16>\n"
    "}\n";

/* A growing string that MLIR's callbacks append to. */
typedef struct {
  char *data;
  size_t size;
} Text;

static void append(MlirStringRef piece, void *userData) {
  Text *text = (Text *)userData;
  text->data = (char *)realloc(text->data, text->size + piece.length + 1);
  memcpy(text->data + text->size, piece.data, piece.length);
  text->size += piece.length;
  text->data[text->size] = '\0';
}

static MlirLogicalResult collectDiagnostic(MlirDiagnostic diagnostic,
                                           void *userData) {
  mlirDiagnosticPrint(diagnostic, append, userData);
  append(mlirStringRefCreateFromCString("\n"), userData);
  return mlirLogicalResultSuccess();
}

static int failures = 0;

static void check(int condition, const char *what, const char *detail) {
  printf("%s: %s\n", condition ? "PASS" : "FAIL", what);
  if (!condition) {
    ++failures;
    if (detail)
      printf("  got: %s\n", detail);
  }
}

static MlirModule parseModel(MlirContext context) {
  return mlirModuleCreateParse(context, mlirStringRefCreateFromCString(kModel));
}

/* Runs memwall-default with `options` on a fresh copy of the model; returns
 * whether it succeeded, and the report and diagnostics through the texts. */
static int run(MlirContext context, const char *options, Text *report,
               Text *diagnostics, Text *ir) {
  MlirModule module = parseModel(context);
  if (mlirModuleIsNull(module))
    return 0;
  MlirDiagnosticHandlerID handler = mlirContextAttachDiagnosticHandler(
      context, collectDiagnostic, diagnostics, NULL);
  MlirLogicalResult result = mlirMemWallRunDefaultPipeline(
      module, mlirStringRefCreateFromCString(options), append, report);
  mlirContextDetachDiagnosticHandler(context, handler);
  if (ir)
    mlirOperationPrint(mlirModuleGetOperation(module), append, ir);
  mlirModuleDestroy(module);
  return mlirLogicalResultIsSuccess(result);
}

static int contains(const Text *text, const char *needle) {
  return text->data && strstr(text->data, needle) != NULL;
}

int main(void) {
  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirMemWallRegisterDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  MlirDialectHandle handle = mlirGetDialectHandle__memwall__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(handle);
  check(ns.length == 7 && strncmp(ns.data, "memwall", 7) == 0,
        "the dialect handle names the memwall dialect", NULL);
  check(!mlirDialectIsNull(mlirDialectHandleLoadDialect(handle, context)),
        "the dialect handle loads the dialect", NULL);

  /* The default pipeline fuses the chain and returns the JSON report. */
  Text report = {0}, diagnostics = {0}, ir = {0};
  int ok = run(context, "target=a100-80gb", &report, &diagnostics, &ir);
  check(ok, "memwall-default{target=a100-80gb} succeeds", diagnostics.data);
  check(contains(&ir, "memwall.fusion elementwise"),
        "the three elementwise ops are fused into one kernel", ir.data);
  check(contains(&report, "\"a100-80gb\""),
        "the JSON report names the target it was asked for", report.data);
  check(contains(&report, "\"fusion\"") && report.data[0] == '{',
        "the JSON report is a JSON object with a fusion section", report.data);
  free(report.data), free(diagnostics.data), free(ir.data);

  /* Bad option values: memwall-opt's diagnostics, a failure, no report. */
  Text none = {0};
  diagnostics = (Text){0};
  ok = run(context, "precision=fp7", &none, &diagnostics, NULL);
  check(!ok && contains(&diagnostics,
                        "memwall-precision: unknown policy 'fp7' (expected "
                        "fp32, bf16-mixed"),
        "an unknown precision policy fails as in memwall-opt",
        diagnostics.data);
  check(none.size == 0, "a failed run delivers no report", none.data);
  free(diagnostics.data), diagnostics = (Text){0};
  ok = run(context, "target=h100", &none, &diagnostics, NULL);
  check(!ok && contains(&diagnostics, "unknown target 'h100'; valid targets:"),
        "an unknown target fails as in memwall-opt", diagnostics.data);
  free(diagnostics.data), diagnostics = (Text){0};
  ok = run(context, "budget=40XB", &none, &diagnostics, NULL);
  check(!ok && contains(&diagnostics, "--budget:"),
        "a malformed budget fails as in memwall-opt", diagnostics.data);
  free(diagnostics.data), diagnostics = (Text){0};
  ok = run(context, "bogus=1", &none, &diagnostics, NULL);
  check(!ok && contains(&diagnostics, "no such option bogus"),
        "an unknown option name is a diagnostic, not a crash",
        diagnostics.data);
  free(diagnostics.data), diagnostics = (Text){0};

  /* Registered passes and pipelines are reachable by name; registering
   * twice is harmless. */
  mlirMemWallRegisterPasses();
  mlirMemWallRegisterPasses();
  MlirPassManager pm = mlirPassManagerCreate(context);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  Text parseErrors = {0};
  MlirLogicalResult parsed = mlirParsePassPipeline(
      opm,
      mlirStringRefCreateFromCString(
          "builtin.module(memwall-default{target=h100-sxm})"),
      append, &parseErrors);
  check(mlirLogicalResultIsSuccess(parsed),
        "memwall-default parses by name after mlirMemWallRegisterPasses",
        parseErrors.data);
  MlirModule module = parseModel(context);
  check(mlirLogicalResultIsSuccess(
            mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module))),
        "the named pipeline runs through mlirPassManagerRunOnOp", NULL);
  mlirModuleDestroy(module);
  mlirPassManagerDestroy(pm);
  free(parseErrors.data);

  mlirContextDestroy(context);
  if (failures)
    printf("%d check(s) failed\n", failures);
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
