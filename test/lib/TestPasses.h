//===- TestPasses.h - memwall's test passes ---------------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Passes that print memwall's analyses so that analysis tests are FileCheck
// tests (as upstream's mlir/test/lib). Only memwall-opt registers them; the
// plugin and the C API do not link them.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TEST_LIB_TESTPASSES_H
#define MEMWALL_TEST_LIB_TESTPASSES_H

namespace memwall::test {

void registerTestCostAnalysisPass();
void registerTestFusionCostPass();
void registerTestMemoryLivenessPass();

/// Registers every test pass above.
inline void registerTestPasses() {
  registerTestCostAnalysisPass();
  registerTestFusionCostPass();
  registerTestMemoryLivenessPass();
}

} // namespace memwall::test

#endif // MEMWALL_TEST_LIB_TESTPASSES_H
