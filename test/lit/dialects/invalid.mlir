// Invalid IR is rejected when parsed, with an error at the op that breaks its IRDL definition: the
// constraint broken, or the operand count.
// RUN: glow-opt %s --split-input-file --verify-diagnostics

func.func @wrong_role(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %c: memref<2x4xf32>) {
  // expected-error @+1 {{expected '["out", "in", "in"]' but got '["in", "in", "in"]'}}
  "glow_ir.matmul"(%c, %a, %b) {roles = ["in", "in", "in"]} : (memref<2x4xf32>, memref<2x3xf32>, memref<3x4xf32>) -> ()
  return
}

// -----

func.func @missing_operand() -> tensor<2xf32> {
  // expected-error @+1 {{op expects exactly 1 operands, but got 0}}
  %0 = "glow.relu"() : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
