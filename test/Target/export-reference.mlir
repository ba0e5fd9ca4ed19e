// memwall-export-reference keeps the model as written (the bundle's
// reference graph) and the reference names of the returned values.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-export-reference)' -split-input-file -verify-diagnostics | FileCheck %s

// CHECK: module attributes {memwall.output_names = ["act"], memwall.reference = "{\22inputs\22:[\22x\22],\22ops\22:[{\22attrs\22:{\22approximation\22:\22tanh\22},\22loc\22:\22act\22,\22op\22:\22gelu\22,\22operands\22:[\22x\22],\22results\22:[\22act\22]}],\22outputs\22:[\22act\22],\22values\22:[{\22dtype\22:\22f32\22,\22name\22:\22x\22,\22shape\22:[4]},{\22dtype\22:\22f32\22,\22name\22:\22act\22,\22shape\22:[4]}]}"}
func.func @main(%x: tensor<4xf32> loc("x")) -> tensor<4xf32> {
  %0 = memwall.gelu %x tanh : tensor<4xf32> loc("act")
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{memwall-compile needs exactly one function, found 2}}
module {
  func.func @a() { return }
  func.func @b() { return }
}

// -----

func.func @not_memwall(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the reference interpreter runs only memwall ops}}
  %0 = tensor.empty() : tensor<4xf32>
  return %0 : tensor<4xf32>
}
