"""The model and its trace: the ViT, its configuration and input, what one forward pass
records, other formats in, the zoo of weights on disk, the CNN beside it."""
