// RUN: not memwall-compile %s -o %t.b 2>&1 | FileCheck %s
// CHECK: error: memwall-compile needs exactly one function, found 2
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
