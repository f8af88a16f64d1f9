// glow-irgen bufferizes a glow.loop into a glow_ir.loop instruction writing a new buffer per result (@out)
// from its operands' buffers (@in), and its body function as every function: (i, inputs..., outputs...).
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-irgen,glow-verify)' | FileCheck %s

// CHECK-LABEL: func.func @scan
// CHECK-SAME: (%[[S0:.*]]: memref<4xf32> {glow.name = "s0"}, %[[X:.*]]: memref<5x4xf32> {glow.name = "x"}, %[[W:.*]]: memref<4xf32> {glow.name = "w"}, %[[S:.*]]: memref<4xf32> {glow.name = "s", glow.output}, %[[Y:.*]]: memref<5x4xf32> {glow.name = "y", glow.output})
// CHECK-NEXT: "glow_ir.loop"(%[[S]], %[[Y]], %[[S0]], %[[X]], %[[W]])
// CHECK-SAME: body = @body
// CHECK-SAME: roles = ["out", "out", "in", "in", "in"]
// CHECK-SAME: trip_count = 5 : i64
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @body
// CHECK-SAME: (%[[I:.*]]: memref<i64>, %[[H:.*]]: memref<4xf32>, %[[XT:.*]]: memref<4xf32>, %[[WB:.*]]: memref<4xf32>, %[[HN:.*]]: memref<4xf32> {glow.output}, %[[YT:.*]]: memref<4xf32> {glow.output})
// CHECK-NEXT: "glow_ir.element_add"(%[[HN]], %[[H]], %[[XT]])
// CHECK-NEXT: "glow_ir.element_mul"(%[[YT]], %[[HN]], %[[WB]])
// CHECK-NEXT: return
func.func @scan(%s0: tensor<4xf32> {glow.name = "s0"}, %x: tensor<5x4xf32> {glow.name = "x"}, %w: tensor<4xf32> {glow.name = "w"}) -> (tensor<4xf32> {glow.name = "s"}, tensor<5x4xf32> {glow.name = "y"}) {
  %0:2 = "glow.loop"(%s0, %x, %w) {body = @body, num_carried = 1 : i64, num_scan_inputs = 1 : i64, condition = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>, trip_count = 5 : i64} : (tensor<4xf32>, tensor<5x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<5x4xf32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<5x4xf32>
}
func.func private @body(%i: tensor<i64>, %h: tensor<4xf32>, %xt: tensor<4xf32>, %wb: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "glow.add"(%h, %xt) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "glow.mul"(%0, %wb) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
