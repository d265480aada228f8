"""What a step describes: the model, the image, their trace, and the reader's language."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vitviz import claims, zoo
from vitviz.config import ViTConfig
from vitviz.i18n import DEFAULT_LANGUAGE, class_label, t
from vitviz.model import VisionTransformer
from vitviz.prediction import Verdict
from vitviz.trace import Trace


class Compute:
    """The heavier analyses steps read, computed here from the subject (the handout's way). The
    app hands its steps a subclass that reads the server's caches instead
    (``vitviz.app.current.CachedCompute``), keyed by the subject's ``name`` and ``image_bytes``.
    Add a method here and its cached twin there; a step calls ``subject.compute.<method>(subject, ...)``."""


@dataclass(frozen=True)
class Subject:
    """The model and image a step describes, in one language. The app builds it from the
    session (``vitviz.app.current.subject``), the handout from its command line. A step about the
    model alone (its card, the lab's test set) has no image: ``image`` and ``trace`` are None
    (``vitviz.app.current.model_subject``)."""

    model: VisionTransformer
    image: np.ndarray | None  # (H, W, 3) uint8, upright, as decoded
    trace: Trace | None
    lang: str = DEFAULT_LANGUAGE
    verdict: Verdict | None = None  # the prediction against the image's known class, if any
    name: str = ""  # the model's name (registry or upload): with image_bytes, what caches are keyed by
    image_bytes: bytes = b""
    compute: Compute = field(default_factory=Compute)
    spec: zoo.ModelSpec | None = None  # the model's registry entry: its title, description, card, weights file

    @property
    def config(self) -> ViTConfig:
        return self.model.config

    def tr(self, key: str, **values: object) -> str:
        """The sentence for ``key`` in the reader's language (Markdown)."""
        return t(key, self.lang, **values)

    def label(self, class_name: str, short: bool = False) -> str:
        """A class name in the reader's language."""
        return class_label(class_name, self.lang, short=short)

    def says(self, claim: claims.Claim | list[claims.Claim]) -> str:
        """A claim's sentence in the reader's language."""
        return claims.text(claim, self.lang)
