"""The pass catalogue and the pipeline runner: the top of the compiler, above every stage."""
