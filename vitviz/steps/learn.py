"""The lab's "How the ViT learned": one training run, snapshot by snapshot (``models.snapshots``).

For the chosen snapshot: what the last layer's [CLS] token attends to in one head, and the
answer, for the session's image (or, where the session's model reads other images than the run's,
a test image of the run's dataset); the position embeddings' similarities (the paper's Fig. 7
centre, forming out of noise) and the patch filters' principal components (Fig. 7 left). Then the
whole run: its accuracy and loss with the snapshots marked, and how alike neighbouring positions
became, epoch by epoch.
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image

from vitviz.analyses import analysis, claims
from vitviz.models import zoo
from vitviz.models.config import ViTConfig
from vitviz.models.data import denormalize, to_tensor
from vitviz.models.prediction import top_k, verdict
from vitviz.models.snapshots import Snapshots
from vitviz.models.trace import Trace
from vitviz.render import plots
from vitviz.steps import common
from vitviz.steps.blocks import Choices, Control, Controls, Figure, Figures, Heading, Step, Text
from vitviz.steps.names import hardware_text, model_title
from vitviz.steps.picks import HEAD_MEAN, head_label
from vitviz.steps.subject import Subject

TOP = 5  # classes the answer's bars show
FILTER_COMPONENTS = 8  # the patch filters' principal components shown (two rows), at every snapshot alike


def reads_its_images(subject: Subject, run: Snapshots) -> bool:
    """Whether the run's model reads the session's image as the session's model does: the same
    input (size, channels, preprocessing) and the same classes."""
    mine, theirs = subject.config, run.config
    same_input = (mine.image_size, mine.in_chans, mine.preprocess) == (
        theirs.image_size,
        theirs.in_chans,
        theirs.preprocess,
    )
    return same_input and tuple(mine.class_names) == tuple(theirs.class_names)


def chosen(value: object, options: tuple, default: object) -> object:
    """``value`` where it is one of ``options``, else ``default``."""
    return value if value in options else default


def describe(subject: Subject, choices: Choices) -> Step:
    """The snapshot ``learn_epoch`` of the shipped run (default: the last), head ``learn_head`` of
    its last layer, for the session's image or the run's test image ``learn_sample``."""
    tr = subject.tr
    run = subject.compute.snapshots()
    if run is None:
        return Step(tr("page.learn"), tr("learn.intro"), (Text(tr("learn.none"), role="info"),))
    epoch = chosen(choices.get("learn_epoch"), run.epochs, run.epochs[-1])
    heads = run.config.num_heads
    head = chosen(choices.get("learn_head"), (*range(heads), HEAD_MEAN), 0)
    own = reads_its_images(subject, run)
    if own:
        pixels, true_class = subject.trace.pixels, subject.verdict.true_class if subject.verdict else None
    else:
        order = tuple(sorted(range(len(run.sample_indices)), key=lambda n: run.sample_indices[n]))
        sample = chosen(choices.get("learn_sample"), order, order[0])
        pixels, true_class = sample_pixels(run, sample), run.sample_classes[sample]
    blocks: list = [Controls(tuple(_controls(subject, run, epoch, head, None if own else (order, sample))))]
    model = subject.compute.snapshot_model(epoch)
    with torch.inference_mode():
        trace = model.explain(pixels.to(torch.float32)).detach()
    blocks.append(_answer(subject, run, trace, epoch, head, true_class, own))  # the first screen: the figures
    if not own:
        blocks.append(Text(tr("learn.other_image", model=model_title(subject.name, subject.lang)), role="info"))
    blocks.append(Text(source(subject, run), role="caption"))
    blocks += [
        Heading(tr("learn.weights")),
        Text(tr("learn.weights_intro")),
        _weights(subject, run, model, trace, epoch),
    ]
    blocks += [Heading(tr("learn.run")), *_run(subject, run, epoch)]
    return Step(tr("page.learn"), tr("learn.intro"), tuple(blocks), paper_intro=tr("learn.intro_paper"))


def source(subject: Subject, run: Snapshots) -> str:
    """Which run the snapshots come from, in the reader's words (its shape, length and machine), and
    whether the shipped model it follows has that shape."""
    facts = run.run
    hardware = " / ".join(hardware_text(label, subject.lang) for label in facts.get("hardware", ())) or "-"
    values = dict(
        epochs=facts["epochs"],
        planned=facts["planned_epochs"],
        seed=facts["seed"],
        hardware=hardware,
        kept=", ".join(map(str, run.epochs)),
    )
    key = "learn.source_whole" if facts["epochs"] >= facts["planned_epochs"] else "learn.source_part"
    said = [subject.tr(key, shape=shape(subject, run.config), **values)]
    shipped = zoo.REGISTRY.get(run.model)  # the model whose run they follow, where it ships here
    if shipped is not None and isinstance(shipped.config, ViTConfig):
        if architecture(shipped.config) == architecture(run.config):
            said.append(subject.tr("learn.shipped_same", epochs=shipped.card.epochs))
        else:
            said.append(subject.tr("learn.shipped_other", shape=shape(subject, shipped.config)))
    said.append(subject.tr("learn.gpu_later"))
    return " ".join(said)


def architecture(config: ViTConfig) -> tuple:
    """What makes two ViTs the same shape: their input, patches, width, depth, heads and MLP."""
    return (
        config.image_size,
        config.in_chans,
        config.patch_size,
        config.embed_dim,
        config.depth,
        config.num_heads,
        config.mlp_ratio,
    )


def shape(subject: Subject, config: ViTConfig) -> str:
    """A ViT's width, depth and heads in the reader's words: "D = 128, 3 blocks of 4 heads"."""
    return subject.tr("learn.shape", dim=config.embed_dim, depth=config.depth, heads=config.num_heads)


def sample_pixels(run: Snapshots, index: int) -> torch.Tensor:
    """Test image ``index`` of the run's as its model reads it: (1, C, H, W)."""
    picture = run.samples[index]  # (C, H, W) uint8
    image = Image.fromarray(picture[0]) if picture.shape[0] == 1 else Image.fromarray(picture.transpose(1, 2, 0))
    return to_tensor(image, run.config.preprocess, run.config.in_chans)


def epoch_label(subject: Subject, epoch: int) -> str:
    """ "Before training", "After epoch 5": a snapshot as the chooser names it."""
    return subject.tr("learn.before") if epoch == 0 else subject.tr("learn.after", epoch=epoch)


def _controls(subject: Subject, run: Snapshots, epoch: int, head: int, samples: tuple | None) -> list[Control]:
    tr = subject.tr
    shown = [
        Control(
            "learn_epoch",
            "slider",
            tr("learn.snapshot"),
            run.epochs,
            epoch,
            f"{tr('learn.snapshot')}: {epoch_label(subject, epoch)}",
            lambda e: epoch_label(subject, e),
            help=tr("learn.snapshot_help"),
        ),
        Control(
            "learn_head",
            "select",
            tr("learn.head"),
            (*range(run.config.num_heads), HEAD_MEAN),
            head,
            f"{tr('learn.head')}: {head_label(subject, head)}",
            lambda h: head_label(subject, h),
        ),
    ]
    if samples is not None:
        order, sample = samples

        def name(n: int) -> str:
            return tr("learn.sample", cls=subject.label(run.sample_classes[n]), index=run.sample_indices[n] + 1)

        shown.append(Control("learn_sample", "select", tr("learn.image"), order, sample, name(sample), name))
    return shown


def _answer(
    subject: Subject, run: Snapshots, trace: Trace, epoch: int, head: int, true_class: str | None, own: bool
) -> Figures:
    """The last layer's [CLS] attention in one head over the image, and the snapshot's answer; not
    ``own`` (the run's model reads other images), their titles name the run's model, which a slide
    shows without the page's sentence that says so."""
    other = "" if own else "_other"
    tr, when = subject.tr, claims.text(claims.when(epoch), subject.lang)  # "after epoch 5"
    last = trace.depth - 1
    maps = analysis.cls_attention(trace, last)[0]  # (heads, grid_h, grid_w)
    values = analysis.select_head(maps, None if head == HEAD_MEAN else head).numpy()
    where = f"{tr('attention.layer_n', n=last + 1)}, {head_label(subject, head)}"
    picture = denormalize(trace.pixels[0], run.config.preprocess)
    title = tr(f"learn.attention_title{other}", where=where)
    overlay = plots.heatmap_overlay(picture, values, title=title, height=340, hover=common.grid_hover(subject))
    focus = claims.attention_focus(values, tr("claims.who.cls", where=where))
    probs = trace.logits[0].float().softmax(dim=-1)
    ranked = top_k(run.config.class_names, trace.logits, min(TOP, len(run.config.class_names)))
    found = verdict(probs, run.config.class_names, true_class)
    bars = common.class_bars(subject, ranked, tr(f"learn.answer_title{other}", when=when), found, height=340)
    answer = claims.top_answer([name for name, _ in ranked], [p for _, p in ranked])
    return Figures(
        (Figure("learn_attention", overlay, subject.says(focus)), Figure("learn_answer", bars, subject.says(answer)))
    )


def _weights(subject: Subject, run: Snapshots, model, trace: Trace, epoch: int) -> Figures:
    """The snapshot's position embeddings, each position's similarity with every other (Fig. 7
    centre), and its patch filters' principal components (Fig. 7 left)."""
    tr, when = subject.tr, epoch_label(subject, epoch)
    pos_embed = model.pos_embed.detach()[0]  # (T, D)
    similarity = analysis.pos_embed_similarity(pos_embed, trace.grid_size, trace.num_prefix_tokens).numpy()
    mosaic = plots.similarity_grid(similarity, title=tr("learn.positions_title", when=when), height=420)
    weight = model.patch_embed.proj.weight.detach()
    components, ratios = analysis.patch_embed_components(weight, k=None)
    shown = min(FILTER_COMPONENTS, len(ratios))
    tiles = plots.built_copy(plots.component_tiles(components[:shown].numpy(), ratios[:shown].numpy(), columns=4))
    tiles.update_layout(title=dict(text=tr("learn.filters_title", when=when)), margin=dict(t=plots.TITLE_TOP + 30))
    first = run.epochs[0]  # the weights the run started from (0: before training)
    start = analysis.patch_embed_components(
        subject.compute.snapshot_model(first).patch_embed.proj.weight.detach(), k=None
    )
    grew = claims.filters_over_training(ratios.numpy(), start[1].numpy(), shown, epoch, first)
    return Figures(
        (
            Figure("learn_positions", mosaic, subject.says(claims.position_layout(similarity))),
            Figure("learn_filters", tiles, subject.says(grew)),
        )
    )


def position_curve(run: Snapshots) -> tuple[list[int], list[float], list[float]]:
    """For every epoch whose position embeddings ship: the mean cosine similarity of grid
    neighbours, and of all pairs of positions (``claims.neighbours_and_all``)."""
    grid = (run.config.grid_size[0], run.config.grid_size[1])
    prefix = run.config.num_prefix_tokens
    epochs = sorted(run.positions)
    pairs = [
        claims.neighbours_and_all(analysis.pos_embed_similarity(run.positions[e].float()[0], grid, prefix).numpy())
        for e in epochs
    ]
    return epochs, [near for near, _ in pairs], [far for _, far in pairs]


def _run(subject: Subject, run: Snapshots, epoch: int) -> list:
    """The run's curves with the snapshots marked, and how alike neighbouring positions became."""
    tr = subject.tr
    labels = {key: tr(f"card.curve.{key}") for key in plots.CURVE_KEYS} | {"snapshot": tr("learn.snapshot_mark")}
    curves = plots.learning_curves(run.history, labels, run.epochs, epoch, run.run["planned_epochs"])
    said = [c for c in (claims.accuracy_over_training(run.history), claims.loss_over_training(run.history)) if c]
    epochs, near, far = position_curve(run)
    series = {tr("learn.near"): np.asarray(near), tr("learn.far"): np.asarray(far)}
    lines = plots.multi_line(
        epochs,
        series,
        title=tr("learn.positions_curve"),
        x_title=tr("card.curve.epoch"),
        y_title="cos",
        marked_x=epoch,
        height=300,
    )
    formed = claims.positions_over_training(epochs, near, far)
    return [
        Figure("learn_curves", curves, subject.says(said)),
        Figure("learn_positions_curve", lines, subject.says(formed)),
    ]
