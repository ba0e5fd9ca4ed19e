//===- Units.h - human-readable quantities for reports ----------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_REPORT_UNITS_H
#define MEMWALL_REPORT_UNITS_H

#include "memwall/Support/Units.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace memwall {

/// `text` safe inside SVG/XML text and attribute values.
std::string escapeXML(llvm::StringRef text);

} // namespace memwall

#endif // MEMWALL_REPORT_UNITS_H
