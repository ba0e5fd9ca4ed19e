//===- Status.h - Typed errors of the runtime -------------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-run has no LLVM (no llvm::Error) and no exceptions, so its
// functions return a Status: success, or an error code with a one-line
// message that names what failed. The code says what kind of failure it was
// (the tool chooses its exit code from it); the message is what the user
// reads.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_STATUS_H
#define MEMWALL_RUNTIME_STATUS_H

#include <cassert>
#include <string>
#include <utility>

namespace memwall::runtime {

enum class ErrorCode {
  Ok,
  /// A document is not valid JSON ("LINE:COLUMN: message").
  InvalidJson,
  /// manifest.json is not valid JSON, not a bundle, or fails validation.
  InvalidManifest,
  /// An inputs file, or the tensors it names, do not fit the bundle.
  InvalidInputs,
  /// A file could not be opened, read, written or replaced.
  Io,
  /// A host allocation would exceed the memory the machine has.
  OutOfMemory,
  /// The CPU reference interpreter refused or failed to evaluate the graph.
  Reference,
  /// No CUDA driver, or no device (memwall-run exits 3).
  NoDevice,
  /// A CUDA driver call failed.
  Cuda,
  /// cuBLASLt could not be loaded, or a cuBLASLt call failed.
  CuBLAS,
  /// The device is not one the command knows (--calibrate's base).
  Unsupported,
  /// A kernel broke the bundle's contract on device state (counters it
  /// must leave zero).
  KernelState,
  /// NCCL could not be loaded, or an NCCL call failed.
  Nccl,
  /// The ranks of a run over several devices: a malformed MEMWALL_WORLD_SIZE
  /// or MEMWALL_RANK, an all_reduce step whose group is not the world, or
  /// an NCCL unique id that could not be shared.
  Ranks,
};

/// The code's name, for tests and debugging ("InvalidManifest", ...).
inline const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok:
    return "Ok";
  case ErrorCode::InvalidJson:
    return "InvalidJson";
  case ErrorCode::InvalidManifest:
    return "InvalidManifest";
  case ErrorCode::InvalidInputs:
    return "InvalidInputs";
  case ErrorCode::Io:
    return "Io";
  case ErrorCode::OutOfMemory:
    return "OutOfMemory";
  case ErrorCode::Reference:
    return "Reference";
  case ErrorCode::NoDevice:
    return "NoDevice";
  case ErrorCode::Cuda:
    return "Cuda";
  case ErrorCode::CuBLAS:
    return "CuBLAS";
  case ErrorCode::Unsupported:
    return "Unsupported";
  case ErrorCode::KernelState:
    return "KernelState";
  case ErrorCode::Nccl:
    return "Nccl";
  case ErrorCode::Ranks:
    return "Ranks";
  }
  return "?";
}

/// Success, or an error: a code and a message.
class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;
  Status(ErrorCode code, std::string message)
      : errorCode(code), text(std::move(message)) {
    assert(code != ErrorCode::Ok && "an error needs an error code");
  }
  static Status success() { return Status(); }

  bool ok() const { return errorCode == ErrorCode::Ok; }
  ErrorCode code() const { return errorCode; }
  /// The message ("" on success).
  const std::string &message() const { return text; }

  /// The same error with `prefix` in front of its message (the file or
  /// object it happened in).
  Status withPrefix(const std::string &prefix) const {
    return ok() ? *this : Status(errorCode, prefix + text);
  }

private:
  ErrorCode errorCode = ErrorCode::Ok;
  std::string text;
};

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_STATUS_H
