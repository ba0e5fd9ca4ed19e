//===- FiniteJSON.h - JSON output with no bare inf or nan -------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// llvm::json prints a non-finite double as `inf` or `nan`, which no JSON
// reader accepts. memwall's figures are finite (target files are range
// checked, counts fit int64), so a non-finite one is a bug upstream; the
// files memwall writes stay valid JSON regardless, with null in its place.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_FINITEJSON_H
#define MEMWALL_SUPPORT_FINITEJSON_H

#include "llvm/Support/JSON.h"

#include <cmath>
#include <type_traits>

namespace memwall {

/// `number` as a JSON value: null when it is not finite.
inline llvm::json::Value finiteJSONNumber(double number) {
  if (!std::isfinite(number))
    return nullptr;
  return number;
}

/// llvm::json::OStream whose double attributes go through finiteJSONNumber.
/// Integers and booleans are written as they are.
class FiniteJSONStream : public llvm::json::OStream {
public:
  using llvm::json::OStream::attribute;
  using llvm::json::OStream::OStream;

  void attribute(llvm::StringRef key, double number) {
    llvm::json::OStream::attribute(key, finiteJSONNumber(number));
  }
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  void attribute(llvm::StringRef key, T number) {
    llvm::json::OStream::attribute(key, llvm::json::Value(number));
  }
};

} // namespace memwall

#endif // MEMWALL_SUPPORT_FINITEJSON_H
