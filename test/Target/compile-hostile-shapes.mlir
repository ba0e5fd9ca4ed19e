// What memwall-compile refuses before it emits a kernel (no CUDA needed):
// one error naming the op or function, a nonzero exit, no bundle.
// RUN: rm -rf %t && mkdir -p %t

// Empty tensors run no generated kernel (the kernel geometry divided by the
// row length).
// RUN: not memwall-compile %S/Inputs/empty-rows.mlir -o %t/b 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: empty-rows.mlir:2:8: error: codegen cannot run 'memwall.relu': empty tensors run no generated kernel
// EMPTY-NOT: error
// RUN: not memwall-compile %S/Inputs/empty-transpose.mlir -o %t/b 2>&1 | FileCheck %s --check-prefix=EMPTY-LAYOUT
// EMPTY-LAYOUT: empty-transpose.mlir:2:8: error: codegen cannot run 'memwall.transpose': empty tensors run no generated kernel
// EMPTY-LAYOUT-NOT: error

// 2^45 elements are countable, but 2^33 blocks are more than CUDA launches.
// RUN: not memwall-compile %S/Inputs/huge-grid.mlir -o %t/b 2>&1 | FileCheck %s --check-prefix=GRID
// GRID: huge-grid.mlir:2:8: error: codegen cannot run 'memwall.relu': its grid (8589934592, 1, 1) exceeds CUDA's limits (2^31 - 1, 65535, 65535)
// GRID-NOT: error

// Buffers of 2^61 bytes: each fits, the arena of four does not (it wrapped
// to arena_bytes 0).
// RUN: not memwall-compile %S/Inputs/arena-past-int64.mlir -o %t/b 2>&1 | FileCheck %s --check-prefix=ARENA
// ARENA: arena-past-int64.mlir:4:8: error: the buffer bytes of @views up to this op are more than memwall can count (int64)
// ARENA-NOT: error

// Attention over no key (a softmax of nothing) or no query row.
// RUN: not memwall-compile %S/Inputs/no-keys.mlir -o %t/b 2>&1 | FileCheck %s --check-prefix=NOKEYS
// NOKEYS: no-keys.mlir:2:8: error: codegen cannot run this attention: the attention kernel needs at least one query row, key and key/value head
// NOKEYS-NOT: error

// The combine kernel is unrolled over the splits.
// RUN: not memwall-compile %S/Inputs/many-splits.mlir -o %t/b 2>&1 | FileCheck %s --check-prefix=SPLITS
// SPLITS: many-splits.mlir:2:10: error: codegen cannot run this attention: the attention kernel combines at most 1024 splits, got 2048
// SPLITS-NOT: error

// The bundle's reference graph is JSON, which has no inf.
// RUN: not memwall-compile %S/Inputs/infinite-constant.mlir -o %t/b 2>&1 | FileCheck %s --check-prefix=INF
// INF: infinite-constant.mlir:2:8: error: the reference interpreter runs only finite splat constants
// INF-NOT: error

// RUN: not ls %t/b
