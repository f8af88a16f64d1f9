// glow-cpu-schedule runs a grouped 1x1 convolution whose groups fill channel vectors poorly (here 3 groups of 32
// input and 20 output channels: 16 + 4 lanes) along the pixels (grouped_pointwise.PixelGroups): the filter packed
// per group as [G, CG, FG]; a loop over the groups calls one helper on the group's [pixels, channels] views; in
// it, a tile of 16 pixels' input rows is transposed in registers (vector.shuffle network) into a scratch block
// [CG, 16] on the stack, each output channel's accumulator (16 pixels) starts from its broadcast bias and takes a
// broadcast weight per input channel, and the ReLU'd accumulators are transposed back into the output's pixel rows
// (the last 4 channels masked). The 4 pixels left after the full tile are a tile of their own. Before, each group
// was pointwise_recipes.py's kernel, its registers of 16 and 4 output channels 5/8 busy.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_pixel_groups_
// CHECK-SAME:    %[[X:.*]]: memref<20x32xf32, strided<[96, 1], offset: ?>>, %[[W:.*]]: memref<32x20xf32, strided<[20, 1], offset: ?>>, %[[Y:.*]]: memref<20x20xf32, strided<[60, 1], offset: ?>>, %[[B:.*]]: memref<20xf32, strided<[1], offset: ?>>
// CHECK:         %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32x16xf32>
// CHECK:         scf.for %[[C0:.*]] = %c0 to %c32 step %c16 {
// CHECK-COUNT-16:  vector.load %[[X]][%{{.*}}, %[[C0]]]
// CHECK:           vector.shuffle %{{.*}}, %{{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29]
// CHECK:           vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]
// CHECK-COUNT-16:  vector.store %{{.*}}, %[[T]][%{{.*}}, %c0]
// CHECK:         }
// CHECK:         memref.load %[[B]][%c0]
// CHECK:         %[[ACC:.*]]:20 = scf.for %[[C:.*]] = %c0 to %c32 step %c1 iter_args(
// CHECK:           %[[COLUMN:.*]] = vector.load %[[T]][%[[C]], %c0] : memref<32x16xf32>, vector<16xf32>
// CHECK:           %[[WEIGHT:.*]] = memref.load %[[W]][%[[C]], %c0]
// CHECK:           %[[SPLAT:.*]] = vector.broadcast %[[WEIGHT]] : f32 to vector<16xf32>
// CHECK:           vector.fma %[[COLUMN]], %[[SPLAT]], %{{.*}} : vector<16xf32>
// CHECK-COUNT-19:  vector.fma %[[COLUMN]]
// CHECK:         }
// CHECK:         arith.select
// CHECK-COUNT-16:  vector.store %{{.*}}, %[[Y]][%c{{[0-9]+}}, %c0]
// CHECK-COUNT-16:  vector.maskedstore %[[Y]][%c{{[0-9]+}}, %c16]
// CHECK-COUNT-4:   vector.load %[[X]][%c{{1[6-9]}}, %{{.*}}]
// CHECK:         return
// CHECK:       memref.global "private" constant @__glow_packed_pixel_groups_32x20 : memref<3x32x20xf32>
// CHECK-NOT:   __glow_packed_pointwise
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK:         scf.for %[[G:.*]] = %c0 to %c3 step %c1 {
// CHECK:           func.call @__glow_pixel_groups_
// CHECK-NOT:   linalg.

module {
  memref.global "private" constant @w : memref<1x1x32x60xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<60xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @grouped(%arg0: memref<1x4x5x96xf32> {glow.name = "x"}, %arg1: memref<1x4x5x60xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<1x1x32x60xf32>
    %1 = memref.get_global @b : memref<60xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 3 : i64, kernels = array<i64: 1, 1>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x5x60xf32>, memref<1x4x5x96xf32>, memref<1x1x32x60xf32>, memref<60xf32>) -> ()
    return
  }
}
