// Ops that each fit int64 can add up past it. The report's totals, memory
// peaks, sharded states and fix predictions all sum subsets of a module's
// FLOPs, bytes moved, parameters and buffers, so the report (and memwall-remat
// and memwall-compile) first check those sums: one error at the op or
// function where a sum stops fitting, and no report rather than a wrapped one
// ("-9.22 EB moved ... fits, peak 44 B").
// RUN: memwall-opt %s -split-input-file -verify-diagnostics --memwall-roofline-report=output=%t.json -o /dev/null
// RUN: rm -f %t.json
// RUN: not memwall-opt %s -split-input-file --report=%t.json --budget=1GB -o /dev/null 2>&1 | FileCheck %s
// RUN: not test -e %t.json
// CHECK: error: the bytes moved of the module up to this op of @moved are more than memwall can count (int64)
// CHECK: error: the FLOPs of the module up to this op of @flops are more than memwall can count (int64)

// Each relu moves 2^62 bytes (2^59 f32 read, the same written).
func.func @moved(%a: tensor<576460752303423488xf32>) -> tensor<576460752303423488xf32> {
  %0 = memwall.relu %a : tensor<576460752303423488xf32>
  // expected-error @below {{the bytes moved of the module up to this op of @moved are more than memwall can count (int64)}}
  %1 = memwall.relu %0 : tensor<576460752303423488xf32>
  return %1 : tensor<576460752303423488xf32>
}

// -----
// 2^61 FLOPs per matmul of 2^20 x 2^20 bf16 matrices; the fourth passes
// 2^63.
func.func @flops(%a: tensor<1048576x1048576xbf16>) {
  %0 = memwall.matmul %a, %a : tensor<1048576x1048576xbf16>, tensor<1048576x1048576xbf16> -> tensor<1048576x1048576xbf16>
  %1 = memwall.matmul %a, %a : tensor<1048576x1048576xbf16>, tensor<1048576x1048576xbf16> -> tensor<1048576x1048576xbf16>
  %2 = memwall.matmul %a, %a : tensor<1048576x1048576xbf16>, tensor<1048576x1048576xbf16> -> tensor<1048576x1048576xbf16>
  // expected-error @below {{the FLOPs of the module up to this op of @flops are more than memwall can count (int64)}}
  %3 = memwall.matmul %a, %a : tensor<1048576x1048576xbf16>, tensor<1048576x1048576xbf16> -> tensor<1048576x1048576xbf16>
  return
}

// -----
// Views move nothing, but every result is a buffer the memory simulation
// and the arena plan may hold.
func.func @buffers(%a: tensor<576460752303423488xf32>) {
  %0 = memwall.reshape %a [576460752303423488, 1] : tensor<576460752303423488xf32> -> tensor<576460752303423488x1xf32>
  %1 = memwall.reshape %a [1, 576460752303423488] : tensor<576460752303423488xf32> -> tensor<1x576460752303423488xf32>
  // expected-error @below {{the buffer bytes of @buffers up to this op are more than memwall can count (int64)}}
  %2 = memwall.reshape %0 [576460752303423488] : tensor<576460752303423488x1xf32> -> tensor<576460752303423488xf32>
  return
}

// -----
// Two weights of 2^62 elements: 2^63 parameters.
// expected-error @below {{the parameters of the module up to @params are more than memwall can count (int64)}}
func.func @params(%w0: tensor<4611686018427387904xi1> {memwall.kind = #memwall.arg_kind<weight>},
                  %w1: tensor<4611686018427387904xi1> {memwall.kind = #memwall.arg_kind<weight>}) {
  return
}

// -----
// An argument no op reads is still a buffer and a parameter.
// expected-error @below {{argument #1 of @unused: 'tensor<2305843009213693952x5xf32>' has about 1.15e+19 elements, more than memwall can count (int64)}}
func.func @unused(%x: tensor<4x8xf32>, %w: tensor<2305843009213693952x5xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<4x8xf32> {
  %0 = memwall.relu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
