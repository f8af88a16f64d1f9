// glow-cpu-schedule on transposes (transpose_recipes.py). One that moves the innermost dim runs as 16x16
// register tiles whose vector.transpose became shuffles of whole registers, plus a tile of the 5 left over
// along the odd width (one shuffle of the flattened 16x5 tile). An RGB input's 3 channels are interleaved per
// run of 16 pixels: a load per channel plane, the planes joined pairwise (shuffles of equal widths), one shuffle
// that interleaves them and 3 register stores into the row as a run of floats (transpose_recipes._interleave).
// One that keeps the innermost dim is a strided copy, left to a loop nest that LLVM vectorizes.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[X:.*]]: memref<1x32x20x37xf32>, %[[Y:.*]]: memref<1x20x37x32xf32>)
// CHECK:         vector.transfer_read %[[X]]{{.*}} : memref<1x32x20x37xf32>, vector<16x1x16xf32>
// CHECK:         vector.shuffle {{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
// CHECK:         vector.transfer_write {{.*}}, %[[Y]]{{.*}} : vector<16x16xf32>, memref<1x20x37x32xf32>
// CHECK:         vector.transfer_read %[[X]]{{.*}} : memref<1x32x20x37xf32>, vector<16x1x5xf32>
// CHECK:         vector.shuffle {{.*}} : vector<80xf32>, vector<80xf32>
// CHECK:         vector.transfer_write {{.*}}, %[[Y]]{{.*}} : vector<5x16xf32>, memref<1x20x37x32xf32>
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK-SAME:    %[[U:.*]]: memref<2x3x9x48xf32>, %[[V:.*]]: memref<2x9x144xf32>)
// CHECK:         scf.for %[[R:.*]] = %c0 to %c18 step %c1 {
// CHECK:           %[[N:.*]] = arith.divui %[[R]], %c9
// CHECK:           %[[H:.*]] = arith.remui %[[R]], %c9
// CHECK:           scf.for %[[W:.*]] = %c0 to %c48 step %c16 {
// CHECK:             %[[P0:.*]] = vector.load %[[U]][%[[N]], %c0, %[[H]], %[[W]]] : memref<2x3x9x48xf32>, vector<16xf32>
// CHECK:             %[[P1:.*]] = vector.load %[[U]][%[[N]], %c1, %[[H]], %[[W]]]
// CHECK:             %[[P2:.*]] = vector.load %[[U]][%[[N]], %c2, %[[H]], %[[W]]]
// CHECK:             %[[J01:.*]] = vector.shuffle %[[P0]], %[[P1]] [0, 1, {{.*}}, 31] : vector<16xf32>, vector<16xf32>
// CHECK:             %[[J22:.*]] = vector.shuffle %[[P2]], %[[P2]] [0, 1, {{.*}}, 31] : vector<16xf32>, vector<16xf32>
// CHECK:             %[[J:.*]] = vector.shuffle %[[J01]], %[[J22]] [0, 1, {{.*}}, 63] : vector<32xf32>, vector<32xf32>
// CHECK:             %[[M:.*]] = vector.shuffle %[[J]], %[[J]] [0, 16, 32, 1, 17, 33, 2, 18, 34, {{.*}}, 15, 31, 47] : vector<64xf32>, vector<64xf32>
// CHECK:             %[[F:.*]] = arith.muli %[[W]], %c3
// CHECK:             %[[S0:.*]] = vector.extract_strided_slice %[[M]] {offsets = [0], sizes = [16], strides = [1]}
// CHECK:             vector.store %[[S0]], %[[V]][%[[N]], %[[H]], %[[F]]] : memref<2x9x144xf32>, vector<16xf32>
// CHECK-COUNT-2:     vector.store
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func private @__glow_loops_t_0(
// CHECK:         linalg.transpose ins(%{{.*}} : memref<2x197x3x32xf32>) outs(%{{.*}} : memref<2x3x197x32xf32>) permutation = [0, 2, 1, 3]
// CHECK-LABEL: func.func @t(
// CHECK:         call @__glow_kernel0(
// CHECK:         call @__glow_kernel1(
// CHECK:         call @__glow_loops_t_0(
// CHECK:         return
module {
  func.func @t(%arg0: memref<1x32x20x37xf32> {glow.name = "x"}, %arg1: memref<1x20x37x32xf32> {glow.name = "y", glow.output}, %arg2: memref<2x3x9x48xf32> {glow.name = "u"}, %arg3: memref<2x9x48x3xf32> {glow.name = "v", glow.output}, %arg4: memref<2x197x3x32xf32> {glow.name = "p"}, %arg5: memref<2x3x197x32xf32> {glow.name = "q", glow.output}) {
    "glow_ir.transpose"(%arg1, %arg0) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 3, 1>} : (memref<1x20x37x32xf32>, memref<1x32x20x37xf32>) -> ()
    "glow_ir.transpose"(%arg3, %arg2) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 3, 1>} : (memref<2x9x48x3xf32>, memref<2x3x9x48xf32>) -> ()
    "glow_ir.transpose"(%arg5, %arg4) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 1, 3>} : (memref<2x3x197x32xf32>, memref<2x197x3x32xf32>) -> ()
    return
  }
}
