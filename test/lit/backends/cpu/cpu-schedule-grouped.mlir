// glow-ir-to-linalg lowers a grouped CPU convolution (4 groups of 8 channels) to one linalg.generic over all
// groups on (group, channel) views, its bias and ReLU marked for the schedule; glow-cpu-schedule runs it as
// one kernel in a loop over tiles of two groups (16 channels: one register), each tile's filter packed as a
// dense block-diagonal [3, 3, 16, 16] block, the bias and ReLU fused into the tile. Depthwise convolutions are
// cpu-schedule-depthwise.mlir's.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=LINALG
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// LINALG-LABEL: func.func @grouped(
// LINALG:         linalg.generic {{.*}} attrs = {glow.conv_bias}
// LINALG-DAG:     %[[X:.*]] = memref.expand_shape %arg0 {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 6, 6, 4, 8]
// LINALG-DAG:     %[[W:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] output_shape [3, 3, 8, 4, 8]
// LINALG-DAG:     %[[Y:.*]] = memref.expand_shape %arg1 {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 4, 8]
// LINALG:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[Y]] : {{.*}}) attrs = {glow.grouped_conv = array<i64: 1, 1, 1, 1>}
// LINALG:           arith.mulf
// LINALG:           arith.addf
// LINALG:         linalg.generic {{.*}} attrs = {glow.conv_activation}
// CHECK: memref.global "private" constant @__glow_packed_gconv_2x3x3x16x16 : memref<2x3x3x16x16xf32>

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[X:.*]]: memref<1x6x6x16xf32, strided<[1152, 192, 32, 1], offset: ?>>, %[[W:.*]]: memref<3x3x16x16xf32, {{.*}}>, %[[B:.*]]: memref<16xf32, {{.*}}>, %[[Y:.*]]: memref<1x4x4x16xf32, strided<[512, 128, 32, 1], offset: ?>>
// CHECK:         vector.load %[[B]]
// CHECK:         scf.for
// CHECK:           vector.load %[[W]]
// CHECK:           vector.fma {{.*}} : vector<16xf32>
// CHECK:         arith.maximumf
// CHECK:         vector.transfer_write {{.*}}, %[[Y]]
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @grouped(
// CHECK:         %[[PACKED:.*]] = memref.get_global @__glow_packed_gconv_2x3x3x16x16
// CHECK:         scf.for %[[T:.*]] = %c0 to %c2 step %c1 {
// CHECK:           %[[C:.*]] = arith.muli %[[T]], %c16
// CHECK:           memref.subview %[[PACKED]][%[[T]], 0, 0, 0, 0] [1, 3, 3, 16, 16]
// CHECK:           memref.subview %arg0[0, 0, 0, %[[C]]] [1, 6, 6, 16]
// CHECK:           func.call @__glow_kernel0(
// CHECK:         }
// CHECK-NOT:     linalg.
// CHECK:         return

module {
  memref.global "private" constant @w : memref<3x3x8x32xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<32xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @grouped(%arg0: memref<1x6x6x32xf32> {glow.name = "x"}, %arg1: memref<1x4x4x32xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<3x3x8x32xf32>
    %1 = memref.get_global @b : memref<32xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 4 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x4x32xf32>, memref<1x6x6x32xf32>, memref<3x3x8x32xf32>, memref<32xf32>) -> ()
    return
  }
}
