"""Raw files -> examples (strings, no tensors); the data catalog."""
