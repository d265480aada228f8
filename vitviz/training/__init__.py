"""Training: the recipe and its command line (``train``), and the training batches' augmentation."""
