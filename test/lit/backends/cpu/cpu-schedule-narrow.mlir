// A convolution with fewer output channels than a vector's lanes stays NCHW (glow-cpu-layout), and glow-ir-to-linalg
// lowers it to linalg.conv_2d_nchw_fchw after the bias that fills its output; glow-cpu-schedule replaces the
// convolution with narrow_conv_recipes.py's kernel, vectorized along the output rows. Rows of 88 pixels: tiles of
// 4 rows x 2 vectors of 16 pixels x the 3 output channels (24 accumulators), a loop of two at pixels 0 and 32, then
// one at pixel 64 of a whole vector and a masked one (88 = 5 x 16 + 8). The accumulators start from the output
// (the bias) and are carried through a loop over the 8 input channels and one over the 3 filter rows, each
// filter row's 3 taps unrolled: per tap a broadcast weight per output channel and a load per row and vector,
// 24 multiply-adds.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=LINALG
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// LINALG-LABEL: func.func @rgb(
// LINALG:         linalg.generic
// LINALG:         linalg.conv_2d_nchw_fchw

// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK-SAME:    %[[Y:[^:]*]]: memref<1x3x20x88xf32>, %[[W:[^:]*]]: memref<3x8x3x3xf32>, %[[X:[^:]*]]: memref<1x8x22x90xf32>
// CHECK:         scf.for %[[ROW:.*]] = %c0 to %c20 step %c4 {
// CHECK:           scf.for %[[P:.*]] = %c0 to %c64 step %c32 {
// CHECK:             vector.load %[[Y]][%c0, %c0, %[[ROW]], %[[P]]] : memref<1x3x20x88xf32>, vector<16xf32>
// CHECK:             scf.for %[[C:.*]] = %c0 to %c8 step %c1 iter_args({{.*}}) -> (vector<16xf32>, {{.*}}) {
// CHECK:               scf.for %[[I:.*]] = %c0 to %c3 step %c1 iter_args({{.*}}) -> (vector<16xf32>, {{.*}}) {
// CHECK:                 memref.load %[[W]][%c0, %[[C]], %[[I]], %c0] : memref<3x8x3x3xf32>
// CHECK:                 vector.broadcast
// CHECK:                 vector.load %[[X]][%c0, %[[C]], %{{.*}}, %[[P]]] : memref<1x8x22x90xf32>, vector<16xf32>
// CHECK-COUNT-72:        vector.fma
// CHECK-NOT:             vector.fma
// CHECK:                 scf.yield
// CHECK:             vector.store {{.*}}, %[[Y]][%c0, %c0, %[[ROW]], %[[P]]] : memref<1x3x20x88xf32>, vector<16xf32>
// CHECK:           vector.load %[[Y]][%c0, %c0, %[[ROW]], %c64] : memref<1x3x20x88xf32>, vector<16xf32>
// CHECK:           vector.maskedload %[[Y]][%c0, %c0, %[[ROW]], %c80]
// CHECK:           vector.maskedload %[[X]]
// CHECK:           vector.maskedstore %[[Y]][%c0, %c0, %[[ROW]], %c80]
// CHECK-NOT:   linalg.conv
// CHECK-LABEL: func.func @rgb(
// CHECK:         call @__glow_kernel0(
// CHECK:         call @__glow_kernel1(

module {
  memref.global "private" constant @b3 : memref<3xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @rgb(%x: memref<1x8x22x90xf32> {glow.name = "x"}, %y: memref<1x3x20x88xf32> {glow.name = "y", glow.output}, %w: memref<3x8x3x3xf32> {glow.name = "w"}) {
    %b = memref.get_global @b3 : memref<3xf32>
    "glow_ir.convolution"(%y, %x, %w, %b) {roles = ["out", "in", "in", "in"], kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (memref<1x3x20x88xf32>, memref<1x8x22x90xf32>, memref<3x8x3x3xf32>, memref<3xf32>) -> ()
    return
  }
}
