"""Encoders: one architecture per file. Encoders never know about objectives or heads."""
