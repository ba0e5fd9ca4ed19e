// REQUIRES: cuda
// Data-movement kernels: a head transpose and whole embedding rows move
// 16-byte vectors (one ld/st.global.v4 each), a slice strided along its last
// dimension goes one element per thread, rope takes 8 pairs of 4 heads per
// thread (16-byte vectors of each half, one sine and cosine per pair); the
// PTX assembles, and every kernel computes what the reference interpreter
// computes (memwall-simulate).
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/b/kernels.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// 2 x 64 x 4 x 32 bf16 = 16384 elements in vectors of 8: 2048 threads.
// CHECK: kernel kernel0_transpose grid=[8, 1, 1] block=[256, 1, 1] args=x,heads
// Every other column: 2 x 64 x 64 elements, one per thread.
// CHECK: kernel kernel1_slice grid=[32, 1, 1] block=[256, 1, 1]
// CHECK: kernel kernel2_embedding grid=[8, 1, 1] block=[256, 1, 1] args=table,ids,rows
// [2, 4, 64, 32]: 2 x 64 positions x 2 runs of 8 pairs x 1 group of 4
// heads = 256 threads.
// CHECK: kernel kernel3_rope grid=[1, 1, 1] block=[256, 1, 1] args=heads,positions,rotated
// CHECK: kernel kernel4_kv_cache_append

// Kernel buffers are noalias: loads take the read-only (non-coherent) path.
// PTX-LABEL: .entry kernel0_transpose
// PTX: ld.global.nc.v4.b32
// PTX: st.global.v4.b32
// PTX-LABEL: .entry kernel1_slice
// PTX: ld.global.nc.b16
// PTX-LABEL: .entry kernel2_embedding
// PTX: ld.global.nc.v4.b32
// PTX-LABEL: .entry kernel3_rope
// PTX-COUNT-8: ld.global.nc.v4.b32
// PTX-COUNT-8: st.global.v4.b32
// PTX-LABEL: .entry kernel4_kv_cache_append

// SIM-NOT: FAIL
// SIM: result0  bf16 {{.*}} PASS
// SIM-NOT: FAIL
func.func @main(%x: tensor<2x64x4x32xbf16> loc("x"),
                %src: tensor<2x64x128xbf16> loc("src"),
                %table: tensor<512x128xbf16> loc("table"),
                %ids: tensor<2x64xi64> loc("ids"),
                %positions: tensor<64xi64> loc("positions"),
                %cache: tensor<2x4x10x32xbf16> loc("cache"))
    -> (tensor<2x4x64x32xbf16>, tensor<2x64x64xbf16>, tensor<2x64x128xbf16>,
        tensor<2x4x64x32xbf16>, tensor<2x4x74x32xbf16>) {
  %heads = memwall.transpose %x [0, 2, 1, 3] : tensor<2x64x4x32xbf16> -> tensor<2x4x64x32xbf16> loc("heads")
  %odd = memwall.slice %src offsets [0, 0, 1] sizes [2, 64, 64] strides [1, 1, 2] : tensor<2x64x128xbf16> -> tensor<2x64x64xbf16> loc("odd")
  %rows = memwall.embedding %table[%ids] : tensor<512x128xbf16>, tensor<2x64xi64> -> tensor<2x64x128xbf16> loc("rows")
  %rotated = memwall.rope %heads, %positions : tensor<2x4x64x32xbf16>, tensor<64xi64> loc("rotated")
  %appended = memwall.kv_cache_append %cache, %rotated : tensor<2x4x10x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x74x32xbf16> loc("appended")
  return %heads, %odd, %rows, %rotated, %appended : tensor<2x4x64x32xbf16>, tensor<2x64x64xbf16>, tensor<2x64x128xbf16>, tensor<2x4x64x32xbf16>, tensor<2x4x74x32xbf16>
}
