"""recipes stage."""
