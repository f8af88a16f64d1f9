// --verify-diagnostics: every diagnostic matches an expectation on its line, whichever way the comment names
// the line, and the run then succeeds and prints the chunks that passed.
// RUN: glow-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(glow-verify)' | FileCheck %s

// CHECK-LABEL: func.func @fine
func.func @fine(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %0 = "glow.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// On the same line, and a substring of the message.
func.func @same_line(%c: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> // expected-error {{cond must be i1}}
  return %0 : tensor<4xf32>
}

// -----

func.func @minus(%c: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @-1 {{'glow.select' cond must be i1, got f32}}
  return %0 : tensor<4xf32>
}

// -----

func.func @above(%c: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error@above {{cond must be i1}}
  return %0 : tensor<4xf32>
}

// -----

func.func @below(%c: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@below {{cond must be i1}}
  %0 = "glow.select"(%c, %c, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A parse error, without the note that prints the op.
func.func @missing_operand() -> tensor<2xf32> {
  // expected-error @+1 {{op expects exactly 1 operands, but got 0}}
  %0 = "glow.relu"() : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: // -----
// CHECK-LABEL: func.func @last
func.func @last(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %0 = "glow.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
