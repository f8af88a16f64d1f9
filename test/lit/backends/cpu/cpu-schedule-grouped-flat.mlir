// glow-cpu-schedule runs a grouped convolution of narrow groups (2, 4 or 8 channels) whose channel vectors would
// leave more than 1/8 of their lanes empty (here 3 groups of 4: 12 channels in a 16-lane register; RegNetX-
// 200MF's 3 groups of 8 fill 24 of 32), with unit stride along the row, as grouped_recipes.FlatNarrowGroups: the
// rows as flat runs of floats (48 per output row), the register at float f of a row holding 16 floats of its
// pixels. Input channel j of each lane's group comes from the input vector at f + (filter column) x 12 by
// NarrowGroupKernel's shuffle (lane i takes lane (i // 4) * 4 + j: cpu-schedule-grouped-narrow.mlir; groups of
// 8 use vpermps where the host has AVX-512); the weights are phase (f / 16) mod 3's registers, packed as
// [3, KH, KW, 4, 16], loaded per input channel j for the tile of 4 rows (all of them here) by one register. The
// bias starts the accumulators, the ReLU runs on them before the store.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-DAG: memref.global "private" constant @__glow_packed_flat_bias_12 : memref<3x16xf32>
// CHECK-DAG: memref.global "private" constant @__glow_packed_flat_gconv_3x3x4 : memref<3x3x3x4x16xf32>
// CHECK-NOT: __glow_packed_gconv
// CHECK-NOT: __glow_packed_narrow_gconv
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[B:.*]]: memref<3x16xf32>, %[[W:.*]]: memref<3x3x3x4x16xf32>, %[[X:.*]]: memref<1x6x72xf32>, %[[Y:.*]]: memref<1x4x48xf32>
// CHECK:         scf.for %[[F:.*]] = %c0 to %c48 step %c16 {
// CHECK:           %[[P:.*]] = arith.divui %[[F]], %c16
// CHECK:           %[[Q:.*]] = arith.remui %[[P]], %c3
// CHECK:           %[[START:.*]] = vector.load %[[B]][%[[Q]], %c0]
// CHECK:           %[[W0:.*]] = vector.load %[[W]][%[[Q]], %c0, %c0, %c0, %c0]
// CHECK:           %[[X0:.*]] = vector.load %[[X]][%c0, %c0, %[[F]]]
// CHECK:           %[[S0:.*]] = vector.shuffle %[[X0]], %[[X0]] [0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12]
// CHECK:           vector.fma %[[S0]], %[[W0]], %[[START]] : vector<16xf32>
// CHECK:           %[[F12:.*]] = arith.addi %[[F]], %c12
// CHECK:           vector.load %[[X]][%c0, %c0, %[[F12]]]
// CHECK:           vector.load %[[W]][%[[Q]], %c0, %c0, %c3, %c0]
// CHECK:           vector.shuffle {{.*}} [3, 3, 3, 3, 7, 7, 7, 7, 11, 11, 11, 11, 15, 15, 15, 15]
// CHECK-COUNT-4:   arith.cmpf uge
// CHECK:           vector.store {{.*}}, %[[Y]][%c0, %c3, %[[F]]] : memref<1x4x48xf32>, vector<16xf32>
// CHECK-NEXT:    }
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @grouped(
// CHECK:         %[[XR:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]]
// CHECK:         %[[YR:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]]
// CHECK:         call @__glow_kernel0(%{{.*}}, %{{.*}}, %[[XR]], %[[YR]])

module {
  memref.global "private" constant @w : memref<3x3x4x12xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<12xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @grouped(%arg0: memref<1x6x6x12xf32> {glow.name = "x"}, %arg1: memref<1x4x4x12xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<3x3x4x12xf32>
    %1 = memref.get_global @b : memref<12xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 3 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x4x12xf32>, memref<1x6x6x12xf32>, memref<3x3x4x12xf32>, memref<12xf32>) -> ()
    return
  }
}
