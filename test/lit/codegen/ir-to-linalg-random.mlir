// glow-ir-to-linalg's random_uniform and random_normal (codegen/random.py): each instruction gets a private run
// counter global, bumped atomically as it starts (the value before is this run's), and an unseeded one reads
// the session seed that glow_random_start (called by the runtime at load) writes; then per element, in
// loops over dest, Philox-4x32-10 of (element index, run) under the key: ten rounds of two 32x32->64-bit
// products, then the transform (uniform: top 24 bits scaled into [low, high); normal: Box-Muller in f64).
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s

// Each new global goes first in the module, its name made unique by the symbol table.
// CHECK:         memref.global "private" @glow_random_run_0 : memref<1xi64> = dense<0>
// CHECK:         memref.global "private" @glow_random_run : memref<1xi64> = dense<0>
// CHECK:         memref.global "private" @glow_random_session_seed : memref<1xi64> = dense<0>

// CHECK-LABEL: func.func @draws(
// CHECK:         %[[COUNTER:.*]] = memref.get_global @glow_random_run :
// CHECK:         %[[DRAW:.*]] = memref.atomic_rmw addi %{{.*}}, %[[COUNTER]][%{{.*}}] : (i64, memref<1xi64>) -> i64
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-COUNT-20:    arith.muli %{{.*}} : i64
// CHECK:             arith.shrui %{{.*}} : i32
// CHECK:             arith.uitofp %{{.*}} : i32 to f32
// CHECK:             memref.store %{{.*}}, %arg0[%{{.*}}, %{{.*}}] : memref<4x8xf32>
// CHECK:         memref.get_global @glow_random_run_0
// CHECK:         memref.atomic_rmw addi
// CHECK:         %[[SESSION:.*]] = memref.get_global @glow_random_session_seed
// CHECK:         %[[SEED:.*]] = memref.load %[[SESSION]]
// CHECK:         arith.xori %{{.*}}, %[[SEED]] : i64
// CHECK:         scf.for
// CHECK:           math.log %{{.*}} : f64
// CHECK:           math.cos %{{.*}} : f64
// CHECK:           arith.truncf %{{.*}} : f64 to f32
// CHECK:           memref.store %{{.*}}, %arg1[%{{.*}}] : memref<16xf32>

// The runtime calls it at load: the session seed set, every run counter zeroed.
// CHECK-LABEL: func.func @glow_random_start(
// CHECK-SAME:      %[[S:.*]]: i64)
// CHECK:         %[[SESSION_AT:.*]] = memref.get_global @glow_random_session_seed
// CHECK:         memref.store %[[S]], %[[SESSION_AT]][%{{.*}}] : memref<1xi64>
// CHECK:         %[[FIRST:.*]] = memref.get_global @glow_random_run :
// CHECK:         memref.store %{{.*}}, %[[FIRST]]
// CHECK:         %[[SECOND:.*]] = memref.get_global @glow_random_run_0 :
// CHECK:         memref.store %{{.*}}, %[[SECOND]]
// CHECK:         return
func.func @draws(%u: memref<4x8xf32> {glow.name = "u", glow.output},
                 %n: memref<16xf32> {glow.name = "n", glow.output}) {
  "glow_ir.random_uniform"(%u) {roles = ["out"], low = -1.0 : f32, high = 2.0 : f32, seed = 7 : i64,
                                seeded = true} : (memref<4x8xf32>) -> ()
  "glow_ir.random_normal"(%n) {roles = ["out"], mean = 0.0 : f32, scale = 1.0 : f32, seed = 11 : i64,
                               seeded = false} : (memref<16xf32>) -> ()
  return
}
