// --verify-diagnostics fails, naming each mismatch, when an expectation is not met or a diagnostic was not
// expected; one chunk's mismatches do not hide another's.
// RUN: not glow-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// An expectation that nothing meets.
func.func @fine(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: verify-diagnostics-errors.mlir:[[@LINE+1]]: error: expected error "must be i1" was not produced
  // expected-error @+1 {{must be i1}}
  %0 = "glow.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A diagnostic that nothing expects.
func.func @unexpected(%c: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+1]]:8: error: unexpected error: 'glow.select' cond must be i1, got f32
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The right text on the wrong line: both the diagnostic and the expectation are reported.
func.func @wrong_line(%c: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+3]]:8: error: unexpected error: 'glow.select' cond must be i1
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+1]]: error: expected error "cond must be i1" was not produced
  // expected-error @+2 {{cond must be i1}}
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A text that is not part of the message, and a warning expected where an error comes.
func.func @wrong_text(%c: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+5]]:8: error: unexpected error: 'glow.select' cond must be i1
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+1]]: error: expected error "cond must be i32" was not produced
  // expected-error @+3 {{cond must be i32}}
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+1]]: error: expected warning "cond must be i1" was not produced
  // expected-warning @+1 {{cond must be i1}}
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An op located by a node name has no line to match: its error is unexpected, and names the node.
func.func @named(%c: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: where1: error: unexpected error: 'glow.select' cond must be i1, got f32
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+1]]: error: expected error "cond must be i1" was not produced
  // expected-error @+1 {{cond must be i1}}
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("where1")
  return %0 : tensor<4xf32>
}

// -----

// An unexpected parse error.
func.func @missing_operand() -> tensor<2xf32> {
  // CHECK-NEXT: verify-diagnostics-errors.mlir:[[@LINE+1]]:8: error: unexpected error: op expects exactly 1 operands, but got 0
  %0 = "glow.relu"() : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
// CHECK-NOT: error
