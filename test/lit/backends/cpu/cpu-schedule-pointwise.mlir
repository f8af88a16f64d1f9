// glow-cpu-schedule on a CPU 1x1 convolution with constant weights (pointwise_recipes.py): the layer's 16
// pixels are one row of a [16, 8] x [8, 104] product (identity layouts), in register tiles of 6 pixels x 4
// vectors (two, then one of the 4 pixels left), each starting from the bias, accumulating over the 8 input
// channels with FMAs and applying the ReLU before its one store. The 40 channels beyond the 64 of the full
// block are a block of 3 vectors of their own, its last vector's 8 lanes stored under a mask. The filter is
// packed into one [8, 64] and one [8, 48] slice (896 floats).
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK: memref.global "private" constant @__glow_packed_pointwise_8x104 : memref<896xf32>

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[B:.*]]: memref<104xf32>, %[[W:.*]]: memref<896xf32>, %[[X:.*]]: memref<16x8xf32>, %[[Y:.*]]: memref<16x104xf32>)
// CHECK:         scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:           vector.load %[[B]][%c0]
// CHECK:           %{{.*}}:24 = scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(
// CHECK:             vector.load %[[W]]
// CHECK:             memref.load %[[X]]
// CHECK:             vector.broadcast
// CHECK:             vector.fma
// CHECK:           arith.cmpf uge
// CHECK:           vector.store %{{.*}}, %[[Y]]
// CHECK:         %{{.*}}:16 = scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(
// CHECK:         memref.load %[[X]][%c15,
// CHECK-NOT:     linalg.
// CHECK:         return

// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK:         vector.load %{{.*}}[%c64]
// CHECK:         %{{.*}}:18 = scf.for
// CHECK:         vector.maskedstore %{{.*}}[%{{.*}}, %c96]
// CHECK-NOT:     linalg.

// CHECK-LABEL: func.func @conv(
// CHECK:         memref.collapse_shape %arg0 {{\[\[}}0, 1, 2], [3]] : memref<1x4x4x8xf32> into memref<16x8xf32>
// CHECK:         memref.collapse_shape %arg1 {{\[\[}}0, 1, 2], [3]] : memref<1x4x4x104xf32> into memref<16x104xf32>
// CHECK:         call @__glow_kernel0(
// CHECK:         call @__glow_kernel1(
// CHECK-NOT:     linalg.
// CHECK:         return

module {
  memref.global "private" constant @w : memref<1x1x8x104xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<104xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @conv(%arg0: memref<1x4x4x8xf32> {glow.name = "x"}, %arg1: memref<1x4x4x104xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<1x1x8x104xf32>
    %1 = memref.get_global @b : memref<104xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x4x104xf32>, memref<1x4x4x8xf32>, memref<1x1x8x104xf32>, memref<104xf32>) -> ()
    return
  }
}
