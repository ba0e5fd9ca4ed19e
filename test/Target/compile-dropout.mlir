// REQUIRES: cuda
// Dropout (memwall.dropout) runs in the elementwise kernels: each element's
// keep bit is word 0 of Philox4x32-10 of its flat index keyed by the seed,
// computed in the kernel (no mask in memory), the same function the
// reference interpreter draws. Alone in bf16 over a ragged row (250
// elements: vectors of 8 and a tail), fused with the residual add GPT-2
// puts after it, with a seed past 32 bits (both key words), and at rate 0
// (the identity: no random bits). memwall-simulate checks every kernel
// against the reference (a wrong bit is an element off by its whole
// value); the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/b/kernels.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// CHECK-DAG: ops=alone
// CHECK-DAG: ops=proj.dropout,residual
// CHECK-DAG: ops=wide_seed
// The first multiplier, 0xD2511F53.
// PTX: 3528531795
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%x: tensor<4x250xbf16> loc("x"), %h: tensor<8x64xbf16> loc("h"),
                %y: tensor<8x64xbf16> loc("y"), %z: tensor<300xf32> loc("z"))
    -> (tensor<4x250xbf16>, tensor<8x64xbf16>, tensor<300xf32>, tensor<300xf32>) {
  %0 = memwall.dropout %x rate 1.000000e-01 seed 7 : tensor<4x250xbf16> loc("alone")
  %1 = memwall.dropout %y rate 2.500000e-01 seed 1 : tensor<8x64xbf16> loc("proj.dropout")
  %2 = memwall.add %h, %1 : tensor<8x64xbf16>, tensor<8x64xbf16> -> tensor<8x64xbf16> loc("residual")
  %3 = memwall.dropout %z rate 5.000000e-01 seed 4294967301 : tensor<300xf32> loc("wide_seed")
  %4 = memwall.dropout %z rate 0.000000e+00 seed 3 : tensor<300xf32> loc("identity")
  return %0, %2, %3, %4 : tensor<4x250xbf16>, tensor<8x64xbf16>, tensor<300xf32>, tensor<300xf32>
}
