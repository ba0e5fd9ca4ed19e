// On an sm_90a target the generated GEMM runs the wgmma + TMA kernel (the
// default; memwall.gemm_wgmma says so explicitly): lhs and rhs are tensor-map parameters, and each launch
// operand is nvgpu.tma.create.descriptor over memref.cast (unranked) of the
// buffer viewed as the row-major matrix the map addresses, with the box from
// the parameter's type. Other parameters stay buffers.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels),memwall-convert-to-gpu)' | FileCheck %s
// RUN: sed 's/, memwall.gemm_wgmma//' %s | memwall-opt --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels),memwall-convert-to-gpu)' | FileCheck %s
// memwall.gemm_warp_specialized: blocks of 128 x 3 threads (a TMA producer
// warpgroup, two consumers), registers moved by setmaxnreg, the consumers'
// epilogue on named barrier 1; 4 stages of 128x128 (8 k-steps) in 128 KiB.
// RUN: sed 's/, memwall.gemm_wgmma/, memwall.gemm_wgmma, memwall.gemm_warp_specialized/' %s | memwall-opt --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels),memwall-convert-to-gpu)' | FileCheck %s --check-prefix=WS
// WS: memwall.launch @kernels::@kernel0_gemm({{.*}}) grid [3, 3, 1] block [128, 3, 1] shared 132096
// WS: gpu.func @kernel0_gemm({{.*}}known_block_size = array<i32: 128, 3, 1>, nvvm.maxnreg = 168 : i32}
// WS: nvvm.setmaxregister decrease 40
// WS: nvgpu.tma.async.load
// WS: nvvm.setmaxregister increase 232
// WS: nvgpu.warpgroup.mma
// WS: nvgpu.mbarrier.arrive
// WS: nvgpu.warpgroup.mma.store
// WS: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// With memwall.gemm_wgmma = false the mma.sync kernel takes flat buffers.
// RUN: sed 's/, memwall.gemm_wgmma/, memwall.gemm_wgmma = false/' %s | memwall-opt --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels),memwall-convert-to-gpu)' | FileCheck %s --check-prefix=MMASYNC

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[^:]*]]: memref<2x150x512xbf16> {{.*}}, %[[W:[^:]*]]: memref<384x512xbf16> {{.*}}, %[[B:[^:]*]]: memref<384xbf16> {{.*}}, %[[V:[^:]*]]: memref<512x256xbf16>
// CHECK: %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [300, 512], strides: [512, 1] : memref<2x150x512xbf16> to memref<300x512xbf16>
// CHECK: %[[XU:.*]] = memref.cast %[[XV]] : memref<300x512xbf16> to memref<*xbf16>
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[XMAP:.*]] = nvgpu.tma.create.descriptor %[[XU]] box[%[[C128]], %[[C64]]] : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK: %[[WV:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [384, 512], strides: [512, 1]
// CHECK: %[[WU:.*]] = memref.cast %[[WV]] : memref<384x512xbf16> to memref<*xbf16>
// CHECK: %[[WMAP:.*]] = nvgpu.tma.create.descriptor %[[WU]] box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>
// CHECK: %[[FC:.*]] = memref.alloc() {memwall.buffer = "fc"}
// CHECK: memwall.launch @kernels::@kernel0_gemm(%[[XMAP]], %[[WMAP]], %[[B]], %[[FC]]) grid [6, 3, 1] block [128, 1, 1] shared 74752
// CHECK-SAME: : !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, {{.*}}>, !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, {{.*}}>, memref<384xbf16>, memref<2x150x384xbf16>
// A [K, N] rhs: its map's box is 64 (K) x 64 (N).
// CHECK: %[[VV:.*]] = memref.reinterpret_cast %[[V]] to offset: [0], sizes: [512, 256], strides: [256, 1]
// CHECK: memwall.launch @kernels::@kernel2_gemm(
// CHECK: gpu.func @kernel0_gemm(%{{.*}}: !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, {{.*}}>, %{{.*}}: !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, {{.*}}>, %{{.*}}: memref<384xbf16> {llvm.noalias}, %{{.*}}: memref<115200xbf16> {llvm.noalias}) kernel
// CHECK: nvgpu.tma.async.load
// CHECK: nvgpu.warpgroup.mma

// MMASYNC-NOT: nvgpu.tma.create.descriptor
// MMASYNC: memwall.launch @kernels::@kernel0_gemm(%arg0, %arg1, %arg2, %{{.*}}) grid
// MMASYNC: gpu.func @kernel0_gemm(%{{.*}}: memref<153600xbf16> {llvm.noalias}, %{{.*}}: memref<196608xbf16>
module attributes {memwall.gemm = "memwall", memwall.gemm_wgmma} {
func.func @main(%x: tensor<2x150x512xbf16> {memwall.kind = #memwall.arg_kind<input>} loc("x"), %w: tensor<384x512xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("w"), %b: tensor<384xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("b"), %v: tensor<512x256xbf16> {memwall.kind = #memwall.arg_kind<weight>} loc("v")) -> (tensor<2x150x384xbf16>, tensor<2x150x256xbf16>) {
  %0 = memwall.matmul %x, %w bias %b {transpose_rhs} : tensor<2x150x512xbf16>, tensor<384x512xbf16>, tensor<384xbf16> -> tensor<2x150x384xbf16> loc("fc")
  %1 = memwall.gelu %0 : tensor<2x150x384xbf16> loc("act")
  %2 = memwall.matmul %x, %v : tensor<2x150x512xbf16>, tensor<512x256xbf16> -> tensor<2x150x256xbf16> loc("proj")
  return %1, %2 : tensor<2x150x384xbf16>, tensor<2x150x256xbf16>
}
}
