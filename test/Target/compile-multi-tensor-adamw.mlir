// REQUIRES: cuda
// AdamW updates shorter than their launch run as one multi-tensor kernel
// (docs/codegen.md, "Multi-tensor AdamW"): each update owns a run of the
// grid's blocks, with its own vector width, and a block finds its update by
// bisecting the runs' first blocks. Ragged sizes and mixed precisions; every
// parameter, moment and master weight matches the reference interpreter,
// and the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM
// RUN: memwall-simulate %t/b --seed=7 | FileCheck %s --check-prefix=SIM

// bf16 37x40 with master weights: 1480 elements, 8 a thread, one block;
// f32 1001: one a thread, four blocks; f16 7 with master weights: one block.
// CHECK: kernel kernel0_multi_tensor_adamw grid=[6, 1, 1] block=[256, 1, 1] args=p,g,m,v,w,fp,fg,fm,fv,hp,hg,hm,hv,hw ops=adamw,adamw_plain,adamw_half
// CHECK-NOT: kernel
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%p: tensor<37x40xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("p"),
                %g: tensor<37x40xbf16> loc("g"),
                %m: tensor<37x40xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("m"),
                %v: tensor<37x40xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("v"),
                %w: tensor<37x40xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("w"),
                %fp: tensor<1001xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("fp"),
                %fg: tensor<1001xf32> loc("fg"),
                %fm: tensor<1001xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("fm"),
                %fv: tensor<1001xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("fv"),
                %hp: tensor<7xf16> {memwall.kind = #memwall.arg_kind<weight>} loc("hp"),
                %hg: tensor<7xf16> loc("hg"),
                %hm: tensor<7xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("hm"),
                %hv: tensor<7xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("hv"),
                %hw: tensor<7xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("hw"))
    -> (tensor<37x40xbf16>, tensor<37x40xf32>, tensor<37x40xf32>, tensor<37x40xf32>,
        tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>,
        tensor<7xf16>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>) {
  %p2, %m2, %v2, %w2 = memwall.adamw %p, %g, %m, %v master %w lr 1.0e-02 step 3
      : (tensor<37x40xbf16>, tensor<37x40xbf16>, tensor<37x40xf32>,
         tensor<37x40xf32>, tensor<37x40xf32>)
      -> (tensor<37x40xbf16>, tensor<37x40xf32>, tensor<37x40xf32>, tensor<37x40xf32>) loc("adamw")
  %fp2, %fm2, %fv2 = memwall.adamw %fp, %fg, %fm, %fv lr 1.0e-03 weight_decay 1.0e-01
      : (tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>)
      -> (tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>) loc("adamw_plain")
  %hp2, %hm2, %hv2, %hw2 = memwall.adamw %hp, %hg, %hm, %hv master %hw lr 5.0e-02 beta1 0.8 step 2
      : (tensor<7xf16>, tensor<7xf16>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>)
      -> (tensor<7xf16>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>) loc("adamw_half")
  return %p2, %m2, %v2, %w2, %fp2, %fm2, %fv2, %hp2, %hm2, %hv2, %hw2
      : tensor<37x40xbf16>, tensor<37x40xf32>, tensor<37x40xf32>, tensor<37x40xf32>,
        tensor<1001xf32>, tensor<1001xf32>, tensor<1001xf32>,
        tensor<7xf16>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>
}
