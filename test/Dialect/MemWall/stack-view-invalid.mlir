// memwall.stack_view: function arguments or allocs of one dense type, each
// once, viewed as [n, ...] at a pitch of the source's bytes rounded up to the
// arena's 256-byte alignment (24 x 40 bf16 = 1920 bytes: a pitch of 1024).
// RUN: memwall-opt %s -split-input-file -verify-diagnostics

func.func @weights(%a: memref<24x40xbf16>, %b: memref<24x40xbf16>, %c: memref<24x40xbf16>) -> memref<3x24x40xbf16, strided<[1024, 40, 1]>> {
  %0 = memwall.stack_view %a, %b, %c : memref<24x40xbf16>, memref<24x40xbf16>, memref<24x40xbf16> to memref<3x24x40xbf16, strided<[1024, 40, 1]>>
  return %0 : memref<3x24x40xbf16, strided<[1024, 40, 1]>>
}

func.func @allocs() -> memref<2x8x32xf32> {
  %a = memref.alloc() : memref<8x32xf32>
  %b = memref.alloc() : memref<8x32xf32>
  %0 = memwall.stack_view %a, %b : memref<8x32xf32>, memref<8x32xf32> to memref<2x8x32xf32>
  return %0 : memref<2x8x32xf32>
}

// -----

func.func @dense_result(%a: memref<24x40xbf16>, %b: memref<24x40xbf16>) -> memref<2x24x40xbf16> {
  // expected-error @below {{'memwall.stack_view' op must give 'memref<2x24x40xbf16, strided<[1024, 40, 1]>>', got 'memref<2x24x40xbf16>'}}
  %0 = memwall.stack_view %a, %b : memref<24x40xbf16>, memref<24x40xbf16> to memref<2x24x40xbf16>
  return %0 : memref<2x24x40xbf16>
}

// -----

func.func @one(%a: memref<64xf32>) -> memref<1x64xf32> {
  // expected-error @below {{'memwall.stack_view' op stacks at least two buffers}}
  %0 = memwall.stack_view %a : memref<64xf32> to memref<1x64xf32>
  return %0 : memref<1x64xf32>
}

// -----

func.func @types_differ(%a: memref<64xf32>, %b: memref<32xf32>) -> memref<2x64xf32> {
  // expected-error @below {{'memwall.stack_view' op stacks buffers of one type, got 'memref<64xf32>' and 'memref<32xf32>'}}
  %0 = memwall.stack_view %a, %b : memref<64xf32>, memref<32xf32> to memref<2x64xf32>
  return %0 : memref<2x64xf32>
}

// -----

func.func @twice(%a: memref<64xf32>) -> memref<2x64xf32> {
  // expected-error @below {{'memwall.stack_view' op stacks a buffer twice}}
  %0 = memwall.stack_view %a, %a : memref<64xf32>, memref<64xf32> to memref<2x64xf32>
  return %0 : memref<2x64xf32>
}

// -----

// A view is no buffer of its own: the arena cannot place it beside another.
func.func @view_source(%a: memref<64xf32>, %b: memref<8x8xf32>) -> memref<2x8x8xf32, strided<[64, 8, 1]>> {
  %v = memwall.view %a : memref<64xf32> to memref<8x8xf32>
  // expected-error @below {{'memwall.stack_view' op stacks function arguments and memref.alloc buffers only}}
  %0 = memwall.stack_view %v, %b : memref<8x8xf32>, memref<8x8xf32> to memref<2x8x8xf32, strided<[64, 8, 1]>>
  return %0 : memref<2x8x8xf32, strided<[64, 8, 1]>>
}

// -----

func.func @strided_source(%a: memref<8x8xf32, strided<[16, 1]>>, %b: memref<8x8xf32, strided<[16, 1]>>) -> memref<2x8x8xf32, strided<[128, 16, 1]>> {
  // expected-error @below {{'memwall.stack_view' op stacks dense buffers of whole-byte elements}}
  %0 = memwall.stack_view %a, %b : memref<8x8xf32, strided<[16, 1]>>, memref<8x8xf32, strided<[16, 1]>> to memref<2x8x8xf32, strided<[128, 16, 1]>>
  return %0 : memref<2x8x8xf32, strided<[128, 16, 1]>>
}
