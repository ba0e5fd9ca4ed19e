//===- embed.cpp - memwall embedded in another C++ program ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Parses a model, runs memwall-default (built from C++ with options) and
// checks that the elementwise chain became one kernel and that the report
// was written. Exits nonzero when it did not.
//
//===----------------------------------------------------------------------===//

#include "memwall/Pipelines.h"
#include "memwall/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

static const char *const kModel = R"mlir(
func.func @chain(%x: tensor<64x1024xbf16>, %b: tensor<1024xbf16>) -> tensor<64x1024xbf16> {
  %0 = memwall.add %x, %b : tensor<64x1024xbf16>, tensor<1024xbf16> -> tensor<64x1024xbf16>
  %1 = memwall.gelu %0 : tensor<64x1024xbf16>
  %2 = memwall.scale %1 by 2.0 : tensor<64x1024xbf16>
  return %2 : tensor<64x1024xbf16>
}
)mlir";

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: embed-cxx REPORT.json\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  memwall::registerMemWallDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kModel, &context);
  if (!module)
    return 1;

  memwall::DefaultPipelineOptions options;
  options.target = "a100-80gb";
  options.report = argv[1];
  mlir::PassManager pm(&context);
  memwall::buildDefaultPipeline(pm, options);
  if (mlir::failed(pm.run(*module)))
    return 1;

  int fusions = 0, ops = 0;
  module->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == "memwall.fusion")
      ++fusions;
    else if (op->getDialect() &&
             op->getDialect()->getNamespace() == "memwall" &&
             op->getName().getStringRef() != "memwall.yield")
      ++ops;
  });
  if (fusions != 1 || ops != 3 || !llvm::sys::fs::exists(argv[1])) {
    llvm::errs() << "embed-cxx: expected 3 ops in 1 fusion and a report, got "
                 << ops << " ops in " << fusions << " fusions\n";
    module->print(llvm::errs());
    return 1;
  }
  llvm::outs() << "embed-cxx: memwall-default fused " << ops
               << " ops into 1 kernel; report in " << argv[1] << "\n";
  return 0;
}
