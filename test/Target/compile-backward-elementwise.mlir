// REQUIRES: cuda
// Backward ops that are elementwise run in elementwise kernels (their
// scalar payloads, ElementwiseOpInterface): every activation's gradient
// dy * f'(x), and a broadcast (the backward of a reduction) read in its
// broadcast pattern and fused with what consumes it. Ragged sizes (a last
// partial vector); every kernel computes what the reference interpreter
// computes (memwall-simulate), and the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM
// RUN: memwall-compile %s --no-fuse -o %t/unfused
// RUN: memwall-simulate %t/unfused | FileCheck %s --check-prefix=SIM

// Fused: the five gradients, the broadcast and the product that reads it
// are elementwise in one shape: one kernel.
// CHECK: kernel kernel0_elementwise grid=[3, 1, 1] block=[256, 1, 1] args=x,dy,row,{{.*}} ops=gelu_erf.grad,gelu_tanh.grad,silu.grad,relu.grad,tanh.grad,broadcast,scaled
// CHECK-NOT: kernel kernel1
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%x: tensor<3x37x40xbf16> loc("x"),
                %dy: tensor<3x37x40xbf16> loc("dy"),
                %row: tensor<3x37x1xbf16> loc("row"))
    -> (tensor<3x37x40xbf16>, tensor<3x37x40xbf16>, tensor<3x37x40xbf16>,
        tensor<3x37x40xbf16>, tensor<3x37x40xbf16>, tensor<3x37x40xbf16>) {
  %erf = memwall.activation_grad gelu_erf %x, %dy : tensor<3x37x40xbf16> loc("gelu_erf.grad")
  %tanh_gelu = memwall.activation_grad gelu_tanh %x, %dy : tensor<3x37x40xbf16> loc("gelu_tanh.grad")
  %silu = memwall.activation_grad silu %x, %dy : tensor<3x37x40xbf16> loc("silu.grad")
  %relu = memwall.activation_grad relu %x, %dy : tensor<3x37x40xbf16> loc("relu.grad")
  %tanh = memwall.activation_grad tanh %x, %dy : tensor<3x37x40xbf16> loc("tanh.grad")
  %wide = memwall.broadcast %row [3, 37, 40] : tensor<3x37x1xbf16> -> tensor<3x37x40xbf16> loc("broadcast")
  %scaled = memwall.mul %wide, %dy : tensor<3x37x40xbf16>, tensor<3x37x40xbf16> -> tensor<3x37x40xbf16> loc("scaled")
  return %erf, %tanh_gelu, %silu, %relu, %tanh, %scaled : tensor<3x37x40xbf16>, tensor<3x37x40xbf16>, tensor<3x37x40xbf16>, tensor<3x37x40xbf16>, tensor<3x37x40xbf16>, tensor<3x37x40xbf16>
}
