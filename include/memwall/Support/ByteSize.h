//===- ByteSize.h - parse memory sizes such as 40GB or 80GiB ----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_BYTESIZE_H
#define MEMWALL_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace memwall {

/// Parses a positive size: a decimal number (digits, optionally a fraction)
/// followed by a unit, B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB,
/// TiB (powers of 1024), case as written here. "40GB" is 40e9 bytes, "1.5GiB"
/// 1610612736. Anything else (no unit, another unit, zero, a negative or
/// non-finite number, more than 2^62 bytes) is an error saying what is
/// accepted.
llvm::Expected<int64_t> parseByteSize(llvm::StringRef text);

} // namespace memwall

#endif // MEMWALL_SUPPORT_BYTESIZE_H
