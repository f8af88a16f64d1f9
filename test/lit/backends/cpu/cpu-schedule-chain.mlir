// glow-cpu-schedule runs an elementwise chain in place on one buffer (an add, then a ReLU as max with a
// splat, as glow-ir-share-buffers leaves ResNet's shortcut) as one loop nest: one kernel reads the add's
// operands and the splat and stores each vector once, instead of two passes over the buffer.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK:         scf.for
// CHECK:           %[[A:.*]] = vector.load
// CHECK:           %[[B:.*]] = vector.load
// CHECK:           %[[SUM:.*]] = arith.addf %[[A]], %[[B]]
// CHECK:           %[[Z:.*]] = vector.load
// CHECK:           arith.maximumf %[[SUM]], %[[Z]]
// CHECK:           vector.store
// CHECK-NOT:       vector.store
// CHECK-NOT:   func.func private @__glow_kernel1(
// CHECK-LABEL: func.func @add_relu(
// CHECK:         call @__glow_kernel0(
// CHECK-NOT:     call
// CHECK:         return
func.func @add_relu(%a: memref<4x64xf32> {glow.name = "a"}, %b: memref<4x64xf32> {glow.name = "b"}, %z: memref<4x64xf32> {glow.name = "z"}, %y: memref<4x64xf32> {glow.name = "y", glow.output}) {
  "glow_ir.element_add"(%y, %a, %b) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  "glow_ir.element_max"(%y, %y, %z) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}

// The add itself in place on one of its operands (the shortcut dies there): the chain still runs in that
// buffer, reading it once per element, with no buffer of its own.
// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK:           vector.store
// CHECK-NOT:       vector.store
// CHECK-NOT:     memref.copy
// CHECK:         return
func.func @add_relu_in_place(%b: memref<4x64xf32> {glow.name = "b"}, %z: memref<4x64xf32> {glow.name = "z"}, %y: memref<4x64xf32> {glow.name = "y", glow.output}) {
  "glow_ir.element_exp"(%y, %b) {roles = ["out", "in"]} : (memref<4x64xf32>, memref<4x64xf32>) -> ()
  "glow_ir.element_add"(%y, %y, %b) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  "glow_ir.element_max"(%y, %y, %z) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}

// Views and constants between two links of the chain (glow-irgen puts the next buffer's view and the ReLU's
// zero there) touch no memory: the add and the ReLU still run as one loop nest, the very kernel of @add_relu
// (one call of @__glow_kernel0, where two kernels of their own had run).
// CHECK-LABEL: func.func @add_view_relu(
// CHECK:         call @__glow_kernel0(
// CHECK-NOT:     call
// CHECK:         return
// CHECK-NOT:   func.func private @__glow_kernel
func.func @add_view_relu(%a: memref<4x64xf32> {glow.name = "a"}, %b: memref<4x64xf32> {glow.name = "b"}, %z: memref<4x64xf32> {glow.name = "z"}, %y: memref<4x64xf32> {glow.name = "y", glow.output}, %w: memref<8x64xf32> {glow.name = "w"}) {
  "glow_ir.element_add"(%y, %a, %b) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  %zero = arith.constant 0.000000e+00 : f32
  %next = memref.subview %w[4, 0] [4, 64] [1, 1] : memref<8x64xf32> to memref<4x64xf32, strided<[64, 1], offset: 256>>
  "glow_ir.element_max"(%y, %y, %z) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}

// x * sigmoid(x) on an x that stays live (a graph input): the sigmoid's temporary, a view of the arena that the
// mul alone reads, is never written. The sigmoid writes the mul's output and the mul reads it there in place,
// so the two run as one loop nest: x loaded once, one store per vector, no kernel of the sigmoid's own
// (kernel 2 is numbered for @add_view_relu and merged with kernel 0).
// CHECK-LABEL: func.func private @__glow_kernel3(
// CHECK:         scf.for
// CHECK:           vector.load
// CHECK-NOT:       vector.load
// CHECK:           arith.divf
// CHECK:           arith.mulf
// CHECK:           vector.store
// CHECK-NOT:       vector.store
// CHECK-LABEL: func.func @silu(
// CHECK:         call @__glow_kernel3(
// CHECK-NOT:     call
// CHECK:         return
func.func @silu(%x: memref<4x64xf32> {glow.name = "x"}, %arena: memref<1024xi8>, %y: memref<4x64xf32> {glow.name = "y", glow.output}) {
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<1024xi8> to memref<4x64xf32>
  "glow_ir.sigmoid"(%t, %x) {roles = ["out", "in"]} : (memref<4x64xf32>, memref<4x64xf32>) -> ()
  "glow_ir.element_mul"(%y, %x, %t) {roles = ["out", "in", "in"]} : (memref<4x64xf32>, memref<4x64xf32>, memref<4x64xf32>) -> ()
  return
}
