//===- Checked.h - Checked sizes and the host-memory bound ------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Shapes, offsets and strides come from files (manifests, inputs files) that
// may be hostile: every element count, byte size, offset and stride the
// runtime and the reference interpreter compute from them goes through these
// helpers, so that a quantity that does not fit in int64 is an error naming
// it instead of a wrapped number, and a host allocation larger than the
// machine is an error instead of std::bad_alloc.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_CHECKED_H
#define MEMWALL_RUNTIME_CHECKED_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

namespace memwall {

/// result = a * b; false (result unspecified) when it does not fit in int64.
inline bool checkedMul(int64_t a, int64_t b, int64_t &result) {
  return !__builtin_mul_overflow(a, b, &result);
}

/// result = a + b; false (result unspecified) when it does not fit in int64.
inline bool checkedAdd(int64_t a, int64_t b, int64_t &result) {
  return !__builtin_add_overflow(a, b, &result);
}

/// The number of elements of `shape` (1 for a scalar); false when a
/// dimension is negative or the product of the nonzero dimensions does not
/// fit in int64 (so that every row-major stride of the shape fits too, even
/// when another dimension is 0).
inline bool checkedElementCount(const std::vector<int64_t> &shape,
                                int64_t &count) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim > 0 && !checkedMul(nonzero, dim, nonzero)))
      return false;
    empty = empty || dim == 0;
  }
  count = empty ? 0 : nonzero;
  return true;
}

/// Bytes of physical memory of this machine; 0 when the system cannot say.
inline uint64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  uint64_t bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(pages),
                             static_cast<uint64_t>(pageSize), &bytes))
    return UINT64_MAX;
  return bytes;
}

/// "12.5 GiB".
inline std::string gibibytesText(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f GiB",
                static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

/// "" when `bytes` of host memory can be allocated on this machine, else
/// "WHAT needs X GiB of host memory; this machine has Y GiB". A negative
/// `bytes` (a count that overflowed) never fits.
inline std::string checkHostMemory(int64_t bytes, const std::string &what) {
  uint64_t physical = physicalMemoryBytes();
  if (bytes >= 0 && (physical == 0 || static_cast<uint64_t>(bytes) <= physical))
    return "";
  return what + " needs " +
         (bytes < 0 ? std::string("more than 8 EiB")
                    : gibibytesText(static_cast<uint64_t>(bytes))) +
         " of host memory; this machine has " + gibibytesText(physical);
}

} // namespace memwall

#endif // MEMWALL_RUNTIME_CHECKED_H
