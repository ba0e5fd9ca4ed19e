//===- UpstreamCAPI.cpp - MLIR's core C API as a shared library -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Empty: libMemWallUpstreamCAPI.so is the whole libMLIRCAPIIR.a archive
// (see CMakeLists.txt); a library needs at least one source.
//
//===----------------------------------------------------------------------===//
