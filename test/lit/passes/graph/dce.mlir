// glow-dce erases glow ops whose results are unused, dead chains included, and keeps everything else.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-dce)' | FileCheck %s

// CHECK-LABEL: func.func @chain
// CHECK-NOT: glow.splat
// CHECK-NOT: glow.add
// CHECK-NOT: glow.relu
// CHECK-NOT: glow.exp
// CHECK: %[[C:.*]] = "glow.constant"()
// CHECK-NEXT: %[[M:.*]] = "glow.mul"(%{{.*}}, %[[C]])
// CHECK-NEXT: arith.constant
// CHECK-NEXT: return %[[M]]
func.func @chain(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %s = "glow.splat"() {value = 1.0 : f32} : () -> tensor<4xf32>
  %c = "glow.constant"() {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %d0 = "glow.add"(%x, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d1 = "glow.relu"(%d0) : (tensor<4xf32>) -> tensor<4xf32>
  %d2 = "glow.exp"(%d1) : (tensor<4xf32>) -> tensor<4xf32>
  %live = "glow.mul"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // Not a glow op: its effects are not glow-dce's to judge.
  %keep = arith.constant 1.0 : f32
  return %live : tensor<4xf32>
}

// CHECK-LABEL: func.func @all_live
// CHECK: "glow.sigmoid"
// CHECK: "glow.softmax"
// CHECK: return
func.func @all_live(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<2x3xf32> {glow.name = "y"}) {
  %0 = "glow.sigmoid"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "glow.softmax"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
