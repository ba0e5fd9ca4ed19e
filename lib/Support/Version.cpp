//===- Version.cpp - what every memwall tool prints for --version ---------===//

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
