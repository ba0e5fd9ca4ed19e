// QLoRA's q projection in a Llama-2-7B training step (batch 4 x 512 = 2048
// rows, K = N = 4096): the frozen weight stored as NF4 (i4 codes into the
// NormalFloat codebook, [K, N]; an i8 absmax per 64 along K; an f32 scale
// per 256 absmax), as memwall-gen --base-dtype=nf4 writes it. memwall-fuse
// makes the dequantize a dequantize kernel writing the bf16 weight, then
// cuBLASLt multiplies (docs/fusion.md, "Dequantize kernels"): predicted
// 20.93 + 91.68 us on an H100.
// PyTorch: the same dequantization in eager ops (look the codes up, scale
// by the dequantized absmax), then x @ w, as bitsandbytes' dequantize then
// cuBLAS; torch.compile may fuse the dequantization into one kernel.
module @gemm_nf4_2048x4096x4096_bf16 {
  func.func @main(
      %x: tensor<2048x4096xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
      %q: tensor<4096x4096xi4> {memwall.kind = #memwall.arg_kind<weight>} loc("weight"),
      %a8: tensor<64x4096xi8> {memwall.kind = #memwall.arg_kind<weight>} loc("weight.absmax"),
      %a32: tensor<64x16xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("weight.absmax_scales")) -> tensor<2048x4096xbf16> {
    %a = memwall.dequantize %a8, %a32 : tensor<64x4096xi8>, tensor<64x16xf32> -> tensor<64x4096xf32> loc("weight.absmax.dequantized")
    %w = memwall.dequantize %q, %a {codebook = array<f32: -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0>} : tensor<4096x4096xi4>, tensor<64x4096xf32> -> tensor<4096x4096xbf16> loc("weight.dequantized")
    %0 = memwall.matmul %x, %w : tensor<2048x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2048x4096xbf16> loc("linear")
    return %0 : tensor<2048x4096xbf16>
  }
}
