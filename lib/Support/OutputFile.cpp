//===- OutputFile.cpp - raw_ostream over the safe output files ------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Support/OutputFile.h"

using namespace memwall;

llvm::Error memwall::outputError(const runtime::Status &status) {
  if (status.ok())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 status.message());
}

OutputFileStream::~OutputFileStream() {
  // raw_ostream must not be destroyed with buffered bytes; they go nowhere.
  file.discard();
  flush();
}

llvm::Error OutputFileStream::open(llvm::StringRef path, llvm::StringRef what) {
  toStdout = path == "-";
  return outputError(file.open(path.str(), what.str()));
}

llvm::Error OutputFileStream::open(runtime::OutputDirectory &directory,
                                   llvm::StringRef name) {
  toStdout = false;
  return outputError(directory.openFile(name.str(), file));
}

llvm::Error OutputFileStream::commit() {
  flush();
  return outputError(file.commit());
}

void OutputFileStream::write_impl(const char *data, size_t size) {
  position += size;
  if (!file.isOpen())
    return; // failed (commit() reports it) or discarded
  // Whatever else was printed to llvm::outs() comes first.
  if (toStdout)
    llvm::outs().flush();
  // A failure is kept and reported by commit().
  (void)file.write(data, size);
}

llvm::Error
memwall::writeOutputFile(llvm::StringRef path, llvm::StringRef what,
                         llvm::function_ref<void(llvm::raw_ostream &)> print) {
  OutputFileStream os;
  if (llvm::Error error = os.open(path, what))
    return error;
  print(os);
  return os.commit();
}

llvm::Error
memwall::writeOutputFile(runtime::OutputDirectory &directory,
                         llvm::StringRef name,
                         llvm::function_ref<void(llvm::raw_ostream &)> print) {
  OutputFileStream os;
  if (llvm::Error error = os.open(directory, name))
    return error;
  print(os);
  return os.commit();
}
