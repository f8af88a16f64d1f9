// glow-cpu-schedule runs a grouped 1x1 convolution of an even number of groups whose outputs fill channel vectors
// poorly (here 4 groups of 16 input and 12 output channels: 12 of 16 lanes) across the groups
// (grouped_interleaved.InterleavedGroups): the filter packed as [sets, CG, registers, 16], a register holding 4
// outputs of each of the set's 4 groups (lane j x 4 + g); per tile of 6 pixels, each block of 16 input channels of
// the set's 4 groups is interleaved within 128-bit lanes (unpcklps / unpckhps, then the 64-bit ones) into 4-float
// chunks in one of two scratch buffers, each chunk broadcast to every 128-bit lane (vbroadcastf32x4) and multiplied
// by 3 weight registers into 6 x 3 accumulators that start from the gathered bias; the loop over the 4 tiles (the
// last from pixel 14, overlapping the third) interleaves the next tile's input into the other buffer; the ReLU'd
// registers go through the rounds inverted into the groups' output rows, compacted to the 12 outputs and stored
// masked. Before, each group was pointwise_recipes.py's kernel, its registers 12/16 busy.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_interleaved_groups_
// CHECK-SAME:    %[[X:.*]]: memref<20x64xf32, strided<[64, 1], offset: ?>>, %[[W:.*]]: memref<1x16x3x16xf32>, %[[Y:.*]]: memref<20x48xf32, strided<[48, 1], offset: ?>>, %[[B:.*]]: memref<48xf32>
// CHECK:         %[[BIAS:.*]] = memref.alloca() {alignment = 64 : i64} : memref<3x16xf32>
// CHECK:         %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<2x6x64xf32>
// CHECK:         %[[R:.*]] = memref.alloca() {alignment = 64 : i64} : memref<6x3x16xf32>
// CHECK-COUNT-3: vector.gather %[[B]]
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29]
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31]
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29]
// CHECK:         vector.store %{{.*}}, %[[T]][%c0, %c0, %c0]
// CHECK:         scf.for %[[TILE:.*]] = %c0 to %c4 step %c1 {
// CHECK:           arith.minsi %{{.*}}, %c14
// CHECK:           %[[BUFFER:.*]] = arith.andi %[[TILE]], %c1
// CHECK:           arith.minsi %{{.*}}, %c14
// CHECK:           %[[NEXT:.*]] = arith.xori %[[BUFFER]], %c1
// CHECK:           vector.store %{{.*}}, %[[T]][%[[NEXT]], %c0, %c0]
// CHECK:           vector.load %[[W]][%c0, %c0, %c0, %c0]
// CHECK:           %[[CHUNK:.*]] = vector.load %[[T]][%[[BUFFER]], %c0, %c0] : memref<2x6x64xf32>, vector<4xf32>
// CHECK:           %[[SPLAT:.*]] = vector.shuffle %[[CHUNK]], %[[CHUNK]] [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
// CHECK:           vector.fma %{{.*}}, %[[SPLAT]], %{{.*}} : vector<16xf32>
// CHECK:           vector.store %{{.*}}, %[[R]]
// CHECK:           vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0]
// CHECK-COUNT-4:   vector.maskedstore %[[Y]]
// CHECK:         }
// CHECK:         return
// CHECK:       memref.global "private" constant @__glow_packed_interleaved_groups_4x16x12 : memref<1x16x3x16xf32>
// CHECK-NOT:   __glow_packed_pointwise
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK:         call @__glow_interleaved_groups_
// CHECK-NOT:   linalg.

module {
  memref.global "private" constant @w : memref<1x1x16x48xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<48xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @grouped(%arg0: memref<1x4x5x64xf32> {glow.name = "x"}, %arg1: memref<1x4x5x48xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<1x1x16x48xf32>
    %1 = memref.get_global @b : memref<48xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 4 : i64, kernels = array<i64: 1, 1>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x5x48xf32>, memref<1x4x5x64xf32>, memref<1x1x16x48xf32>, memref<48xf32>) -> ()
    return
  }
}
