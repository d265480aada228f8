"""Step 7: the prediction. The head, the top-k classes, the logit lens, and an occlusion test."""

from vitviz.app import render
from vitviz.steps import prediction

render.page(prediction.describe, "app_pages/7_prediction.py")
