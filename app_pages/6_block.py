"""Step 6: the encoder block. pre-LN -> MHSA -> residual -> pre-LN -> MLP (GELU) -> residual."""

from vitviz.app import render
from vitviz.steps import block

render.page(block.describe, "app_pages/6_block.py")
