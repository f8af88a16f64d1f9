// glow-cpu-schedule keeps one function per distinct kernel (outline.py: `Outlined`): two adds of the same
// shapes, on other buffers, call one kernel function, scheduled once; an add of another shape has its own.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK:         vector.load
// CHECK-NOT:   func.func private @__glow_kernel1(
// CHECK-LABEL: func.func private @__glow_kernel2(
// CHECK:         vector.load
// CHECK-LABEL: func.func @adds(
// CHECK:         call @__glow_kernel0(%arg0, %arg1, %arg3)
// CHECK:         call @__glow_kernel0(%arg1, %arg0, %arg4)
// CHECK:         call @__glow_kernel2(%arg2, %arg5)
// CHECK:         return
func.func @adds(%a: memref<4x64xf32> {glow.name = "a"}, %b: memref<4x64xf32> {glow.name = "b"},
                %c: memref<8x64xf32> {glow.name = "c"}, %y: memref<4x64xf32> {glow.name = "y", glow.output},
                %z: memref<4x64xf32> {glow.name = "z", glow.output}, %w: memref<8x64xf32> {glow.name = "w", glow.output}) {
  "glow_ir.element_add"(%y, %a, %b) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  "glow_ir.element_add"(%z, %b, %a) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  "glow_ir.element_add"(%w, %c, %c) {roles = ["out", "in", "in"]} : (memref<8x64xf32>, memref<8x64xf32>, memref<8x64xf32>) -> ()
  return
}
