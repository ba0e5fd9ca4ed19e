//===- ExportReference.cpp - the model as written, for the bundle ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Passes.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Target/Bundle.h"

namespace memwall {
#define GEN_PASS_DEF_EXPORTREFERENCE
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {
struct ExportReferencePass
    : public memwall::impl::ExportReferenceBase<ExportReferencePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Buffer, FLOP and byte totals that fit int64 keep every offset, arena
    // and prediction below countable.
    if (failed(verifyCountableTotals(module)))
      return signalPassFailure();
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    SmallVector<llvm::json::Value> references;
    for (func::FuncOp function : functions) {
      FailureOr<llvm::json::Value> reference =
          exportReferenceGraph(function, /*stampNames=*/true);
      if (failed(reference))
        return signalPassFailure();
      references.push_back(std::move(*reference));
    }
    if (functions.size() != 1) {
      mlir::emitError(module.getLoc(),
                      "memwall-compile needs exactly one function, found ")
          << functions.size();
      return signalPassFailure();
    }
    Builder b(&getContext());
    SmallVector<Attribute> outputNames;
    for (const std::string &name :
         referenceOutputNames(functions.front(), references.front()))
      outputNames.push_back(b.getStringAttr(name));
    std::string text;
    llvm::raw_string_ostream os(text);
    os << references.front();
    module->setAttr(MemWallDialect::kReferenceAttrName, b.getStringAttr(text));
    module->setAttr(MemWallDialect::kOutputNamesAttrName,
                    b.getArrayAttr(outputNames));
  }
};
} // namespace
