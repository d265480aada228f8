"""Step 1: from the photo to the model's input tensor, using the model's own preprocessing."""

from vitviz.app import render
from vitviz.steps import model_input

render.page(model_input.describe, "app_pages/1_input.py")
