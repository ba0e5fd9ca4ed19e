// REQUIRES: cuda
// The kernels a training step adds beside the forward's
// (lib/Target/TrainingCodegen.cpp): splat constants (fill), reductions over
// leading axes (column reduction; with the rows split over blocks whose fp32
// partials the last block sums in order), layer_norm_grad and rms_norm_grad
// (rows in registers; the weight and bias gradients summed per column over a
// block's rows, then over blocks), adamw updating param, moments and
// master weights in place, and embedding_grad (each table row summed from
// its positions in position order, zero rows written too). Ragged sizes; every kernel computes what the
// reference interpreter computes (memwall-simulate), and the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-compile %s --target=a100-40gb --emit=ptx -o %t/a100.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t/a100.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// The two constants: one vector store of 8 bf16 a thread, one f32 scalar.
// CHECK-DAG: kernel kernel0_fill grid=[3, 1, 1] block=[256, 1, 1] args=seed
// CHECK-DAG: kernel kernel1_fill grid=[1, 1, 1] block=[256, 1, 1] args=ones
// [3, 37, 40] over [0, 1]: 111 rows of 5 vectors, one split.
// CHECK-DAG: kernel kernel2_column_reduction grid=[1, 1, 1] block=[256, 1, 1] args=x,bias_grad ops=bias_grad
// [600, 24] f32 over [0]: 4 splits of 150 rows, partials and counters.
// CHECK-DAG: kernel kernel3_column_reduction grid=[1, 4, 1] block=[256, 1, 1] args=tall,tall_sum,kernel3_column_reduction_partials,kernel3_column_reduction_counters
// Max over every axis: one column.
// CHECK-DAG: kernel kernel4_column_reduction grid=[1, 4, 1] block=[256, 1, 1] args=x,peak,
// CHECK-DAG: kernel kernel5_column_reduction grid=[6, 1, 1] block=[256, 1, 1] args=x,mean_grad ops=mean_grad
// 148 rows of 40: one row a block, 8 threads of 8 bf16 (5 valid).
// CHECK-DAG: kernel kernel6_layer_norm_grad grid=[148, 1, 1] block=[8, 1, 1] args=ln_x,ln_w,ln_dy,{{.*}}kernel6_layer_norm_grad_partials,kernel6_layer_norm_grad_counters
// 300 rows of 72 f32: two rows a block.
// CHECK-DAG: kernel kernel7_rms_norm_grad grid=[150, 1, 1] block=[32, 1, 1]
// 3 rows of 4104 f32: three vectors a thread, the last partly past the row.
// CHECK-DAG: kernel kernel8_rms_norm_grad grid=[3, 1, 1] block=[512, 1, 1]
// adamw reads and writes the weight's and the state's own buffers; the two
// updates, each shorter than its launch, share one (1 block of 8-wide
// vectors for 37x40 bf16, 4 of single floats for 1001 f32).
// CHECK-DAG: kernel kernel9_multi_tensor_adamw grid=[5, 1, 1] block=[256, 1, 1] args=p,g,m,v,w,fp,fg,fm,fv ops=adamw,adamw_plain
// Ids 0..36 twice over a 50-row table: 8 rows a block, the last block 2.
// CHECK-DAG: kernel kernel10_embedding_grad grid=[7, 1, 1] block=[8, 1, 1] args=tok_grad,tokens,wte_grad ops=wte_grad
// 300 i32 ids into 20 rows of 160 f32: two warps scan each tile of 64.
// CHECK-DAG: kernel kernel11_embedding_grad grid=[3, 1, 1] block=[64, 1, 1] args=pos_grad,positions,wpe_grad ops=wpe_grad
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%x: tensor<3x37x40xbf16> loc("x"),
                %tall: tensor<600x24xf32> loc("tall"),
                %ln_x: tensor<4x37x40xbf16> loc("ln_x"),
                %ln_w: tensor<40xbf16> loc("ln_w"),
                %ln_dy: tensor<4x37x40xbf16> loc("ln_dy"),
                %rms_x: tensor<300x72xf32> loc("rms_x"),
                %rms_w: tensor<72xf32> loc("rms_w"),
                %rms_dy: tensor<300x72xf32> loc("rms_dy"),
                %wide_x: tensor<3x4104xf32> loc("wide_x"),
                %wide_w: tensor<4104xf32> loc("wide_w"),
                %wide_dy: tensor<3x4104xf32> loc("wide_dy"),
                %p: tensor<37x40xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("p"),
                %g: tensor<37x40xbf16> loc("g"),
                %m: tensor<37x40xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("m"),
                %v: tensor<37x40xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("v"),
                %w: tensor<37x40xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("w"),
                %fp: tensor<1001xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("fp"),
                %fg: tensor<1001xf32> loc("fg"),
                %fm: tensor<1001xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("fm"),
                %fv: tensor<1001xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("fv"),
                %tok_grad: tensor<2x37x40xbf16> loc("tok_grad"),
                %tokens: tensor<2x37xi64> loc("tokens"),
                %pos_grad: tensor<300x160xf32> loc("pos_grad"),
                %positions: tensor<300xi32> loc("positions"))
    -> (tensor<3x37x40xbf16>, tensor<f32>, tensor<40xbf16>, tensor<24xf32>,
        tensor<bf16>, tensor<1x37x40xbf16>,
        tensor<4x37x40xbf16>, tensor<40xbf16>, tensor<40xbf16>,
        tensor<300x72xf32>, tensor<72xf32>,
        tensor<3x4104xf32>, tensor<4104xf32>,
        tensor<37x40xbf16>, tensor<37x40xf32>, tensor<37x40xf32>, tensor<37x40xf32>,
        tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>,
        tensor<50x40xbf16>, tensor<20x160xf32>) {
  %seed = arith.constant dense<2.5> : tensor<3x37x40xbf16> loc("seed")
  %ones = arith.constant dense<1.0> : tensor<f32> loc("ones")
  %bias_grad = memwall.reduce sum %x axes [0, 1] : tensor<3x37x40xbf16> -> tensor<40xbf16> loc("bias_grad")
  %tall_sum = memwall.reduce sum %tall axes [0] : tensor<600x24xf32> -> tensor<24xf32> loc("tall_sum")
  %peak = memwall.reduce max %x axes [0, 1, 2] : tensor<3x37x40xbf16> -> tensor<bf16> loc("peak")
  %mean_grad = memwall.reduce mean %x axes [0] keep_dims : tensor<3x37x40xbf16> -> tensor<1x37x40xbf16> loc("mean_grad")
  %ln_dx, %ln_dw, %ln_db = memwall.layer_norm_grad %ln_x, %ln_w, %ln_dy has_bias
      : (tensor<4x37x40xbf16>, tensor<40xbf16>, tensor<4x37x40xbf16>)
      -> (tensor<4x37x40xbf16>, tensor<40xbf16>, tensor<40xbf16>) loc("ln_grad")
  %rms_dx, %rms_dw = memwall.rms_norm_grad %rms_x, %rms_w, %rms_dy : tensor<300x72xf32>, tensor<72xf32> loc("rms_grad")
  %wide_dx, %wide_dw = memwall.rms_norm_grad %wide_x, %wide_w, %wide_dy : tensor<3x4104xf32>, tensor<4104xf32> loc("wide_grad")
  %p2, %m2, %v2, %w2 = memwall.adamw %p, %g, %m, %v master %w lr 1.0e-02 step 3
      : (tensor<37x40xbf16>, tensor<37x40xbf16>, tensor<37x40xf32>,
         tensor<37x40xf32>, tensor<37x40xf32>)
      -> (tensor<37x40xbf16>, tensor<37x40xf32>, tensor<37x40xf32>, tensor<37x40xf32>) loc("adamw")
  %fp2, %fm2, %fv2 = memwall.adamw %fp, %fg, %fm, %fv lr 1.0e-03 weight_decay 1.0e-01
      : (tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>)
      -> (tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>) loc("adamw_plain")
  %wte_grad = memwall.embedding_grad %tok_grad[%tokens] : tensor<2x37x40xbf16>, tensor<2x37xi64> -> tensor<50x40xbf16> loc("wte_grad")
  %wpe_grad = memwall.embedding_grad %pos_grad[%positions] : tensor<300x160xf32>, tensor<300xi32> -> tensor<20x160xf32> loc("wpe_grad")
  return %seed, %ones, %bias_grad, %tall_sum, %peak, %mean_grad,
         %ln_dx, %ln_dw, %ln_db, %rms_dx, %rms_dw, %wide_dx, %wide_dw,
         %p2, %m2, %v2, %w2, %fp2, %fm2, %fv2, %wte_grad, %wpe_grad
      : tensor<3x37x40xbf16>, tensor<f32>, tensor<40xbf16>, tensor<24xf32>,
        tensor<bf16>, tensor<1x37x40xbf16>,
        tensor<4x37x40xbf16>, tensor<40xbf16>, tensor<40xbf16>,
        tensor<300x72xf32>, tensor<72xf32>,
        tensor<3x4104xf32>, tensor<4104xf32>,
        tensor<37x40xbf16>, tensor<37x40xf32>, tensor<37x40xf32>, tensor<37x40xf32>,
        tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>,
        tensor<50x40xbf16>, tensor<20x160xf32>
}
