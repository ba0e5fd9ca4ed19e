//===- MemWall.cpp - C API of memwall -------------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-c/MemWall.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Pipelines.h"
#include "memwall/Registration.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(MemWall, memwall, memwall::MemWallDialect)

void mlirMemWallRegisterDialects(MlirDialectRegistry registry) {
  memwall::registerMemWallDialects(*unwrap(registry));
}

void mlirMemWallRegisterPasses(void) { memwall::registerMemWallPasses(); }

MlirLogicalResult mlirMemWallRunDefaultPipeline(MlirModule cModule,
                                                MlirStringRef cOptions,
                                                MlirStringCallback callback,
                                                void *userData) {
  ModuleOp module = unwrap(cModule);
  MLIRContext *ctx = module.getContext();
  Location loc = UnknownLoc::get(ctx);

  // The parser of the named pipeline, so the same text means the same thing
  // (and fails the same way) here and in --pass-pipeline.
  memwall::DefaultPipelineOptions options;
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  if (failed(options.parseFromString(unwrap(cOptions), errorStream))) {
    emitError(loc) << "memwall-default options '" << unwrap(cOptions)
                   << "': " << StringRef(parseErrors).trim();
    return mlirLogicalResultFailure();
  }

  // The report pass writes files; a temporary one carries it back here.
  llvm::SmallString<128> reportFile;
  if (callback) {
    if (std::error_code error = llvm::sys::fs::createTemporaryFile(
            "memwall-report", "json", reportFile)) {
      emitError(loc) << "cannot create a temporary report file: "
                     << error.message();
      return mlirLogicalResultFailure();
    }
    options.report = reportFile.str().str();
  }
  llvm::FileRemover removeReport(reportFile, /*deleteIt=*/callback != nullptr);

  PassManager pm(ctx, ModuleOp::getOperationName());
  memwall::buildDefaultPipeline(pm, options);
  if (failed(pm.run(module)))
    return mlirLogicalResultFailure();

  if (callback) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> report =
        llvm::MemoryBuffer::getFile(reportFile);
    if (!report) {
      emitError(loc) << "cannot read the report back from '" << reportFile
                     << "': " << report.getError().message();
      return mlirLogicalResultFailure();
    }
    callback(wrap((*report)->getBuffer()), userData);
  }
  return mlirLogicalResultSuccess();
}
