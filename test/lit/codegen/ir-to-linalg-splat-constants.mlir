// glow-ir-to-linalg takes a constant global of one repeated value (a scalar initializer the importer
// broadcast to an operand's shape) as that scalar in an elementwise body, in any operand position, instead
// of reading a buffer of it per element; a global every reader took so goes, one that an array reader
// still reads (a copy) stays.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s

// CHECK-NOT: memref.global "private" constant @sqrt2
// CHECK-NOT: memref.global "private" constant @one
// CHECK-NOT: memref.global "private" constant @ninf
// CHECK: memref.global "private" constant @half
memref.global "private" constant @sqrt2 : memref<2x8xf32> = dense<1.41421354>
memref.global "private" constant @one : memref<2x8xf32> = dense<1.0>
memref.global "private" constant @half : memref<2x8xf32> = dense<0.5>
memref.global "private" constant @ninf : memref<2x8xf32> = dense<0xFF800000>

// CHECK-LABEL: func.func @gelu_parts
func.func @gelu_parts(%x: memref<2x8xf32> {glow.name = "x"}, %y: memref<2x8xf32> {glow.name = "y", glow.output},
                      %z: memref<2x8xf32> {glow.name = "z", glow.output},
                      %arena: memref<64xi8> {glow.arena}) attributes {glow.arena_bytes = 64 : i64} {
  %c0 = arith.constant 0 : index
  %sqrt2 = memref.get_global @sqrt2 : memref<2x8xf32>
  %one = memref.get_global @one : memref<2x8xf32>
  %half = memref.get_global @half : memref<2x8xf32>
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<2x8xf32>
  // CHECK-NOT: memref.get_global @sqrt2
  // CHECK-NOT: memref.get_global @one
  // CHECK: %[[HALF:.*]] = memref.get_global @half
  // CHECK: linalg.generic {{.*}} ins(%arg0 : memref<2x8xf32>) outs(%{{.*}} : memref<2x8xf32>)
  // CHECK: %[[SQRT2:.*]] = arith.constant 1.41421354 : f32
  // CHECK: arith.divf %{{.*}}, %[[SQRT2]] : f32
  "glow_ir.element_div"(%t, %x, %sqrt2) {roles = ["out", "in", "in"]} : (memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>) -> ()
  // CHECK: linalg.generic {{.*}} ins(%view : memref<2x8xf32>) outs(%arg1 : memref<2x8xf32>)
  // CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
  // CHECK: arith.subf %[[ONE]], %{{.*}} : f32
  "glow_ir.element_sub"(%y, %one, %t) {roles = ["out", "in", "in"]} : (memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>) -> ()
  // CHECK: linalg.generic {{.*}} ins(%arg1 : memref<2x8xf32>) outs(%arg2 : memref<2x8xf32>)
  // CHECK: %[[H:.*]] = arith.constant 5.000000e-01 : f32
  // CHECK: arith.mulf %{{.*}}, %[[H]] : f32
  "glow_ir.element_mul"(%z, %y, %half) {roles = ["out", "in", "in"]} : (memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>) -> ()
  // CHECK: linalg.copy {{.*}} ins(%[[HALF]] : memref<2x8xf32>)
  "glow_ir.copy"(%z, %half) {roles = ["out", "in"]} : (memref<2x8xf32>, memref<2x8xf32>) -> ()
  return
}

// An attention mask's where(mask, scores, -inf): the -inf is a scalar of the select's body.
// CHECK-LABEL: func.func @masked
func.func @masked(%mask: memref<2x8xi1> {glow.name = "mask"}, %x: memref<2x8xf32> {glow.name = "x"},
                  %y: memref<2x8xf32> {glow.name = "y", glow.output}) {
  %ninf = memref.get_global @ninf : memref<2x8xf32>
  // CHECK-NOT: memref.get_global
  // CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : memref<2x8xi1>, memref<2x8xf32>) outs(%arg2 : memref<2x8xf32>)
  // CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
  // CHECK: arith.select %{{.*}}, %{{.*}}, %[[NINF]] : f32
  "glow_ir.element_select"(%y, %mask, %x, %ninf) {roles = ["out", "in", "in", "in"]} : (memref<2x8xf32>, memref<2x8xi1>, memref<2x8xf32>, memref<2x8xf32>) -> ()
  return
}
