// REQUIRES: cuda
// The rope kernel writing its results through heads merges, as the
// backward's inverse ropes of dq and dk feed the projections' gradient
// GEMMs [B, S, H·D]: one kernel for both ropes and both merges, no
// transpose kernel; bf16 heads of D = 16 (two heads per thread) and f32
// heads of D = 6 over three heads (one pair, one head per thread). Every
// kernel computes what the reference interpreter computes; the PTX
// assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// CHECK-NOT: _transpose
// CHECK: kernel kernel0_rope {{.*}} args=dq,dk,p,dq.merge,dk.merge
// CHECK-NEXT: kernel kernel1_rope {{.*}} args=x,px,{{[^ ]*}} ops=x.rope,x.heads,x.merge
// CHECK-NOT: _transpose

// SIM-NOT: FAIL
// SIM: result0  bf16 {{.*}} PASS
// SIM: result1  bf16 {{.*}} PASS
// SIM: result2  f32 {{.*}} PASS
func.func @main(%dq: tensor<2x2x5x16xbf16> loc("dq"), %dk: tensor<2x2x5x16xbf16> loc("dk"), %p: tensor<5xi64> loc("p"),
                %x: tensor<1x3x4x6xf32> loc("x"), %px: tensor<1x4xi64> loc("px"))
    -> (tensor<2x5x32xbf16>, tensor<2x5x32xbf16>, tensor<1x4x18xf32>) {
  %rq = memwall.rope %dq, %p inverse : tensor<2x2x5x16xbf16>, tensor<5xi64> loc("dq.rope")
  %tq = memwall.transpose %rq [0, 2, 1, 3] : tensor<2x2x5x16xbf16> -> tensor<2x5x2x16xbf16> loc("dq.heads")
  %mq = memwall.reshape %tq [2, 5, 32] : tensor<2x5x2x16xbf16> -> tensor<2x5x32xbf16> loc("dq.merge")
  %rk = memwall.rope %dk, %p inverse : tensor<2x2x5x16xbf16>, tensor<5xi64> loc("dk.rope")
  %tk = memwall.transpose %rk [0, 2, 1, 3] : tensor<2x2x5x16xbf16> -> tensor<2x5x2x16xbf16> loc("dk.heads")
  %mk = memwall.reshape %tk [2, 5, 32] : tensor<2x5x2x16xbf16> -> tensor<2x5x32xbf16> loc("dk.merge")
  %rx = memwall.rope %x, %px theta 5.000000e+05 : tensor<1x3x4x6xf32>, tensor<1x4xi64> loc("x.rope")
  %tx = memwall.transpose %rx [0, 2, 1, 3] : tensor<1x3x4x6xf32> -> tensor<1x4x3x6xf32> loc("x.heads")
  %mx = memwall.reshape %tx [1, 4, 18] : tensor<1x4x3x6xf32> -> tensor<1x4x18xf32> loc("x.merge")
  return %mq, %mk, %mx : tensor<2x5x32xbf16>, tensor<2x5x32xbf16>, tensor<1x4x18xf32>
}
