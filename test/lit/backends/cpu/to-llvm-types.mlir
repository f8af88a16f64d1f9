// glow-to-llvm on bool and f16 buffers, and erf: bool elements are bytes (MLIR's memref lowering cannot load
// an i1), f16 math runs in f32, and nothing is left for the JIT to resolve but LLVM intrinsics.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-to-llvm)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-to-llvm)' | FileCheck %s --check-prefix=NONE
// NONE-NOT: glow_ir.
// NONE-NOT: memref.
// NONE-NOT: math.
// NONE-NOT: unrealized_conversion_cast
// NONE-NOT: f64
// NONE-NOT: llvm.load {{.*}} -> i1
// NONE-NOT: llvm.store {{.*}} : i1,

memref.global "private" constant @mask : memref<4xi1> = dense<[true, false, false, true]>

// CHECK-LABEL: llvm.func @model
// A bool is read as a byte and truncated, combined, and written back as a byte.
// CHECK: %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i8
// CHECK: llvm.trunc %[[B]] : i8 to i1
// CHECK: llvm.xor
// CHECK: %[[W:.*]] = llvm.zext %{{.*}} : i1 to i8
// CHECK: llvm.store %[[W]], %{{.*}} : i8, !llvm.ptr
// f16 sine: extended to f32, computed there, truncated back.
// CHECK: llvm.fpext %{{.*}} : f16 to f32
// CHECK: llvm.intr.sin(%{{.*}}) : (f32) -> f32
// CHECK: llvm.fptrunc %{{.*}} : f32 to f16
// f32 erf is a rational function in f32 (Horner fmas, one division): no f64, no exp.
// CHECK: llvm.intr.fma(%{{.*}}) : (f32, f32, f32) -> f32
// CHECK: llvm.fdiv %{{.*}} : f32
// CHECK-LABEL: llvm.func @_mlir_ciface_model
func.func @model(%m: memref<4xi1> {glow.name = "m"}, %h: memref<4xf16> {glow.name = "h"},
                 %x: memref<4xf32> {glow.name = "x"},
                 %y: memref<4xi1> {glow.name = "y", glow.output}, %s: memref<4xf16> {glow.name = "s", glow.output},
                 %e: memref<4xf32> {glow.name = "e", glow.output},
                 %arena: memref<0xi8> {glow.arena}) attributes {glow.arena_bytes = 0 : i64} {
  %k = memref.get_global @mask : memref<4xi1>
  "glow_ir.element_xor"(%y, %m, %k) {roles = ["out", "in", "in"]} : (memref<4xi1>, memref<4xi1>, memref<4xi1>) -> ()
  "glow_ir.element_sin"(%s, %h) {roles = ["out", "in"]} : (memref<4xf16>, memref<4xf16>) -> ()
  "glow_ir.element_erf"(%e, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  return
}
