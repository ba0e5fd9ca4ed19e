// memwall-plan-arena: lifetimes from the steps that use each buffer,
// 256-byte aligned offsets, buffers live at the same time never overlap.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(func.func(memwall-plan-arena))' -split-input-file -verify-diagnostics | FileCheck %s

// %a lives throughout (offset 0); t0 is dead after step 1, so t2 (defined at
// step 2) takes its place; the returned view keeps t2 alive to the end and
// shares its offset.
// CHECK-LABEL: func.func @reuse
// CHECK-SAME: memwall.arena_bytes = 768 : i64, memwall.argument_offsets = array<i64: 0>
// CHECK: memref.alloc() {memwall.buffer = "t0", memwall.offset = 256 : i64}
// CHECK: memref.alloc() {memwall.buffer = "t1", memwall.offset = 512 : i64}
// CHECK: memref.alloc() {memwall.buffer = "t2", memwall.offset = 256 : i64}
// CHECK: memwall.view {{.*}}{memwall.buffer = "v", memwall.offset = 256 : i64}
func.func @reuse(%a: memref<64xf32>) -> memref<8x8xf32> {
  %0 = memref.alloc() {memwall.buffer = "t0"} : memref<64xf32>
  memwall.launch @kernels::@k0(%a, %0) grid [1, 1, 1] block [64, 1, 1] shared 0 {ops = [], predicted_seconds = 0.0} : memref<64xf32>, memref<64xf32>
  %1 = memref.alloc() {memwall.buffer = "t1"} : memref<64xf32>
  memwall.launch @kernels::@k1(%0, %1) grid [1, 1, 1] block [64, 1, 1] shared 0 {ops = [], predicted_seconds = 0.0} : memref<64xf32>, memref<64xf32>
  %2 = memref.alloc() {memwall.buffer = "t2"} : memref<64xf32>
  memwall.launch @kernels::@k2(%1, %2) grid [1, 1, 1] block [64, 1, 1] shared 0 {ops = [], predicted_seconds = 0.0} : memref<64xf32>, memref<64xf32>
  %3 = memwall.view %2 {memwall.buffer = "v"} : memref<64xf32> to memref<8x8xf32>
  return %3 : memref<8x8xf32>
}

// -----

// expected-error @+1 {{the buffers of @too_large need an arena larger than memwall can count (int64)}}
func.func @too_large(%a: memref<4611686018427387904xi8>, %b: memref<4611686018427387904xi8>) {
  return
}

// -----

// A KV cache appended in place: the cache argument holds its rows at the
// appended length's pitch, so it spans 2 x 3 x 7 x 12 bf16 = 1008 bytes
// (1024 aligned), and the appended cache, a view of it, shares its offset.
// CHECK-LABEL: func.func @in_place_cache
// CHECK-SAME: memwall.arena_bytes = 1536 : i64, memwall.argument_offsets = array<i64: 0, 1024>
// CHECK: memwall.view {{.*}}{memwall.buffer = "appended", memwall.offset = 0 : i64}
func.func @in_place_cache(%cache: memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>>, %update: memref<2x3x2x12xbf16>) -> memref<2x3x7x12xbf16> {
  %0 = memwall.view %cache {memwall.buffer = "appended"} : memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>> to memref<2x3x7x12xbf16>
  memwall.launch @kernels::@append(%update, %0) grid [1, 1, 1] block [32, 1, 1] shared 0 {ops = [], predicted_seconds = 0.0} : memref<2x3x2x12xbf16>, memref<2x3x7x12xbf16>
  return %0 : memref<2x3x7x12xbf16>
}

// -----

// Stacked weights (memwall.stack_view) lie a pitch apart in one placement:
// three 24 x 40 bf16 arguments (1920 bytes, a 2048-byte pitch) at 0, 2048
// and 4096 (the largest buffer, placed first); the stacked products (two
// 8 x 24 f32, 768 bytes, a dense stack) next at 6144 and 6912, the second
// returned, so the stack lives to the end; x last, at 7680.
// CHECK-LABEL: func.func @stacks
// CHECK-SAME: memwall.arena_bytes = 8448 : i64, memwall.argument_offsets = array<i64: 7680, 0, 2048, 4096>
// CHECK: memref.alloc() {memwall.buffer = "q", memwall.offset = 6144 : i64}
// CHECK: memref.alloc() {memwall.buffer = "k", memwall.offset = 6912 : i64}
// CHECK: memwall.stack_view {{.*}}{memwall.buffer = "weights", memwall.offset = 0 : i64}
// CHECK: memwall.stack_view {{.*}}{memwall.buffer = "products", memwall.offset = 6144 : i64}
func.func @stacks(%x: memref<8x40xbf16>, %wq: memref<24x40xbf16>, %wk: memref<24x40xbf16>, %wv: memref<24x40xbf16>) -> memref<8x24xf32> {
  %q = memref.alloc() {memwall.buffer = "q"} : memref<8x24xf32>
  %k = memref.alloc() {memwall.buffer = "k"} : memref<8x24xf32>
  %w = memwall.stack_view %wq, %wk, %wv {memwall.buffer = "weights"} : memref<24x40xbf16>, memref<24x40xbf16>, memref<24x40xbf16> to memref<3x24x40xbf16, strided<[1024, 40, 1]>>
  %p = memwall.stack_view %q, %k {memwall.buffer = "products"} : memref<8x24xf32>, memref<8x24xf32> to memref<2x8x24xf32>
  memwall.launch @kernels::@k0(%x, %w, %p) grid [1, 1, 1] block [64, 1, 1] shared 0 {ops = [], predicted_seconds = 0.0} : memref<8x40xbf16>, memref<3x24x40xbf16, strided<[1024, 40, 1]>>, memref<2x8x24xf32>
  return %k : memref<8x24xf32>
}

// -----

func.func @stacked_twice(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) {
  %0 = memwall.stack_view %a, %b : memref<64xf32>, memref<64xf32> to memref<2x64xf32>
  // expected-error @below {{'memwall.stack_view' op stacks a buffer another memwall.stack_view stacks: the arena cannot place it in both}}
  %1 = memwall.stack_view %b, %c : memref<64xf32>, memref<64xf32> to memref<2x64xf32>
  return
}
