"""What a step describes: the model, the image, their trace, and the reader's language."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from PIL import Image

from vitviz.analyses import ablation, analysis, claims, compare, faithfulness, lab, occlusion, projection
from vitviz.analyses.evaluate import EvalResult, evaluate, predictions_path
from vitviz.models import snapshots, zoo
from vitviz.models.config import ViTConfig
from vitviz.models.data import ImageSet, load_image, load_split, to_tensor
from vitviz.models.model import VisionTransformer, on_weights
from vitviz.models.patches import compare_routes
from vitviz.models.prediction import Verdict
from vitviz.models.trace import Trace
from vitviz.render import plots
from vitviz.render.i18n import DEFAULT_LANGUAGE, class_label, t


class Compute:
    """The heavier analyses steps read, computed here from the subject (the handout's way). The
    app hands its steps a subclass that reads the server's caches instead
    (``vitviz.app.current.CachedCompute``), keyed by the subject's ``name`` and ``image_bytes``.
    Add a method here and its cached twin there; a step calls ``subject.compute.<method>(subject, ...)``.

    Args:
        models: models already loaded, by name (the handout's CNN); others load on first use.
    """

    def __init__(self, models: Mapping[str, zoo.Loaded] | None = None) -> None:
        self._models = dict(models or {})
        self._snapshots: snapshots.Snapshots | None | bool = False  # False: not read yet

    def model(self, name: str) -> zoo.Loaded:
        """A model by name (registry, file, hub), loaded once.

        Raises:
            zoo.ModelLoadError: a sentence saying why it does not load.
        """
        if name not in self._models:
            self._models[name] = zoo.load(name, device="cpu")
        return self._models[name]

    def snapshots(self) -> snapshots.Snapshots | None:
        """The shipped snapshots of one training run (``models.snapshots.read``), read once; None
        where none ship."""
        if self._snapshots is False:
            self._snapshots = snapshots.read()
        return self._snapshots

    def snapshot_model(self, epoch: int) -> VisionTransformer:
        """The shipped run's model after ``epoch`` (``Snapshots.model_at``)."""
        return self.snapshots().model_at(epoch)

    def cnns(self) -> list[str]:
        """The CNNs a list offers to set beside the ViT: the registry's."""
        return [name for name, spec in zoo.REGISTRY.items() if spec.is_cnn]

    def occlusion(self, subject: Subject, kind: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """Page 7's occlusion curve in one order: (N,) the patches in the order they are hidden,
        and (steps + 1,) the probability of the answer at each step (``analysis.occlusion_curve``)."""
        order, curve = occlusion.curve(subject.model, subject.trace, kind, steps)
        return order.numpy(), curve.numpy()

    def comparison(self, subject: Subject, cnn_name: str, class_index: int, with_ig: bool) -> dict[str, np.ndarray]:
        """Page 8's CNN logits and both models' maps for one class (``compare.comparison``)."""
        vit, cnn = subject.model, self.model(cnn_name).model
        vit_pixels = on_weights(subject.trace.pixels.clone(), vit)  # a normal tensor, for gradients
        return compare.comparison(vit, vit_pixels, subject.trace, cnn, _cnn_pixels(subject, cnn), class_index, with_ig)

    def experiment(
        self, subject: Subject, cnn_name: str, kind: str, shift: int, seed: int, hidden: tuple[int, ...]
    ) -> compare.Experiment:
        """Both models' answers after one of page 8's experiments (``compare.run_experiment``)."""
        vit, cnn = subject.model, self.model(cnn_name).model
        pixels = on_weights(subject.trace.pixels.clone(), vit)
        cnn_pixels = _cnn_pixels(subject, cnn)
        return compare.run_experiment(kind, vit, pixels, cnn, cnn_pixels, shift=shift, seed=seed, hidden=hidden)

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

    def test_split(self, subject: Subject) -> lab.TestSplit | None:
        """The model's test split where this machine has it (``lab.test_split_for``), or None."""
        return lab.test_split_for(subject.config.class_names, lab.default_test_root())

    def faithfulness(self, subject: Subject) -> faithfulness.Faithfulness:
        """Every map's deletion and insertion curves for the subject's image, and random orders'."""
        return faithfulness.faithfulness(subject.model, subject.trace.pixels, trace=subject.trace)

    def stored(self, subject: Subject, kind: str) -> dict | None:
        """What ships beside the model's weights ("faithfulness": the test set's table; "ablation":
        the head-ablation grid), when these weights made it; else None."""
        path = subject.spec.path if subject.spec is not None else None
        if path is None:
            return None
        if kind == "faithfulness":
            return faithfulness.read_stored(faithfulness.faithfulness_path(path), subject.model)
        return ablation.read_stored(ablation.ablation_path(path), subject.model)

    def ablated(
        self,
        subject: Subject,
        heads: tuple[tuple[int, int], ...],
        layers: tuple[int, ...],
        mode: str,
        location: str | None,
    ) -> dict[str, np.ndarray]:
        """The subject's image with heads (layer, head) or layers switched off (``ablation.switched_off``);
        "mean" ablation reads the test split at ``location``."""
        means = None
        if mode == "mean" and heads and location:
            means = ablation.reference_means(subject.model, load_split(location, "test", download=False))
        switch = ablation.Ablation.of(heads, layers, mode, means)
        return ablation.switched_off(subject.model, subject.trace.pixels, switch)

    def test_set(self, subject: Subject, location: str) -> ImageSet:
        """The test images at ``location`` (``test_split``'s)."""
        return load_split(location, "test", download=False)

    def evaluation(self, subject: Subject, name: str, location: str) -> EvalResult:
        """Model ``name``'s answers on the test images at ``location`` (its shipped predictions
        where they match).

        Raises:
            ValueError: the model's classes are not the dataset's.
            zoo.ModelLoadError: the model does not load.
        """
        model, spec = (subject.model, subject.spec) if name == subject.name else self.model(name)
        shipped = predictions_path(spec.path) if spec is not None and spec.path else None
        return evaluate(model, self.test_set(subject, location), name=name, shipped=shipped)

    def mistake(self, subject: Subject, location: str, index: int) -> dict[str, np.ndarray]:
        """Test image ``index``'s maps for its predicted and its true class and its logit lens
        (``lab.inspect_mistake``)."""
        result = self.evaluation(subject, subject.name, location)
        images = self.test_set(subject, location).images[index : index + 1]
        return lab.inspect_mistake(subject.model, images, int(result.predictions[index]), int(result.labels[index]))

    def projection(self, subject: Subject) -> tuple[projection.Projection | None, ImageSet | None, int | None]:
        """The map of the test set: the one shipped beside the weights, without its pictures here
        (the app's draws them where the server has the test images); the images it shows (None:
        none); and how many images the test split holds (None: unknown)."""
        path = subject.spec.path if subject.spec is not None else None
        found = projection.read_stored(projection.projection_path(path), subject.model) if path else None
        return found, None, None


def _cnn_pixels(subject: Subject, cnn) -> torch.Tensor:
    """The subject's image as the CNN reads it, (1, C, H, W) on its weights."""
    return on_weights(to_tensor(Image.fromarray(subject.image), cnn.config.preprocess, cnn.config.in_chans), cnn)


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
    dataset: str = ""  # the test set the verdict's class comes from, in the reader's words
    spec: zoo.ModelSpec | None = None  # the model's registry entry: its title, description, card, weights file
    trained: bool = True  # False: random weights (pages say what that hides)
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

    def grid_hover(self) -> str:
        """A patch map's hover in the reader's language ("patch 5 (row 2, col 1): 0.1234"; "패치 5 (2행 1열)")."""
        where = self.tr("hover.row_col", row="%{customdata[0]}", col="%{customdata[1]}")
        return f"{self.tr('hover.patch')} %{{customdata[2]}} ({where}): %{{z:.4f}}<extra></extra>"
