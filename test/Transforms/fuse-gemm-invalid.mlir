// RUN: memwall-opt %s --split-input-file -verify-diagnostics
// RUN: not memwall-opt %s --split-input-file --gemm=fastest 2>&1 | FileCheck %s --check-prefix=FLAG
// RUN: echo 'module {}' | not memwall-opt --pass-pipeline='builtin.module(memwall-set-target{gemm=fastest})' 2>&1 | FileCheck %s --check-prefix=PASS

// FLAG: --gemm='fastest' must be auto, cublaslt or memwall
// PASS: gemm 'fastest' must be auto, cublaslt or memwall

// expected-error @below {{'memwall.gemm' must be "auto", "cublaslt" or "memwall"}}
module attributes {memwall.gemm = "fastest"} {
}

// -----

// expected-error @below {{'memwall.gemm' must be "auto", "cublaslt" or "memwall"}}
module attributes {memwall.gemm = 2 : i32} {
}

// -----

// expected-error @below {{'memwall.gemm_warp_specialized' must be a unit or boolean attribute}}
module attributes {memwall.gemm_warp_specialized = 1 : i32} {
}

// -----

// expected-error @below {{'memwall.gemm_fp8_fast_accumulation' must be a unit or boolean attribute}}
module attributes {memwall.gemm_fp8_fast_accumulation = "yes"} {
}
