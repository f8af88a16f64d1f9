// --split-input-file: each chunk runs on its own and prints its output, chunks separated by `// -----`. A bad
// chunk prints its errors at lines of the whole file, prints no output, and stops no other chunk; the exit
// status says that one failed.
// RUN: not glow-opt %s --split-input-file --pass-pipeline='builtin.module(glow-dce,glow-verify)' > %t.out 2> %t.err
// RUN: FileCheck %s --check-prefix=OUT --input-file=%t.out
// RUN: FileCheck %s --check-prefix=ERR --input-file=%t.err

// OUT-LABEL: func.func @first
// OUT-NOT: glow.relu
// OUT: glow.sigmoid
func.func @first(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %dead = "glow.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "glow.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A verifier error, in a fresh module: @first is not in it.
// OUT: // -----
// OUT-NEXT: // -----
func.func @bad_matmul(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // ERR: split-input-file.mlir:[[@LINE+1]]:8: error: 'glow.matmul'
  %0 = "glow.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// A parse error.
// OUT-NEXT: // -----
func.func @bad_parse() -> tensor<2xf32> {
  // ERR-NEXT: split-input-file.mlir:[[@LINE+1]]:8: error: op expects exactly 1 operands, but got 0
  %0 = "glow.relu"() : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// OUT-NOT: @first
// OUT-NOT: @bad
// OUT-LABEL: func.func @last
// OUT-NOT: glow.relu
// OUT: glow.tanh
// OUT-NOT: // -----
func.func @last(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %dead = "glow.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "glow.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
