// REQUIRES: cuda
// linear_cross_entropy and linear_cross_entropy_grad (the fused head,
// lib/Target/TrainingCodegen.h, LinearCrossEntropyPlan): per chunk of
// vocabulary columns a cuBLASLt GEMM writes the chunk's logits from a
// window of the weight's rows (memwall.view at an offset: no copy) and a
// row kernel reads them; the forward's last chunk writes the log-sum-exp
// and the loss; the backward turns each chunk's logits into their gradient
// in place, writes the chunk's rows of dW through a window of it, and
// accumulates dH in f32 (bf16 in, f32 out: out_dtype), narrowed at the end.
// Every reduction, ignore_index (the backward's mean counts the positions
// once), a ragged last chunk (44 and 105 columns) and f32 read an element at
// a time; the steps compute what the reference interpreter computes
// (memwall-simulate), and the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// 300 columns in chunks of 128: rows 0, 128 and 256 of the weight, 64 wide.
// CHECK-DAG: buffer kernel0_linear_cross_entropy_weight_rows0 bf16 [128, 64] 16384 intermediate
// CHECK-DAG: buffer kernel0_linear_cross_entropy_weight_rows2 bf16 [44, 64] 5632 intermediate
// CHECK: gemm kernel0_linear_cross_entropy_gemm_logits0 a=h b=kernel0_linear_cross_entropy_weight_rows0 c=None bias=None d=kernel0_linear_cross_entropy_logits0 m=111 n=128 k=64 batch=1 trans_a=False trans_b=True dtype=bf16 epilogue=none
// CHECK-NEXT: kernel kernel0_linear_cross_entropy_rows0 grid=[111, 1, 1] block=[16, 1, 1] args=kernel0_linear_cross_entropy_logits0,labels,kernel0_linear_cross_entropy_state ops=mean
// CHECK: gemm kernel0_linear_cross_entropy_gemm_logits2 {{.*}} m=111 n=44 k=64
// CHECK-NEXT: kernel kernel0_linear_cross_entropy_rows2 grid=[111, 1, 1] block=[16, 1, 1] args=kernel0_linear_cross_entropy_logits2,labels,kernel0_linear_cross_entropy_state,mean#1,mean#0,kernel0_linear_cross_entropy_partials,kernel0_linear_cross_entropy_counters ops=mean
// 1001 f32 columns: 7 chunks of 128 and one of 105, an element a vector.
// CHECK: kernel kernel2_linear_cross_entropy_rows7 grid=[40, 1, 1] block=[128, 1, 1] args=kernel2_linear_cross_entropy_logits7,wide_labels,kernel2_linear_cross_entropy_state,summed#1,summed#0,{{.*}} ops=summed
// The backward: the count first, then per chunk the logits again, their
// gradient in place, dW's rows and dH in f32.
// CHECK: kernel kernel3_linear_cross_entropy_grad_count_labels grid=[1, 1, 1] block=[256, 1, 1] args=labels,kernel3_linear_cross_entropy_grad_count ops=dmean
// CHECK: kernel kernel3_linear_cross_entropy_grad_rows0 grid=[111, 1, 1] block=[16, 1, 1] args=kernel3_linear_cross_entropy_grad_logits0,labels,mean#1,dloss,kernel3_linear_cross_entropy_grad_count ops=dmean
// CHECK-NEXT: gemm kernel3_linear_cross_entropy_grad_gemm_weight_grad0 a=kernel3_linear_cross_entropy_grad_logits0 b=h c=None bias=None d=kernel3_linear_cross_entropy_grad_weight_grad_rows0 m=128 n=64 k=111 batch=1 trans_a=True trans_b=False dtype=bf16
// CHECK-NEXT: gemm kernel3_linear_cross_entropy_grad_gemm_hidden_grad0 a=kernel3_linear_cross_entropy_grad_logits0 b=kernel3_linear_cross_entropy_grad_weight_rows0 c=None bias=None d=kernel3_linear_cross_entropy_grad_hidden_grad_f32 m=111 n=64 k=128 batch=1 trans_a=False trans_b=False dtype=bf16 epilogue=none strides=[0, 0, 0, 0] out_dtype=f32
// CHECK: gemm kernel3_linear_cross_entropy_grad_gemm_hidden_grad1 {{.*}} c=kernel3_linear_cross_entropy_grad_hidden_grad_f32 bias=None d=kernel3_linear_cross_entropy_grad_hidden_grad_f32 {{.*}} out_dtype=f32
// CHECK: kernel kernel3_linear_cross_entropy_grad_narrow grid=[7, 1, 1] block=[256, 1, 1] args=kernel3_linear_cross_entropy_grad_hidden_grad_f32,dmean#0 ops=dmean
// Sum and none read no count.
// CHECK: kernel kernel4_linear_cross_entropy_grad_rows0 {{.*}} args=kernel4_linear_cross_entropy_grad_logits0,labels,mean#1,dlosses ops=dnone
// CHECK: kernel kernel5_linear_cross_entropy_grad_rows7 {{.*}} args=kernel5_linear_cross_entropy_grad_logits7,wide_labels,summed#1,dloss ops=dsummed
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%h: tensor<3x37x64xbf16> loc("h"),
                %w: tensor<300x64xbf16> loc("w"),
                %labels: tensor<3x37xi64> loc("labels"),
                %wide_h: tensor<40x24xf32> loc("wide_h"),
                %wide_w: tensor<1001x24xf32> loc("wide_w"),
                %wide_labels: tensor<40xi32> loc("wide_labels"),
                %dloss: tensor<f32> loc("dloss"),
                %dlosses: tensor<3x37xf32> loc("dlosses"))
    -> (tensor<f32>, tensor<3x37xf32>, tensor<f32>,
        tensor<3x37x64xbf16>, tensor<300x64xbf16>,
        tensor<3x37x64xbf16>, tensor<300x64xbf16>,
        tensor<40x24xf32>, tensor<1001x24xf32>) {
  %mean, %lse = memwall.linear_cross_entropy %h, %w, %labels ignore_index 5 transpose_weight : tensor<3x37x64xbf16>, tensor<300x64xbf16>, tensor<3x37xi64> -> tensor<f32>, tensor<3x37xf32> loc("mean")
  %none, %lse2 = memwall.linear_cross_entropy %h, %w, %labels none ignore_index 7 transpose_weight : tensor<3x37x64xbf16>, tensor<300x64xbf16>, tensor<3x37xi64> -> tensor<3x37xf32>, tensor<3x37xf32> loc("none")
  %summed, %wide_lse = memwall.linear_cross_entropy %wide_h, %wide_w, %wide_labels sum transpose_weight : tensor<40x24xf32>, tensor<1001x24xf32>, tensor<40xi32> -> tensor<f32>, tensor<40xf32> loc("summed")
  %dh, %dw = memwall.linear_cross_entropy_grad %h, %w, %labels, %lse, %dloss ignore_index 5 transpose_weight : tensor<3x37x64xbf16>, tensor<300x64xbf16>, tensor<3x37xi64>, tensor<3x37xf32>, tensor<f32> loc("dmean")
  %dh2, %dw2 = memwall.linear_cross_entropy_grad %h, %w, %labels, %lse, %dlosses none transpose_weight : tensor<3x37x64xbf16>, tensor<300x64xbf16>, tensor<3x37xi64>, tensor<3x37xf32>, tensor<3x37xf32> loc("dnone")
  %dh3, %dw3 = memwall.linear_cross_entropy_grad %wide_h, %wide_w, %wide_labels, %wide_lse, %dloss sum transpose_weight : tensor<40x24xf32>, tensor<1001x24xf32>, tensor<40xi32>, tensor<40xf32>, tensor<f32> loc("dsummed")
  return %mean, %none, %summed, %dh, %dw, %dh2, %dw2, %dh3, %dw3
      : tensor<f32>, tensor<3x37xf32>, tensor<f32>,
        tensor<3x37x64xbf16>, tensor<300x64xbf16>,
        tensor<3x37x64xbf16>, tensor<300x64xbf16>,
        tensor<40x24xf32>, tensor<1001x24xf32>
}
