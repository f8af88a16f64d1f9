// glow-ir-to-linalg lowers a grouped CPU convolution (3 groups of 8 channels, RegNetX-200MF's first stage's, at
// stride 2; at unit stride they run as flat rows: cpu-schedule-grouped-flat.mlir) to one linalg.generic over all groups on (group, channel) views, its bias and ReLU marked for the schedule;
// glow-cpu-schedule runs it as one kernel in a loop over tiles of one group (3 does not pair up), each tile's
// filter packed as a [3, 3, 8, 8] block, the bias and ReLU fused into the tile. Groups of 2, 4 or 8 channels
// that fill whole registers are cpu-schedule-grouped-narrow.mlir's; depthwise convolutions are
// cpu-schedule-depthwise.mlir's.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=LINALG
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// LINALG-LABEL: func.func @grouped(
// LINALG:         linalg.generic {{.*}} attrs = {glow.conv_bias}
// LINALG-DAG:     %[[X:.*]] = memref.expand_shape %arg0 {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 9, 9, 3, 8]
// LINALG-DAG:     %[[W:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] output_shape [3, 3, 8, 3, 8]
// LINALG-DAG:     %[[Y:.*]] = memref.expand_shape %arg1 {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 3, 8]
// LINALG:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[Y]] : {{.*}}) attrs = {glow.grouped_conv = array<i64: 2, 2, 1, 1>}
// LINALG:           arith.mulf
// LINALG:           arith.addf
// LINALG:         linalg.generic {{.*}} attrs = {glow.conv_activation}
// CHECK: memref.global "private" constant @__glow_packed_gconv_3x3x3x8x8 : memref<3x3x3x8x8xf32>

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[X:.*]]: memref<1x9x9x8xf32, strided<[1944, 216, 24, 1], offset: ?>>, %[[W:.*]]: memref<3x3x8x8xf32, {{.*}}>, %[[B:.*]]: memref<8xf32, {{.*}}>, %[[Y:.*]]: memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: ?>>
// CHECK:         vector.load %[[B]]
// CHECK:         scf.for
// CHECK:           vector.load %[[W]]
// CHECK:           vector.fma {{.*}} : vector<8xf32>
// CHECK:         arith.cmpf uge
// CHECK:         vector.transfer_write {{.*}}, %[[Y]]
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @grouped(
// CHECK:         %[[PACKED:.*]] = memref.get_global @__glow_packed_gconv_3x3x3x8x8
// CHECK:         scf.for %[[T:.*]] = %c0 to %c3 step %c1 {
// CHECK:           %[[C:.*]] = arith.muli %[[T]], %c8
// CHECK:           memref.subview %arg0[0, 0, 0, %[[C]]] [1, 9, 9, 8]
// CHECK:           memref.subview %[[PACKED]][%[[T]], 0, 0, 0, 0] [1, 3, 3, 8, 8]
// CHECK:           func.call @__glow_kernel0(
// CHECK:         }
// CHECK-NOT:     linalg.
// CHECK:         return

module {
  memref.global "private" constant @w : memref<3x3x8x24xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<24xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @grouped(%arg0: memref<1x9x9x24xf32> {glow.name = "x"}, %arg1: memref<1x4x4x24xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<3x3x8x24xf32>
    %1 = memref.get_global @b : memref<24xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 3 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x4x4x24xf32>, memref<1x9x9x24xf32>, memref<3x3x8x24xf32>, memref<24xf32>) -> ()
    return
  }
}
