// glow-ir-to-linalg on the instructions for ONNX coverage and on element types other than f32: each picks
// its arith op from the element type; erf becomes arithmetic; scatter and search shapes become scf loops.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=NONE
// NONE-NOT: glow_ir.
// NONE-NOT: memref.alloc(
// NONE-NOT: math.erf

// CHECK-LABEL: func.func @integers
func.func @integers(%a: memref<2x3xi32> {glow.name = "a"}, %b: memref<2x3xi32> {glow.name = "b"},
                    %m: memref<3x4xi32> {glow.name = "m"},
                    %y: memref<2x3xi32> {glow.name = "y", glow.output}, %z: memref<2x4xi32> {glow.name = "z", glow.output},
                    %arena: memref<0xi8> {glow.arena}) attributes {glow.arena_bytes = 0 : i64} {
  // CHECK: arith.addi
  "glow_ir.element_add"(%y, %a, %b) {roles = ["out", "in", "in"]} : (memref<2x3xi32>, memref<2x3xi32>, memref<2x3xi32>) -> ()
  // CHECK: arith.subi
  "glow_ir.element_sub"(%y, %y, %b) {roles = ["out", "in", "in"]} : (memref<2x3xi32>, memref<2x3xi32>, memref<2x3xi32>) -> ()
  // CHECK: arith.muli
  "glow_ir.element_mul"(%y, %y, %b) {roles = ["out", "in", "in"]} : (memref<2x3xi32>, memref<2x3xi32>, memref<2x3xi32>) -> ()
  // CHECK: arith.divsi
  "glow_ir.element_div"(%y, %y, %b) {roles = ["out", "in", "in"]} : (memref<2x3xi32>, memref<2x3xi32>, memref<2x3xi32>) -> ()
  // CHECK: arith.maxsi
  "glow_ir.element_max"(%y, %y, %b) {roles = ["out", "in", "in"]} : (memref<2x3xi32>, memref<2x3xi32>, memref<2x3xi32>) -> ()
  // CHECK: arith.minsi
  "glow_ir.element_min"(%y, %y, %b) {roles = ["out", "in", "in"]} : (memref<2x3xi32>, memref<2x3xi32>, memref<2x3xi32>) -> ()
  // CHECK: math.absi
  "glow_ir.element_abs"(%y, %y) {roles = ["out", "in"]} : (memref<2x3xi32>, memref<2x3xi32>) -> ()
  // CHECK: %[[SEVEN:.*]] = arith.constant -7 : i32
  // CHECK: linalg.fill ins(%[[SEVEN]] : i32) outs(%{{.*}} : memref<2x3xi32>)
  "glow_ir.splat"(%y) {roles = ["out"], value = -7 : i32} : (memref<2x3xi32>) -> ()
  // CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
  // CHECK: linalg.fill ins(%[[ZERO]] : i32)
  // CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<2x3xi32>, memref<3x4xi32>)
  "glow_ir.matmul"(%z, %a, %m) {roles = ["out", "in", "in"]} : (memref<2x4xi32>, memref<2x3xi32>, memref<3x4xi32>) -> ()
  return
}

// CHECK-LABEL: func.func @conversions_and_logic
func.func @conversions_and_logic(%f: memref<4xf32> {glow.name = "f"}, %d: memref<4xf64> {glow.name = "d"},
                                 %m: memref<4xi1> {glow.name = "m"},
                                 %i: memref<4xi64> {glow.name = "i", glow.output}, %h: memref<4xf16> {glow.name = "h", glow.output},
                                 %c: memref<4xi1> {glow.name = "c", glow.output}, %g: memref<4xf32> {glow.name = "g", glow.output},
                                 %arena: memref<0xi8> {glow.arena}) attributes {glow.arena_bytes = 0 : i64} {
  // Float to integer truncates toward zero.
  // CHECK: arith.fptosi %{{.*}} : f32 to i64
  "glow_ir.convert_to"(%i, %f) {roles = ["out", "in"]} : (memref<4xi64>, memref<4xf32>) -> ()
  // f64 to f16 rounds to f32 to odd first, then to f16.
  // CHECK: arith.truncf %{{.*}} : f64 to f32
  // CHECK: arith.bitcast
  // CHECK: arith.truncf %{{.*}} : f32 to f16
  "glow_ir.convert_to"(%h, %d) {roles = ["out", "in"]} : (memref<4xf16>, memref<4xf64>) -> ()
  // x -> i1 is x != 0, true for NaN.
  // CHECK: arith.cmpf une
  "glow_ir.convert_to"(%c, %f) {roles = ["out", "in"]} : (memref<4xi1>, memref<4xf32>) -> ()
  // i1 -> x is 0 or 1, an unsigned conversion.
  // CHECK: arith.uitofp %{{.*}} : i1 to f32
  "glow_ir.convert_to"(%g, %m) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xi1>) -> ()
  // CHECK: arith.cmpf oeq
  "glow_ir.element_cmp_eq"(%c, %f, %g) {roles = ["out", "in", "in"]} : (memref<4xi1>, memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: arith.cmpf une
  "glow_ir.element_cmp_neq"(%c, %f, %g) {roles = ["out", "in", "in"]} : (memref<4xi1>, memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: arith.cmpi slt
  "glow_ir.element_cmp_lt"(%c, %i, %i) {roles = ["out", "in", "in"]} : (memref<4xi1>, memref<4xi64>, memref<4xi64>) -> ()
  // CHECK: arith.cmpf ole
  "glow_ir.element_cmp_lte"(%c, %f, %g) {roles = ["out", "in", "in"]} : (memref<4xi1>, memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: arith.andi %{{.*}} : i1
  "glow_ir.element_and"(%c, %c, %m) {roles = ["out", "in", "in"]} : (memref<4xi1>, memref<4xi1>, memref<4xi1>) -> ()
  // CHECK: %[[TRUE:.*]] = arith.constant true
  // CHECK: arith.xori %{{.*}}, %[[TRUE]] : i1
  "glow_ir.element_not"(%c, %c) {roles = ["out", "in"]} : (memref<4xi1>, memref<4xi1>) -> ()
  // CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
  "glow_ir.element_select"(%g, %c, %f, %g) {roles = ["out", "in", "in", "in"]} : (memref<4xf32>, memref<4xi1>, memref<4xf32>, memref<4xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @math
func.func @math(%f: memref<4xf32> {glow.name = "f"}, %g: memref<4xf32> {glow.name = "g", glow.output},
                %arena: memref<0xi8> {glow.arena}) attributes {glow.arena_bytes = 0 : i64} {
  // CHECK: math.powf
  "glow_ir.element_pow"(%g, %f, %f) {roles = ["out", "in", "in"]} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: math.log
  "glow_ir.element_log"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: arith.negf
  "glow_ir.element_neg"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: math.floor
  "glow_ir.element_floor"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: math.ceil
  "glow_ir.element_ceil"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: math.roundeven
  "glow_ir.element_round"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  // f32 erf: a rational function in f32 of x clamped to [-4, 4] (opdefs/scalar.erf_f32), no f64, no exp.
  // CHECK: arith.cmpf ule
  // CHECK: math.fma
  // CHECK: arith.divf
  // CHECK-NOT: f64
  "glow_ir.element_erf"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: math.sin
  "glow_ir.element_sin"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: math.cos
  "glow_ir.element_cos"(%g, %g) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  return
}

memref.global "private" constant @w : memref<2x3x2x2xf32> = dense<0.5>
memref.global "private" constant @bias : memref<3xf32> = dense<0.25>

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: memref<2x5x3xf32> {glow.name = "x"}, %k: memref<4xi32> {glow.name = "k"},
                  %p: memref<1x2x2x2xf32> {glow.name = "p"}, %l: memref<2x3x4xi64> {glow.name = "l"},
                  %r: memref<2x3xi64> {glow.name = "r"},
                  %gy: memref<2x4x3xf32> {glow.name = "gy", glow.output}, %sy: memref<5xf32> {glow.name = "sy", glow.output},
                  %my: memref<2x3xi64> {glow.name = "my", glow.output}, %ay: memref<2x1x4xi64> {glow.name = "ay", glow.output},
                  %by: memref<2x3x3xi64> {glow.name = "by", glow.output}, %cy: memref<1x3x4x4xf32> {glow.name = "cy", glow.output},
                  %arena: memref<0xi8> {glow.arena}) attributes {glow.arena_bytes = 0 : i64} {
  // Gather reads data at the wrapped index clamped into [0, 5) (out of range: the nearest row, never memory past
  // the buffer): linalg.index for the other dims, a load for the gathered one.
  // CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<4xi32>) outs(%{{.*}} : memref<2x4x3xf32>)
  // CHECK: linalg.index 0 : index
  // CHECK: linalg.index 2 : index
  // CHECK: arith.cmpi slt
  // CHECK: arith.select
  // CHECK: arith.maxsi
  // CHECK: arith.minsi
  // CHECK: arith.index_cast %{{.*}} : i32 to index
  // CHECK: memref.load
  "glow_ir.gather"(%gy, %x, %k) {roles = ["out", "in", "in"], axis = 1 : i64} : (memref<2x4x3xf32>, memref<2x5x3xf32>, memref<4xi32>) -> ()
  // A sum starts from 0 and reduces over the listed axes.
  // CHECK: linalg.fill
  // CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]
  // CHECK: arith.addf
  "glow_ir.batched_reduce_add"(%sy, %x) {roles = ["out", "in"], axes = array<i64: 0, 2>} : (memref<5xf32>, memref<2x5x3xf32>) -> ()
  // An integer max starts from the smallest i64.
  // CHECK: arith.constant -9223372036854775808 : i64
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
  // CHECK: arith.maxsi
  "glow_ir.batched_reduce_max"(%my, %l) {roles = ["out", "in"], axes = array<i64: 2>} : (memref<2x3xi64>, memref<2x3x4xi64>) -> ()
  // arg_max carries the best values and their indices through a loop along the axis, here a masked vector of
  // the 4 outputs along the innermost dim (ir-to-linalg-arg-search.mlir has the forms).
  // CHECK: vector.constant_mask [4] : vector<8xi1>
  // CHECK: scf.for {{.*}} iter_args
  // CHECK: arith.cmpi sgt, %{{.*}} : vector<8xi64>
  // CHECK: vector.maskedstore
  "glow_ir.arg_max"(%ay, %l) {roles = ["out", "in"], axis = 1 : i64, keepDims = true} : (memref<2x1x4xi64>, memref<2x3x4xi64>) -> ()
  // CHECK: linalg.batch_matmul
  %rv = "glow_ir.tensor_view"(%r) : (memref<2x3xi64>) -> memref<2x3x1xi64>
  %rt = "glow_ir.tensor_view"(%r) : (memref<2x3xi64>) -> memref<2x1x3xi64>
  "glow_ir.batch_matmul"(%by, %rv, %rt) {roles = ["out", "in", "in"]} : (memref<2x3x3xi64>, memref<2x3x1xi64>, memref<2x1x3xi64>) -> ()
  // conv_transpose: the bias broadcast, then each input element scattered over a window.
  // CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<3xf32>) outs(%{{.*}} : memref<1x3x4x4xf32>)
  // CHECK: scf.for
  // CHECK: memref.load %{{.*}} : memref<1x2x2x2xf32>
  // CHECK: scf.for
  // CHECK: arith.mulf
  // CHECK: arith.addf
  // CHECK: memref.store %{{.*}} : memref<1x3x4x4xf32>
  %w = memref.get_global @w : memref<2x3x2x2xf32>
  %b = memref.get_global @bias : memref<3xf32>
  "glow_ir.conv_transpose"(%cy, %p, %w, %b) {roles = ["out", "in", "in", "in"], kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, group = 1 : i64, dilation = array<i64: 1, 1>} : (memref<1x3x4x4xf32>, memref<1x2x2x2xf32>, memref<2x3x2x2xf32>, memref<3xf32>) -> ()
  return
}
