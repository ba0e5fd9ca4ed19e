// REQUIRES: cuda
// cross_entropy and cross_entropy_grad (lib/Target/TrainingCodegen.cpp):
// one block per position streams its row of logits (online max and sum of
// exp per thread, combined over the block); a mean or sum over positions is
// summed in row order by the last block to arrive; the gradient reads the
// row again. Every reduction and ignore_index, bf16 vectors and an odd f32
// vocabulary read an element at a time; every kernel computes what the
// reference interpreter computes (memwall-simulate), and the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-compile %s --target=a100-40gb --emit=ptx -o %t/a100.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// 111 positions of 300 bf16 logits: 75 vectors of 4, 96 threads.
// CHECK-DAG: kernel kernel0_cross_entropy grid=[111, 1, 1] block=[96, 1, 1] args=logits,labels,mean,kernel0_cross_entropy_partials,kernel0_cross_entropy_counters ops=mean
// CHECK-DAG: kernel kernel1_cross_entropy grid=[111, 1, 1] block=[96, 1, 1] args=logits,labels,ignored,kernel1_cross_entropy_partials,kernel1_cross_entropy_counters ops=ignored
// 1001 f32 logits: one element a vector, 256 threads.
// CHECK-DAG: kernel kernel2_cross_entropy grid=[40, 1, 1] block=[256, 1, 1] args=wide,wide_labels,summed,kernel2_cross_entropy_partials,kernel2_cross_entropy_counters ops=summed
// CHECK-DAG: kernel kernel3_cross_entropy grid=[111, 1, 1] block=[96, 1, 1] args=logits,labels,per_position ops=per_position
// CHECK-DAG: kernel kernel4_cross_entropy_grad grid=[111, 1, 1] block=[96, 1, 1] args=logits,labels,dloss,dlogits ops=dlogits
// CHECK-DAG: kernel kernel5_cross_entropy_grad grid=[111, 1, 1] block=[96, 1, 1] args=logits,labels,dlosses,dlogits_none ops=dlogits_none
// CHECK-DAG: kernel kernel6_cross_entropy_grad grid=[40, 1, 1] block=[256, 1, 1] args=wide,wide_labels,dloss,dwide ops=dwide
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%logits: tensor<3x37x300xbf16> loc("logits"),
                %labels: tensor<3x37xi64> loc("labels"),
                %wide: tensor<40x1001xf32> loc("wide"),
                %wide_labels: tensor<40xi32> loc("wide_labels"),
                %dloss: tensor<f32> loc("dloss"),
                %dlosses: tensor<3x37xf32> loc("dlosses"))
    -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<3x37xf32>,
        tensor<3x37x300xbf16>, tensor<3x37x300xbf16>, tensor<40x1001xf32>) {
  %mean = memwall.cross_entropy %logits, %labels : tensor<3x37x300xbf16>, tensor<3x37xi64> -> tensor<f32> loc("mean")
  %ignored = memwall.cross_entropy %logits, %labels ignore_index 5 : tensor<3x37x300xbf16>, tensor<3x37xi64> -> tensor<f32> loc("ignored")
  %summed = memwall.cross_entropy %wide, %wide_labels sum : tensor<40x1001xf32>, tensor<40xi32> -> tensor<f32> loc("summed")
  %per_position = memwall.cross_entropy %logits, %labels none ignore_index 7 : tensor<3x37x300xbf16>, tensor<3x37xi64> -> tensor<3x37xf32> loc("per_position")
  %dlogits = memwall.cross_entropy_grad %logits, %labels, %dloss ignore_index 3 : tensor<3x37x300xbf16>, tensor<3x37xi64>, tensor<f32> loc("dlogits")
  %dlogits_none = memwall.cross_entropy_grad %logits, %labels, %dlosses none : tensor<3x37x300xbf16>, tensor<3x37xi64>, tensor<3x37xf32> loc("dlogits_none")
  %dwide = memwall.cross_entropy_grad %wide, %wide_labels, %dloss sum : tensor<40x1001xf32>, tensor<40xi32>, tensor<f32> loc("dwide")
  return %mean, %ignored, %summed, %per_position, %dlogits, %dlogits_none, %dwide
      : tensor<f32>, tensor<f32>, tensor<f32>, tensor<3x37xf32>,
        tensor<3x37x300xbf16>, tensor<3x37x300xbf16>, tensor<40x1001xf32>
}
