//===- MemoryResults.h - what the memory analyses predict --------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Plain data (no MLIR types) the memory analyses produce: the simulated
// live bytes per step (MemoryLiveness), the budget check with its ranked
// fixes, and the largest batch that fits. docs/memory.md.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_MEMORYRESULTS_H
#define MEMWALL_ANALYSIS_MEMORYRESULTS_H

#include "memwall/Support/CheckedInt.h"

#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace memwall {

/// Where the bytes live on a device during a step (docs/memory.md).
enum class MemoryBucket : unsigned {
  Weights = 0,
  Gradients,
  Optimizer,
  Activations,
  KVCache,
  Workspace
};
constexpr unsigned kNumMemoryBuckets = 6;
using BucketBytes = std::array<int64_t, kNumMemoryBuckets>;
/// "weights", "gradients", "optimizer", "activations", "kv_cache",
/// "workspace": the JSON key stems.
inline llvm::StringRef stringifyMemoryBucket(MemoryBucket bucket) {
  static constexpr const char *names[kNumMemoryBuckets] = {
      "weights", "gradients", "optimizer", "activations", "kv_cache",
      "workspace"};
  return names[static_cast<unsigned>(bucket)];
}

/// Bytes live on one device while one top-level op runs.
struct MemoryStep {
  std::string op;  // "matmul", "fusion", ...
  std::string loc; // its location, as in `ops`
  std::string phase; // forward, backward or optimizer
  BucketBytes bytes{};
  int64_t total() const {
    CheckedInt sum = 0;
    for (int64_t b : bytes)
      sum += CheckedInt::fromSaturated(b);
    return sum.saturated();
  }
};

struct MemorySummary {
  /// Bucket sizes at the peak step; they sum to peakBytes.
  BucketBytes atPeak{};
  int64_t peakBytes = 0;
  std::string peakAt; // location of the op running at the peak
  int64_t peakStep = 0;
  /// Forward values (and inputs) still live when the backward starts: what
  /// recomputation can shrink. Zero for graphs without a backward.
  int64_t savedActivationsBytes = 0;
  bool training = false;
  /// The accounting applied (per device).
  int64_t devices = 1;
  int zeroStage = 0;
  std::string offload = "none";
  std::string precision; // module's memwall.precision, if any
  std::vector<MemoryStep> timeline;
};

/// One way to make a step fit, with what it is predicted to cost.
struct MemoryFix {
  std::string name;        // e.g. "micro-batch", "zero-3"
  std::string description; // one line, with the setting
  int64_t peakBytes = 0;   // predicted per-device peak with the fix
  double timeSeconds = 0;  // predicted step time with the fix
  double timeFactor = 1;   // timeSeconds / the step's predicted time
  bool fits = false;
  bool firstThatFits = false;
  /// Inference fixes: predicted tokens per second with the fix (0 for
  /// training fixes).
  double tokensPerSecond = 0;
};

struct BudgetSummary {
  int64_t budgetBytes = 0;
  bool fits = false;
  int64_t peakBytes = 0;
  int64_t headroomBytes = 0; // budget - peak (negative when it does not fit)
  /// Cheapest first, in the order practitioners reach for them; only when it
  /// does not fit.
  std::vector<MemoryFix> fixes;
};

/// The largest batch and context whose simulated peak fits a memory limit
/// (--max-batch).
struct CapacitySummary {
  int64_t limitBytes = 0;
  std::string limit; // "budget" or "capacity" (the target's memory)
  int64_t batch = 0;   // the step's batch
  int64_t context = 0; // KV length attention reads; 0 without a KV cache
  /// Largest batch that fits (0 when not even batch 1 does), its peak and
  /// predicted tokens per second.
  int64_t maxBatch = 0;
  int64_t peakAtMaxBatch = 0;
  double tokensPerSecondAtMaxBatch = 0;
  /// Largest context at `batch` that fits (0 without a KV cache or when
  /// none does) and its peak.
  int64_t maxContext = 0;
  int64_t peakAtMaxContext = 0;
};

} // namespace memwall

#endif // MEMWALL_ANALYSIS_MEMORYRESULTS_H
