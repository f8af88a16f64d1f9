// glow-ir-to-linalg lowers glow_ir.cpu_expand_depthwise_nhwc to the two convolutions it is, the expanded map in a
// padded buffer of its own (LINALG); glow-cpu-schedule runs them as one kernel (expansion_recipes.py) and the
// buffer goes: per block of channels and image, a call of a helper whose ring of expanded rows is an alloca of
// its own, 9 rows (a band of 4 output rows at stride 2 reads 9 padded rows) of the 16 padded columns, its
// padding columns 0 and 15 zeroed once. One loop over the bands (7 output rows: 4, then 3): each computes the
// padded rows it reads that no band before did (the first its whole window, rows 0-8; the second rows 9-14),
// each the 1x1 convolution of its input row (bias, 4 input channels, 14 pixels, clip) into ring row `row mod 9`,
// or zeros for a padding row; then the band's depthwise tiles reading the ring, the shorter last band's a
// variant of their own. Stride 2, 16 channels: one register per block.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=LINALG
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// LINALG-LABEL: func.func @fused(
// LINALG:         %[[P:.*]] = memref.alloc() : memref<1x16x16x16xf32>
// LINALG:         linalg.fill {glow.expansion} {{.*}} outs(%[[P]]
// LINALG:         %[[V:.*]] = memref.subview %[[P]][0, 1, 1, 0] [1, 14, 14, 16]
// LINALG:         linalg.generic {{.*}} outs(%[[V]] {{.*}} attrs = {glow.conv_bias}
// LINALG:         linalg.conv_2d_nhwc_hwcf {{.*}}glow.expansion{{.*}} outs(%[[V]]
// LINALG:         linalg.generic {{.*}} outs(%[[V]] {{.*}} attrs = {glow.conv_activation}
// LINALG:         linalg.depthwise_conv_2d_nhwc_hwc {{.*}}glow.expansion{{.*}} ins(%[[P]],
// LINALG:         memref.dealloc %[[P]]

// CHECK-LABEL: func.func private @__glow_expansion_
// CHECK-SAME:    (%[[X:.*]]: memref<14x14x4xf32, strided<[56, 4, 1], offset: ?>>, %[[W:.*]]: memref<64xf32, strided<[1], offset: ?>>,
// CHECK-SAME:    attributes {glow.serial}
// CHECK:         %[[RING:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x9x16x16xf32>
// CHECK:         scf.for %[[SLOT:.*]] = %c0 to %c9 step %c1 {
// CHECK-NEXT:      vector.store %{{.*}}, %[[RING]][%c0, %[[SLOT]], %c0, %c0]
// CHECK-NEXT:      vector.store %{{.*}}, %[[RING]][%c0, %[[SLOT]], %c15, %c0]
// CHECK:         scf.for %[[BAND:.*]] = %c0 to %c2 step %c1 {
// CHECK:           %[[FIRST:.*]] = arith.select %{{.*}}, %c0, %{{.*}} : index
// CHECK:           %[[END:.*]] = arith.minui %{{.*}}, %c15 : index
// CHECK:           scf.for %[[R:.*]] = %[[FIRST]] to %[[END]] step %c1 {
// CHECK:             %[[ROW:.*]] = arith.remui %[[R]], %c9 : index
// CHECK:             scf.if
// CHECK:               scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(
// CHECK-COUNT-14:        vector.fma
// CHECK:               vector.store %{{.*}}, %[[RING]][%c0, %[[ROW]], %c1, %c0]
// CHECK:             } else {
// CHECK:               scf.for %[[COL:.*]] = %c1 to %c15 step %c1 {
// CHECK-NEXT:            vector.store %{{.*}}, %[[RING]][%c0, %[[ROW]], %[[COL]], %c0]
// CHECK:           arith.cmpi eq, %[[BAND]], %c1 : index
// CHECK:           scf.if
// CHECK:             vector.load %[[RING]]
// CHECK:             vector.fma
// CHECK:           } else {
// CHECK:             vector.load %[[RING]]
// CHECK:             vector.fma
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK:         call @__glow_expansion_
// CHECK-LABEL: func.func @fused(
// CHECK-NOT:     memref.alloc(
// CHECK:         call @__glow_kernel0
// CHECK-NOT:     linalg.

module {
  memref.global "private" constant @w1 : memref<1x1x4x16xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b1 : memref<16xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  memref.global "private" constant @w2 : memref<3x3x1x16xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b2 : memref<16xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @fused(%arg0: memref<1x14x14x4xf32> {glow.name = "x"}, %arg1: memref<1x7x7x16xf32> {glow.name = "y", glow.output}) {
    %w1 = memref.get_global @w1 : memref<1x1x4x16xf32>
    %b1 = memref.get_global @b1 : memref<16xf32>
    %w2 = memref.get_global @w2 : memref<3x3x1x16xf32>
    %b2 = memref.get_global @b2 : memref<16xf32>
    "glow_ir.cpu_expand_depthwise_nhwc"(%arg1, %arg0, %w1, %b1, %w2, %b2) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, expandDilation = array<i64: 1, 1>, expandKernels = array<i64: 1, 1>, expandStrides = array<i64: 1, 1>, expandActivation = "clip", expandActivationArgs = array<f32: 0.000000e+00, 6.000000e+00>, kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, roles = ["out", "in", "in", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x7x7x16xf32>, memref<1x14x14x4xf32>, memref<1x1x4x16xf32>, memref<16xf32>, memref<3x3x1x16xf32>, memref<16xf32>) -> ()
    return
  }
}
