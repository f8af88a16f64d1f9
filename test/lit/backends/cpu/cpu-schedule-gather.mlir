// glow-ir-to-linalg lowers a gather to a linalg.generic that loads one element per iteration through its index,
// marked with its axis; glow-cpu-schedule replaces it with gather_recipes.py's kernel.
// @rows (axis 1 of [2, 8, 40] by 5 indices): per output row its index loaded once, its sign fixed, clamped into
// the data (an index out of range reads the nearest row), and the row of 40 floats copied as two vectors and a
// masked one.
// @columns (axis 1, the last, of [4, 10] by 20 indices): per row, vectors of 16 indices, their signs fixed, clamped,
// one vector.gather each; the row's last 4 masked.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=LINALG
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// LINALG-LABEL: func.func @rows(
// LINALG:         linalg.generic {{.*}} attrs = {glow.gather_axis = 1 : i64}

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[I:[^:]*]]: memref<5xi64>, %[[X:[^:]*]]: memref<2x8x40xf32>, %[[Y:[^:]*]]: memref<2x5x40xf32>
// CHECK:         scf.for %[[N:.*]] = %c0 to %c2 step %c1 {
// CHECK:           scf.for %[[J:.*]] = %c0 to %c5 step %c1 {
// CHECK:             %[[RAW:.*]] = memref.load %[[I]][%[[J]]] : memref<5xi64>
// CHECK:             arith.cmpi slt, %[[RAW]]
// CHECK:             arith.maxsi
// CHECK:             arith.minsi
// CHECK:             %[[ROW:.*]] = arith.index_cast
// CHECK:             scf.for %[[P:.*]] = %c0 to %c32 step %c16 {
// CHECK:               %[[V:.*]] = vector.load %[[X]][%[[N]], %[[ROW]], %[[P]]] : memref<2x8x40xf32>, vector<16xf32>
// CHECK:               vector.store %[[V]], %[[Y]][%[[N]], %[[J]], %[[P]]]
// CHECK:             vector.maskedload %[[X]][%[[N]], %[[ROW]], %c32]
// CHECK:             vector.maskedstore %[[Y]][%[[N]], %[[J]], %c32]
// CHECK-NOT:   memref.load %[[X]]

// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK-SAME:    %[[I:[^:]*]]: memref<20xi32>, %[[X:[^:]*]]: memref<4x10xf32>, %[[Y:[^:]*]]: memref<4x20xf32>
// CHECK:         scf.for %[[R:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %[[IV:.*]] = vector.load %[[I]][%c0] : memref<20xi32>, vector<16xi32>
// CHECK:           arith.cmpi slt, %[[IV]]
// CHECK:           arith.minsi {{.*}} : vector<16xi32>
// CHECK:           vector.gather %[[X]][%[[R]], %c0] [%{{.*}}], %{{.*}}, %{{.*}} : memref<4x10xf32>, vector<16xi32>
// CHECK:           vector.store %{{.*}}, %[[Y]][%[[R]], %c0]
// CHECK:           vector.maskedload %[[I]][%c16]
// CHECK:           vector.gather %[[X]][%[[R]], %c0]
// CHECK:           vector.maskedstore %[[Y]][%[[R]], %c16]

module {
  func.func @rows(%x: memref<2x8x40xf32> {glow.name = "x"}, %i: memref<5xi64> {glow.name = "i"}, %y: memref<2x5x40xf32> {glow.name = "y", glow.output}) {
    "glow_ir.gather"(%y, %x, %i) {roles = ["out", "in", "in"], axis = 1 : i64} : (memref<2x5x40xf32>, memref<2x8x40xf32>, memref<5xi64>) -> ()
    return
  }
  func.func @columns(%x: memref<4x10xf32> {glow.name = "x"}, %i: memref<20xi32> {glow.name = "i"}, %y: memref<4x20xf32> {glow.name = "y", glow.output}) {
    "glow_ir.gather"(%y, %x, %i) {roles = ["out", "in", "in"], axis = 1 : i64} : (memref<4x20xf32>, memref<4x10xf32>, memref<20xi32>) -> ()
    return
  }
}
