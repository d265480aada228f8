"""Step 4: the [CLS] token is prepended and position embeddings are added: (B, N, D) -> (B, N+1, D)."""

from vitviz.app import render
from vitviz.steps import tokens

render.page(tokens.describe, "app_pages/4_tokens.py")
