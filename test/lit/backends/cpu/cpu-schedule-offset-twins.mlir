// glow-cpu-schedule merges kernel functions that differ only in the offsets of their views (outline.py:
// `merge_offset_twins`): three exps of one shape writing the channel blocks of a concat, at offsets 0, 8 and
// 16, call one function whose output view takes any offset, each call's view cast to it; a neg of the same
// shape is another kernel, and a function whose views all sit at one offset keeps its static type.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK:       func.func private @[[EXP:__glow_kernel[0-9]+]](%{{.*}}: memref<1x4x4x8xf32>, %{{.*}}: memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: ?>>)
// CHECK:         math.fma
// CHECK-NOT:   func.func private @__glow_kernel{{[0-9]+}}({{.*}}offset: 8
// CHECK-NOT:   func.func private @__glow_kernel{{[0-9]+}}({{.*}}offset: 16
// CHECK:       func.func private @[[NEG:__glow_kernel[0-9]+]](%{{.*}}: memref<1x4x4x8xf32>, %{{.*}}: memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 8>>)
// CHECK-LABEL: func.func @concat(
// CHECK:         %[[V0:.*]] = memref.cast %{{.*}} : memref<1x4x4x8xf32, strided<[384, 96, 24, 1]>> to memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: ?>>
// CHECK-NEXT:    call @[[EXP]](%arg0, %[[V0]])
// CHECK:         %[[V1:.*]] = memref.cast %{{.*}} : memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 8>> to memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: ?>>
// CHECK-NEXT:    call @[[EXP]](%arg1, %[[V1]])
// CHECK:         %[[V2:.*]] = memref.cast %{{.*}} : memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 16>> to memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: ?>>
// CHECK-NEXT:    call @[[EXP]](%arg0, %[[V2]])
// CHECK:         call @[[NEG]](%arg1, %{{.*}})
func.func @concat(%a: memref<1x4x4x8xf32> {glow.name = "a"}, %b: memref<1x4x4x8xf32> {glow.name = "b"},
                  %y: memref<1x4x4x24xf32> {glow.name = "y", glow.output}, %z: memref<1x4x4x24xf32> {glow.name = "z", glow.output}) {
  %v0 = "glow_ir.block_view"(%y) {start = array<i64: 0, 0, 0, 0>} : (memref<1x4x4x24xf32>) -> memref<1x4x4x8xf32, strided<[384, 96, 24, 1]>>
  "glow_ir.element_exp"(%v0, %a) {roles = ["out", "in"]} : (memref<1x4x4x8xf32, strided<[384, 96, 24, 1]>>, memref<1x4x4x8xf32>) -> ()
  %v1 = "glow_ir.block_view"(%y) {start = array<i64: 0, 0, 0, 8>} : (memref<1x4x4x24xf32>) -> memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 8>>
  "glow_ir.element_exp"(%v1, %b) {roles = ["out", "in"]} : (memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 8>>, memref<1x4x4x8xf32>) -> ()
  %v2 = "glow_ir.block_view"(%y) {start = array<i64: 0, 0, 0, 16>} : (memref<1x4x4x24xf32>) -> memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 16>>
  "glow_ir.element_exp"(%v2, %a) {roles = ["out", "in"]} : (memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 16>>, memref<1x4x4x8xf32>) -> ()
  %w1 = "glow_ir.block_view"(%z) {start = array<i64: 0, 0, 0, 8>} : (memref<1x4x4x24xf32>) -> memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 8>>
  "glow_ir.element_neg"(%w1, %b) {roles = ["out", "in"]} : (memref<1x4x4x8xf32, strided<[384, 96, 24, 1], offset: 8>>, memref<1x4x4x8xf32>) -> ()
  return
}
