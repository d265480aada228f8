"""Lab: the map of the test set. Every test image's [CLS] token (or mean patch token) after a
chosen layer, projected to 2D; a click on a point shows the image and opens it in the tour."""

from vitviz.app import current, render
from vitviz.steps import testset

render.page(testset.describe, "app_pages/12_map.py", current.model_subject)
