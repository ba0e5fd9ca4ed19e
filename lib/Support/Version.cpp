//===- Version.cpp - what every memwall tool prints for --version ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Support/Version.h"

#include "memwall-version.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

void memwall::printVersion(llvm::raw_ostream &os) {
  os << "memwall " << MEMWALL_VERSION << " (commit " << MEMWALL_COMMIT
     << ")\n  built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
}

void memwall::setVersionPrinter() {
  llvm::cl::SetVersionPrinter(printVersion);
}
