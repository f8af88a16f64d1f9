// glow-cpu-schedule replaces an f32 math.powf (LLVM's powf call per element, even in vector code) with
// arithmetic (fastmath.pow_): |a|^b = e^(b ln|a|) in f64, ln by atanh's odd series after splitting off the
// exponent, exp by 2^n and a Taylor polynomial, rounded once to f32, then powf's cases by selects (a negative a
// with an odd integer b, zeros, infinities, NaN).
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-NOT:     math.powf
// CHECK:         %[[A:.*]] = vector.load %arg0
// CHECK:         %[[B:.*]] = vector.load %arg1
// CHECK:         %[[MAG:.*]] = math.absf %[[A]]
// CHECK:         arith.extf %[[MAG]] : vector<64xf32> to vector<64xf64>
// CHECK:         arith.divf %{{.*}} : vector<64xf64>
// CHECK:         math.roundeven %{{.*}} : vector<64xf64>
// CHECK:         arith.truncf %{{.*}} : vector<64xf64> to vector<64xf32>
// CHECK:         math.floor %[[B]] : vector<64xf32>
// CHECK:         math.copysign
// CHECK:         vector.store %{{.*}}, %arg2
// CHECK-NOT:     math.powf
func.func @pow(%a: memref<4x64xf32> {glow.name = "a"}, %b: memref<4x64xf32> {glow.name = "b"}, %y: memref<4x64xf32> {glow.name = "y", glow.output}) {
  "glow_ir.element_pow"(%y, %a, %b) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}
