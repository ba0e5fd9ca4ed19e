//===- ByteSize.cpp - parse memory sizes such as 40GB or 80GiB ------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Support/ByteSize.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace memwall;

llvm::Expected<int64_t> memwall::parseByteSize(llvm::StringRef text) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "invalid size '" + text + "': " + why +
            " (use a number and a unit: B, kB, MB, GB, TB, PB in powers of "
            "1000, or KiB, MiB, GiB, TiB, PiB in powers of 1024, e.g. 40GB "
            "or 80GiB)");
  };
  llvm::StringRef trimmed = text.trim();
  size_t unitStart = 0;
  bool seenDot = false, seenDigit = false;
  while (unitStart < trimmed.size()) {
    char c = trimmed[unitStart];
    if (llvm::isDigit(c)) {
      seenDigit = true;
    } else if (c == '.' && !seenDot) {
      seenDot = true;
    } else {
      break;
    }
    ++unitStart;
  }
  llvm::StringRef number = trimmed.take_front(unitStart);
  llvm::StringRef unit = trimmed.drop_front(unitStart).trim();
  if (!seenDigit)
    return fail(trimmed.starts_with("-") ? "sizes must be positive"
                                         : "no number");
  static constexpr struct {
    const char *name;
    double bytes;
  } units[] = {{"B", 1},
               {"KB", 1e3},
               {"MB", 1e6},
               {"GB", 1e9},
               {"TB", 1e12},
               {"PB", 1e15},
               {"KiB", 1024.0},
               {"MiB", 1024.0 * 1024},
               {"GiB", 1024.0 * 1024 * 1024},
               {"TiB", 1024.0 * 1024 * 1024 * 1024},
               {"PiB", 1024.0 * 1024 * 1024 * 1024 * 1024}};
  if (unit.empty())
    return fail("no unit");
  double scale = 0;
  for (const auto &candidate : units)
    // The prefix in either case (reports print kB, people write KB); the
    // B and the i as written.
    if (llvm::StringRef name = candidate.name;
        unit.size() == name.size() &&
        unit.drop_front() == name.drop_front() &&
        llvm::toUpper(unit.front()) == name.front())
      scale = candidate.bytes;
  if (scale == 0)
    return fail("unknown unit '" + unit + "'");
  double value = 0;
  if (number.getAsDouble(value) || !std::isfinite(value))
    return fail("not a number");
  double bytes = std::round(value * scale);
  if (!(bytes >= 1))
    return fail("sizes must be at least one byte");
  if (bytes > 4.611686018427388e18)
    return fail("too large");
  return static_cast<int64_t>(bytes);
}
