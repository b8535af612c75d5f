"""text stage."""
