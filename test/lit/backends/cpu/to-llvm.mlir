// glow-to-llvm takes the output of glow-ir-to-linalg to the LLVM dialect, C interface wrapper included.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-to-llvm)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-to-llvm)' | FileCheck %s --check-prefix=NONE
// NONE-NOT: glow_ir.
// NONE-NOT: linalg.
// NONE-NOT: memref.
// NONE-NOT: scf.

memref.global "private" constant @b : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

// Weights become the bytes of their values (1.0f is 0x3F800000, little-endian), which LLVM emits as one string.
// CHECK: llvm.mlir.global private constant @b(dense<[0, 0, -128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, -128, 64]> : tensor<16xi8>) {{.*}} : !llvm.array<16 x i8>
// CHECK-LABEL: llvm.func @model
// CHECK: llvm.intr.exp
// CHECK-LABEL: llvm.func @_mlir_ciface_model
func.func @model(%x: memref<3x4xf32> {glow.name = "x"}, %y: memref<3x4xf32> {glow.name = "y", glow.output},
                 %arena: memref<64xi8> {glow.arena}) attributes {glow.arena_bytes = 64 : i64} {
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<3x4xf32>
  %b = memref.get_global @b : memref<4xf32>
  "glow_ir.batched_add"(%t, %x, %b) {roles = ["out", "in", "in"]} : (memref<3x4xf32>, memref<3x4xf32>, memref<4xf32>) -> ()
  "glow_ir.element_exp"(%y, %t) {roles = ["out", "in"]} : (memref<3x4xf32>, memref<3x4xf32>) -> ()
  return
}
