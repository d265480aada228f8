"""What a step describes: the model, the image, their trace, and the reader's language."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from vitviz import analysis, claims, plots
from vitviz.config import ViTConfig
from vitviz.data import load_image
from vitviz.i18n import DEFAULT_LANGUAGE, class_label, t
from vitviz.model import VisionTransformer
from vitviz.patches import compare_routes
from vitviz.prediction import Verdict
from vitviz.trace import Trace


class Compute:
    """The heavier analyses steps read, computed here from the subject (the handout's way). The
    app hands its steps a subclass that reads the server's caches instead
    (``vitviz.app.current.CachedCompute``), keyed by the subject's ``name`` and ``image_bytes``.
    Add a method here and its cached twin there; a step calls ``subject.compute.<method>(subject, ...)``."""

    def picture(self, subject: Subject) -> Image.Image:
        """The image as decoded (``data.load_image``): upright, its size in the file kept (``data.original_size``)."""
        return load_image(subject.image_bytes)

    def routes(self, subject: Subject) -> dict[str, float]:
        """``patches.compare_routes`` on the subject's pixels (a hybrid's feature map) and the model's patch embedding."""
        proj, trace = subject.model.patch_embed.proj, subject.trace
        return compare_routes(trace.pixels if trace.features is None else trace.features, proj.weight, proj.bias)

    def filter_components(self, subject: Subject) -> tuple[np.ndarray, np.ndarray]:
        """Every principal component of the patch filters, and its share of the variance."""
        weight = subject.model.patch_embed.proj.weight.detach().cpu()
        components, ratios = analysis.patch_embed_components(weight, k=None)
        return components.numpy(), ratios.numpy()

    def component_tiles(self, subject: Subject, k: int) -> plots.Figure:
        """``plots.component_tiles`` of the first ``k`` of ``filter_components``."""
        components, ratios = self.filter_components(subject)
        return plots.component_tiles(components[:k], ratios[:k])


@dataclass(frozen=True)
class Subject:
    """The model and image a step describes, in one language. The app builds it from the
    session (``vitviz.app.current.subject``), the handout from its command line."""

    model: VisionTransformer
    image: np.ndarray  # (H, W, 3) uint8, upright, as decoded
    trace: Trace
    lang: str = DEFAULT_LANGUAGE
    verdict: Verdict | None = None  # the prediction against the image's known class, if any
    name: str = ""  # the model's name (registry or upload): with image_bytes, what caches are keyed by
    image_bytes: bytes = b""
    compute: Compute = field(default_factory=Compute)
    trained: bool = True  # False: random weights (pages say what that hides)
    dataset: str = ""  # the test set the verdict's class comes from, in the reader's words
    paper: bool = False  # described for the handout: no sentence may ask to click, hover or press

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
