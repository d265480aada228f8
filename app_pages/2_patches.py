"""Step 2: the image cut into a P x P patch grid: N = H W / P^2 patches."""

from vitviz.app import render
from vitviz.steps import patches

render.page(patches.describe, "app_pages/2_patches.py")
