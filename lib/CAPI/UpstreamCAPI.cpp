//===- UpstreamCAPI.cpp - MLIR's core C API as a shared library -----------===//
//
// Empty: libMemWallUpstreamCAPI.so is the whole libMLIRCAPIIR.a archive
// (see CMakeLists.txt); a library needs at least one source.
//
//===----------------------------------------------------------------------===//
