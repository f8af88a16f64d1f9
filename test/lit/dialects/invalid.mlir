// Invalid IR is rejected with a located error: file:line:col, the constraint broken.
// RUN: not glow-opt %s 2>&1 | FileCheck %s

func.func @wrong_role(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %c: memref<2x4xf32>) {
  // CHECK: invalid.mlir:[[@LINE+1]]:3: error: expected '["out", "in", "in"]' but got '["in", "in", "in"]'
  "glow_ir.matmul"(%c, %a, %b) {roles = ["in", "in", "in"]} : (memref<2x4xf32>, memref<2x3xf32>, memref<3x4xf32>) -> ()
  return
}
