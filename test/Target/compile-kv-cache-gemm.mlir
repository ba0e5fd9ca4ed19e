// REQUIRES: cuda
// A generated GEMM writes k (rotated) and v straight into their KV caches
// in place: 72 new tokens of 2 sequences (M = 144 rows, so a tile's rows
// cross a sequence and, ragged, the end) appended after 5 cached rows.
// k and v share their lhs: one dual GEMM whose epilogue stores row
// (b·H + h)·77 + 5 + s of each cache; no append kernel, no copy of the
// cache. wgmma on sm_90a, mma.sync on sm_80; memwall-simulate checks both
// caches against the reference (the gaps of a strided cache start as NaN
// in the simulator, so a row the kernel misses fails).
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s --gemm=memwall -o %t/h100
// RUN: %PYTHON %S/summarize_bundle.py %t/h100/manifest.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=WGMMA < %t/h100/kernels.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/h100/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/h100 | FileCheck %s --check-prefix=SIM
// RUN: memwall-compile %s --gemm=memwall --target=a100-80gb -o %t/a100
// RUN: %PYTHON %S/summarize_bundle.py %t/a100/manifest.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=MMA < %t/a100/kernels.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/a100 | FileCheck %s --check-prefix=SIM

// CHECK: buffer k_cache bf16 [2, 2, 5, 32] 19712 input strides=[4928, 2464, 32, 1] shares=k_cache.append
// CHECK: buffer k_cache.append bf16 [2, 2, 77, 32] 19712 output shares=k_cache
// CHECK-NOT: kernel
// CHECK: kernel kernel0_gemm {{.*}}args=x,wk,positions,wv,k_cache.append,v_cache.append ops=k,k.split,k.heads,k.rope,k_cache.append,v,v.split,v.heads,v_cache.append
// CHECK-NOT: kernel
// WGMMA: wgmma.mma_async
// MMA-NOT: wgmma
// MMA: mma.sync

// SIM-NOT: FAIL
// SIM: kernel0_gemm {{ *}}k_cache.append {{.*}} PASS
// SIM-NEXT: kernel0_gemm {{ *}}v_cache.append {{.*}} PASS
// SIM: result0  bf16 {{.*}} PASS
// SIM-NEXT: result1  bf16 {{.*}} PASS
func.func @main(%x: tensor<2x72x64xbf16> loc("x"),
                %wk: tensor<64x64xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("wk"),
                %wv: tensor<64x64xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("wv"),
                %positions: tensor<72xi64> loc("positions"),
                %kc: tensor<2x2x5x32xbf16> {memwall.kind = #memwall.arg_kind<kv_cache>} loc("k_cache"),
                %vc: tensor<2x2x5x32xbf16> {memwall.kind = #memwall.arg_kind<kv_cache>} loc("v_cache"))
    -> (tensor<2x2x77x32xbf16>, tensor<2x2x77x32xbf16>) {
  %k = memwall.matmul %x, %wk : tensor<2x72x64xbf16>, tensor<64x64xbf16> -> tensor<2x72x64xbf16> loc("k")
  %ks = memwall.reshape %k [2, 72, 2, 32] : tensor<2x72x64xbf16> -> tensor<2x72x2x32xbf16> loc("k.split")
  %kh = memwall.transpose %ks [0, 2, 1, 3] : tensor<2x72x2x32xbf16> -> tensor<2x2x72x32xbf16> loc("k.heads")
  %kr = memwall.rope %kh, %positions : tensor<2x2x72x32xbf16>, tensor<72xi64> loc("k.rope")
  %ka = memwall.kv_cache_append %kc, %kr : tensor<2x2x5x32xbf16>, tensor<2x2x72x32xbf16> -> tensor<2x2x77x32xbf16> loc("k_cache.append")
  %v = memwall.matmul %x, %wv : tensor<2x72x64xbf16>, tensor<64x64xbf16> -> tensor<2x72x64xbf16> loc("v")
  %vs = memwall.reshape %v [2, 72, 2, 32] : tensor<2x72x64xbf16> -> tensor<2x72x2x32xbf16> loc("v.split")
  %vh = memwall.transpose %vs [0, 2, 1, 3] : tensor<2x72x2x32xbf16> -> tensor<2x2x72x32xbf16> loc("v.heads")
  %va = memwall.kv_cache_append %vc, %vh : tensor<2x2x5x32xbf16>, tensor<2x2x72x32xbf16> -> tensor<2x2x77x32xbf16> loc("v_cache.append")
  return %ka, %va : tensor<2x2x77x32xbf16>, tensor<2x2x77x32xbf16>
}
