// REQUIRES: cuda
// KV-cache appends in place: a cache argument read only by its append holds
// its rows at the appended length's pitch (the bundle gives it strides), the
// appended cache is that buffer, and the kernel writes only the new rows:
// 2 x 3 heads x 2 rows x 12 = 144 bf16 in vectors of 4 (12 columns are not
// whole 16-byte vectors). A cache two appends read is copied into each
// result (both would write the same rows). memwall-simulate checks every
// result against the reference; the gaps of a strided cache start as NaN
// in the simulator, so a row the kernel misses fails.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// CHECK: buffer k bf16 [2, 3, 5, 12] 1008 input strides=[252, 84, 12, 1] shares=k_appended
// CHECK: buffer v f32 [2, 3, 5, 12] 1440 input{{$}}
// CHECK: buffer k_appended bf16 [2, 3, 7, 12] 1008 output shares=k{{$}}
// CHECK: buffer v_appended f32 [2, 3, 7, 12] 2016 output{{$}}
// CHECK: buffer v_branch f32 [2, 3, 6, 12] 1728 output{{$}}
// CHECK: kernel kernel0_kv_cache_append grid=[1, 1, 1] block=[36, 1, 1] args=kn,k_appended ops=k_appended
// 2 x 3 x 7 x 12 f32 copied in vectors of 4: 126 threads.
// CHECK: kernel kernel1_kv_cache_append grid=[1, 1, 1] block=[126, 1, 1] args=v,vn,v_appended ops=v_appended
// CHECK: kernel kernel2_kv_cache_append {{.*}}args=v,vn1,v_branch ops=v_branch

// SIM-NOT: FAIL
// SIM: result0  bf16 {{.*}} PASS
// SIM-NEXT: result1  f32 {{.*}} PASS
// SIM-NEXT: result2  f32 {{.*}} PASS
func.func @main(%k: tensor<2x3x5x12xbf16> loc("k"),
                %kn: tensor<2x3x2x12xbf16> loc("kn"),
                %v: tensor<2x3x5x12xf32> loc("v"),
                %vn: tensor<2x3x2x12xf32> loc("vn"),
                %vn1: tensor<2x3x1x12xf32> loc("vn1"))
    -> (tensor<2x3x7x12xbf16>, tensor<2x3x7x12xf32>, tensor<2x3x6x12xf32>) {
  %ka = memwall.kv_cache_append %k, %kn : tensor<2x3x5x12xbf16>, tensor<2x3x2x12xbf16> -> tensor<2x3x7x12xbf16> loc("k_appended")
  %va = memwall.kv_cache_append %v, %vn : tensor<2x3x5x12xf32>, tensor<2x3x2x12xf32> -> tensor<2x3x7x12xf32> loc("v_appended")
  %vb = memwall.kv_cache_append %v, %vn1 : tensor<2x3x5x12xf32>, tensor<2x3x1x12xf32> -> tensor<2x3x6x12xf32> loc("v_branch")
  return %ka, %va, %vb : tensor<2x3x7x12xbf16>, tensor<2x3x7x12xf32>, tensor<2x3x6x12xf32>
}
