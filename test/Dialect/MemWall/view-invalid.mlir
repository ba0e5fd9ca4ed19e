// memwall.view: a reshape keeps a dense buffer's element count, a window
// is a dense run of its elements at an offset; a strided
// buffer (a KV cache appended in place) is viewed only as the dense buffer
// it is a window of.
// RUN: memwall-opt %s -split-input-file -verify-diagnostics

func.func @reshape(%a: memref<64xf32>) -> memref<8x8xf32> {
  %0 = memwall.view %a : memref<64xf32> to memref<8x8xf32>
  return %0 : memref<8x8xf32>
}

func.func @window(%cache: memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>>) -> memref<2x3x7x12xbf16> {
  %0 = memwall.view %cache : memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>> to memref<2x3x7x12xbf16>
  return %0 : memref<2x3x7x12xbf16>
}

// -----

func.func @reshape_drops_elements(%a: memref<64xf32>) -> memref<8x4xf32> {
  // expected-error @below {{'memwall.view' op of a dense buffer must keep its element count}}
  %0 = memwall.view %a : memref<64xf32> to memref<8x4xf32>
  return %0 : memref<8x4xf32>
}

// -----

func.func @element_type(%a: memref<64xf32>) -> memref<64xi32> {
  // expected-error @below {{'memwall.view' op changes the element type}}
  %0 = memwall.view %a : memref<64xf32> to memref<64xi32>
  return %0 : memref<64xi32>
}

// -----

// Rows of 12 at a pitch of 84 are a window of [2, 3, 7, 12], not [2, 3, 8, 12].
func.func @not_the_window(%cache: memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>>) -> memref<2x3x8x12xbf16> {
  // expected-error @below {{'memwall.view' op of a strided buffer must be the dense buffer it is a window of (same rank and strides, no smaller dimension)}}
  %0 = memwall.view %cache : memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>> to memref<2x3x8x12xbf16>
  return %0 : memref<2x3x8x12xbf16>
}

// -----

func.func @smaller_than_the_window(%cache: memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>>) -> memref<2x3x4x21xbf16> {
  // expected-error @below {{'memwall.view' op of a strided buffer must be the dense buffer it is a window of}}
  %0 = memwall.view %cache : memref<2x3x5x12xbf16, strided<[252, 84, 12, 1]>> to memref<2x3x4x21xbf16>
  return %0 : memref<2x3x4x21xbf16>
}

// -----

func.func @strided_result(%a: memref<64xf32>) -> memref<8x8xf32, strided<[16, 1]>> {
  // expected-error @below {{'memwall.view' op must give a dense buffer}}
  %0 = memwall.view %a : memref<64xf32> to memref<8x8xf32, strided<[16, 1]>>
  return %0 : memref<8x8xf32, strided<[16, 1]>>
}

// -----

// A window: rows [128, 172) of a [300, 64] buffer, dense at an offset.
func.func @rows_window(%w: memref<300x64xbf16>) -> memref<44x64xbf16, strided<[64, 1], offset: 8192>> {
  %0 = memwall.view %w : memref<300x64xbf16> to memref<44x64xbf16, strided<[64, 1], offset: 8192>>
  return %0 : memref<44x64xbf16, strided<[64, 1], offset: 8192>>
}

// -----

func.func @window_past_the_end(%w: memref<300x64xbf16>) -> memref<45x64xbf16, strided<[64, 1], offset: 16384>> {
  // expected-error @below {{'memwall.view' op of a dense buffer must lie inside it}}
  %0 = memwall.view %w : memref<300x64xbf16> to memref<45x64xbf16, strided<[64, 1], offset: 16384>>
  return %0 : memref<45x64xbf16, strided<[64, 1], offset: 16384>>
}

// -----

// A column window is not dense: the fused head's GEMMs read rows only.
func.func @column_window(%w: memref<64x300xbf16>) -> memref<64x128xbf16, strided<[300, 1], offset: 128>> {
  // expected-error @below {{'memwall.view' op must give a dense buffer}}
  %0 = memwall.view %w : memref<64x300xbf16> to memref<64x128xbf16, strided<[300, 1], offset: 128>>
  return %0 : memref<64x128xbf16, strided<[300, 1], offset: 128>>
}
