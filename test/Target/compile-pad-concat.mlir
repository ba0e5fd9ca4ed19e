// REQUIRES: cuda
// pad (slice's gradient) and concat run as data-movement kernels
// (docs/codegen.md, "Data-movement kernels"): one thread per vector of
// output elements, 16-byte vectors where no vector straddles the padding or
// two inputs. Ragged shapes, negative axes, three inputs; every output
// matches the reference interpreter, and the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// f32 4x10 padded by 1 row and 2 + 4 columns to 5x16: the padding's 2
// columns allow pairs only.
// CHECK-DAG: kernel {{.*}}_pad grid=[1, 1, 1] block=[40, 1, 1] args=x,padded ops=padded
// bf16 3x16 padded by 8 + 8 columns: whole 16-byte vectors, in or out.
// CHECK-DAG: kernel {{.*}}_pad grid=[1, 1, 1] block=[32, 1, 1] args=h,wide ops=wide
// f32 4x10 and 4x6 joined along the last axis: pairs.
// CHECK-DAG: kernel {{.*}}_concat grid=[1, 1, 1] block=[32, 1, 1] args=x,y,joined ops=joined
// bf16 rows 2 + 3 + 1 of 24 (axis -2): 16-byte vectors, the input found by
// bisection.
// CHECK-DAG: kernel {{.*}}_concat grid=[1, 1, 1] block=[32, 1, 1] args=a,c,d,stacked ops=stacked
// SIM-NOT: FAIL
// SIM: PASS
// SIM-NOT: FAIL
func.func @main(%x: tensor<4x10xf32> loc("x"), %y: tensor<4x6xf32> loc("y"),
                %h: tensor<3x16xbf16> loc("h"), %a: tensor<2x24xbf16> loc("a"),
                %c: tensor<3x24xbf16> loc("c"), %d: tensor<1x24xbf16> loc("d"))
    -> (tensor<5x16xf32>, tensor<3x32xbf16>, tensor<4x16xf32>, tensor<6x24xbf16>) {
  %padded = memwall.pad %x low [1, 2] high [0, 4] : tensor<4x10xf32> -> tensor<5x16xf32> loc("padded")
  %wide = memwall.pad %h low [0, 8] high [0, 8] : tensor<3x16xbf16> -> tensor<3x32xbf16> loc("wide")
  %joined = memwall.concat %x, %y axis 1 : tensor<4x10xf32>, tensor<4x6xf32> -> tensor<4x16xf32> loc("joined")
  %stacked = memwall.concat %a, %c, %d axis -2 : tensor<2x24xbf16>, tensor<3x24xbf16>, tensor<1x24xbf16> -> tensor<6x24xbf16> loc("stacked")
  return %padded, %wide, %joined, %stacked : tensor<5x16xf32>, tensor<3x32xbf16>, tensor<4x16xf32>, tensor<6x24xbf16>
}
