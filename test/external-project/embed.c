// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/*===- embed.c - memwall embedded in a C program ----------------------===*\
|*                                                                        *|
|* Runs memwall-default through the C API and prints the JSON report.    *|
|* Exits nonzero when the run fails or the report lacks the target.      *|
\*===------------------------------------------------------------------===*/

#include "memwall-c/MemWall.h"

#include <stdio.h>
#include <string.h>

static const char *kModel =
    "func.func @chain(%x: tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {\n"
    "  %0 = memwall.gelu %x : tensor<64x1024xbf16>\n"
    "  %1 = memwall.scale %0 by 2.0 : tensor<64x1024xbf16>\n"
    "  return %1 : tensor<64x1024xbf16>\n"
    "}\n";

static char report[1 << 20];

static void appendReport(MlirStringRef piece, void *userData) {
  size_t *size = (size_t *)userData;
  if (*size + piece.length >= sizeof(report))
    return;
  memcpy(report + *size, piece.data, piece.length);
  *size += piece.length;
}

int main(void) {
  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirMemWallRegisterDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(kModel));
  size_t size = 0;
  int ok = !mlirModuleIsNull(module) &&
           mlirLogicalResultIsSuccess(mlirMemWallRunDefaultPipeline(
               module, mlirStringRefCreateFromCString("target=h200"),
               appendReport, &size));
  report[size] = '\0';
  ok = ok && strstr(report, "\"h200\"") != NULL;
  printf("%s\n", ok ? report : "embed-c: memwall-default failed");
  if (!mlirModuleIsNull(module))
    mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return ok ? 0 : 1;
}
