// glow-cpu-schedule runs a grouped 1x1 convolution whose groups have 2, 4 or 8 input and output channels and fill
// whole registers (here 8 groups of 4: four per register) as grouped_narrow.NarrowGroupKernel's vector code: the
// filter packed as [KH, KW, FG, C] (lane i of row j: output channel i's weight for input channel j of its group),
// each input pixel loaded once and shuffled once per input channel j (lane i takes lane (i // 4) * 4 + j) into
// the multiply-add of its output pixel; no block-diagonal tile (cpu-schedule-grouped.mlir's). The bias starts the
// accumulators and the ReLU runs on them before the store. Larger windows go by diagonals instead
// (cpu-schedule-grouped-diagonal.mlir). (Groups of 8, whose shuffle crosses 128-bit lanes, use vpermps where the
// host has AVX-512: test_grouped_conv.py.)
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK: memref.global "private" constant @__glow_packed_narrow_gconv_1x1x4x32 : memref<1x1x4x32xf32>
// CHECK-NOT: __glow_packed_gconv
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[B:.*]]: memref<32xf32>, %[[X:.*]]: memref<1x4x4x32xf32>, %[[W:.*]]: memref<1x1x4x32xf32>, %[[Y:.*]]: memref<1x4x4x32xf32>
// CHECK:         scf.for %[[ROW:.*]] = %c0 to %c4 step %c1 {
// CHECK:           scf.for %[[V:.*]] = %c0 to %c2 step %c1 {
// CHECK:             %[[C:.*]] = arith.muli %[[V]], %c16
// CHECK:             %[[START:.*]] = vector.load %[[B]][%[[C]]]
// CHECK:             %[[X0:.*]] = vector.load %[[X]][%{{.*}}, %{{.*}}, %c0, %[[C]]]
// CHECK-COUNT-3:     vector.load %[[X]]
// CHECK:             %[[W0:.*]] = vector.load %[[W]][%c0, %c0, %c0, %[[C]]]
// CHECK:             %[[S0:.*]] = vector.shuffle %[[X0]], %[[X0]] [0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12]
// CHECK:             vector.fma %[[S0]], %[[W0]], %[[START]] : vector<16xf32>
// CHECK:             vector.shuffle %[[X0]], %[[X0]] [3, 3, 3, 3, 7, 7, 7, 7, 11, 11, 11, 11, 15, 15, 15, 15]
// CHECK-COUNT-4:     %[[R:.*]] = arith.select
// CHECK-NEXT:          vector.store %[[R]], %[[Y]]
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @grouped(
// CHECK:         %[[PACKED:.*]] = memref.get_global @__glow_packed_narrow_gconv_1x1x4x32
// CHECK:         call @__glow_kernel0(%{{.*}}, %arg0, %[[PACKED]], %arg1)
// CHECK-NOT:     linalg.
// CHECK:         return

module {
  memref.global "private" constant @w : memref<1x1x4x32xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<32xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @grouped(%arg0: memref<1x4x4x32xf32> {glow.name = "x"}, %arg1: memref<1x4x4x32xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<1x1x4x32xf32>
    %1 = memref.get_global @b : memref<32xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 8 : i64, kernels = array<i64: 1, 1>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x4x32xf32>, memref<1x4x4x32xf32>, memref<1x1x4x32xf32>, memref<32xf32>) -> ()
    return
  }
}
