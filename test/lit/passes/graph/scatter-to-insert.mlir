// glow-scatter-to-insert turns a scatter of constant indices that writes one box of its data (PyTorch's
// slice_scatter and select_scatter) into an insert_tensor of the updates; other scatters stay.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-scatter-to-insert,glow-dce,glow-verify)' | FileCheck %s

// ScatterND's tuples enumerate rows 1..2 x columns 2..3 in row-major order: the updates, reshaped to the box
// [2, 2] and the data's last dim, inserted at [1, 2, 0].
// CHECK-LABEL: func.func @nd_box
// CHECK-NOT: glow.scatter_nd
// CHECK: %[[U:.*]] = "glow.reshape"(%arg1) {dims = array<i64: 2, 2, 3>} : (tensor<4x3xf32>) -> tensor<2x2x3xf32>
// CHECK: %[[Y:.*]] = "glow.insert_tensor"(%arg0, %[[U]]) {start = array<i64: 1, 2, 0>} : (tensor<4x5x3xf32>, tensor<2x2x3xf32>) -> tensor<4x5x3xf32>
// CHECK: return %[[Y]]
func.func @nd_box(%x: tensor<4x5x3xf32> {glow.name = "x"}, %u: tensor<4x3xf32> {glow.name = "u"}) -> (tensor<4x5x3xf32> {glow.name = "y"}) {
  %i = "glow.constant"() {value = dense<[[1, 2], [1, 3], [2, 2], [2, 3]]> : tensor<4x2xi64>} : () -> tensor<4x2xi64>
  %y = "glow.scatter_nd"(%x, %i, %u) {reduction = "none"} : (tensor<4x5x3xf32>, tensor<4x2xi64>, tensor<4x3xf32>) -> tensor<4x5x3xf32>
  return %y : tensor<4x5x3xf32>
}

// Negative indices count from the end: rows -3 and -2 of 4 are rows 1 and 2.
// CHECK-LABEL: func.func @nd_negative
// CHECK: "glow.insert_tensor"(%arg0, %arg1) {start = array<i64: 1, 0>} : (tensor<4x5xf32>, tensor<2x5xf32>)
func.func @nd_negative(%x: tensor<4x5xf32> {glow.name = "x"}, %u: tensor<2x5xf32> {glow.name = "u"}) -> (tensor<4x5xf32> {glow.name = "y"}) {
  %i = "glow.constant"() {value = dense<[[-3], [-2]]> : tensor<2x1xi32>} : () -> tensor<2x1xi32>
  %y = "glow.scatter_nd"(%x, %i, %u) {reduction = "none"} : (tensor<4x5xf32>, tensor<2x1xi32>, tensor<2x5xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// ScatterElements whose index is its position along the axis plus 2 everywhere (select_scatter of index 2):
// the updates inserted at 2 along axis 1.
// CHECK-LABEL: func.func @elements_block
// CHECK-NOT: glow.scatter_elements
// CHECK: "glow.insert_tensor"(%arg0, %arg1) {start = array<i64: 0, 2, 0>} : (tensor<3x4x5xf32>, tensor<3x1x5xf32>)
func.func @elements_block(%x: tensor<3x4x5xf32> {glow.name = "x"}, %u: tensor<3x1x5xf32> {glow.name = "u"}) -> (tensor<3x4x5xf32> {glow.name = "y"}) {
  %i = "glow.splat"() {value = 2 : i64} : () -> tensor<3x1x5xi64>
  %y = "glow.scatter_elements"(%x, %i, %u) {axis = 1 : i64, reduction = "none"} : (tensor<3x4x5xf32>, tensor<3x1x5xi64>, tensor<3x1x5xf32>) -> tensor<3x4x5xf32>
  return %y : tensor<3x4x5xf32>
}

// Stay scatters: tuples out of row-major order, a set that is no box, an accumulating reduction, an index
// out of range (the scatter skips it), indices along the axis that are not one offset from the position.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: glow.scatter_nd
// CHECK: glow.scatter_elements
// CHECK-NOT: glow.insert_tensor
func.func @kept(%x: tensor<4x5xf32> {glow.name = "x"}, %u: tensor<2x5xf32> {glow.name = "u"}, %e: tensor<4x2xf32> {glow.name = "e"}) -> (tensor<4x5xf32> {glow.name = "a"}, tensor<4x5xf32> {glow.name = "b"}, tensor<4x5xf32> {glow.name = "c"}, tensor<4x5xf32> {glow.name = "d"}, tensor<4x5xf32> {glow.name = "f"}) {
  %reversed = "glow.constant"() {value = dense<[[2], [1]]> : tensor<2x1xi64>} : () -> tensor<2x1xi64>
  %a = "glow.scatter_nd"(%x, %reversed, %u) {reduction = "none"} : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
  %apart = "glow.constant"() {value = dense<[[0], [2]]> : tensor<2x1xi64>} : () -> tensor<2x1xi64>
  %b = "glow.scatter_nd"(%x, %apart, %u) {reduction = "none"} : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
  %rows = "glow.constant"() {value = dense<[[1], [2]]> : tensor<2x1xi64>} : () -> tensor<2x1xi64>
  %c = "glow.scatter_nd"(%x, %rows, %u) {reduction = "add"} : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
  %outside = "glow.constant"() {value = dense<[[3], [4]]> : tensor<2x1xi64>} : () -> tensor<2x1xi64>
  %d = "glow.scatter_nd"(%x, %outside, %u) {reduction = "none"} : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
  %spread = "glow.constant"() {value = dense<[[0, 2], [0, 2], [0, 2], [0, 2]]> : tensor<4x2xi64>} : () -> tensor<4x2xi64>
  %f = "glow.scatter_elements"(%x, %spread, %e) {axis = 1 : i64, reduction = "none"} : (tensor<4x5xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<4x5xf32>
  return %a, %b, %c, %d, %f : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>
}
