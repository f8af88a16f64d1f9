// glow-cpu-schedule on a CPU 3x3 convolution with constant weights: the filter is repacked per channel tile
// (104 channels: three tiles of 32 in a loop, then a block of the 8 left over), and each tile's kernel
// starts from the bias, accumulates with FMAs over the window's taps and channels and applies the ReLU before
// storing (one fused kernel, no separate bias or activation pass). 1x1 layers: cpu-schedule-pointwise.mlir.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-DAG: memref.global "private" constant @__glow_packed_conv_3x3x3x8x32 : memref<3x3x3x8x32xf32>
// CHECK-DAG: memref.global "private" constant @__glow_packed_conv_1x3x3x8x8 : memref<1x3x3x8x8xf32>

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[X:.*]]: memref<1x6x6x8xf32>, %[[W:.*]]: memref<3x3x8x32xf32, strided<[768, 256, 32, 1], offset: ?>>, %[[B:.*]]: memref<32xf32, strided<[1], offset: ?>>, %[[Y:.*]]: memref<1x4x4x32xf32
// CHECK:         %[[BIAS:.*]] = vector.load %[[B]]
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} iter_args
// CHECK:             scf.for {{.*}} iter_args
// CHECK:               scf.for {{.*}} iter_args
// CHECK:                 vector.load %[[W]]
// CHECK:                 vector.fma
// CHECK:           arith.cmpf uge
// CHECK:           vector.transfer_write {{.*}}, %[[Y]]
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK:         vector.fma {{.*}} : vector<8xf32>
// CHECK:         arith.cmpf uge

// CHECK-LABEL: func.func @conv(
// CHECK:         %[[PACKED:.*]] = memref.get_global @__glow_packed_conv_3x3x3x8x32
// CHECK:         scf.for %[[T:.*]] = %c0 to %c3 step %c1 {
// CHECK:           memref.subview %[[PACKED]][%[[T]], 0, 0, 0, 0] [1, 3, 3, 8, 32]
// CHECK:           func.call @__glow_kernel0(
// CHECK:         }
// CHECK:         memref.subview %{{.*}}[0, 0, 0, 96] [1, 4, 4, 8]
// CHECK:         call @__glow_kernel1(
// CHECK-NOT:     linalg.
// CHECK:         return

module {
  memref.global "private" constant @w : memref<3x3x8x104xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<104xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @conv(%arg0: memref<1x6x6x8xf32> {glow.name = "x"}, %arg1: memref<1x4x4x104xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<3x3x8x104xf32>
    %1 = memref.get_global @b : memref<104xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x4x104xf32>, memref<1x6x6x8xf32>, memref<3x3x8x104xf32>, memref<104xf32>) -> ()
    return
  }
}
