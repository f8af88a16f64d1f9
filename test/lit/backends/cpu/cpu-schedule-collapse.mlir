// glow-cpu-schedule runs a generic whose innermost loop is shorter than a vector on its innermost loops seen
// as one, where every operand walks them as one contiguous run or reads none of them: a squeeze-and-excite
// block left in NCHW (a QDQ model's float island) reduces over the trailing 6x6 of each channel and broadcasts
// a [1, C, 1, 1] gate over it. Rows of 36 take vectors; rows of 6 ran as scalar loops (`__glow_loops_*`).
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// The mean's sum (after the fill of its output, kernel 0): rows of 36 elements, one per channel, as the row
// reduction kernel reads them.
// CHECK-LABEL: func.func private @__glow_kernel1(%{{.*}}: memref<1x32x36xf32>, %{{.*}}: memref<1x32xf32>)
// CHECK:         vector.maskedload
// CHECK:         vector.reduction <add>
// The gate broadcast over each channel's 36 pixels: a [1, 32] source, one masked vector store per channel.
// CHECK-LABEL: func.func private @__glow_kernel2(%{{.*}}: memref<1x32xf32>, %{{.*}}: memref<1x32x36xf32>)
// CHECK:         vector.transfer_write {{.*}} : vector<1x1x40xf32>, memref<1x32x36xf32>
// CHECK-NOT:   @__glow_loops
// CHECK-LABEL: func.func @excite(
// CHECK:         memref.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]]
// CHECK:         call @__glow_kernel1(
// CHECK:         memref.collapse_shape %arg1 {{\[\[}}0], [1, 2, 3]]
// CHECK:         call @__glow_kernel2(
// CHECK-NOT:     call
// CHECK:         return
func.func @excite(%x: memref<1x32x6x6xf32> {glow.name = "x"}, %s: memref<1x32x1x1xf32> {glow.name = "s"}, %m: memref<1x32xf32> {glow.name = "m", glow.output}, %y: memref<1x32x6x6xf32> {glow.name = "y", glow.output}) {
  "glow_ir.batched_reduce_add"(%m, %x) {axes = array<i64: 2, 3>, roles = ["out", "in"]} : (memref<1x32xf32>, memref<1x32x6x6xf32>) -> ()
  "glow_ir.broadcast"(%y, %s) {axis = 0 : i64, roles = ["out", "in"]} : (memref<1x32x6x6xf32>, memref<1x32x1x1xf32>) -> ()
  return
}
