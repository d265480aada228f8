"""The benchmark harness, outside the library: app servers, Chromium, timm and Hugging Face peers.

``python -m benchmarks.bench`` runs it from the root of a clone of the repository; the installed
package does not carry it.
"""
