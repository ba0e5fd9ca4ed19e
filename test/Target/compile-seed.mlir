// REQUIRES: cuda
// The seed workload compiles into two cuBLASLt GEMMs (bias epilogues; the
// erf GELU is not cuBLASLt's, so it gets its own kernel) and a LayerNorm row
// kernel; every PTX it emits assembles.
// RUN: rm -rf %t.bundle
// RUN: memwall-compile %s --target=h100-sxm -o %t.bundle
// RUN: %PYTHON %S/summarize_bundle.py %t.bundle/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t.bundle/kernels.ptx -o /dev/null %}
// An A100 target gets sm_80 PTX, which ptxas accepts for sm_80.
// RUN: memwall-compile %s --target=a100-80gb --emit=ptx -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefix=SM80 --input-file=%t.sm80.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t.sm80.ptx -o /dev/null %}
// SM80: .target sm_80

// The kernels: 128-bit accesses, warp shuffles and a shared-memory combine.
// RUN: memwall-compile %s --emit=gpu | FileCheck %s --check-prefix=GPU
// GPU: gpu.func @kernel1_elementwise(%{{.*}}: memref<524288xf32> {llvm.noalias}, %{{.*}}: memref<524288xf32> {llvm.noalias}) kernel
// GPU: vector.load {{.*}} {alignment = 16 : i64} : memref<524288xf32>, vector<4xf32>
// GPU: math.erf
// GPU: gpu.func @kernel3_reduction({{.*}}) workgroup(%{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>) kernel
// GPU: gpu.shuffle  xor
// GPU: gpu.barrier
// GPU: math.rsqrt

// Unfused, the GEMMs still carry their bias (the op's own operand).
// RUN: memwall-compile %s --no-fuse --emit=fused | FileCheck %s --check-prefix=NOFUSE
// NOFUSE-NOT: memwall.fusion

// CHECK: bundle seed target=h100-sxm arch=sm_90a
// CHECK: buffer x f32 [512, 1024] 2097152 input
// CHECK: buffer w1 f32 [1024, 1024] 4194304 weight
// CHECK: buffer ln f32 [512, 1024] 2097152 output
// CHECK-NEXT: gemm gemm0 a=x b=w1 c=None bias=b1 d=fc1 m=512 n=1024 k=1024 batch=1 trans_a=False trans_b=True dtype=f32 epilogue=bias
// CHECK-NEXT: kernel kernel1_elementwise grid=[512, 1, 1] block=[256, 1, 1] args=fc1,gelu ops=gelu
// CHECK-NEXT: gemm gemm2 a=gelu b=w2 c=None bias=b2 d=fc2 m=512 n=1024 k=1024 batch=1 trans_a=False trans_b=True dtype=f32 epilogue=bias
// CHECK-NEXT: kernel kernel3_reduction grid=[512, 1, 1] block=[256, 1, 1] args=fc2,ln_weight,ln_bias,ln ops=ln
// CHECK: input x buffer=x value=x
// CHECK: output result0 buffer=ln value=ln
// CHECK-NEXT: reference matmul gelu matmul layer_norm

module @seed {
func.func @main(%x: tensor<512x1024xf32> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
                %w1: tensor<1024x1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("w1"),
                %b1: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("b1"),
                %w2: tensor<1024x1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("w2"),
                %b2: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("b2"),
                %g: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_weight"),
                %be: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_bias")) -> tensor<512x1024xf32> {
  %0 = memwall.matmul %x, %w1 bias %b1 {transpose_rhs} : tensor<512x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32> -> tensor<512x1024xf32> loc("fc1")
  %1 = memwall.gelu %0 : tensor<512x1024xf32> loc("gelu")
  %2 = memwall.matmul %1, %w2 bias %b2 {transpose_rhs} : tensor<512x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32> -> tensor<512x1024xf32> loc("fc2")
  %3 = memwall.layer_norm %2, %g, %be : tensor<512x1024xf32>, tensor<1024xf32>, tensor<1024xf32> loc("ln")
  return %3 : tensor<512x1024xf32>
}
}
