//===- Units.cpp - human-readable quantities ------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Support/Units.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace memwall;

std::string memwall::formatSI(double value, const char *unit) {
  static constexpr struct {
    double scale;
    const char *prefix;
  } prefixes[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"},
                  {1e6, "M"},  {1e3, "k"},  {1, ""},     {1e-3, "m"},
                  {1e-6, "u"}, {1e-9, "n"}};
  // "0 FLOP" rather than "0.00 FLOP": zero is exact, not a rounded value.
  if (value == 0)
    return llvm::formatv("0 {0}", unit).str();
  if (!std::isfinite(value))
    return llvm::formatv("{0} {1}", value, unit).str();
  for (const auto &prefix : prefixes)
    if (std::fabs(value) >= prefix.scale)
      return llvm::formatv("{0:f2} {1}{2}", value / prefix.scale, prefix.prefix,
                           unit)
          .str();
  return llvm::formatv("{0:e2} {1}", value, unit).str();
}
