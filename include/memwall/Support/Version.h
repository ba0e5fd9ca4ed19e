//===- Version.h - what every memwall tool prints for --version -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_VERSION_H
#define MEMWALL_SUPPORT_VERSION_H

#include "llvm/Support/raw_ostream.h"

namespace memwall {

/// "memwall 0.1.0 (commit 1a2b3c4d5e6f)" and the LLVM it was built with.
void printVersion(llvm::raw_ostream &os);

/// Makes `--version` of the calling tool print printVersion(). Call before
/// parsing the command line.
void setVersionPrinter();

} // namespace memwall

#endif // MEMWALL_SUPPORT_VERSION_H
