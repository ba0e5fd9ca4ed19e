// REQUIRES: cuda
// Sibling projections of one x whose weights are function arguments (q, k
// and v; gate and up) run as one strided-batched cuBLASLt call, as vLLM's
// and TensorRT-LLM's merged weights do, without a copy: memwall.stack_view
// places the weights a pitch apart in the arena (24 x 40 bf16 = 1920 bytes,
// a pitch of 1024 elements) and the products likewise; the lhs is shared
// (stride 0). Ragged shapes; memwall-simulate checks every product against
// the reference.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s --gemm=cublaslt -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// CHECK-DAG: buffer wq bf16 [24, 40] 1920 weight in=gemm0_weights+0
// CHECK-DAG: buffer wk bf16 [24, 40] 1920 weight in=gemm0_weights+2048
// CHECK-DAG: buffer wv bf16 [24, 40] 1920 weight in=gemm0_weights+4096
// CHECK-DAG: buffer gemm0_weights bf16 [3, 24, 40] 6144 intermediate strides=[1024, 40, 1]
// CHECK-DAG: buffer gemm0_products bf16 [3, 2, 9, 24] 3072 intermediate strides=[512, 216, 24, 1]
// CHECK-DAG: buffer wg f32 [40, 56] 8960 weight in=gemm1_weights+0
// CHECK-DAG: buffer wu f32 [40, 56] 8960 weight in=gemm1_weights+8960
// CHECK: gemm gemm0 a=x b=gemm0_weights c=None bias=None d=gemm0_products m=18 n=24 k=40 batch=3 trans_a=False trans_b=True dtype=bf16 epilogue=none strides=[0, 1024, 0, 512]
// CHECK: gemm gemm1 a=h b=gemm1_weights c=None bias=None d=gemm1_products m=12 n=56 k=40 batch=2 trans_a=False trans_b=False dtype=f32 epilogue=none strides=[0, 2240, 0, 704]
// CHECK-NEXT: kernel kernel2_elementwise {{.*}} ops=swiglu

// SIM-NOT: FAIL
// SIM: result0 {{.*}} PASS
// SIM: result1 {{.*}} PASS
// SIM: result2 {{.*}} PASS
// SIM: result3 {{.*}} PASS
func.func @main(%x: tensor<2x9x40xbf16> loc("x"),
                %wq: tensor<24x40xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("wq"),
                %wk: tensor<24x40xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("wk"),
                %wv: tensor<24x40xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("wv"),
                %h: tensor<12x40xf32> loc("h"),
                %wg: tensor<40x56xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("wg"),
                %wu: tensor<40x56xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("wu"))
    -> (tensor<2x9x24xbf16>, tensor<2x9x24xbf16>, tensor<2x9x24xbf16>, tensor<12x56xf32>) {
  %q = memwall.matmul %x, %wq {transpose_rhs} : tensor<2x9x40xbf16>, tensor<24x40xbf16> -> tensor<2x9x24xbf16> loc("q")
  %k = memwall.matmul %x, %wk {transpose_rhs} : tensor<2x9x40xbf16>, tensor<24x40xbf16> -> tensor<2x9x24xbf16> loc("k")
  %v = memwall.matmul %x, %wv {transpose_rhs} : tensor<2x9x40xbf16>, tensor<24x40xbf16> -> tensor<2x9x24xbf16> loc("v")
  %g = memwall.matmul %h, %wg : tensor<12x40xf32>, tensor<40x56xf32> -> tensor<12x56xf32> loc("gate")
  %u = memwall.matmul %h, %wu : tensor<12x40xf32>, tensor<40x56xf32> -> tensor<12x56xf32> loc("up")
  %s = memwall.swiglu %g, %u : tensor<12x56xf32> loc("swiglu")
  return %q, %k, %v, %s : tensor<2x9x24xbf16>, tensor<2x9x24xbf16>, tensor<2x9x24xbf16>, tensor<12x56xf32>
}
