"""vitviz: see inside a Vision Transformer, one step of the forward pass at a time."""

from vitviz.config import Preprocess, ViTConfig
from vitviz.model import VisionTransformer
from vitviz.trace import BlockTrace, Trace

__all__ = ["BlockTrace", "Preprocess", "Trace", "ViTConfig", "VisionTransformer"]
