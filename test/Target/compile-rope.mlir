// REQUIRES: cuda
// The rope kernel on shapes its vectors and head groups do not divide
// evenly into the common case: f32 heads of D = 6 (3 pairs: one pair per
// thread), three heads (one head per thread), per-batch positions and the
// inverse rotation; f16 heads of D = 16 (8 pairs: one 16-byte vector of
// each half), two heads per thread, theta 500000; f32 heads of D = 64 with
// Llama-3.1's frequency scaling over a 64-token original context (pairs 0-2
// kept, 3-5 interpolated, 6-31 divided by 8, at positions up to 19). Every
// kernel computes what the reference interpreter computes; the PTX
// assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// 2 x 5 positions x 3 pairs x 3 heads, one each: 90 threads (at least 32 a
// block: 90 in one).
// CHECK: kernel kernel0_rope grid=[1, 1, 1] block=[90, 1, 1] args=a,pa,ra
// 2 x 7 positions x 1 run of 8 pairs x 1 group of 2 heads: 14 threads, a
// block of 32.
// CHECK: kernel kernel1_rope grid=[1, 1, 1] block=[32, 1, 1] args=b,pb,rb
// CHECK: kernel kernel2_rope {{.*}} args=c,pc,rc

// SIM-NOT: FAIL
// SIM: result0  f32 {{.*}} PASS
// SIM: result1  f16 {{.*}} PASS
// SIM: result2  f32 {{.*}} PASS
func.func @main(%a: tensor<2x3x5x6xf32> loc("a"), %pa: tensor<2x5xi64> loc("pa"),
                %b: tensor<2x2x7x16xf16> loc("b"), %pb: tensor<7xi64> loc("pb"),
                %c: tensor<1x2x20x64xf32> loc("c"), %pc: tensor<20xi64> loc("pc"))
    -> (tensor<2x3x5x6xf32>, tensor<2x2x7x16xf16>, tensor<1x2x20x64xf32>) {
  %ra = memwall.rope %a, %pa theta 1.000000e+04 inverse : tensor<2x3x5x6xf32>, tensor<2x5xi64> loc("ra")
  %rb = memwall.rope %b, %pb theta 5.000000e+05 : tensor<2x2x7x16xf16>, tensor<7xi64> loc("rb")
  %rc = memwall.rope %c, %pc theta 5.000000e+05 llama3_scaling [8.0, 1.0, 4.0, 64.0] : tensor<1x2x20x64xf32>, tensor<20xi64> loc("rc")
  return %ra, %rb, %rc : tensor<2x3x5x6xf32>, tensor<2x2x7x16xf16>, tensor<1x2x20x64xf32>
}
