//===- CommunicationTest.cpp - data-parallel traffic and its time ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every expected figure is worked out by hand in the comments from the ring
// formulas (all-reduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n of the
// buffer per device) and the link bandwidths of the test target, never taken
// from the analysis.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CommunicationAnalysis.h"

#include "TestTargets.h"

#include <gtest/gtest.h>

using namespace memwall;

namespace {

/// GPT-2 (124,439,808 parameters) in bf16: 248,879,616 B of weights and as
/// many of gradients.
constexpr int64_t kParams = 124439808;
constexpr int64_t kBytes = 2 * kParams; // 248,879,616

/// NVLink 450 GB/s, PCIe 64 GB/s, network 50 GB/s per GPU, 8 GPUs a node.
GPUTarget linkedTarget() {
  GPUTarget target = memwall::testing::roundTarget();
  target.interconnect.nvlinkBandwidth = 450e9;
  target.interconnect.pcieBandwidth = 64e9;
  target.interconnect.networkBandwidth = 50e9;
  target.interconnect.gpusPerNode = 8;
  return target;
}

CommunicationInputs gpt2(double forward, double backward, double optimizer) {
  CommunicationInputs in;
  in.paramBytes = kBytes;
  in.gradientBytes = kBytes;
  in.params = kParams;
  in.forwardSeconds = forward;
  in.backwardSeconds = backward;
  in.optimizerSeconds = optimizer;
  return in;
}

ShardingOptions zero(int64_t devices, int stage,
                     OffloadPolicy offload = OffloadPolicy::None) {
  ShardingOptions options;
  options.devices = devices;
  options.zeroStage = stage;
  options.offload = offload;
  return options;
}

TEST(Communication, OneDeviceHasNoCollectivesAndTheStepIsTheCompute) {
  CommunicationSummary c =
      estimateCommunication(gpt2(1e-3, 2e-3, 0.5e-3), zero(1, 0), linkedTarget());
  EXPECT_EQ(c.link, "none");
  EXPECT_EQ(c.allReduceBytes + c.reduceScatterBytes + c.allGatherBytes, 0);
  EXPECT_DOUBLE_EQ(c.collectiveSeconds, 0);
  EXPECT_DOUBLE_EQ(c.exposedSeconds, 0);
  // 1 + 2 + 0.5 ms.
  EXPECT_DOUBLE_EQ(c.stepSeconds, 3.5e-3);
}

TEST(Communication, DataParallelAllReduceOnNVLink) {
  // 8 devices in one node: NVLink at 450 GB/s. Ring all-reduce sends
  // 2 * 7/8 * 248,879,616 = 435,539,328 B per device: 0.96786517 ms.
  CommunicationSummary c =
      estimateCommunication(gpt2(1e-3, 2e-3, 0), zero(8, 0), linkedTarget());
  EXPECT_EQ(c.link, "nvlink");
  EXPECT_DOUBLE_EQ(c.linkBandwidth, 450e9);
  EXPECT_EQ(c.allReduceBytes, 435539328);
  EXPECT_EQ(c.reduceScatterBytes, 0);
  EXPECT_EQ(c.allGatherBytes, 0);
  EXPECT_NEAR(c.collectiveSeconds, 435539328 / 450e9, 1e-12);
  EXPECT_NEAR(c.collectiveSeconds, 0.96786517e-3, 1e-11);
  // Hidden by a 2 ms backward.
  EXPECT_DOUBLE_EQ(c.exposedSeconds, 0);
  // Behind a 0.5 ms backward, 0.96786517 - 0.5 = 0.46786517 ms shows.
  CommunicationSummary short_ =
      estimateCommunication(gpt2(1e-3, 0.5e-3, 0), zero(8, 0), linkedTarget());
  EXPECT_NEAR(short_.exposedSeconds, 0.46786517e-3, 1e-11);
  EXPECT_NEAR(short_.stepSeconds, 1.5e-3 + 0.46786517e-3, 1e-11);
}

TEST(Communication, ZeroStagesOnEightDevices) {
  GPUTarget target = linkedTarget();
  // (n-1)/n of the buffer: 7/8 * 248,879,616 = 217,769,664 B.
  constexpr int64_t share = 217769664;
  // Stages 1 and 2: reduce-scatter the gradients, all-gather the updated
  // weights; 435,539,328 B in all, as DDP (ZeRO paper, section 7.2.1).
  for (int stage : {1, 2}) {
    CommunicationSummary c =
        estimateCommunication(gpt2(1e-3, 2e-3, 0.8e-3), zero(8, stage), target);
    EXPECT_EQ(c.allReduceBytes, 0) << stage;
    EXPECT_EQ(c.reduceScatterBytes, share) << stage;
    EXPECT_EQ(c.allGatherBytes, share) << stage;
    EXPECT_NEAR(c.collectiveSeconds, 0.96786517e-3, 1e-11) << stage;
    // The optimizer updates 1/8 of the model: 0.8 / 8 = 0.1 ms.
    EXPECT_NEAR(c.computeSeconds, 3.1e-3, 1e-12) << stage;
  }
  // Stage 3: weights gathered for the forward and for the backward, and
  // the gradients reduce-scattered: 3 * 217,769,664 = 653,308,992 B,
  // 1.5x DDP; 1.45179776 ms at 450 GB/s.
  CommunicationSummary c =
      estimateCommunication(gpt2(1e-3, 2e-3, 0), zero(8, 3), target);
  EXPECT_EQ(c.allGatherBytes, 2 * share);
  EXPECT_EQ(c.reduceScatterBytes, share);
  EXPECT_NEAR(c.collectiveSeconds, 1.45179776e-3, 1e-11);
  EXPECT_DOUBLE_EQ(c.exposedSeconds, 0);
  // With a 0.2 ms forward and a 0.3 ms backward: the forward gather takes
  // 217,769,664 / 450e9 = 0.48393259 ms, 0.28393259 ms exposed; the
  // backward's gather + reduce-scatter 0.96786517 ms, 0.66786517 exposed.
  CommunicationSummary tight =
      estimateCommunication(gpt2(0.2e-3, 0.3e-3, 0), zero(8, 3), target);
  EXPECT_NEAR(tight.exposedSeconds, 0.28393259e-3 + 0.66786517e-3, 1e-11);
}

TEST(Communication, GradientAccumulationRepeatsWhatIsShardedPerMicroStep) {
  GPUTarget target = linkedTarget();
  constexpr int64_t share = 217769664; // 7/8 of the buffer
  CommunicationInputs in = gpt2(1e-3, 2e-3, 0);
  in.microSteps = 4;
  // DDP accumulates locally: one all-reduce per step.
  EXPECT_EQ(estimateCommunication(in, zero(8, 0), target).allReduceBytes,
            2 * share);
  // ZeRO-2 keeps only a gradient shard: reduce-scatter every micro-step;
  // the weights are gathered once, after the update.
  CommunicationSummary two = estimateCommunication(in, zero(8, 2), target);
  EXPECT_EQ(two.reduceScatterBytes, 4 * share);
  EXPECT_EQ(two.allGatherBytes, share);
  // ZeRO-3 gathers twice and reduce-scatters once per micro-step.
  CommunicationSummary three = estimateCommunication(in, zero(8, 3), target);
  EXPECT_EQ(three.allGatherBytes, 8 * share);
  EXPECT_EQ(three.reduceScatterBytes, 4 * share);
  // Compute: 4 * (1 + 2) ms.
  EXPECT_NEAR(three.computeSeconds, 12e-3, 1e-12);
}

TEST(Communication, BeyondOneNodeTheNetworkCarriesTheCollectives) {
  // 16 devices > 8 per node: the network at 50 GB/s. All-reduce
  // 2 * 15/16 * 248,879,616 = 466,649,280 B: 9.3329856 ms.
  CommunicationSummary c = estimateCommunication(gpt2(1e-3, 2e-3, 0),
                                                 zero(16, 0), linkedTarget());
  EXPECT_EQ(c.link, "network");
  EXPECT_DOUBLE_EQ(c.linkBandwidth, 50e9);
  EXPECT_EQ(c.allReduceBytes, 466649280);
  EXPECT_NEAR(c.collectiveSeconds, 9.3329856e-3, 1e-10);
  // 9.3329856 - 2 ms of backward are exposed.
  EXPECT_NEAR(c.exposedSeconds, 7.3329856e-3, 1e-10);
}

TEST(Communication, WithoutNVLinkCollectivesUsePCIe) {
  GPUTarget target = linkedTarget();
  target.interconnect.nvlinkBandwidth = 0;
  target.interconnect.pcieBandwidth = 32e9;
  // 4 devices: all-reduce 2 * 3/4 * 248,879,616 = 373,319,424 B at 32 GB/s:
  // 11.66623200 ms.
  CommunicationSummary c =
      estimateCommunication(gpt2(1e-3, 2e-3, 0), zero(4, 0), target);
  EXPECT_EQ(c.link, "pcie");
  EXPECT_DOUBLE_EQ(c.linkBandwidth, 32e9);
  EXPECT_EQ(c.allReduceBytes, 373319424);
  EXPECT_NEAR(c.collectiveSeconds, 11.666232e-3, 1e-10);
}

TEST(Communication, OptimizerOffloadUsesPCIeAndTheCPU) {
  // One device, optimizer on the host: gradients down (248,879,616 B,
  // 3.888744 ms at 64 GB/s, hidden by a 5 ms backward), the CPU AdamW
  // (124,439,808 / 2e9 = 62.219904 ms) and the updated weights up
  // (3.888744 ms) are exposed; the GPU optimizer (1 ms) no longer runs.
  CommunicationSummary c = estimateCommunication(
      gpt2(2e-3, 5e-3, 1e-3), zero(1, 0, OffloadPolicy::Optimizer),
      linkedTarget());
  EXPECT_EQ(c.offloadBytes, 2 * kBytes);
  EXPECT_NEAR(c.offloadSeconds, 2 * 3.888744e-3 + 62.219904e-3, 1e-10);
  EXPECT_NEAR(c.exposedSeconds, 3.888744e-3 + 62.219904e-3, 1e-10);
  EXPECT_NEAR(c.computeSeconds, 7e-3, 1e-12);
  // Under ZeRO-2 over 8 each device moves and updates 1/8.
  CommunicationSummary sharded = estimateCommunication(
      gpt2(2e-3, 5e-3, 1e-3), zero(8, 2, OffloadPolicy::Optimizer),
      linkedTarget());
  EXPECT_EQ(sharded.offloadBytes, 2 * kBytes / 8);
  EXPECT_NEAR(sharded.exposedSeconds, (3.888744e-3 + 62.219904e-3) / 8,
              1e-10);
}

TEST(Communication, ParamsOffloadStreamsTheWeightsTwice) {
  // Gradients down once, weights in for the forward and the backward:
  // 3 * 248,879,616 B; nothing goes back up.
  CommunicationSummary c = estimateCommunication(
      gpt2(2e-3, 5e-3, 0), zero(1, 0, OffloadPolicy::Params), linkedTarget());
  EXPECT_EQ(c.offloadBytes, 3 * kBytes);
  // Forward window: 3.888744 ms of weights behind 2 ms: 1.888744 exposed;
  // backward: 2 * 3.888744 = 7.777488 behind 5 ms: 2.777488; plus the CPU
  // AdamW 62.219904 ms.
  EXPECT_NEAR(c.exposedSeconds, 1.888744e-3 + 2.777488e-3 + 62.219904e-3,
              1e-10);
}

TEST(Communication, WithoutAnOptimizerNothingIsGatheredOrOffloadedBack) {
  CommunicationInputs in = gpt2(1e-3, 2e-3, 0);
  in.hasOptimizer = false;
  CommunicationSummary two =
      estimateCommunication(in, zero(8, 2), linkedTarget());
  EXPECT_EQ(two.reduceScatterBytes, 217769664);
  EXPECT_EQ(two.allGatherBytes, 0);
  CommunicationSummary host = estimateCommunication(
      in, zero(1, 0, OffloadPolicy::Optimizer), linkedTarget());
  EXPECT_EQ(host.offloadBytes, 0);
  EXPECT_DOUBLE_EQ(host.exposedSeconds, 0);
}

} // namespace
