"""What is computed from a model and its trace (attention distances, the comparison with a
CNN, the test set's analyses stored beside the weights) and ``claims``, the sentences that state
what those numbers show."""
