"""Graph- and IR-level passes; `registry` holds them all, `pipeline` runs them."""
