"""Step 8: the ViT beside a CNN on the same image: both answers, where each looked, how far each
looks layer by layer, and experiments that show what each needs."""

from vitviz.app import render
from vitviz.steps import compare

render.page(compare.describe, "app_pages/8_compare.py")
