"""Step 9: the model card: architecture, parameter counts, training and where it came from."""

from vitviz.app import current, render
from vitviz.steps import card

render.page(card.describe, "app_pages/9_card.py", current.model_subject, shared=True)
