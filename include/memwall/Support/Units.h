//===- Units.h - human-readable quantities ----------------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Shared by the analyses (fix descriptions, diagnostics) and the report.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_UNITS_H
#define MEMWALL_SUPPORT_UNITS_H

#include <string>

namespace memwall {

/// `value` with an SI prefix and three significant digits, e.g.
/// formatSI(2.5e12, "FLOP/s") == "2.50 TFLOP/s", formatSI(3e-6, "s") ==
/// "3.00 us".
std::string formatSI(double value, const char *unit);

} // namespace memwall

#endif // MEMWALL_SUPPORT_UNITS_H
