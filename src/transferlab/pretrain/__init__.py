"""pretrain stage."""
