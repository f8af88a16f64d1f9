// glow-cpu-schedule replaces f32 math.exp by arithmetic (fastmath.py). The exact one applies 2^n in two halves,
// so that results in the subnormal range round once; the sigmoid's e^-|x| is marked `afn` and takes the
// approximate one: 2^n built once from the rounding sum's bits, (bits + 127) << 23, and no halving shift.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-NOT:     math.exp
// CHECK:         scf.for
// CHECK:           math.absf
// CHECK:           arith.negf
// CHECK:           %[[SUM:.*]] = math.fma
// CHECK:           %[[BITS:.*]] = arith.bitcast %[[SUM]] : vector<64xf32> to vector<64xi32>
// CHECK:           %[[BIASED:.*]] = arith.addi %[[BITS]]
// CHECK:           %[[SCALE:.*]] = arith.shli %[[BIASED]]
// CHECK-NOT:       arith.shrsi
// CHECK:           arith.divf
// CHECK:           vector.store
// CHECK-LABEL: func.func @sigmoid(
func.func @sigmoid(%x: memref<4x64xf32> {glow.name = "x"}, %y: memref<4x64xf32> {glow.name = "y", glow.output}) {
  "glow_ir.sigmoid"(%y, %x) {roles = ["out", "in"]} : (memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}

// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK-NOT:     math.exp
// CHECK:         scf.for
// CHECK:           arith.shrsi
// CHECK:           arith.mulf
// CHECK:           vector.store
// CHECK-LABEL: func.func @exp(
func.func @exp(%x: memref<4x64xf32> {glow.name = "x"}, %y: memref<4x64xf32> {glow.name = "y", glow.output}) {
  "glow_ir.element_exp"(%y, %x) {roles = ["out", "in"]} : (memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}
