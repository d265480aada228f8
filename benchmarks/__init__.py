"""The benchmark harness, outside the library: app servers, Chromium, timm and Hugging Face peers.

``python -m vitviz.bench`` (or ``python -m benchmarks.bench``) runs it from a clone of the repository.
"""
