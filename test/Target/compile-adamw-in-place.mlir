// REQUIRES: cuda
// adamw overwrites its param and state where they lie, so it runs after the
// last other reader of them: here a product that reads the weight after the
// update is computed in program order (as memwall-fuse and remat may order a
// backward) still reads the old weight. The simulated outputs match the
// reference, which evaluates the IR as written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// CHECK: kernel kernel0_elementwise {{.*}} ops=late
// CHECK-NEXT: kernel kernel1_adamw {{.*}} args=w,g,m,v ops=update
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%w: tensor<256xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("w"),
                %g: tensor<256xf32> loc("g"),
                %m: tensor<256xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("m"),
                %v: tensor<256xf32> {memwall.kind = #memwall.arg_kind<optimizer_state>} loc("v"))
    -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) {
  %w2, %m2, %v2 = memwall.adamw %w, %g, %m, %v lr 1.0e-01
      : (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>)
      -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) loc("update")
  %late = memwall.mul %w, %g : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> loc("late")
  return %late, %w2, %m2, %v2 : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
}

