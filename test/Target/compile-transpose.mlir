// REQUIRES: cuda
// Transposes of the last two dims run through a shared-memory tile with
// 16-byte global loads and stores (a tile of 8 x 8 vectors per block of 256
// threads): bf16 [200, 136] (64 x 64 tiles, ragged both ways), a batch of
// three f32 [40, 36] (32 x 32 tiles), fp8 [144, 48] (128 x 128 tiles, as
// fp8-mixed's weight copies are transposed). A transpose whose dims are not
// whole vectors keeps the element-wise kernel. Every kernel computes what
// the reference computes; the PTX assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-compile %s -o %t/b
// RUN: %PYTHON %S/summarize_bundle.py %t/b/manifest.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/b/kernels.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/b/kernels.ptx -o /dev/null %}
// RUN: memwall-simulate %t/b | FileCheck %s --check-prefix=SIM

// 4 x 3 tiles of 64.
// CHECK: kernel kernel0_transpose grid=[12, 1, 1] block=[256, 1, 1] args=a,at
// 3 matrices x 2 x 2 tiles of 32.
// CHECK: kernel kernel1_transpose grid=[12, 1, 1] block=[256, 1, 1] args=b,bt
// 2 x 1 tiles of 128.
// CHECK: kernel kernel2_transpose grid=[2, 1, 1] block=[256, 1, 1] args=c,ct
// 60 elements, one per thread (at least 32 a block).
// CHECK: kernel kernel3_transpose grid=[1, 1, 1] block=[60, 1, 1] args=d,dt

// PTX-LABEL: .entry kernel0_transpose(
// PTX: .shared .align {{[0-9]+}} .b8 {{.*}}[8448]
// PTX: ld.global.nc.v4.b32
// PTX: bar.sync
// PTX: st.global.v4.b32
// PTX-LABEL: .entry kernel3_transpose(
// PTX-NOT: .shared
// PTX-NOT: v4

// SIM-NOT: FAIL
// SIM: result0  bf16 {{.*}} PASS
// SIM: result1  f32 {{.*}} PASS
// SIM: result2  f8e4m3fn {{.*}} PASS
// SIM: result3  bf16 {{.*}} PASS
func.func @main(%a: tensor<200x136xbf16> loc("a"), %b: tensor<3x40x36xf32> loc("b"),
                %c: tensor<144x48xf8E4M3FN> loc("c"), %d: tensor<10x6xbf16> loc("d"))
    -> (tensor<136x200xbf16>, tensor<3x36x40xf32>, tensor<48x144xf8E4M3FN>, tensor<6x10xbf16>) {
  %at = memwall.transpose %a [1, 0] : tensor<200x136xbf16> -> tensor<136x200xbf16> loc("at")
  %bt = memwall.transpose %b [0, 2, 1] : tensor<3x40x36xf32> -> tensor<3x36x40xf32> loc("bt")
  %ct = memwall.transpose %c [1, 0] : tensor<144x48xf8E4M3FN> -> tensor<48x144xf8E4M3FN> loc("ct")
  %dt = memwall.transpose %d [1, 0] : tensor<10x6xbf16> -> tensor<6x10xbf16> loc("dt")
  return %at, %bt, %ct, %dt : tensor<136x200xbf16>, tensor<3x36x40xf32>, tensor<48x144xf8E4M3FN>, tensor<6x10xbf16>
}
