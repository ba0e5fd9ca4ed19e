//===- SimtInterpreterTest.cpp - Tests for the SIMT interpreter -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every expected value is computed by plain C++ loops in the test, never by
// the interpreter itself.
//
//===----------------------------------------------------------------------===//

#include "memwall/Simulator/SimtInterpreter.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace memwall::simt;

namespace {

struct Kernel {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::gpu::GPUFuncOp func;
};

Kernel load(llvm::StringRef body) {
  Kernel k;
  k.context = createContext();
  // Type aliases (lines starting with '!') must precede the module.
  std::string aliases, kernels;
  llvm::SmallVector<llvm::StringRef> lines;
  body.split(lines, '\n');
  for (llvm::StringRef line : lines)
    (line.starts_with("!") ? aliases : kernels) += line.str() + "\n";
  std::string source = aliases +
                       "module attributes {gpu.container_module} {\n"
                       "gpu.module @m {\n" +
                       kernels + "\n}\n}\n";
  k.module = parseModule(*k.context, source);
  if (k.module)
    k.func = findKernel(*k.module, "k");
  return k;
}

template <typename T> llvm::MutableArrayRef<uint8_t> bytes(std::vector<T> &v) {
  return {reinterpret_cast<uint8_t *>(v.data()), v.size() * sizeof(T)};
}

/// Runs the kernel; returns the error text, or "" on success.
std::string run(const Kernel &k, const LaunchConfig &config,
                std::vector<llvm::MutableArrayRef<uint8_t>> args) {
  if (!k.func)
    return "kernel did not parse";
  llvm::Error e = runKernel(k.func, config, args);
  return e ? llvm::toString(std::move(e)) : std::string();
}

LaunchConfig threads(int64_t block, int64_t grid = 1,
                     int64_t dynamicShared = 0) {
  LaunchConfig c;
  c.block = {block, 1, 1};
  c.grid = {grid, 1, 1};
  c.dynamicSharedBytes = dynamicShared;
  return c;
}

/// Deterministic pseudo-random values in [-1, 1).
std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (float &x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return v;
}

std::vector<uint16_t> toBf16(const std::vector<float> &v) {
  std::vector<uint16_t> r;
  for (float x : v)
    r.push_back(floatToBf16(x));
  return r;
}

//===----------------------------------------------------------------------===//
// Plain SIMT kernels
//===----------------------------------------------------------------------===//

constexpr const char *kElementwise = R"mlir(
gpu.func @k(%a: memref<100xf32>, %b: memref<100xf32>, %o: memref<100xf32>) kernel {
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %bdim = gpu.block_dim x
  %base = arith.muli %bid, %bdim : index
  %i = arith.addi %base, %tid : index
  %n = arith.constant 100 : index
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %x = memref.load %a[%i] : memref<100xf32>
    %y = memref.load %b[%i] : memref<100xf32>
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %x, %two : f32
    %s = arith.addf %m, %y : f32
    memref.store %s, %o[%i] : memref<100xf32>
  }
  gpu.return
}
)mlir";

TEST(SimtInterpreter, ElementwiseWithBoundsGuardOverSeveralBlocks) {
  Kernel k = load(kElementwise);
  std::vector<float> a = randomFloats(100, 1), b = randomFloats(100, 2);
  std::vector<float> o(100, -7.0f);
  // 4 blocks of 32 threads: the last block has 28 threads past the end.
  EXPECT_EQ(run(k, threads(32, 4), {bytes(a), bytes(b), bytes(o)}), "");
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(o[i], a[i] * 2.0f + b[i]) << i;
}

TEST(SimtInterpreter, OutOfBoundsGlobalAccessReportsTheOp) {
  std::string noGuard = kElementwise;
  // Drop the guard: threads 100..127 then load past the end.
  noGuard.replace(noGuard.find("scf.if %in {"), 12, "");
  noGuard.replace(noGuard.find("  }\n  gpu.return"), 4, "");
  Kernel k = load(noGuard);
  std::vector<float> a(100), b(100), o(100);
  std::string err = run(k, threads(32, 4), {bytes(a), bytes(b), bytes(o)});
  EXPECT_NE(err.find("kernel.mlir"), std::string::npos) << err;
  EXPECT_NE(err.find("'memref.load'"), std::string::npos) << err;
  EXPECT_NE(err.find("out-of-bounds"), std::string::npos) << err;
  EXPECT_NE(err.find("thread 4"), std::string::npos) << err; // global 100
  EXPECT_NE(err.find("block (3, 0, 0)"), std::string::npos) << err;
}

TEST(SimtInterpreter, ShuffleXorButterflySumsEachWarp) {
  Kernel k = load(R"mlir(
gpu.func @k(%in: memref<64xf32>, %sum: memref<64xf32>, %ids: memref<64xi32>) kernel {
  %tid = gpu.thread_id x
  %w = arith.constant 32 : i32
  %v0 = memref.load %in[%tid] : memref<64xf32>
  %c16 = arith.constant 16 : i32
  %c8 = arith.constant 8 : i32
  %c4 = arith.constant 4 : i32
  %c2 = arith.constant 2 : i32
  %c1 = arith.constant 1 : i32
  %s16, %p16 = gpu.shuffle xor %v0, %c16, %w : f32
  %v1 = arith.addf %v0, %s16 : f32
  %s8, %p8 = gpu.shuffle xor %v1, %c8, %w : f32
  %v2 = arith.addf %v1, %s8 : f32
  %s4, %p4 = gpu.shuffle xor %v2, %c4, %w : f32
  %v3 = arith.addf %v2, %s4 : f32
  %s2, %p2 = gpu.shuffle xor %v3, %c2, %w : f32
  %v4 = arith.addf %v3, %s2 : f32
  %s1, %p1 = gpu.shuffle xor %v4, %c1, %w : f32
  %v5 = arith.addf %v4, %s1 : f32
  memref.store %v5, %sum[%tid] : memref<64xf32>
  // An i32 idx shuffle: every lane reads lane (7 * lane) % 32's thread id.
  %tid32 = arith.index_cast %tid : index to i32
  %lane = arith.remui %tid32, %w : i32
  %c7 = arith.constant 7 : i32
  %m7 = arith.muli %lane, %c7 : i32
  %src = arith.remui %m7, %w : i32
  %got, %ok = gpu.shuffle idx %tid32, %src, %w : i32
  memref.store %got, %ids[%tid] : memref<64xi32>
  gpu.return
}
)mlir");
  // Small integers make every summation order exact.
  std::vector<float> in(64);
  for (int i = 0; i < 64; ++i)
    in[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  std::vector<float> sum(64);
  std::vector<int32_t> ids(64);
  ASSERT_EQ(run(k, threads(64), {bytes(in), bytes(sum), bytes(ids)}), "");
  for (int warp = 0; warp < 2; ++warp) {
    float expected = 0;
    for (int l = 0; l < 32; ++l)
      expected += in[warp * 32 + l];
    for (int l = 0; l < 32; ++l) {
      EXPECT_EQ(sum[warp * 32 + l], expected) << warp << " " << l;
      EXPECT_EQ(ids[warp * 32 + l], warp * 32 + (7 * l) % 32);
    }
  }
}

TEST(SimtInterpreter, DivergentShuffleIsAnError) {
  Kernel k = load(R"mlir(
gpu.func @k(%o: memref<32xf32>) kernel {
  %tid = gpu.thread_id x
  %c16 = arith.constant 16 : index
  %lo = arith.cmpi ult, %tid, %c16 : index
  scf.if %lo {
    %f = arith.constant 1.0 : f32
    %c1 = arith.constant 1 : i32
    %w = arith.constant 32 : i32
    %s, %p = gpu.shuffle xor %f, %c1, %w : f32
    memref.store %s, %o[%tid] : memref<32xf32>
  }
  gpu.return
}
)mlir");
  std::vector<float> o(32);
  std::string err = run(k, threads(32), {bytes(o)});
  EXPECT_NE(err.find("'gpu.shuffle'"), std::string::npos) << err;
  EXPECT_NE(err.find("16 of the 32 lanes"), std::string::npos) << err;
}

TEST(SimtInterpreter, ForIterArgsAndDivergentIfWithResults) {
  Kernel k = load(R"mlir(
gpu.func @k(%in: memref<8xf32>, %o: memref<48xf32>, %n: memref<48xi32>) kernel {
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : i32
  %tf = arith.index_cast %tid : index to i32
  %t = arith.sitofp %tf : i32 to f32
  %acc, %cnt = scf.for %i = %c0 to %c8 step %c1 iter_args(%a = %zero, %c = %i0) -> (f32, i32) {
    %x = memref.load %in[%i] : memref<8xf32>
    %p = arith.mulf %x, %t : f32
    %a2 = arith.addf %a, %p : f32
    %ii = arith.index_cast %i : index to i32
    %c2 = arith.addi %c, %ii : i32
    scf.yield %a2, %c2 : f32, i32
  }
  %r = arith.remui %tid, %c3 : index
  %isZero = arith.cmpi eq, %r, %c0 : index
  %res, %k = scf.if %isZero -> (f32, i32) {
    %two = arith.constant 2.0 : f32
    %d = arith.mulf %acc, %two : f32
    scf.yield %d, %cnt : f32, i32
  } else {
    %neg = arith.negf %acc : f32
    %m = arith.constant -1 : i32
    scf.yield %neg, %m : f32, i32
  }
  memref.store %res, %o[%tid] : memref<48xf32>
  memref.store %k, %n[%tid] : memref<48xi32>
  gpu.return
}
)mlir");
  std::vector<float> in = {1, 2, 3, 4, -1, -2, 0.5f, 0.25f};
  std::vector<float> o(48);
  std::vector<int32_t> n(48);
  ASSERT_EQ(run(k, threads(48), {bytes(in), bytes(o), bytes(n)}), "");
  for (int t = 0; t < 48; ++t) {
    float acc = 0;
    for (int i = 0; i < 8; ++i)
      acc += in[i] * static_cast<float>(t);
    EXPECT_EQ(o[t], t % 3 == 0 ? acc * 2 : -acc) << t;
    EXPECT_EQ(n[t], t % 3 == 0 ? 28 : -1) << t;
  }
}

TEST(SimtInterpreter, ScalarAndVectorArithmeticMatchesCpp) {
  Kernel k = load(R"mlir(
gpu.func @k(%x: memref<32xf32>, %of: memref<96xf32>, %oi: memref<128xi32>, %ov: memref<128xf32>) kernel {
  %tid = gpu.thread_id x
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %f = memref.load %x[%tid] : memref<32xf32>
  %zero = arith.constant 0.0 : f32
  %e = math.exp %f : f32
  %tb = arith.truncf %f : f32 to bf16
  %back = arith.extf %tb : bf16 to f32
  %relu = arith.maximumf %f, %zero : f32
  %fi = arith.muli %tid, %c3 : index
  %fi1 = arith.addi %fi, %c2 : index
  %fi0 = arith.subi %fi1, %c2 : index
  %fi2 = arith.addi %fi0, %c2 : index
  %one = arith.constant 1 : index
  %fi3 = arith.addi %fi0, %one : index
  memref.store %e, %of[%fi0] : memref<96xf32>
  memref.store %back, %of[%fi3] : memref<96xf32>
  memref.store %relu, %of[%fi2] : memref<96xf32>
  %ti = arith.index_cast %tid : index to i32
  %c16 = arith.constant 16 : i32
  %i3 = arith.constant 3 : i32
  %i1 = arith.constant 1 : i32
  %i28 = arith.constant 28 : i32
  %n = arith.subi %ti, %c16 : i32
  %d = arith.divsi %n, %i3 : i32
  %r = arith.remsi %n, %i3 : i32
  %sr = arith.shrsi %n, %i1 : i32
  %ur = arith.shrui %n, %i28 : i32
  %ii = arith.muli %tid, %c4 : index
  %v4 = vector.from_elements %d, %r, %sr, %ur : vector<4xi32>
  vector.store %v4, %oi[%ii] : memref<128xi32>, vector<4xi32>
  %b = vector.broadcast %f : f32 to vector<4xf32>
  %b2 = vector.insert %relu, %b [2] : f32 into vector<4xf32>
  %cst = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  %m = arith.mulf %b2, %cst : vector<4xf32>
  %neg = arith.cmpf olt, %f, %zero : f32
  %sel = arith.select %neg, %m, %cst : vector<4xf32>
  vector.store %sel, %ov[%ii] : memref<128xf32>, vector<4xf32>
  gpu.return
}
)mlir");
  std::vector<float> x = randomFloats(32, 10), of(96), ov(128);
  std::vector<int32_t> oi(128);
  ASSERT_EQ(run(k, threads(32), {bytes(x), bytes(of), bytes(oi), bytes(ov)}),
            "");
  for (int t = 0; t < 32; ++t) {
    float f = x[t], relu = f > 0 ? f : 0.0f;
    EXPECT_FLOAT_EQ(of[3 * t], std::exp(f)) << t;
    EXPECT_EQ(of[3 * t + 1], bf16ToFloat(floatToBf16(f))) << t;
    EXPECT_EQ(of[3 * t + 2], relu) << t;
    int32_t n = t - 16;
    EXPECT_EQ(oi[4 * t], n / 3) << t;
    EXPECT_EQ(oi[4 * t + 1], n % 3) << t;
    EXPECT_EQ(oi[4 * t + 2], n >> 1) << t;
    EXPECT_EQ(oi[4 * t + 3],
              static_cast<int32_t>(static_cast<uint32_t>(n) >> 28))
        << t;
    const float cst[4] = {1, 2, 3, 4};
    for (int e = 0; e < 4; ++e) {
      float m = (e == 2 ? relu : f) * cst[e];
      EXPECT_EQ(ov[4 * t + e], f < 0 ? m : cst[e]) << t << " " << e;
    }
  }
}

TEST(SimtInterpreter, NonUniformLoopBoundsAreAnError) {
  Kernel k = load(R"mlir(
gpu.func @k(%o: memref<32xf32>) kernel {
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %tid step %c1 {
    memref.store %f, %o[%i] : memref<32xf32>
  }
  gpu.return
}
)mlir");
  std::vector<float> o(32);
  std::string err = run(k, threads(32), {bytes(o)});
  EXPECT_NE(err.find("'scf.for'"), std::string::npos) << err;
  EXPECT_NE(err.find("uniform"), std::string::npos) << err;
}

TEST(SimtInterpreter, UnsupportedOpIsNamed) {
  Kernel k = load(R"mlir(
gpu.func @k(%o: memref<32xf32>) kernel {
  %tid = gpu.thread_id x
  %f = arith.constant 2.0 : f32
  %p = math.powf %f, %f : f32
  memref.store %p, %o[%tid] : memref<32xf32>
  gpu.return
}
)mlir");
  std::vector<float> o(32);
  std::string err = run(k, threads(32), {bytes(o)});
  EXPECT_NE(err.find("'math.powf'"), std::string::npos) << err;
  EXPECT_NE(err.find("unsupported op"), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// Shared memory: barriers and races
//===----------------------------------------------------------------------===//

// Thread t stores to smem[t] and then loads its neighbour's smem[(t+1)%64].
std::string neighbourKernel(bool barrier, bool skipStore = false) {
  std::string s = R"mlir(
gpu.func @k(%in: memref<64xf32>, %o: memref<64xf32>)
    workgroup(%smem: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
  %tid = gpu.thread_id x
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %x = memref.load %in[%tid] : memref<64xf32>
  STORE
  BARRIER
  %n1 = arith.addi %tid, %c1 : index
  %n = arith.remui %n1, %c64 : index
  %y = memref.load %smem[%n] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %y, %o[%tid] : memref<64xf32>
  gpu.return
}
)mlir";
  s.replace(s.find("STORE"), 5,
            skipStore ? ""
                      : "memref.store %x, %smem[%tid] : memref<64xf32, "
                        "#gpu.address_space<workgroup>>");
  s.replace(s.find("BARRIER"), 7, barrier ? "gpu.barrier" : "");
  return s;
}

TEST(SimtInterpreter, MissingBarrierBetweenSharedStoreAndLoadIsARace) {
  Kernel k = load(neighbourKernel(/*barrier=*/false));
  std::vector<float> in = randomFloats(64, 3), o(64);
  std::string err = run(k, threads(64), {bytes(in), bytes(o)});
  EXPECT_NE(err.find("data race"), std::string::npos) << err;
  EXPECT_NE(err.find("'memref.load'"), std::string::npos) << err;
  EXPECT_NE(err.find("thread 0 reads byte 4"), std::string::npos) << err;
  EXPECT_NE(err.find("written by thread 1"), std::string::npos) << err;
}

TEST(SimtInterpreter, SameKernelWithBarrierPasses) {
  Kernel k = load(neighbourKernel(/*barrier=*/true));
  std::vector<float> in = randomFloats(64, 3), o(64);
  ASSERT_EQ(run(k, threads(64), {bytes(in), bytes(o)}), "");
  for (int t = 0; t < 64; ++t)
    EXPECT_EQ(o[t], in[(t + 1) % 64]) << t;
}

TEST(SimtInterpreter, ReadingNeverWrittenSharedMemoryIsAnError) {
  Kernel k = load(neighbourKernel(/*barrier=*/true, /*skipStore=*/true));
  std::vector<float> in(64), o(64);
  std::string err = run(k, threads(64), {bytes(in), bytes(o)});
  EXPECT_NE(err.find("never-written"), std::string::npos) << err;
}

TEST(SimtInterpreter, WriteAfterReadWithoutBarrierIsARace) {
  Kernel k = load(R"mlir(
gpu.func @k(%o: memref<64xf32>)
    workgroup(%smem: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
  %tid = gpu.thread_id x
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 3.0 : f32
  memref.store %f, %smem[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %n1 = arith.addi %tid, %c1 : index
  %n = arith.remui %n1, %c64 : index
  %y = memref.load %smem[%n] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %y, %smem[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  gpu.return
}
)mlir");
  std::vector<float> o(64);
  std::string err = run(k, threads(64), {bytes(o)});
  EXPECT_NE(err.find("'memref.store'"), std::string::npos) << err;
  // Thread 63 read smem[0] before thread 0 overwrites it.
  EXPECT_NE(err.find("data race: thread 0 writes byte 0"), std::string::npos)
      << err;
  EXPECT_NE(err.find("read by thread 63"), std::string::npos) << err;
}

TEST(SimtInterpreter, BarrierUnderDivergenceIsAnError) {
  Kernel k = load(R"mlir(
gpu.func @k(%o: memref<64xf32>) kernel {
  %tid = gpu.thread_id x
  %c32 = arith.constant 32 : index
  %lo = arith.cmpi ult, %tid, %c32 : index
  scf.if %lo {
    gpu.barrier
  }
  gpu.return
}
)mlir");
  std::vector<float> o(64);
  std::string err = run(k, threads(64), {bytes(o)});
  EXPECT_NE(err.find("'gpu.barrier'"), std::string::npos) << err;
  EXPECT_NE(err.find("32 of 64"), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// cp.async
//===----------------------------------------------------------------------===//

// Every thread copies two 4-element chunks, each as its own group: chunk A
// (src[4t..], srcElements = t % 5, so t % 5 == 0 copies nothing and reads no
// source) and chunk B (src[128 + 4t..]). It waits with numGroups = 1, so only
// A has landed, reads A, then (optionally, EARLY) reads B before the final
// wait.
std::string asyncKernel(bool readBeforeWait) {
  std::string s = R"mlir(
gpu.func @k(%src: memref<256xf32>, %o: memref<256xf32>)
    workgroup(%smem: memref<256xf32, #gpu.address_space<workgroup>>) kernel {
  %tid = gpu.thread_id x
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c128 = arith.constant 128 : index
  %a = arith.muli %tid, %c4 : index
  %b = arith.addi %a, %c128 : index
  %n = arith.remui %tid, %c5 : index
  %t0 = nvgpu.device_async_copy %src[%a], %smem[%a], 4, %n : memref<256xf32> to memref<256xf32, #gpu.address_space<workgroup>>
  %g0 = nvgpu.device_async_create_group %t0
  %t1 = nvgpu.device_async_copy %src[%b], %smem[%b], 4 : memref<256xf32> to memref<256xf32, #gpu.address_space<workgroup>>
  %g1 = nvgpu.device_async_create_group %t1
  nvgpu.device_async_wait %g0 {numGroups = 1 : i32}
  %va = vector.load %smem[%a] : memref<256xf32, #gpu.address_space<workgroup>>, vector<4xf32>
  vector.store %va, %o[%a] : memref<256xf32>, vector<4xf32>
  EARLY
  nvgpu.device_async_wait %g1 {numGroups = 0 : i32}
  %vb = vector.load %smem[%b] : memref<256xf32, #gpu.address_space<workgroup>>, vector<4xf32>
  vector.store %vb, %o[%b] : memref<256xf32>, vector<4xf32>
  gpu.return
}
)mlir";
  s.replace(s.find("EARLY"), 5,
            readBeforeWait ? "%early = memref.load %smem[%b] : memref<256xf32, "
                             "#gpu.address_space<workgroup>>"
                           : "");
  return s;
}

TEST(SimtInterpreter, AsyncCopyZeroFillsAndLandsAtTheWait) {
  Kernel k = load(asyncKernel(/*readBeforeWait=*/false));
  std::vector<float> src = randomFloats(256, 4), o(256, -9.0f);
  ASSERT_EQ(run(k, threads(32), {bytes(src), bytes(o)}), "");
  for (int t = 0; t < 32; ++t) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(o[4 * t + j], j < t % 5 ? src[4 * t + j] : 0.0f) << t << j;
      EXPECT_EQ(o[128 + 4 * t + j], src[128 + 4 * t + j]) << t << j;
    }
  }
}

TEST(SimtInterpreter, ReadingAsyncCopyDestinationBeforeItsWaitFails) {
  Kernel k = load(asyncKernel(/*readBeforeWait=*/true));
  std::vector<float> src = randomFloats(256, 4), o(256);
  std::string err = run(k, threads(32), {bytes(src), bytes(o)});
  EXPECT_NE(err.find("'memref.load'"), std::string::npos) << err;
  EXPECT_NE(err.find("in flight"), std::string::npos) << err;
  EXPECT_NE(err.find("thread 0 reads byte 512"), std::string::npos) << err;
}

TEST(SimtInterpreter, AsyncCopyOverBytesAnotherThreadReadIsARace) {
  Kernel k = load(R"mlir(
gpu.func @k(%src: memref<128xf32>, %o: memref<32xf32>)
    workgroup(%smem: memref<128xf32, #gpu.address_space<workgroup>>) kernel {
  %tid = gpu.thread_id x
  %c4 = arith.constant 4 : index
  %c31 = arith.constant 31 : index
  %f = arith.constant 1.0 : f32
  %a = arith.muli %tid, %c4 : index
  memref.store %f, %smem[%a] : memref<128xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %r = arith.subi %c31, %tid : index
  %ra = arith.muli %r, %c4 : index
  %x = memref.load %smem[%ra] : memref<128xf32, #gpu.address_space<workgroup>>
  memref.store %x, %o[%tid] : memref<32xf32>
  %t0 = nvgpu.device_async_copy %src[%a], %smem[%a], 4 : memref<128xf32> to memref<128xf32, #gpu.address_space<workgroup>>
  gpu.return
}
)mlir");
  std::vector<float> src(128), o(32);
  std::string err = run(k, threads(32), {bytes(src), bytes(o)});
  EXPECT_NE(err.find("'nvgpu.device_async_copy'"), std::string::npos) << err;
  EXPECT_NE(err.find("data race: thread 0 writes byte 0"), std::string::npos)
      << err;
  EXPECT_NE(err.find("read by thread 31"), std::string::npos) << err;
}

//===----------------------------------------------------------------------===//
// Tensor cores: ldmatrix and mma.sync
//===----------------------------------------------------------------------===//

// A 16x24 bf16 tile (row stride 24) is written by the threads into dynamic
// shared memory at byte 64, then read with ldmatrix.x4 (lane l addresses row
// l % 16, column 8 * (l / 16)) and ldmatrix.x2.trans (lane l addresses row
// l % 16, column 4).
constexpr const char *kLdMatrix = R"mlir(
gpu.func @k(%in: memref<384xbf16>, %o4: memref<256xbf16>, %o2: memref<128xbf16>) kernel {
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index
  %c24 = arith.constant 24 : index
  %c64 = arith.constant 64 : index
  %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c64][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x24xbf16, #gpu.address_space<workgroup>>
  %first = arith.muli %tid, %c12 : index
  scf.for %j = %c0 to %c12 step %c1 {
    %lin = arith.addi %first, %j : index
    %r = arith.divui %lin, %c24 : index
    %c = arith.remui %lin, %c24 : index
    %v = memref.load %in[%lin] : memref<384xbf16>
    memref.store %v, %tile[%r, %c] : memref<16x24xbf16, #gpu.address_space<workgroup>>
  }
  gpu.barrier
  %row = arith.remui %tid, %c16 : index
  %half = arith.divui %tid, %c16 : index
  %col = arith.muli %half, %c8 : index
  %m4 = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false} : memref<16x24xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
  %f4 = vector.shape_cast %m4 : vector<4x2xbf16> to vector<8xbf16>
  %o4i = arith.muli %tid, %c8 : index
  vector.store %f4, %o4[%o4i] : memref<256xbf16>, vector<8xbf16>
  %m2 = nvgpu.ldmatrix %tile[%row, %c4] {numTiles = 2 : i32, transpose = true} : memref<16x24xbf16, #gpu.address_space<workgroup>> -> vector<2x2xbf16>
  %f2 = vector.shape_cast %m2 : vector<2x2xbf16> to vector<4xbf16>
  %o2i = arith.muli %tid, %c4 : index
  vector.store %f2, %o2[%o2i] : memref<128xbf16>, vector<4xbf16>
  gpu.return
}
)mlir";

TEST(SimtInterpreter, LdMatrixX4AndX2TransMatchMmaFragmentLayouts) {
  Kernel k = load(kLdMatrix);
  // Distinct bit patterns expose any permutation.
  std::vector<uint16_t> in(384), o4(256), o2(128);
  for (int i = 0; i < 384; ++i)
    in[i] = static_cast<uint16_t>(0x3C00 + i);
  auto tile = [&](int r, int c) { return in[r * 24 + c]; };
  ASSERT_EQ(run(k, threads(32, 1, 64 + 16 * 24 * 2),
                {bytes(in), bytes(o4), bytes(o2)}),
            "");
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, t = l % 4;
    // x4 with this addressing yields the m16n8k16 A fragment of the 16x16
    // tile at column 0: a0 = A[g][2t..], a1 = A[g+8][2t..],
    // a2 = A[g][2t+8..], a3 = A[g+8][2t+8..].
    const int rows[4] = {g, g + 8, g, g + 8};
    const int cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h)
        EXPECT_EQ(o4[l * 8 + r * 2 + h], tile(rows[r], cols[r] + h))
            << "lane " << l << " reg " << r << " half " << h;
    // x2.trans yields the B fragment of the 16x8 (K x N) tile at column 4:
    // b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g].
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h)
        EXPECT_EQ(o2[l * 4 + r * 2 + h], tile(8 * r + 2 * t + h, 4 + g))
            << "lane " << l << " reg " << r << " half " << h;
  }
}

TEST(SimtInterpreter, LdMatrixOutOfBoundsRowIsReported) {
  std::string s = kLdMatrix;
  // Columns 20..27 run past the 24-column row.
  s.replace(s.find("%tile[%row, %c4]"), 16, "%tile[%row, %c20]");
  s.replace(s.find("%c24 = arith"), 0, "%c20 = arith.constant 20 : index\n  ");
  Kernel k = load(s);
  std::vector<uint16_t> in(384, 0x3F80), o4(256), o2(128);
  std::string err = run(k, threads(32, 1, 64 + 16 * 24 * 2),
                        {bytes(in), bytes(o4), bytes(o2)});
  EXPECT_NE(err.find("'nvgpu.ldmatrix'"), std::string::npos) << err;
  EXPECT_NE(err.find("out-of-bounds"), std::string::npos) << err;
}

// One warp loads the m16n8k16 fragments of row-major A (16x16), row-major
// B (16x8, K x N) and C (16x8) from global memory with explicit per-lane
// index arithmetic, runs mma.sync and stores D.
constexpr const char *kMmaGlobal = R"mlir(
gpu.func @k(%A: memref<256xbf16>, %B: memref<128xbf16>, %C: memref<128xf32>, %D: memref<128xf32>) kernel {
  %lane = gpu.thread_id x
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %g = arith.divui %lane, %c4 : index
  %t = arith.remui %lane, %c4 : index
  %t2 = arith.muli %t, %c2 : index
  // A: a0 at (g, 2t), a1 at (g+8, 2t), a2 at (g, 2t+8), a3 at (g+8, 2t+8).
  %arow = arith.muli %g, %c16 : index
  %ai0 = arith.addi %arow, %t2 : index
  %ai1 = arith.addi %ai0, %c128 : index
  %ai2 = arith.addi %ai0, %c8 : index
  %ai3 = arith.addi %ai1, %c8 : index
  %av0 = vector.load %A[%ai0] : memref<256xbf16>, vector<2xbf16>
  %av1 = vector.load %A[%ai1] : memref<256xbf16>, vector<2xbf16>
  %av2 = vector.load %A[%ai2] : memref<256xbf16>, vector<2xbf16>
  %av3 = vector.load %A[%ai3] : memref<256xbf16>, vector<2xbf16>
  %aw0 = vector.bitcast %av0 : vector<2xbf16> to vector<1xi32>
  %aw1 = vector.bitcast %av1 : vector<2xbf16> to vector<1xi32>
  %aw2 = vector.bitcast %av2 : vector<2xbf16> to vector<1xi32>
  %aw3 = vector.bitcast %av3 : vector<2xbf16> to vector<1xi32>
  %a0 = vector.extract %aw0[0] : i32 from vector<1xi32>
  %a1 = vector.extract %aw1[0] : i32 from vector<1xi32>
  %a2 = vector.extract %aw2[0] : i32 from vector<1xi32>
  %a3 = vector.extract %aw3[0] : i32 from vector<1xi32>
  // B: b0 = (B[2t][g], B[2t+1][g]), b1 = (B[2t+8][g], B[2t+9][g]).
  %brow = arith.muli %t2, %c8 : index
  %bi0 = arith.addi %brow, %g : index
  %bi1 = arith.addi %bi0, %c8 : index
  %bi2 = arith.addi %bi0, %c64 : index
  %bi3 = arith.addi %bi1, %c64 : index
  %be0 = memref.load %B[%bi0] : memref<128xbf16>
  %be1 = memref.load %B[%bi1] : memref<128xbf16>
  %be2 = memref.load %B[%bi2] : memref<128xbf16>
  %be3 = memref.load %B[%bi3] : memref<128xbf16>
  %bv0 = vector.from_elements %be0, %be1 : vector<2xbf16>
  %bv1 = vector.from_elements %be2, %be3 : vector<2xbf16>
  %bw0 = vector.bitcast %bv0 : vector<2xbf16> to vector<1xi32>
  %bw1 = vector.bitcast %bv1 : vector<2xbf16> to vector<1xi32>
  %b0 = vector.extract %bw0[0] : i32 from vector<1xi32>
  %b1 = vector.extract %bw1[0] : i32 from vector<1xi32>
  // C/D: c0, c1 at (g, 2t), (g, 2t+1); c2, c3 at (g+8, 2t), (g+8, 2t+1).
  %crow = arith.muli %g, %c8 : index
  %ci0 = arith.addi %crow, %t2 : index
  %ci1 = arith.addi %ci0, %c1 : index
  %ci2 = arith.addi %ci0, %c64 : index
  %ci3 = arith.addi %ci2, %c1 : index
  %cf0 = memref.load %C[%ci0] : memref<128xf32>
  %cf1 = memref.load %C[%ci1] : memref<128xf32>
  %cf2 = memref.load %C[%ci2] : memref<128xf32>
  %cf3 = memref.load %C[%ci3] : memref<128xf32>
  %d = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%cf0, %cf1, %cf2, %cf3] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  %d0 = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
  %d1 = llvm.extractvalue %d[1] : !llvm.struct<(f32, f32, f32, f32)>
  %d2 = llvm.extractvalue %d[2] : !llvm.struct<(f32, f32, f32, f32)>
  %d3 = llvm.extractvalue %d[3] : !llvm.struct<(f32, f32, f32, f32)>
  memref.store %d0, %D[%ci0] : memref<128xf32>
  memref.store %d1, %D[%ci1] : memref<128xf32>
  memref.store %d2, %D[%ci2] : memref<128xf32>
  memref.store %d3, %D[%ci3] : memref<128xf32>
  gpu.return
}
)mlir";

TEST(SimtInterpreter, MmaSyncBf16M16N8K16MatchesReferenceMatmul) {
  Kernel k = load(kMmaGlobal);
  std::vector<uint16_t> A = toBf16(randomFloats(256, 5));
  std::vector<uint16_t> B = toBf16(randomFloats(128, 6));
  std::vector<float> C = randomFloats(128, 7), D(128);
  ASSERT_EQ(run(k, threads(32), {bytes(A), bytes(B), bytes(C), bytes(D)}), "");
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double ref = C[m * 8 + n];
      for (int kk = 0; kk < 16; ++kk)
        ref += static_cast<double>(bf16ToFloat(A[m * 16 + kk])) *
               bf16ToFloat(B[kk * 8 + n]);
      EXPECT_NEAR(D[m * 8 + n], ref, 1e-5) << m << " " << n;
    }
  }
}

TEST(SimtInterpreter, MmaSyncInDivergentWarpIsAnError) {
  Kernel k = load(R"mlir(
gpu.func @k(%o: memref<32xf32>) kernel {
  %tid = gpu.thread_id x
  %c16 = arith.constant 16 : index
  %lo = arith.cmpi ult, %tid, %c16 : index
  scf.if %lo {
    %z = arith.constant 0 : i32
    %f = arith.constant 0.0 : f32
    %d = nvvm.mma.sync A[%z, %z, %z, %z] B[%z, %z] C[%f, %f, %f, %f] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  }
  gpu.return
}
)mlir");
  std::vector<float> o(32);
  std::string err = run(k, threads(32), {bytes(o)});
  EXPECT_NE(err.find("'nvvm.mma.sync'"), std::string::npos) << err;
  EXPECT_NE(err.find("16 of the 32 lanes of warp 0"), std::string::npos) << err;
}

// A 16x16x32 GEMM tile on one warp: cp.async stages row-major A (16x32) and
// row-major B (32x16, K x N) into padded shared tiles, then each k-step uses
// ldmatrix.x4 for A, ldmatrix.x4.trans for B and two mma.sync (n-tiles 0, 8).
constexpr const char *kGemmTile = R"mlir(
gpu.func @k(%A: memref<512xbf16>, %B: memref<512xbf16>, %D: memref<256xf32>) kernel {
  %lane = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c1280 = arith.constant 1280 : index
  %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %sa = memref.view %raw[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x40xbf16, #gpu.address_space<workgroup>>
  %sb = memref.view %raw[%c1280][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x24xbf16, #gpu.address_space<workgroup>>
  // Stage: 64 16-byte chunks per operand, two per lane.
  scf.for %i = %c0 to %c2 step %c1 {
    %off = arith.muli %i, %c32 : index
    %chunk = arith.addi %lane, %off : index
    %ar = arith.divui %chunk, %c4 : index
    %acq = arith.remui %chunk, %c4 : index
    %ac = arith.muli %acq, %c8 : index
    %arow = arith.muli %ar, %c32 : index
    %asrc = arith.addi %arow, %ac : index
    %ta = nvgpu.device_async_copy %A[%asrc], %sa[%ar, %ac], 8 {bypassL1} : memref<512xbf16> to memref<16x40xbf16, #gpu.address_space<workgroup>>
    %br = arith.divui %chunk, %c2 : index
    %bcq = arith.remui %chunk, %c2 : index
    %bc = arith.muli %bcq, %c8 : index
    %brow = arith.muli %br, %c16 : index
    %bsrc = arith.addi %brow, %bc : index
    %tb = nvgpu.device_async_copy %B[%bsrc], %sb[%br, %bc], 8 {bypassL1} : memref<512xbf16> to memref<32x24xbf16, #gpu.address_space<workgroup>>
    %g = nvgpu.device_async_create_group %ta, %tb
  }
  %tok = nvgpu.device_async_create_group
  nvgpu.device_async_wait %tok {numGroups = 0 : i32}
  gpu.barrier
  %zero = arith.constant 0.0 : f32
  %lrow = arith.remui %lane, %c16 : index
  %lhalf = arith.divui %lane, %c16 : index
  %lcol = arith.muli %lhalf, %c8 : index
  %acc:8 = scf.for %kk = %c0 to %c32 step %c16 iter_args(%x0 = %zero, %x1 = %zero, %x2 = %zero, %x3 = %zero, %y0 = %zero, %y1 = %zero, %y2 = %zero, %y3 = %zero) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
    %acol = arith.addi %kk, %lcol : index
    %fa = nvgpu.ldmatrix %sa[%lrow, %acol] {numTiles = 4 : i32, transpose = false} : memref<16x40xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %brow = arith.addi %kk, %lrow : index
    %fb = nvgpu.ldmatrix %sb[%brow, %lcol] {numTiles = 4 : i32, transpose = true} : memref<32x24xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %fai = vector.bitcast %fa : vector<4x2xbf16> to vector<4x1xi32>
    %fbi = vector.bitcast %fb : vector<4x2xbf16> to vector<4x1xi32>
    %a0 = vector.extract %fai[0, 0] : i32 from vector<4x1xi32>
    %a1 = vector.extract %fai[1, 0] : i32 from vector<4x1xi32>
    %a2 = vector.extract %fai[2, 0] : i32 from vector<4x1xi32>
    %a3 = vector.extract %fai[3, 0] : i32 from vector<4x1xi32>
    %b0 = vector.extract %fbi[0, 0] : i32 from vector<4x1xi32>
    %b1 = vector.extract %fbi[1, 0] : i32 from vector<4x1xi32>
    %b2 = vector.extract %fbi[2, 0] : i32 from vector<4x1xi32>
    %b3 = vector.extract %fbi[3, 0] : i32 from vector<4x1xi32>
    %dx = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%x0, %x1, %x2, %x3] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %dy = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b2, %b3] C[%y0, %y1, %y2, %y3] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %nx0 = llvm.extractvalue %dx[0] : !llvm.struct<(f32, f32, f32, f32)>
    %nx1 = llvm.extractvalue %dx[1] : !llvm.struct<(f32, f32, f32, f32)>
    %nx2 = llvm.extractvalue %dx[2] : !llvm.struct<(f32, f32, f32, f32)>
    %nx3 = llvm.extractvalue %dx[3] : !llvm.struct<(f32, f32, f32, f32)>
    %ny0 = llvm.extractvalue %dy[0] : !llvm.struct<(f32, f32, f32, f32)>
    %ny1 = llvm.extractvalue %dy[1] : !llvm.struct<(f32, f32, f32, f32)>
    %ny2 = llvm.extractvalue %dy[2] : !llvm.struct<(f32, f32, f32, f32)>
    %ny3 = llvm.extractvalue %dy[3] : !llvm.struct<(f32, f32, f32, f32)>
    scf.yield %nx0, %nx1, %nx2, %nx3, %ny0, %ny1, %ny2, %ny3 : f32, f32, f32, f32, f32, f32, f32, f32
  }
  // D (16x16 row-major): n-tile j, register i at (g + 8 * (i / 2), 8j + 2t + i % 2).
  %g = arith.divui %lane, %c4 : index
  %t = arith.remui %lane, %c4 : index
  %t2 = arith.muli %t, %c2 : index
  %r0 = arith.muli %g, %c16 : index
  %i0 = arith.addi %r0, %t2 : index
  %i1 = arith.addi %i0, %c1 : index
  %c128 = arith.constant 128 : index
  %i2 = arith.addi %i0, %c128 : index
  %i3 = arith.addi %i2, %c1 : index
  %j0 = arith.addi %i0, %c8 : index
  %j1 = arith.addi %i1, %c8 : index
  %j2 = arith.addi %i2, %c8 : index
  %j3 = arith.addi %i3, %c8 : index
  memref.store %acc#0, %D[%i0] : memref<256xf32>
  memref.store %acc#1, %D[%i1] : memref<256xf32>
  memref.store %acc#2, %D[%i2] : memref<256xf32>
  memref.store %acc#3, %D[%i3] : memref<256xf32>
  memref.store %acc#4, %D[%j0] : memref<256xf32>
  memref.store %acc#5, %D[%j1] : memref<256xf32>
  memref.store %acc#6, %D[%j2] : memref<256xf32>
  memref.store %acc#7, %D[%j3] : memref<256xf32>
  gpu.return
}
)mlir";

TEST(SimtInterpreter, GemmTileViaCpAsyncLdMatrixAndMmaMatchesReference) {
  Kernel k = load(kGemmTile);
  std::vector<uint16_t> A = toBf16(randomFloats(512, 8));
  std::vector<uint16_t> B = toBf16(randomFloats(512, 9));
  std::vector<float> D(256);
  ASSERT_EQ(run(k, threads(32, 1, 1280 + 32 * 24 * 2),
                {bytes(A), bytes(B), bytes(D)}),
            "");
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      double ref = 0;
      for (int kk = 0; kk < 32; ++kk)
        ref += static_cast<double>(bf16ToFloat(A[m * 32 + kk])) *
               bf16ToFloat(B[kk * 16 + n]);
      EXPECT_NEAR(D[m * 16 + n], ref, 1e-4) << m << " " << n;
    }
  }
}

//===----------------------------------------------------------------------===//
// Hopper: TMA, mbarrier, warpgroup MMA
//===----------------------------------------------------------------------===//

/// CUTLASS's Swizzle<B, 4, 3> for a `swizzleBytes` TMA/wgmma swizzle: the
/// 16-byte chunk bits [4, 4+B) of a shared memory byte address are XORed
/// with its bits [7, 7+B). An involution, so it also unswizzles.
int64_t cutlassSwizzle(int64_t address, int swizzleBytes) {
  int bits = swizzleBytes == 128  ? 3
             : swizzleBytes == 64 ? 2
             : swizzleBytes == 32 ? 1
                                  : 0;
  int64_t yyy = (address >> 7) & ((1 << bits) - 1);
  return address ^ (yyy << 4);
}

LaunchConfig withTensorMaps(LaunchConfig config,
                            std::vector<TensorMapArg> maps) {
  config.tensorMaps = std::move(maps);
  return config;
}

// Thread 0 TMA-loads an 8 x COLS bf16 box at (column X0, row -3) of a 10x40
// tensor into dynamic shared memory at byte 1024, completing on an mbarrier;
// after the wait, 64 threads copy the shared tile (as stored, i.e. swizzled)
// out element by element (8 * COLS is a multiple of 64). EARLY optionally reads
// the tile before the wait.
std::string tmaCopyKernel(const std::string &swizzle, int cols,
                          bool readBeforeWait) {
  std::string s = R"mlir(
!map = !nvgpu.tensormap.descriptor<tensor = memref<8xCOLSxbf16, 3>, swizzle = SWIZZLE, l2promo = none, oob = zero, interleave = none>
!mbar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!tile = memref<8xCOLSxbf16, #gpu.address_space<workgroup>>
gpu.func @k(%map: !map, %out: memref<8xCOLSxbf16>, %flags: memref<2xi32>) kernel {
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %cols = arith.constant COLS : index
  %n = arith.constant NELEMS : index
  %x0 = arith.constant X0 : index
  %y0 = arith.constant -3 : index
  %bytes = arith.constant NBYTES : index
  %count = arith.constant 65 : index
  %is0 = arith.cmpi eq, %tid, %c0 : index
  %bar = nvgpu.mbarrier.create -> !mbar
  nvgpu.mbarrier.init %bar[%c0], %count, predicate = %is0 : !mbar
  %dsm = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %dsm[%c1024][] : memref<?xi8, #gpu.address_space<workgroup>> to !tile
  nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %bytes, predicate = %is0 : !mbar
  nvgpu.tma.async.load %map[%x0, %y0], %bar[%c0] to %tile, predicate = %is0 : !map, !mbar -> !tile
  %tok = nvgpu.mbarrier.arrive %bar[%c0] : !mbar -> !nvgpu.mbarrier.token
  %before = nvgpu.mbarrier.test.wait %bar[%c0], %tok : !mbar, !nvgpu.mbarrier.token
  EARLY
  %false = arith.constant false
  %ticks = arith.constant 10000000 : index
  nvgpu.mbarrier.try_wait.parity %bar[%c0], %false, %ticks : !mbar
  %after = nvgpu.mbarrier.test.wait %bar[%c0], %tok : !mbar, !nvgpu.mbarrier.token
  scf.if %is0 {
    %b = arith.extui %before : i1 to i32
    %a = arith.extui %after : i1 to i32
    memref.store %b, %flags[%c0] : memref<2xi32>
    memref.store %a, %flags[%c1] : memref<2xi32>
  }
  %iters = arith.divui %n, %c64 : index
  scf.for %i = %c0 to %iters step %c1 {
    %first = arith.muli %i, %c64 : index
    %e = arith.addi %first, %tid : index
    %r = arith.divui %e, %cols : index
    %c = arith.remui %e, %cols : index
    %v = memref.load %tile[%r, %c] : !tile
    memref.store %v, %out[%r, %c] : memref<8xCOLSxbf16>
  }
  gpu.return
}
)mlir";
  auto replaceAll = [&](const std::string &from, const std::string &to) {
    for (size_t at = s.find(from); at != std::string::npos;
         at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  };
  replaceAll("SWIZZLE", swizzle);
  replaceAll("NELEMS", std::to_string(8 * cols));
  replaceAll("NBYTES", std::to_string(8 * cols * 2));
  replaceAll("COLS", std::to_string(cols));
  replaceAll("X0", std::to_string(40 - cols / 2));
  replaceAll("EARLY", readBeforeWait
                          ? "%early = memref.load %tile[%c0, %c0] : !tile"
                          : "");
  return s;
}

constexpr int kTmaRows = 10, kTmaCols = 40;

struct SwizzleCase {
  const char *name;
  int bytes; // swizzle width; 0: none
  int cols;  // box inner extent in bf16 elements
};

class TmaSwizzle : public testing::TestWithParam<SwizzleCase> {};

TEST_P(TmaSwizzle, RaggedBoxLandsSwizzledAndZeroFilled) {
  SwizzleCase sc = GetParam();
  Kernel k = load(tmaCopyKernel(sc.name, sc.cols, /*readBeforeWait=*/false));
  std::vector<uint16_t> global(kTmaRows * kTmaCols), out(8 * sc.cols, 0xFFFF);
  for (size_t i = 0; i < global.size(); ++i)
    global[i] = static_cast<uint16_t>(0x1000 + i); // distinct, never 0
  std::vector<int32_t> flags(2, -1);
  LaunchConfig config = withTensorMaps(threads(64, 1, 1024 + 8 * sc.cols * 2),
                                       {{0, {kTmaRows, kTmaCols}, {}}});
  ASSERT_EQ(run(k, config, {bytes(global), bytes(out), bytes(flags)}), "");
  int x0 = kTmaCols - sc.cols / 2, y0 = -3;
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < sc.cols; ++c) {
      // Shared byte 1024 + 2(r * cols + c) holds the box element whose
      // unswizzled address swizzles to it.
      int64_t logical =
          (cutlassSwizzle(1024 + 2 * (r * sc.cols + c), sc.bytes) - 1024) / 2;
      int64_t gr = y0 + logical / sc.cols, gc = x0 + logical % sc.cols;
      bool inside = gr >= 0 && gr < kTmaRows && gc >= 0 && gc < kTmaCols;
      EXPECT_EQ(out[r * sc.cols + c], inside ? global[gr * kTmaCols + gc] : 0)
          << sc.name << " row " << r << " col " << c;
    }
  }
  // The arrivals were all in before the wait, the bytes only at the wait.
  EXPECT_EQ(flags[0], 0);
  EXPECT_EQ(flags[1], 1);
}

INSTANTIATE_TEST_SUITE_P(SimtInterpreter, TmaSwizzle,
                         testing::Values(SwizzleCase{"none", 0, 24},
                                         SwizzleCase{"swizzle_32b", 32, 16},
                                         SwizzleCase{"swizzle_64b", 64, 32},
                                         SwizzleCase{"swizzle_128b", 128, 64}),
                         [](const testing::TestParamInfo<SwizzleCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(SimtInterpreter, TmaSwizzle128BSwapsChunksZeroAndFourOfRowFour) {
  // Spelled out for one case: the box starts at tensor (row -3, column 8),
  // so box row 4 is tensor row 1 and 128B-swizzled by 4: its shared chunk 0
  // holds logical chunk 4 (box columns 32..39 = tensor columns 40..47, out
  // of bounds) and shared chunk 4 holds logical chunk 0 (tensor columns
  // 8..15).
  Kernel k = load(tmaCopyKernel("swizzle_128b", 64, /*readBeforeWait=*/false));
  std::vector<uint16_t> global(kTmaRows * kTmaCols), out(8 * 64);
  for (size_t i = 0; i < global.size(); ++i)
    global[i] = static_cast<uint16_t>(0x1000 + i);
  std::vector<int32_t> flags(2);
  LaunchConfig config = withTensorMaps(threads(64, 1, 1024 + 1024),
                                       {{0, {kTmaRows, kTmaCols}, {}}});
  ASSERT_EQ(run(k, config, {bytes(global), bytes(out), bytes(flags)}), "");
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(out[4 * 64 + c], 0) << c;
    EXPECT_EQ(out[4 * 64 + 32 + c], global[1 * kTmaCols + 8 + c]) << c;
  }
}

TEST(SimtInterpreter, ReadingTmaDestinationBeforeTheMbarrierWaitFails) {
  Kernel k = load(tmaCopyKernel("swizzle_128b", 64, /*readBeforeWait=*/true));
  std::vector<uint16_t> global(kTmaRows * kTmaCols), out(8 * 64);
  std::vector<int32_t> flags(2);
  LaunchConfig config =
      withTensorMaps(threads(64, 1, 2048), {{0, {kTmaRows, kTmaCols}, {}}});
  std::string err = run(k, config, {bytes(global), bytes(out), bytes(flags)});
  EXPECT_NE(err.find("'memref.load'"), std::string::npos) << err;
  EXPECT_NE(err.find("thread 0 reads byte 1024"), std::string::npos) << err;
  EXPECT_NE(err.find("a TMA load issued by thread 0"), std::string::npos)
      << err;
  EXPECT_NE(err.find("missing mbarrier wait"), std::string::npos) << err;
}

TEST(SimtInterpreter, MbarrierWaitingForMoreBytesThanLoadedIsADeadlock) {
  std::string source = tmaCopyKernel("swizzle_128b", 64, false);
  // Expect one byte more than the box brings.
  source.replace(source.find("%bytes = arith.constant 1024"), 28,
                 "%bytes = arith.constant 1025");
  Kernel k = load(source);
  std::vector<uint16_t> global(kTmaRows * kTmaCols), out(8 * 64);
  std::vector<int32_t> flags(2);
  LaunchConfig config =
      withTensorMaps(threads(64, 1, 2048), {{0, {kTmaRows, kTmaCols}, {}}});
  std::string err = run(k, config, {bytes(global), bytes(out), bytes(flags)});
  EXPECT_NE(err.find("'nvgpu.mbarrier.try_wait.parity'"), std::string::npos)
      << err;
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("0 arrival(s) and 1 transaction byte(s)"),
            std::string::npos)
      << err;
}

TEST(SimtInterpreter, MbarrierWaitingForAnArrivalThatNeverComesIsADeadlock) {
  std::string source = tmaCopyKernel("swizzle_128b", 64, false);
  // 66 expected arrivals, 65 made.
  source.replace(source.find("arith.constant 65"), 17, "arith.constant 66");
  Kernel k = load(source);
  std::vector<uint16_t> global(kTmaRows * kTmaCols), out(8 * 64);
  std::vector<int32_t> flags(2);
  LaunchConfig config =
      withTensorMaps(threads(64, 1, 2048), {{0, {kTmaRows, kTmaCols}, {}}});
  std::string err = run(k, config, {bytes(global), bytes(out), bytes(flags)});
  EXPECT_NE(err.find("'nvgpu.mbarrier.try_wait.parity'"), std::string::npos)
      << err;
  EXPECT_NE(err.find("1 arrival(s) and 0 transaction byte(s)"),
            std::string::npos)
      << err;
}

TEST(SimtInterpreter, TensorMapArgumentWithoutHostDescriptionIsAnError) {
  Kernel k = load(tmaCopyKernel("none", 24, false));
  std::vector<uint16_t> global(kTmaRows * kTmaCols), out(8 * 24);
  std::vector<int32_t> flags(2);
  std::string err =
      run(k, threads(64, 1, 2048), {bytes(global), bytes(out), bytes(flags)});
  EXPECT_NE(err.find("argument 0 is a tensor map"), std::string::npos) << err;
}

// One warpgroup computes D (64x64 f32) = A (64xK) * B (Kx64) with a single
// wgmma, A and B TMA-loaded as 64-row boxes of 128 bytes (zero-filled past
// their edges) into 128B-swizzled shared tiles, B through %loadB, whose
// swizzle is `loadSwizzle`. bf16: K = 16, m64n64k16, B stored K x N (the
// descriptor transposed: N-major). fp8 (e4m3): K = 32, m64n64k32, B stored
// N x K (both operands K-major, as fp8 wgmma reads them). The store waits
// for the wgmma (`wait`) and, with `accumulate`, stores D added to itself by
// memwall.warpgroup_accumulate.
struct WgmmaKernelOptions {
  std::string loadSwizzle = "swizzle_128b";
  bool fp8 = false;
  bool wait = true;
  bool accumulate = false;
};

std::string singleWgmmaKernel(const WgmmaKernelOptions &options) {
  std::string s = R"mlir(
!map = !nvgpu.tensormap.descriptor<tensor = memref<TILE, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!loadMap = !nvgpu.tensormap.descriptor<tensor = memref<TILE, 3>, swizzle = LOADSWIZZLE, l2promo = none, oob = zero, interleave = none>
!mbar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!tile = memref<TILE, #gpu.address_space<workgroup>>
!viewA = memref<VIEWA, #gpu.address_space<workgroup>>
!viewB = memref<VIEWB, #gpu.address_space<workgroup>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>
gpu.func @k(%mapA: !map, %mapB: !map, %loadB: !loadMap, %d: memref<64x64xf32>) kernel {
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8192 = arith.constant 8192 : index
  %c16384 = arith.constant 16384 : index
  %is0 = arith.cmpi eq, %tid, %c0 : index
  %bar = nvgpu.mbarrier.create -> !mbar
  nvgpu.mbarrier.init %bar[%c0], %c1, predicate = %is0 : !mbar
  %dsm = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %a = memref.view %dsm[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to !tile
  %b = memref.view %dsm[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to !tile
  %va = memref.view %dsm[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to !viewA
  %vb = memref.view %dsm[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to !viewB
  nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %c16384, predicate = %is0 : !mbar
  nvgpu.tma.async.load %mapA[%c0, %c0], %bar[%c0] to %a, predicate = %is0 : !map, !mbar -> !tile
  nvgpu.tma.async.load %loadB[%c0, %c0], %bar[%c0] to %b, predicate = %is0 : !loadMap, !mbar -> !tile
  %false = arith.constant false
  %ticks = arith.constant 10000000 : index
  nvgpu.mbarrier.try_wait.parity %bar[%c0], %false, %ticks : !mbar
  %da = nvgpu.warpgroup.generate.descriptor %va, %mapA : !viewA, !map -> !nvgpu.warpgroup.descriptor<tensor = !viewA>
  %db = nvgpu.warpgroup.generate.descriptor %vb, %mapB : !viewB, !map -> !nvgpu.warpgroup.descriptor<tensor = !viewB>
  %init = nvgpu.warpgroup.mma.init.accumulator -> !acc
  %res = nvgpu.warpgroup.mma %da, %db, %init TRANSPOSEB: !nvgpu.warpgroup.descriptor<tensor = !viewA>, !nvgpu.warpgroup.descriptor<tensor = !viewB>, !acc -> !acc
  WAIT
  ACCUMULATE
  nvgpu.warpgroup.mma.store STORED, %d : !acc to memref<64x64xf32>
  gpu.return
}
)mlir";
  auto replaceAll = [&](llvm::StringRef placeholder, llvm::StringRef text) {
    for (size_t at = s.find(placeholder.str()); at != std::string::npos;
         at = s.find(placeholder.str(), at + text.size()))
      s.replace(at, placeholder.size(), text.str());
  };
  replaceAll("TILE", options.fp8 ? "64x128xf8E4M3FN" : "64x64xbf16");
  replaceAll("VIEWA", options.fp8 ? "64x32xf8E4M3FN" : "64x16xbf16");
  replaceAll("VIEWB", options.fp8 ? "32x64xf8E4M3FN" : "16x64xbf16");
  replaceAll("TRANSPOSEB", options.fp8 ? "" : "{transposeB} ");
  replaceAll("LOADSWIZZLE", options.loadSwizzle);
  replaceAll("WAIT",
             options.wait ? "nvvm.wgmma.wait.group.sync.aligned 0" : "");
  replaceAll("ACCUMULATE",
             options.accumulate
                 ? "%sum = memwall.warpgroup_accumulate %res, %res : !acc"
                 : "");
  replaceAll("STORED", options.accumulate ? "%sum" : "%res");
  return s;
}

/// D = A * B over bf16 inputs in fp32, k in order.
std::vector<float> cpuGemm(const std::vector<uint16_t> &A,
                           const std::vector<uint16_t> &B, int M, int N,
                           int K) {
  std::vector<float> D(M * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float sum = 0;
      for (int k = 0; k < K; ++k)
        sum += bf16ToFloat(A[m * K + k]) * bf16ToFloat(B[k * N + n]);
      D[m * N + n] = sum;
    }
  return D;
}

/// Runs singleWgmmaKernel(loadSwizzle) on fixed inputs; returns how many
/// elements of D differ from the CPU GEMM by more than 1e-4.
int singleWgmmaMismatches(const std::string &loadSwizzle) {
  WgmmaKernelOptions options;
  options.loadSwizzle = loadSwizzle;
  Kernel k = load(singleWgmmaKernel(options));
  std::vector<uint16_t> A = toBf16(randomFloats(64 * 16, 21));
  std::vector<uint16_t> B = toBf16(randomFloats(16 * 64, 22));
  std::vector<float> D(64 * 64, -1.0f);
  LaunchConfig config =
      withTensorMaps(threads(128, 1, 16384),
                     {{0, {64, 16}, {}}, {1, {16, 64}, {}}, {2, {16, 64}, {}}});
  std::string err = run(k, config, {bytes(A), bytes(B), bytes(B), bytes(D)});
  EXPECT_EQ(err, "");
  std::vector<float> ref = cpuGemm(A, B, 64, 64, 16);
  int mismatches = 0;
  for (int i = 0; i < 64 * 64; ++i)
    mismatches += std::fabs(D[i] - ref[i]) > 1e-4f;
  return mismatches;
}

TEST(SimtInterpreter, WgmmaM64N64K16OnSwizzledTmaTilesMatchesCpuGemm) {
  EXPECT_EQ(singleWgmmaMismatches("swizzle_128b"), 0);
}

TEST(SimtInterpreter, WgmmaDescriptorSwizzleNotMatchingTheTmaLoadGivesWrongD) {
  // B lands unswizzled but the descriptor reads it as 128B-swizzled: every
  // k row but the first of each 8 is read from the wrong columns.
  EXPECT_GT(singleWgmmaMismatches("none"), 64 * 64 / 2);
}

TEST(SimtInterpreter, WgmmaAccumulatorStoredBeforeItsWaitGroupIsAnError) {
  WgmmaKernelOptions options;
  options.wait = false;
  Kernel k = load(singleWgmmaKernel(options));
  std::vector<uint16_t> A(64 * 16), B(16 * 64);
  std::vector<float> D(64 * 64);
  LaunchConfig config =
      withTensorMaps(threads(128, 1, 16384),
                     {{0, {64, 16}, {}}, {1, {16, 64}, {}}, {2, {16, 64}, {}}});
  std::string err = run(k, config, {bytes(A), bytes(B), bytes(B), bytes(D)});
  EXPECT_NE(err.find("'nvgpu.warpgroup.mma.store'"), std::string::npos) << err;
  EXPECT_NE(err.find("still in flight"), std::string::npos) << err;
}

/// Runs the fp8 singleWgmmaKernel on A and B, every row of each [64, 32]
/// e4m3: 1.0 at k = 0, the smallest subnormal 2^-9 elsewhere, with `bits`
/// of fp8 accumulation (0: exact); D's elements, all alike, or the error.
llvm::Expected<float> fp8WgmmaElement(int bits, bool accumulate,
                                      bool wait = true) {
  WgmmaKernelOptions options;
  options.fp8 = true;
  options.accumulate = accumulate;
  options.wait = wait;
  Kernel k = load(singleWgmmaKernel(options));
  std::vector<uint8_t> A(64 * 32, 0x01), B(64 * 32, 0x01);
  for (int row = 0; row < 64; ++row)
    A[row * 32] = B[row * 32] = 0x38; // 1.0
  std::vector<float> D(64 * 64, -1.0f);
  LaunchConfig config =
      withTensorMaps(threads(128, 1, 16384),
                     {{0, {64, 32}, {}}, {1, {64, 32}, {}}, {2, {64, 32}, {}}});
  config.device.fp8AccumulatorBits = bits;
  std::string err = run(k, config, {bytes(A), bytes(B), bytes(B), bytes(D)});
  if (!err.empty())
    return llvm::createStringError(err);
  for (float x : D)
    if (x != D[0])
      return llvm::createStringError("D's elements differ");
  return D[0];
}

// Each element is 1 * 1 + 31 products of 2^-9 * 2^-9 = 1 + 31 * 2^-18
// (exact in f32). Modelled with 13 bits below the largest addend (1.0),
// each 2^-18 is truncated to a multiple of 2^-13: 0, so D = 1; with 20
// bits the quantum is 2^-20 and the sum is exact.
TEST(SimtInterpreter, Fp8WgmmaAccumulationModelTruncatesBelowTheLargestAddend) {
  const float exact = 1.0f + 31.0f * std::ldexp(1.0f, -18);
  llvm::Expected<float> d = fp8WgmmaElement(/*bits=*/0, false);
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(*d, exact);
  d = fp8WgmmaElement(/*bits=*/13, false);
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(*d, 1.0f);
  d = fp8WgmmaElement(/*bits=*/20, false);
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(*d, exact);
}

// memwall.warpgroup_accumulate adds the fragments register by register in
// f32: D + D; before the wgmma's wait_group it is an error.
TEST(SimtInterpreter, WarpgroupAccumulateAddsCompletedAccumulators) {
  const float exact = 1.0f + 31.0f * std::ldexp(1.0f, -18);
  llvm::Expected<float> d = fp8WgmmaElement(/*bits=*/0, true);
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(*d, 2 * exact);
  d = fp8WgmmaElement(/*bits=*/0, true, /*wait=*/false);
  ASSERT_FALSE(bool(d));
  std::string err = llvm::toString(d.takeError());
  EXPECT_NE(err.find("'memwall.warpgroup_accumulate'"), std::string::npos)
      << err;
  EXPECT_NE(err.find("still in flight"), std::string::npos) << err;
}

// D (64x64) = A (64xK) * B (Kx64), K = 64 * kTiles: each iteration TMA-loads
// the next 64x64 tiles of A and B into the same 128B-swizzled shared tiles,
// waits on the mbarrier with the iteration's parity, and accumulates four
// wgmma m64n64k16 (the descriptors advanced 32 bytes per k16 inside the
// swizzle atom for A, 16 rows for B).
constexpr const char *kWgmmaKLoop = R"mlir(
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!mbar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>
gpu.func @k(%mapA: !map, %mapB: !map, %d: memref<64x64xf32>, %kTiles: memref<1xindex>) kernel {
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c8192 = arith.constant 8192 : index
  %c16384 = arith.constant 16384 : index
  %ticks = arith.constant 10000000 : index
  %is0 = arith.cmpi eq, %tid, %c0 : index
  %bar = nvgpu.mbarrier.create -> !mbar
  nvgpu.mbarrier.init %bar[%c0], %c1, predicate = %is0 : !mbar
  %dsm = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %a = memref.view %dsm[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to !smem
  %b = memref.view %dsm[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to !smem
  %n = memref.load %kTiles[%c0] : memref<1xindex>
  %init = nvgpu.warpgroup.mma.init.accumulator -> !acc
  %res = scf.for %kt = %c0 to %n step %c1 iter_args(%acc = %init) -> (!acc) {
    %k0 = arith.muli %kt, %c64 : index
    nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %c16384, predicate = %is0 : !mbar
    nvgpu.tma.async.load %mapA[%k0, %c0], %bar[%c0] to %a, predicate = %is0 : !map, !mbar -> !smem
    nvgpu.tma.async.load %mapB[%c0, %k0], %bar[%c0] to %b, predicate = %is0 : !map, !mbar -> !smem
    %parity = arith.index_cast %kt : index to i1
    nvgpu.mbarrier.try_wait.parity %bar[%c0], %parity, %ticks : !mbar
    %da = nvgpu.warpgroup.generate.descriptor %a, %mapA : !smem, !map -> !nvgpu.warpgroup.descriptor<tensor = !smem>
    %db = nvgpu.warpgroup.generate.descriptor %b, %mapB : !smem, !map -> !nvgpu.warpgroup.descriptor<tensor = !smem>
    %next = nvgpu.warpgroup.mma %da, %db, %acc {transposeB} : !nvgpu.warpgroup.descriptor<tensor = !smem>, !nvgpu.warpgroup.descriptor<tensor = !smem>, !acc -> !acc
    nvvm.wgmma.wait.group.sync.aligned 0
    gpu.barrier
    scf.yield %next : !acc
  }
  nvgpu.warpgroup.mma.store %res, %d : !acc to memref<64x64xf32>
  gpu.return
}
)mlir";

TEST(SimtInterpreter, WgmmaKLoopOverTmaTilesWithMbarrierPhasesMatchesCpuGemm) {
  Kernel k = load(kWgmmaKLoop);
  constexpr int kTiles = 3, K = 64 * kTiles;
  std::vector<uint16_t> A = toBf16(randomFloats(64 * K, 23));
  std::vector<uint16_t> B = toBf16(randomFloats(K * 64, 24));
  std::vector<float> D(64 * 64, -1.0f);
  std::vector<int64_t> tiles = {kTiles};
  LaunchConfig config = withTensorMaps(threads(128, 1, 16384),
                                       {{0, {64, K}, {}}, {1, {K, 64}, {}}});
  ASSERT_EQ(run(k, config, {bytes(A), bytes(B), bytes(D), bytes(tiles)}), "");
  std::vector<float> ref = cpuGemm(A, B, 64, 64, K);
  for (int i = 0; i < 64 * 64; ++i)
    ASSERT_NEAR(D[i], ref[i], 1e-4) << "row " << i / 64 << " col " << i % 64;
}

// Shared memory starts 1024-byte aligned: a view's address is its offset
// (what a kernel aligning its swizzled tiles computes); global addresses are
// not modelled.
TEST(SimtInterpreter, AlignedPointerOfSharedMemoryIsItsOffset) {
  Kernel k = load(R"mlir(
gpu.func @k(%out: memref<1xindex>, %global: memref<4xf32>) kernel {
  %c0 = arith.constant 0 : index
  %c48 = arith.constant 48 : index
  %dsm = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %view = memref.view %dsm[%c48][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4xf32, #gpu.address_space<workgroup>>
  %address = memref.extract_aligned_pointer_as_index %view : memref<4xf32, #gpu.address_space<workgroup>> -> index
  memref.store %address, %out[%c0] : memref<1xindex>
  gpu.return
}
)mlir");
  std::vector<int64_t> out(1, -1);
  std::vector<float> global(4);
  ASSERT_EQ(run(k, threads(1, 1, 64), {bytes(out), bytes(global)}), "");
  EXPECT_EQ(out[0], 48);
}

TEST(SimtInterpreter, AlignedPointerOfGlobalMemoryIsAnError) {
  Kernel k = load(R"mlir(
gpu.func @k(%out: memref<1xindex>) kernel {
  %address = memref.extract_aligned_pointer_as_index %out : memref<1xindex> -> index
  gpu.return
}
)mlir");
  std::vector<int64_t> out(1);
  std::string err = run(k, threads(1), {bytes(out)});
  EXPECT_NE(err.find("only shared memory addresses are modelled"),
            std::string::npos)
      << err;
}

TEST(SimtInterpreter, Bf16AndF16ConversionsRoundToNearestEven) {
  // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up.
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(bf16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(f16ToFloat(0xC200), -3.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

} // namespace

//===----------------------------------------------------------------------===//
// Warp specialization: a producer and a consumer warpgroup on full/empty
// mbarriers, each run by its own runner
//===----------------------------------------------------------------------===//

namespace {
// Blocks of 128 x 2: warpgroup 1 produces (TMA of k-tile kt into slot
// kt % 2 once the consumer released the slot's previous k-tile), warpgroup
// 0 consumes (wgmma m64n64k16 x 4 with wait_group 1, then releases the
// previous k-tile's slot). In lockstep the producer's loop would wait for a
// release the consumer never got to make.
constexpr const char *kWarpSpecializedKLoop = R"mlir(
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!mbar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
!smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>
!desc = !nvgpu.warpgroup.descriptor<tensor = !smem>
gpu.func @k(%mapA: !map, %mapB: !map, %d: memref<64x64xf32>, %kTiles: memref<1xindex>) kernel {
  %tx = gpu.thread_id x
  %ty = gpu.thread_id y
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c8192 = arith.constant 8192 : index
  %c16384 = arith.constant 16384 : index
  %ticks = arith.constant 10000000 : index
  %first = arith.cmpi eq, %tx, %c0 : index
  %y0 = arith.cmpi eq, %ty, %c0 : index
  %is0 = arith.andi %first, %y0 : i1
  %full = nvgpu.mbarrier.create -> !mbar
  %empty = nvgpu.mbarrier.create -> !mbar
  nvgpu.mbarrier.init %full[%c0], %c1, predicate = %is0 : !mbar
  nvgpu.mbarrier.init %full[%c1], %c1, predicate = %is0 : !mbar
  nvgpu.mbarrier.init %empty[%c0], %c128, predicate = %is0 : !mbar
  nvgpu.mbarrier.init %empty[%c1], %c128, predicate = %is0 : !mbar
  gpu.barrier
  %dsm = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %n = memref.load %kTiles[%c0] : memref<1xindex>
  %isProducer = arith.cmpi eq, %ty, %c1 : index
  scf.if %isProducer {
    scf.for %kt = %c0 to %n step %c1 {
      %slot = arith.remui %kt, %c2 : index
      %reuse = arith.cmpi uge, %kt, %c2 : index
      scf.if %reuse {
        %round = arith.divui %kt, %c2 : index
        %previous = arith.subi %round, %c1 : index
        %p = arith.index_cast %previous : index to i1
        nvgpu.mbarrier.try_wait.parity %empty[%slot], %p, %ticks : !mbar
      }
      %k0 = arith.muli %kt, %c64 : index
      %aAt = arith.muli %slot, %c16384 : index
      %bAt = arith.addi %aAt, %c8192 : index
      %a = memref.view %dsm[%aAt][] : memref<?xi8, #gpu.address_space<workgroup>> to !smem
      %b = memref.view %dsm[%bAt][] : memref<?xi8, #gpu.address_space<workgroup>> to !smem
      nvgpu.mbarrier.arrive.expect_tx %full[%slot], %c16384, predicate = %first : !mbar
      nvgpu.tma.async.load %mapA[%k0, %c0], %full[%slot] to %a, predicate = %first : !map, !mbar -> !smem
      nvgpu.tma.async.load %mapB[%c0, %k0], %full[%slot] to %b, predicate = %first : !map, !mbar -> !smem
    }
  } else {
    %init = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %res = scf.for %kt = %c0 to %n step %c1 iter_args(%acc = %init) -> (!acc) {
      %slot = arith.remui %kt, %c2 : index
      %round = arith.divui %kt, %c2 : index
      %p = arith.index_cast %round : index to i1
      nvgpu.mbarrier.try_wait.parity %full[%slot], %p, %ticks : !mbar
      %aAt = arith.muli %slot, %c16384 : index
      %bAt = arith.addi %aAt, %c8192 : index
      %a = memref.view %dsm[%aAt][] : memref<?xi8, #gpu.address_space<workgroup>> to !smem
      %b = memref.view %dsm[%bAt][] : memref<?xi8, #gpu.address_space<workgroup>> to !smem
      %da = nvgpu.warpgroup.generate.descriptor %a, %mapA : !smem, !map -> !desc
      %db = nvgpu.warpgroup.generate.descriptor %b, %mapB : !smem, !map -> !desc
      %next = nvgpu.warpgroup.mma %da, %db, %acc {transposeB, waitGroup = 1 : i64} : !desc, !desc, !acc -> !acc
      %released = arith.cmpi uge, %kt, %c1 : index
      scf.if %released {
        %after = arith.addi %kt, %c1 : index
        %previous = arith.remui %after, %c2 : index
        %token = nvgpu.mbarrier.arrive %empty[%previous] : !mbar -> !nvgpu.mbarrier.token
      }
      scf.yield %next : !acc
    }
    nvvm.wgmma.wait.group.sync.aligned 0
    nvgpu.warpgroup.mma.store %res, %d : !acc to memref<64x64xf32>
  }
  gpu.return
}
)mlir";

constexpr int kWarpSpecializedTiles = 5, kWarpSpecializedK = 64 * 5;

struct WarpSpecializedRun {
  std::vector<uint16_t> a = toBf16(randomFloats(64 * kWarpSpecializedK, 31));
  std::vector<uint16_t> b = toBf16(randomFloats(kWarpSpecializedK * 64, 32));
  std::vector<float> d = std::vector<float>(64 * 64, -1.0f);
  std::vector<int64_t> tiles = {kWarpSpecializedTiles};

  std::string run(const std::string &source) {
    Kernel k = load(source);
    LaunchConfig config = withTensorMaps(
        threads(128, 1, 32768),
        {{0, {64, kWarpSpecializedK}, {}}, {1, {kWarpSpecializedK, 64}, {}}});
    config.block = {128, 2, 1};
    return ::run(k, config, {bytes(a), bytes(b), bytes(d), bytes(tiles)});
  }
};

std::string replaced(std::string source, llvm::StringRef from,
                     llvm::StringRef to) {
  size_t at = source.find(from.str());
  EXPECT_NE(at, std::string::npos) << from.str();
  if (at != std::string::npos)
    source.replace(at, from.size(), to.str());
  return source;
}
} // namespace

TEST(SimtInterpreter, WarpSpecializedProducerAndConsumerMatchCpuGemm) {
  WarpSpecializedRun r;
  ASSERT_EQ(r.run(kWarpSpecializedKLoop), "");
  std::vector<float> ref = cpuGemm(r.a, r.b, 64, 64, kWarpSpecializedK);
  for (int i = 0; i < 64 * 64; ++i)
    ASSERT_NEAR(r.d[i], ref[i], 1e-4) << "row " << i / 64 << " col " << i % 64;
}

TEST(SimtInterpreter, WarpSpecializedProducerWaitingForAReleaseIsADeadlock) {
  WarpSpecializedRun r;
  std::string err = r.run(
      replaced(kWarpSpecializedKLoop,
               "%token = nvgpu.mbarrier.arrive %empty[%previous] : !mbar -> "
               "!nvgpu.mbarrier.token",
               ""));
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("'nvgpu.mbarrier.try_wait.parity'"), std::string::npos)
      << err;
}

// Releasing the k-tile whose wgmma is still in flight (wait_group 1 keeps
// it) lets the producer overwrite what the tensor cores read.
TEST(SimtInterpreter,
     WarpSpecializedSlotReleasedBeforeItsWgmmaRetiredIsCaught) {
  WarpSpecializedRun r;
  std::string source =
      replaced(kWarpSpecializedKLoop, "%released = arith.cmpi uge, %kt, %c1",
               "%released = arith.cmpi uge, %kt, %c0");
  source = replaced(source, "%after = arith.addi %kt, %c1",
                    "%after = arith.addi %kt, %c0");
  std::string err = r.run(source);
  EXPECT_NE(err.find("'nvgpu.tma.async.load'"), std::string::npos) << err;
  EXPECT_NE(err.find("which wgmma group 1 of warpgroup 0 still reads"),
            std::string::npos)
      << err;
}

// A named barrier counts the threads that reach it.
TEST(SimtInterpreter, NamedBarrierReachedByFewerThreadsThanItsCountFails) {
  Kernel k = load(R"mlir(
gpu.func @k(%o: memref<1xf32>) kernel {
  %tid = gpu.thread_id x
  %c64 = arith.constant 64 : index
  %id = arith.constant 1 : i32
  %count = arith.constant 128 : i32
  %low = arith.cmpi ult, %tid, %c64 : index
  scf.if %low {
    nvvm.barrier id = %id number_of_threads = %count
  }
  gpu.return
}
)mlir");
  std::vector<float> o(1);
  std::string err = ::run(k, threads(128), {bytes(o)});
  EXPECT_NE(err.find("nvvm.barrier for 128 threads reached by 64"),
            std::string::npos)
      << err;
}

//===----------------------------------------------------------------------===//
// Thread-block clusters: barrier.cluster and distributed shared memory
//===----------------------------------------------------------------------===//

namespace {
/// A cluster of 4 CTAs of 32 threads: each thread stores rank·100 + t to its
/// CTA's dynamic shared memory, then (after the cluster barrier, when
/// FIRST_BARRIER is kept) reads thread t's value of the next CTA's through
/// mapa + a cluster-shared load and writes it out; FINAL_BARRIER keeps each
/// CTA's shared memory alive until the others read it.
std::string clusterKernel(bool firstBarrier, bool finalBarrier,
                          bool relaxedFirst = false) {
  std::string s = R"mlir(
gpu.func @k(%o: memref<256xf32>) kernel attributes {nvvm.cluster_dim = array<i32: 4, 1, 1>} {
  %shared = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %v = memref.view %shared[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xf32, #gpu.address_space<workgroup>>
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %rank = arith.remui %bid, %c4 : index
  %c100 = arith.constant 100 : index
  %r100 = arith.muli %rank, %c100 : index
  %val = arith.addi %r100, %tid : index
  %vi = arith.index_cast %val : index to i32
  %vf = arith.sitofp %vi : i32 to f32
  memref.store %vf, %v[%tid] : memref<32xf32, #gpu.address_space<workgroup>>
  FIRST_BARRIER
  %base = memref.extract_aligned_pointer_as_index %v : memref<32xf32, #gpu.address_space<workgroup>> -> index
  %off = arith.muli %tid, %c4 : index
  %addr = arith.addi %base, %off : index
  %a64 = arith.index_cast %addr : index to i64
  %p = llvm.inttoptr %a64 : i64 to !llvm.ptr<3>
  %c1 = arith.constant 1 : index
  %next0 = arith.addi %rank, %c1 : index
  %next = arith.remui %next0, %c4 : index
  %n32 = arith.index_cast %next : index to i32
  %remote = nvvm.mapa %p, %n32 : !llvm.ptr<3> -> !llvm.ptr<7>
  %x = llvm.load %remote : !llvm.ptr<7> -> f32
  %row = arith.muli %bid, %c32 : index
  %i = arith.addi %row, %tid : index
  memref.store %x, %o[%i] : memref<256xf32>
  FINAL_BARRIER
  gpu.return
}
)mlir";
  s.replace(s.find("FIRST_BARRIER"), 13,
            !firstBarrier  ? ""
            : relaxedFirst ? "nvvm.cluster.arrive.relaxed {aligned}\n"
                             "  nvvm.cluster.wait {aligned}"
                           : "nvvm.cluster.arrive {aligned}\n"
                             "  nvvm.cluster.wait {aligned}");
  s.replace(s.find("FINAL_BARRIER"), 13,
            finalBarrier ? "nvvm.cluster.arrive {aligned}\n"
                           "  nvvm.cluster.wait {aligned}"
                         : "");
  return s;
}
} // namespace

// Two clusters of 4 (grid 8): CTA b reads CTA (b + 1) % 4 of its own
// cluster.
TEST(SimtInterpreter, ClusterCtasReadEachOthersSharedMemoryAfterTheBarrier) {
  Kernel k = load(clusterKernel(true, true));
  std::vector<float> o(256, -1.0f);
  ASSERT_EQ(run(k, threads(32, 8, 128), {bytes(o)}), "");
  for (int b = 0; b < 8; ++b)
    for (int t = 0; t < 32; ++t)
      EXPECT_EQ(o[b * 32 + t], ((b % 4 + 1) % 4) * 100 + t) << b << " " << t;
}

TEST(SimtInterpreter, ClusterReadWithoutBarrierIsARace) {
  Kernel k = load(clusterKernel(false, true));
  std::vector<float> o(256);
  std::string err = run(k, threads(32, 8, 128), {bytes(o)});
  EXPECT_NE(err.find("'llvm.load'"), std::string::npos) << err;
  // CTA 0 runs first: its neighbour has not even started.
  EXPECT_NE(err.find("never-written shared memory of CTA 1"), std::string::npos)
      << err;
}

// A relaxed arrive does not release the writes before it.
TEST(SimtInterpreter, ClusterReadAfterARelaxedArriveIsARace) {
  Kernel k = load(clusterKernel(true, true, /*relaxedFirst=*/true));
  std::vector<float> o(256);
  std::string err = run(k, threads(32, 8, 128), {bytes(o)});
  EXPECT_NE(err.find("data race"), std::string::npos) << err;
  EXPECT_NE(err.find("release arrival"), std::string::npos) << err;
}

// Without the last barrier a CTA that finishes first frees the shared
// memory its predecessor still reads.
TEST(SimtInterpreter, ClusterCtaExitingBeforeOthersReadItIsAnError) {
  Kernel k = load(clusterKernel(true, false));
  std::vector<float> o(256);
  std::string err = run(k, threads(32, 8, 128), {bytes(o)});
  EXPECT_NE(err.find("after that CTA exited"), std::string::npos) << err;
}

TEST(SimtInterpreter, ClusterWaitWithoutArriveAndBadGridAreErrors) {
  Kernel waitOnly = load(R"mlir(
gpu.func @k(%o: memref<4xf32>) kernel attributes {nvvm.cluster_dim = array<i32: 2, 1, 1>} {
  nvvm.cluster.wait {aligned}
  gpu.return
}
)mlir");
  std::vector<float> o(4);
  std::string err = run(waitOnly, threads(32, 2), {bytes(o)});
  EXPECT_NE(err.find("waits on the cluster barrier without arriving"),
            std::string::npos)
      << err;
  Kernel good = load(clusterKernel(true, true));
  std::vector<float> out(256);
  err = run(good, threads(32, 6, 128), {bytes(out)});
  EXPECT_NE(err.find("not a multiple of the cluster's (4)"), std::string::npos)
      << err;
}
