// A tensor_view reinterprets its source's elements, so both hold as many.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: view: error: 'glow_ir.tensor_view' view [7] must have as many elements as its source [2, 3]
func.func @view(%a: memref<2x3xf32> {glow.name = "a"}) {
  %0 = "glow_ir.tensor_view"(%a) : (memref<2x3xf32>) -> memref<7xf32> loc("view")
  return
}
