"""vectors stage."""
