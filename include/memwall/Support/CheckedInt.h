//===- CheckedInt.h - int64 counts that never wrap --------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every element count, byte count, FLOP count and offset memwall computes
// from a shape goes through CheckedInt: shapes come from users, and a
// product of int64 dimensions wraps silently (ShapedType::getNumElements
// included), turning an absurd model into a small, "fitting" one. A
// CheckedInt does its arithmetic with llvm::checkedAdd/checkedMul/checkedSub
// and, once a step overflows, stays overflowed, so a whole formula can be
// written as usual and checked once at the end.
//
// Counts that do not fit report kUncountable (INT64_MAX) where an int64 is
// required: larger than any budget, capacity or figure memwall compares it
// with, and rejected by the memwall op verifiers, so verified IR never holds
// one.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_CHECKEDINT_H
#define MEMWALL_SUPPORT_CHECKEDINT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace memwall {

/// What a count that does not fit int64 reports as an int64.
constexpr int64_t kUncountable = std::numeric_limits<int64_t>::max();

class CheckedInt {
public:
  constexpr CheckedInt(int64_t value = 0) : value(value) {}

  /// A count that has already overflowed.
  static CheckedInt overflow() { return CheckedInt(std::nullopt); }

  /// A count an int64 interface returned: kUncountable stays overflowed,
  /// so sums of such counts stay uncountable.
  static CheckedInt fromSaturated(int64_t count) {
    return count == kUncountable ? overflow() : CheckedInt(count);
  }

  /// The product of `factors` (a shape's element count).
  static CheckedInt product(llvm::ArrayRef<int64_t> factors) {
    CheckedInt result = 1;
    for (int64_t factor : factors)
      result *= factor;
    return result;
  }

  /// A double figure turned into a count: truncated toward zero (as
  /// static_cast<int64_t> does, which is undefined out of range), and
  /// overflowed when it is not a finite number that fits int64.
  static CheckedInt fromDouble(double value) {
    // 2^63 is the first double above the int64 range.
    constexpr double kLimit = 9223372036854775808.0;
    double truncated = std::trunc(value);
    if (!(truncated < kLimit && truncated >= -kLimit))
      return overflow();
    return CheckedInt(static_cast<int64_t>(truncated));
  }

  bool overflowed() const { return !value.has_value(); }
  /// The count, or nullopt when it does not fit int64.
  std::optional<int64_t> get() const { return value; }
  /// The count, or kUncountable when it does not fit int64.
  int64_t saturated() const { return value.value_or(kUncountable); }

  friend CheckedInt operator+(CheckedInt lhs, CheckedInt rhs) {
    return combine(lhs, rhs,
                   [](int64_t a, int64_t b) { return llvm::checkedAdd(a, b); });
  }
  friend CheckedInt operator-(CheckedInt lhs, CheckedInt rhs) {
    return combine(lhs, rhs,
                   [](int64_t a, int64_t b) { return llvm::checkedSub(a, b); });
  }
  friend CheckedInt operator*(CheckedInt lhs, CheckedInt rhs) {
    return combine(lhs, rhs,
                   [](int64_t a, int64_t b) { return llvm::checkedMul(a, b); });
  }
  CheckedInt &operator+=(CheckedInt other) { return *this = *this + other; }
  CheckedInt &operator-=(CheckedInt other) { return *this = *this - other; }
  CheckedInt &operator*=(CheckedInt other) { return *this = *this * other; }

  friend bool operator==(CheckedInt lhs, CheckedInt rhs) {
    return lhs.value == rhs.value;
  }
  friend bool operator!=(CheckedInt lhs, CheckedInt rhs) {
    return !(lhs == rhs);
  }

private:
  constexpr CheckedInt(std::nullopt_t) : value(std::nullopt) {}

  template <typename Op>
  static CheckedInt combine(CheckedInt lhs, CheckedInt rhs, Op op) {
    if (lhs.overflowed() || rhs.overflowed())
      return overflow();
    std::optional<int64_t> result = op(*lhs.value, *rhs.value);
    return result ? CheckedInt(*result) : overflow();
  }

  std::optional<int64_t> value;
};

} // namespace memwall

#endif // MEMWALL_SUPPORT_CHECKEDINT_H
