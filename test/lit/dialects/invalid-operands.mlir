// RUN: not glow-opt %s 2>&1 | FileCheck %s

func.func @missing_operand() -> tensor<2xf32> {
  // CHECK: invalid-operands.mlir:[[@LINE+1]]:8: error: op expects exactly 1 operands, but got 0
  %0 = "glow.relu"() : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
