"""The overview: the whole forward pass of the chosen image, with its shapes."""

from __future__ import annotations

from vitviz.analyses import claims
from vitviz.models.config import ViTConfig
from vitviz.models.data import denormalize
from vitviz.models.prediction import top_k
from vitviz.models.trace import forward_steps
from vitviz.render import plots
from vitviz.steps import common
from vitviz.steps.blocks import Choices, Figure, Figures, Heading, Step, Table, shape_text
from vitviz.steps.subject import Subject

TOP = 5


def readout_key(config: ViTConfig) -> str:
    """What becomes the prediction, said of this model: the [CLS] token's vector, the patch
    tokens' average (with a [CLS] token it does not read, or with none), or nothing (no head)."""
    if not config.num_classes:
        return "home.readout_none"
    if config.global_pool == "token":
        return "home.readout_cls"
    return "home.readout_avg_cls" if config.class_token else "home.readout_avg"


def describe(subject: Subject, choices: Choices) -> Step:
    """The image cut into its patches beside the model's top-5 answer, then every step of the
    forward pass with its shape. Presenter mode (``present``) says how to go on with its keys."""
    tr, config, trace = subject.tr, subject.config, subject.trace
    intro = f"{tr('home.intro' if config.class_token else 'home.intro_no_cls')} {tr(readout_key(config))}"
    if not subject.paper:  # presenter mode hides the menu
        intro += " " + tr("home.go_on_present" if choices.get("present") else "home.go_on")
    grid_h, grid_w = trace.grid_size
    height, width = config.image_size
    model_input = denormalize(trace.pixels[0], config.preprocess)
    cut = claims.patch_grid((height, width), config.token_size, (grid_h, grid_w), config.patch_dim, config.is_hybrid)
    shown = [Figure("home_grid", plots.patch_grid(model_input, config.token_size, height=360), subject.says(cut))]
    if config.num_classes:
        ranked = top_k(config.class_names, trace.logits, TOP)
        bars = common.class_bars(subject, ranked, tr("home.prediction"), subject.verdict, height=360)
        shown.append(
            Figure(
                "home_topk", bars, subject.says(claims.top_answer([name for name, _ in ranked], [p for _, p in ranked]))
            )
        )
    blocks: list = [Figures(tuple(shown))]
    blocks += [
        said
        for said in (common.verdict(subject, subject.verdict), common.known_classes(subject, subject.verdict))
        if said is not None
    ]
    rows = tuple(
        {
            tr("home.col.step"): code,
            tr("home.col.shape"): shape_text(shape),
            tr("home.col.meaning"): tr(f"home.step.{step}"),
        }
        for step, code, shape in forward_steps(config, trace)
    )
    blocks += [Heading(tr("home.pipeline")), Table(rows)]
    return Step(tr("page.home"), intro, tuple(blocks), shape=shape_text(trace.pixels.shape))
