"""Step 5: self-attention. Where [CLS] and any patch look, every head, rollout, distance, one worked query."""

from vitviz.app import render
from vitviz.steps import attention

render.page(attention.describe, "app_pages/5_attention.py")
