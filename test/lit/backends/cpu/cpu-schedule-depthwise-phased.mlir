// glow-cpu-schedule runs a 3x3 depthwise convolution whose channels are no multiple of 16 (here 24), with unit
// stride along the row, a constant filter and contiguous output rows, on its rows as flat runs of floats
// (depthwise_recipes.FlatDepthwise, phased): the register at float f of a row holds channels f mod 24 onwards,
// so its taps and bias are phase (f / 16) mod 3's registers, packed at compile time as [3, 3, 3, 16] and [3, 16]
// (lane i of phase q: channel (16q + i) mod 24). The tile is 12 rows by one register (then one of 2 rows); its
// input vectors are read at f + j x 24 of the input rows, each once per tile, into the rows that read it.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-DAG: memref.global "private" constant @__glow_packed_flat_bias_24 : memref<3x16xf32> = dense<2.500000e-01>
// CHECK-DAG: memref.global "private" constant @__glow_packed_flat_dw_24 : memref<3x3x3x16xf32> = dense<5.000000e-01>
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[W:.*]]: memref<3x3x3x16xf32>, %[[B:.*]]: memref<3x16xf32>, %[[X:.*]]: memref<1x16x384xf32>, %[[Y:.*]]: memref<1x14x336xf32>
// CHECK:         scf.for %[[V:.*]] = %c0 to %c21 step %c1 {
// CHECK:           %[[F:.*]] = arith.muli %[[V]], %c16
// CHECK:           %[[P:.*]] = arith.divui %[[F]], %c16
// CHECK:           %[[Q:.*]] = arith.remui %[[P]], %c3
// CHECK:           %[[T00:.*]] = vector.load %[[W]][%[[Q]], %c0, %c0, %c0] : memref<3x3x3x16xf32>, vector<16xf32>
// CHECK:           %[[BIAS:.*]] = vector.load %[[B]][%[[Q]], %c0] : memref<3x16xf32>, vector<16xf32>
// CHECK:           %[[X0:.*]] = vector.load %[[X]][%c0, %c0, %[[F]]] : memref<1x16x384xf32>, vector<16xf32>
// CHECK:           vector.fma %[[X0]], %[[T00]], %[[BIAS]] : vector<16xf32>
// CHECK:           %[[F24:.*]] = arith.addi %[[F]], %c24
// CHECK:           vector.load %[[X]][%c0, %c0, %[[F24]]] : memref<1x16x384xf32>, vector<16xf32>
// CHECK-COUNT-12:  arith.cmpf uge
// CHECK:           vector.store {{.*}}, %[[Y]][%c0, %c11, %[[F]]] : memref<1x14x336xf32>, vector<16xf32>
// CHECK-NEXT:    }
// CHECK:         scf.for %{{.*}} = %c0 to %c21 step %c1 {
// CHECK-COUNT-2:   arith.cmpf uge
// CHECK:           vector.store {{.*}}, %[[Y]][%c0, %c13, %{{.*}}] : memref<1x14x336xf32>, vector<16xf32>
// CHECK-NEXT:    }
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @phased(
// CHECK:         %[[XR:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]]
// CHECK:         %[[YR:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]]
// CHECK:         call @__glow_kernel0(%{{.*}}, %{{.*}}, %[[XR]], %[[YR]])

module {
  memref.global "private" constant @w : memref<3x3x1x24xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<24xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @phased(%arg0: memref<1x16x16x24xf32> {glow.name = "x"}, %arg1: memref<1x14x14x24xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<3x3x1x24xf32>
    %1 = memref.get_global @b : memref<24xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 24 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x14x14x24xf32>, memref<1x16x16x24xf32>, memref<3x3x1x24xf32>, memref<24xf32>) -> ()
    return
  }
}
