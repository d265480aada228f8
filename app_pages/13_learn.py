"""Lab: how the ViT learned. Snapshots of one training run, for the session's image: the last
layer's attention, the answer, the position embeddings and the patch filters as they formed."""

from vitviz.app import render
from vitviz.steps import learn

render.page(learn.describe, "app_pages/13_learn.py")
