// A depthwise convolution that reads a padded buffer of zeros right after its interior was written is marked
// with that interior (padding.py, glow.zero_border), and its kernel skips the taps that read the zeros
// (depthwise_recipes.Interior). @zero_border: a 13x13 window over a 7x7 map padded by 6 (RepLKNet's last stage):
// tiles of 2 rows x 7 pixels whose loop of filter rows runs from max(0, 5 - r) to min(13, 13 - r) for the tile at
// output row r, and the one tile of pixels, placed at column 0, loads only the 7 input columns 6 .. 12 of the 19:
// 49 multiply-adds per output row and filter row instead of 91. The last tile of one row (row 6) runs its filter
// rows 0 .. 6. @ones_border: a border of ones is read by every tap: all 13 filter rows, 91 multiply-adds.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_kernel{{[0-9]+}}(%arg0: memref<16xf32>
// CHECK-SAME:    %[[W:.*]]: memref<13x13x16xf32>, %[[X:.*]]: memref<1x19x19x16xf32>, %[[Y:.*]]: memref<1x7x7x16xf32>
// CHECK:         scf.for %[[R:.*]] = %c0 to %c6 step %c2 {
// CHECK:           %[[BELOW:.*]] = arith.subi %c5, %[[R]] : index
// CHECK:           %[[LO:.*]] = arith.maxsi %[[BELOW]], %c0 : index
// CHECK:           %[[ABOVE:.*]] = arith.subi %c13, %[[R]] : index
// CHECK:           %[[HI:.*]] = arith.minsi %[[ABOVE]], %c13 : index
// CHECK:           scf.for %[[I:.*]] = %[[LO]] to %[[HI]] step %c1 iter_args(
// CHECK-NOT:         vector.load %[[X]][%c0, %{{.*}}, %c5, %c0]
// CHECK:             vector.load %[[X]][%c0, %{{.*}}, %c6, %c0]
// CHECK-COUNT-98:    vector.fma
// CHECK-NOT:         vector.fma
// CHECK:             scf.yield
// CHECK:         scf.for %{{.*}} = %c0 to %c7 step %c1 iter_args(
// CHECK-COUNT-49:    vector.fma
// CHECK-NOT:         vector.fma
// CHECK:             scf.yield
// CHECK-LABEL: func.func @zero_border(

// CHECK-LABEL: func.func private @__glow_kernel{{[0-9]+}}(%arg0: memref<16xf32>
// CHECK:         scf.for %{{.*}} = %c0 to %c6 step %c2 {
// CHECK-NOT:       arith.maxsi
// CHECK:           scf.for %{{.*}} = %c0 to %c13 step %c1 iter_args(
// CHECK-COUNT-182:   vector.fma
// CHECK-NOT:         vector.fma
// CHECK:             scf.yield
// CHECK-LABEL: func.func @ones_border(

module {
  memref.global "private" constant @w13 : memref<13x13x1x16xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b16 : memref<16xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @zero_border(%arg0: memref<1x7x7x16xf32> {glow.name = "x"}, %arg1: memref<1x7x7x16xf32> {glow.name = "y", glow.output}, %p: memref<1x19x19x16xf32>) {
    %0 = memref.get_global @w13 : memref<13x13x1x16xf32>
    %1 = memref.get_global @b16 : memref<16xf32>
    "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x19x19x16xf32>) -> ()
    "glow_ir.insert_tensor"(%p, %arg0) {roles = ["inout", "in"], start = array<i64: 0, 6, 6, 0>} : (memref<1x19x19x16xf32>, memref<1x7x7x16xf32>) -> ()
    "glow_ir.cpu_conv_nhwc"(%arg1, %p, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 16 : i64, kernels = array<i64: 13, 13>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x7x7x16xf32>, memref<1x19x19x16xf32>, memref<13x13x1x16xf32>, memref<16xf32>) -> ()
    return
  }
  func.func @ones_border(%arg0: memref<1x7x7x16xf32> {glow.name = "x"}, %arg1: memref<1x7x7x16xf32> {glow.name = "y", glow.output}, %p: memref<1x19x19x16xf32>) {
    %0 = memref.get_global @w13 : memref<13x13x1x16xf32>
    %1 = memref.get_global @b16 : memref<16xf32>
    "glow_ir.splat"(%p) {roles = ["out"], value = 1.000000e+00 : f32} : (memref<1x19x19x16xf32>) -> ()
    "glow_ir.insert_tensor"(%p, %arg0) {roles = ["inout", "in"], start = array<i64: 0, 6, 6, 0>} : (memref<1x19x19x16xf32>, memref<1x7x7x16xf32>) -> ()
    "glow_ir.cpu_conv_nhwc"(%arg1, %p, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 16 : i64, kernels = array<i64: 13, 13>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x7x7x16xf32>, memref<1x19x19x16xf32>, memref<13x13x1x16xf32>, memref<16xf32>) -> ()
    return
  }
}
