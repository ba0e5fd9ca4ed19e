//===- BundleManifest.h - A bundle's manifest.json writer -------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Writes manifest.json with the keys of the schema that memwall-run reads it
// with (memwall-runtime/BundleSchema.def).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_BUNDLEMANIFEST_H
#define MEMWALL_LIB_TARGET_BUNDLEMANIFEST_H

#include "memwall/Target/Bundle.h"

#include "llvm/Support/raw_ostream.h"

namespace memwall {

/// Writes the manifest of `bundle` (docs/bundle-format.md) to `os`.
void writeManifest(const Bundle &bundle, llvm::raw_ostream &os);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_BUNDLEMANIFEST_H
