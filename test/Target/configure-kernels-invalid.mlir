// Ops codegen cannot run: one error per distinct message at its first op,
// the repeats counted once on the function.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels))' -split-input-file -verify-diagnostics

// expected-error @+1 {{codegen cannot run 1 more op of @repeats for the reasons above}}
func.func @repeats(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{codegen runs attention only in its tiled form (memwall.flash_attention); this one stayed untiled}}
  %0 = memwall.attention %q, %q, %q causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %1 = memwall.attention %0, %0, %0 causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %1 : tensor<1x2x8x16xf32>
}

// -----

// A constant runs as a fill kernel only when it is one repeated value of a
// type the kernel stores.
func.func @distinct_constant() -> tensor<4xf32> {
  // expected-error @+1 {{codegen fills only tensor constants of one repeated value}}
  %0 = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fp8_constant() -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{codegen fills bf16, f16, f32 or whole-byte integer tensors, not f8E4M3FN}}
  %0 = arith.constant dense<1.0> : tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

// AdamW updates its state in place: state computed in the step has no
// buffer of its own to update.
func.func @adamw_state_not_an_argument(%p: tensor<64xf32>, %g: tensor<64xf32>, %m: tensor<64xf32>) -> tensor<64xf32> {
  %v = memwall.mul %m, %m : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  // expected-error @+1 {{codegen updates AdamW's param, moments and master weights in place, so each must be a function argument}}
  %p2, %m2, %v2 = memwall.adamw %p, %g, %m, %v lr 1.0e-03 : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  return %p2 : tensor<64xf32>
}

// -----

// A norm gradient holds its row in registers: 20480 f32 would spill.
func.func @norm_grad_row_too_long(%x: tensor<2x20480xf32>, %w: tensor<20480xf32>) -> tensor<2x20480xf32> {
  // expected-error @+1 {{codegen cannot run 'memwall.layer_norm_grad': rows of 20480 elements need about 272 registers per thread and would spill}}
  %dx, %dw, %db = memwall.layer_norm_grad %x, %w, %x has_bias : (tensor<2x20480xf32>, tensor<20480xf32>, tensor<2x20480xf32>) -> (tensor<2x20480xf32>, tensor<20480xf32>, tensor<20480xf32>)
  return %dx : tensor<2x20480xf32>
}

// -----

// Attention's backward off tensor cores (f32) holds its tiles in 40 KiB of
// shared memory; a head dim that is not a multiple of 8 has no tiles either.
func.func @attention_grad_shared_memory(%q: tensor<1x2x16x256xf32>, %lse: tensor<1x2x16xf32>, %mask: tensor<1x1x16x16xi1>) -> tensor<1x2x16x256xf32> {
  // expected-error @+1 {{codegen cannot run attention's backward with head dims of 256 and 256 (its tiles must fit in 40 KiB of shared memory)}}
  %dq, %dk, %dv = memwall.flash_attention_grad %q, %q, %q, %q, %q, %lse mask %mask scale 0.125 block_q 64 block_kv 64 : (tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16xf32>, tensor<1x1x16x16xi1>) -> (tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>, tensor<1x2x16x256xf32>)
  return %dq : tensor<1x2x16x256xf32>
}

// -----

func.func @attention_grad_head_dim(%q: tensor<1x2x16x12xf32>, %lse: tensor<1x2x16xf32>) -> tensor<1x2x16x12xf32> {
  // expected-error @+1 {{codegen cannot run attention's backward with head dims that are not multiples of 8 (got 12 and 12)}}
  %dq, %dk, %dv = memwall.flash_attention_grad %q, %q, %q, %q, %q, %lse causal scale 0.125 block_q 64 block_kv 64 : (tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16xf32>) -> (tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>, tensor<1x2x16x12xf32>)
  return %dq : tensor<1x2x16x12xf32>
}

// -----

// adamw runs after the last other reader of the state it overwrites; the
// updated weight read before the old one's last reader has no such order.
func.func @result_before_last_read(%w: tensor<256xf32>, %g: tensor<256xf32>, %m: tensor<256xf32>, %v: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  // expected-error @+1 {{codegen updates AdamW's state in place, but its result is used before the last read of the state it overwrites}}
  %w2, %m2, %v2 = memwall.adamw %w, %g, %m, %v lr 1.0e-01
      : (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>)
      -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>)
  %new = memwall.add %w2, %g : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32>
  %old = memwall.mul %w, %new : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32>
  return %old, %m2 : tensor<256xf32>, tensor<256xf32>
}

// -----

// The fused head's chunks are runs of its weight's rows only as [V, D].
func.func @linear_cross_entropy_dv(%h: tensor<8x64xbf16>, %w: tensor<64x300xbf16>, %labels: tensor<8xi64>) -> tensor<f32> {
  // expected-error @+1 {{codegen cannot run 'memwall.linear_cross_entropy': the chunks of its weight are runs of rows only as [V, D] (transpose_weight, nn.Linear's and a tied embedding's layout); this one is [D, V]}}
  %loss, %lse = memwall.linear_cross_entropy %h, %w, %labels : tensor<8x64xbf16>, tensor<64x300xbf16>, tensor<8xi64> -> tensor<f32>, tensor<8xf32>
  return %loss : tensor<f32>
}


// -----

// A dequantize kernel looks codes up in 16-entry (i4) codebooks only.
func.func @dequantize_kernel_i8_codebook(%q: tensor<32x16xi8>, %s: tensor<1x16xbf16>) -> tensor<32x16xbf16> {
  // expected-error @+1 {{codegen cannot run this dequantize kernel: the generated code looks codes up in 16-entry (i4) codebooks}}
  %w = memwall.dequantize %q, %s {codebook = array<f32: 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 129.0, 130.0, 131.0, 132.0, 133.0, 134.0, 135.0, 136.0, 137.0, 138.0, 139.0, 140.0, 141.0, 142.0, 143.0, 144.0, 145.0, 146.0, 147.0, 148.0, 149.0, 150.0, 151.0, 152.0, 153.0, 154.0, 155.0, 156.0, 157.0, 158.0, 159.0, 160.0, 161.0, 162.0, 163.0, 164.0, 165.0, 166.0, 167.0, 168.0, 169.0, 170.0, 171.0, 172.0, 173.0, 174.0, 175.0, 176.0, 177.0, 178.0, 179.0, 180.0, 181.0, 182.0, 183.0, 184.0, 185.0, 186.0, 187.0, 188.0, 189.0, 190.0, 191.0, 192.0, 193.0, 194.0, 195.0, 196.0, 197.0, 198.0, 199.0, 200.0, 201.0, 202.0, 203.0, 204.0, 205.0, 206.0, 207.0, 208.0, 209.0, 210.0, 211.0, 212.0, 213.0, 214.0, 215.0, 216.0, 217.0, 218.0, 219.0, 220.0, 221.0, 222.0, 223.0, 224.0, 225.0, 226.0, 227.0, 228.0, 229.0, 230.0, 231.0, 232.0, 233.0, 234.0, 235.0, 236.0, 237.0, 238.0, 239.0, 240.0, 241.0, 242.0, 243.0, 244.0, 245.0, 246.0, 247.0, 248.0, 249.0, 250.0, 251.0, 252.0, 253.0, 254.0, 255.0>, materialize} : tensor<32x16xi8>, tensor<1x16xbf16> -> tensor<32x16xbf16>
  return %w : tensor<32x16xbf16>
}

// -----

// A dequantize kernel of a rank-3 weight.
func.func @dequantize_kernel_rank3(%q: tensor<2x32x16xi8>, %s: tensor<2x1x16xbf16>) -> tensor<2x32x16xbf16> {
  // expected-error @+1 {{codegen cannot run this dequantize kernel: the generated code dequantizes rank-2 weights}}
  %w = memwall.dequantize %q, %s {materialize} : tensor<2x32x16xi8>, tensor<2x1x16xbf16> -> tensor<2x32x16xbf16>
  return %w : tensor<2x32x16xbf16>
}

// -----

// Unfused, the dequantize of a dequantize kernel's scales has no kernel.
func.func @dequantize_kernel_scales_unfused(%q: tensor<128x16xi4>, %a8: tensor<2x16xi8>, %a32: tensor<1x1xf32>) -> tensor<128x16xbf16> {
  // expected-error @+1 {{codegen runs the dequantize of a dequantize kernel's scales only in that kernel; memwall-fuse puts it there (compile without --no-fuse)}}
  %a = memwall.dequantize %a8, %a32 : tensor<2x16xi8>, tensor<1x1xf32> -> tensor<2x16xf32>
  %w = memwall.dequantize %q, %a {codebook = array<f32: -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0>, materialize} : tensor<128x16xi4>, tensor<2x16xf32> -> tensor<128x16xbf16>
  return %w : tensor<128x16xbf16>
}
