"""Step 3: one patch as a vector of P*P*C numbers, and its linear projection to a D-dim token."""

from vitviz.app import render
from vitviz.steps import vectors

render.page(vectors.describe, "app_pages/3_vectors.py")
