//===- OutputFile.h - raw_ostream over the safe output files ----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compiler tools' side of memwall-runtime/OutputFile.h: LLVM printing
// code streams into an OutputFileStream, and the file is created or replaced
// only when commit() succeeds ("-" is stdout; devices and FIFOs are written
// in place; docs/user-guide.md, "Outputs").
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SUPPORT_OUTPUTFILE_H
#define MEMWALL_SUPPORT_OUTPUTFILE_H

#include "memwall-runtime/OutputFile.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace memwall {

/// A raw_ostream writing one output file through runtime::OutputFile. Once
/// a write fails, later ones are dropped and commit() returns the error.
/// Destroyed without a successful commit(), it leaves the target as it was.
class OutputFileStream : public llvm::raw_ostream {
public:
  OutputFileStream() = default;
  ~OutputFileStream() override;

  /// Opens `path` ("-" is stdout); `what` names the output in messages
  /// ("report": "cannot write report 'PATH': REASON").
  llvm::Error open(llvm::StringRef path, llvm::StringRef what = "");
  /// Opens the file `name` of an output directory (a bundle's file).
  llvm::Error open(runtime::OutputDirectory &directory, llvm::StringRef name);
  /// Flushes and completes the file (renames it into place).
  llvm::Error commit();

private:
  void write_impl(const char *data, size_t size) override;
  uint64_t current_pos() const override { return position; }

  runtime::OutputFile file;
  uint64_t position = 0;
  bool toStdout = false;
};

/// Writes what `print` prints to `path` ("-" is stdout): the file is created
/// or replaced only if everything was written.
llvm::Error
writeOutputFile(llvm::StringRef path, llvm::StringRef what,
                llvm::function_ref<void(llvm::raw_ostream &)> print);

/// The same for the file `name` of an output directory.
llvm::Error
writeOutputFile(runtime::OutputDirectory &directory, llvm::StringRef name,
                llvm::function_ref<void(llvm::raw_ostream &)> print);

/// A runtime Status as an llvm::Error.
llvm::Error outputError(const runtime::Status &status);

} // namespace memwall

#endif // MEMWALL_SUPPORT_OUTPUTFILE_H
