"""adapt stage."""
