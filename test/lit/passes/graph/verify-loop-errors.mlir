// glow-verify checks a glow.loop against its attributes and its body function's signature
// (glow_mlir/opdefs/control.py). Each case is a chunk of its own.
// RUN: glow-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(glow-verify)'

// A good loop: one carried value, one scan input sliced along axis 1, one invariant, one scan output.
func.func @good(%h: tensor<4xf32> {glow.name = "h"}, %x: tensor<4x5xf32> {glow.name = "x"}, %w: tensor<4xf32> {glow.name = "w"}) -> (tensor<4xf32> {glow.name = "s"}, tensor<4x5xf32> {glow.name = "y"}) {
  %0:2 = "glow.loop"(%h, %x, %w) {body = @body, num_carried = 1 : i64, num_scan_inputs = 1 : i64, condition = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scan_input_axes = array<i64: 1>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 1>, scan_output_directions = array<i64: 1>, trip_count = 5 : i64} : (tensor<4xf32>, tensor<4x5xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4x5xf32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<4x5xf32>
}
func.func private @body(%i: tensor<i64>, %h: tensor<4xf32>, %xt: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "glow.add"(%h, %xt) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "glow.mul"(%0, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The scan input has 4 slices along axis 0, the trip count is 5.
func.func @short_scan(%h: tensor<4xf32> {glow.name = "h"}, %x: tensor<4x5xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "s"}) {
  // expected-error @+1 {{'glow.loop' scan input 0 [4, 5] must have 5 slices along axis 0}}
  %0 = "glow.loop"(%h, %x) {body = @body, num_carried = 1 : i64, num_scan_inputs = 1 : i64, condition = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64>, scan_output_directions = array<i64>, trip_count = 5 : i64} : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @body(%i: tensor<i64>, %h: tensor<4xf32>, %xt: tensor<5xf32>) -> tensor<4xf32> {
  return %h : tensor<4xf32>
}

// -----

// The body returns a carried value of another shape than it takes.
func.func @bad_carried(%h: tensor<4xf32> {glow.name = "h"}) -> (tensor<4xf32> {glow.name = "s"}) {
  // expected-error @+1 {{'glow.loop' carried value 0: initial f32 [4], body f32 [4] -> f32 [2], result f32 [4] must agree}}
  %0 = "glow.loop"(%h) {body = @body, num_carried = 1 : i64, num_scan_inputs = 0 : i64, condition = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scan_input_axes = array<i64>, scan_input_directions = array<i64>, scan_output_axes = array<i64>, scan_output_directions = array<i64>, trip_count = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @body(%i: tensor<i64>, %h: tensor<4xf32>) -> tensor<2xf32> {
  %0 = "glow.slice"(%h) {start = array<i64: 0>} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A while loop (condition = 1): the body's first result must be the i1 condition.
func.func @bad_condition(%h: tensor<4xf32> {glow.name = "h"}) -> (tensor<4xf32> {glow.name = "s"}) {
  // expected-error @+1 {{'glow.loop' the body's condition must be i1 [], got f32 [4]}}
  %0 = "glow.loop"(%h) {body = @body, num_carried = 1 : i64, num_scan_inputs = 0 : i64, condition = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scan_input_axes = array<i64>, scan_input_directions = array<i64>, scan_output_axes = array<i64>, scan_output_directions = array<i64>, trip_count = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @body(%i: tensor<i64>, %h: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %h, %h : tensor<4xf32>, tensor<4xf32>
}
