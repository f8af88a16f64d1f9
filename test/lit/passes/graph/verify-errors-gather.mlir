// gather: indices are i32 or i64, and the result has data[:axis] + indices + data[axis+1:].
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK-NOT: error
// CHECK: emb: error: 'glow.gather' result shape [3, 8] must equal the shape rule's [2, 4, 8]
// CHECK-NOT: error

func.func @good(%d: tensor<10x8xf32> {glow.name = "d"}, %i: tensor<2x4xi32> {glow.name = "i"}) -> (tensor<2x4x8xf32> {glow.name = "y"}) {
  %0 = "glow.gather"(%d, %i) {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32> loc("good")
  return %0 : tensor<2x4x8xf32>
}

func.func @bad_shape(%d: tensor<10x8xf32> {glow.name = "d"}, %i: tensor<2x4xi64> {glow.name = "i"}) -> (tensor<3x8xf32> {glow.name = "y"}) {
  %0 = "glow.gather"(%d, %i) {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x4xi64>) -> tensor<3x8xf32> loc("emb")
  return %0 : tensor<3x8xf32>
}

func.func @bad_indices(%d: tensor<10x8xf32> {glow.name = "d"}, %i: tensor<2xi8> {glow.name = "i"}) -> (tensor<2x8xf32> {glow.name = "y"}) {
  %0 = "glow.gather"(%d, %i) {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2xi8>) -> tensor<2x8xf32> loc("emb2")
  return %0 : tensor<2x8xf32>
}
