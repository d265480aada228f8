"""vitviz: see inside a Vision Transformer, one step of the forward pass at a time.

The names below load on first use (PEP 562), so ``import vitviz.app`` or ``vitviz.app.tour`` does not
load torch: a server imports them to start answering browsers while torch loads beside it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vitviz.models.config import Preprocess, ViTConfig
    from vitviz.models.model import VisionTransformer
    from vitviz.models.trace import BlockTrace, Trace

_HOMES = {
    "BlockTrace": "vitviz.models.trace",
    "Preprocess": "vitviz.models.config",
    "Trace": "vitviz.models.trace",
    "ViTConfig": "vitviz.models.config",
    "VisionTransformer": "vitviz.models.model",
}
__all__ = ["BlockTrace", "Preprocess", "Trace", "ViTConfig", "VisionTransformer"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'vitviz' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
