"""Step 7: the prediction. The head, the top-k classes, the logit lens, and an occlusion test.

The logit lens is indexed by block: 0 is the embedded tokens before any block, l the output of
layer l (1-based, as on the attention page). The occlusion curves come from
``subject.compute.occlusion`` (in the app: ``caches.cached_occlusion``, per model, image, order
kind and steps, which ``vitviz.app.ahead`` fills before the class gets here).
"""

from __future__ import annotations

import numpy as np
import torch

from vitviz.analyses import analysis, claims, faithfulness
from vitviz.models.data import denormalize
from vitviz.models.prediction import top_k
from vitviz.render import plots, tables
from vitviz.steps import answers
from vitviz.steps.blocks import (
    Choices,
    Control,
    Controls,
    Download,
    DownloadCsv,
    Figure,
    Figures,
    Heading,
    Link,
    Step,
    Table,
    Text,
    shape_text,
)
from vitviz.steps.subject import Subject

MOST_SHOWN = 20  # the top-k slider's largest k
DEFAULT_K = 5
STRIP = (0.0, 0.25, 0.5, 0.75)  # the occluded strip's shares of the steps


def describe(subject: Subject, choices: Choices) -> Step:
    """The head and the top ``topk`` classes, the logit lens, and the occlusion test."""
    tr, model, trace = subject.tr, subject.model, subject.trace
    config = model.config
    title, intro, shape = tr("page.prediction"), tr("prediction.intro"), shape_text(trace.logits.shape)
    if config.num_classes == 0:
        return Step(title, intro, (Text(tr("prediction.no_head"), role="info"),), shape=shape)
    steps = analysis.occlusion_steps(model)
    lens = analysis.logit_lens(model, trace).float().cpu()  # (depth + 1, B, K) probabilities
    occlusion = {kind: subject.compute.occlusion(subject, kind, steps) for kind in analysis.OCCLUSION_ORDERS}
    shown = (*_answer(subject, choices), *_lens(subject, lens), *_occlusion(subject, occlusion))
    return Step(title, intro, (*shown, *_downloads(subject, lens, occlusion)), shape=shape)


def _answer(subject: Subject, choices: Choices) -> list:
    tr, model, trace = subject.tr, subject.model, subject.trace
    config = model.config
    sentence = "prediction.head_cls" if config.global_pool == "token" else "prediction.head_avg"
    head = tr(
        sentence,
        tokens=shape_text(trace.hidden_states[-1].shape),
        pre=shape_text(trace.pre_logits.shape),
        weight=shape_text(model.head.weight.shape),
        logits=shape_text(trace.logits.shape),
        n=config.num_classes,
    )
    most = min(MOST_SHOWN, config.num_classes)
    k = choices.get("topk")
    k = k if isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= most else min(DEFAULT_K, most)
    ranked = top_k(config.class_names, trace.logits, k)
    names, probabilities = [name for name, _ in ranked], [p for _, p in ranked]
    label = tr("prediction.k")
    bars = answers.class_bars(
        subject, names, probabilities, tr("prediction.topk_chart", k=k), subject.verdict, height=90 + 36 * k
    )
    return [
        Heading(tr("prediction.topk_title")),
        Text(head),
        Controls((Control("topk", "int_slider", label, tuple(range(1, most + 1)), k, f"{label}: {k}"),)),
        Figure("prediction_topk", bars, subject.says(claims.top_answer(names, probabilities))),
        *answers.verdict(subject, subject.verdict),
        *answers.mirror(subject, "prediction"),
        *answers.known_classes(subject, subject.verdict),
    ]


def _after(subject: Subject) -> list[str]:
    """What each point of the lens reads: the embeddings, then after each layer."""
    tr = subject.tr
    return [tr("prediction.after_embed")] + [
        tr("prediction.after_layer", n=i, index=i - 1) for i in range(1, subject.trace.depth + 1)
    ]


def _lens(subject: Subject, lens: torch.Tensor) -> list:
    tr, trace, config = subject.tr, subject.trace, subject.config
    blocks = np.arange(trace.depth + 1)
    after = _after(subject)
    tracked, scores = analysis.logit_lens_tracks(lens, k=min(5, config.num_classes))  # (m,), (depth + 1, m)
    chart = plots.multi_line(
        blocks,
        {answers.class_name(subject, int(c)): scores[:, j].numpy() for j, c in enumerate(tracked)},
        title=tr("prediction.lens_chart"),
        x_title=tr("prediction.x_block"),
        y_title=tr("prediction.y_prob"),
        percent=True,
        hover_text=after,
    )
    top1, top1_prob = analysis.logit_lens_top1(lens)  # (depth + 1,) each
    final_class = int(trace.logits[0].argmax())
    final_rank = analysis.class_rank_by_layer(lens, final_class)[:, 0]  # (depth + 1,)
    rows = tuple(
        {
            tr("prediction.col.after"): after[i],
            tr("prediction.col.top1"): answers.class_name(subject, int(top1[i])),
            tr("prediction.col.prob"): f"{float(top1_prob[i]):.1%}",
            tr("prediction.col.rank", name=answers.class_name(subject, final_class)): int(final_rank[i]) + 1,
        }
        for i in blocks
    )
    reading = claims.logit_lens(top1.tolist(), final_class, config.class_names)
    intro = "prediction.lens_intro_cls" if config.global_pool == "token" else "prediction.lens_intro_avg"
    return [
        Heading(tr("prediction.lens_title")),
        Text(tr(intro)),
        Figure("prediction_lens", chart, subject.says(reading)),
        Table(rows),
    ]


Occlusion = dict[str, tuple[np.ndarray, np.ndarray]]  # order kind -> ((N,) order, (steps + 1,) curve)


def _occlusion(subject: Subject, occlusion: Occlusion) -> list:
    tr, trace, config = subject.tr, subject.trace, subject.config
    num_patches = config.num_patches
    steps = len(occlusion["rollout"][1]) - 1
    counts = analysis.occlusion_counts(num_patches, steps).numpy()  # (steps + 1,)
    fractions = counts / num_patches
    final_class = int(trace.logits[0].argmax())
    curve_names = {kind: tr(f"prediction.order.{kind}") for kind in analysis.OCCLUSION_ORDERS}
    curves = plots.multi_line(
        fractions,
        {curve_names[kind]: curve for kind, (_, curve) in occlusion.items()},
        title=tr("prediction.occlusion_chart", name=answers.class_name(subject, final_class)),
        x_title=tr("prediction.x_hidden"),
        y_title=tr("prediction.y_prob"),
        percent=True,
        x_percent=True,
        colours={curve_names["rollout"]: "#d62728", curve_names["random"]: "#7f7f7f"},
        hover_text=[tr("prediction.hidden_n", n=int(c), total=num_patches) for c in counts],
    )
    model_input = denormalize(trace.pixels[0], config.preprocess)
    rollout = analysis.rollout_map(trace)[0].numpy()  # (grid_h, grid_w)
    rollout_figure = plots.heatmap_overlay(
        model_input, rollout, title=tr("prediction.rollout_title"), height=360, hover=answers.grid_hover(subject)
    )
    red, grey = occlusion["rollout"][1], occlusion["random"][1]
    reading = claims.occlusion(fractions, red, grey)

    rollout_order = torch.as_tensor(occlusion["rollout"][0])
    shown = sorted({round(steps * f) for f in STRIP})
    masks = analysis.occlusion_masks(rollout_order, steps)[shown]  # (len(shown), N)
    occluded = analysis.occlude(trace.pixels, masks, config.token_size)  # (len(shown), C, H, W)
    curve = occlusion["rollout"][1]
    strip = plots.image_row(
        [denormalize(image, config.preprocess) for image in occluded],
        [tr("prediction.occluded_n", n=int(counts[s]), p=f"{float(curve[s]):.1%}") for s in shown],
    )
    names = config.class_names
    name = claims.ClassName(names[final_class]) if names else claims.Claim("prediction.class_n", {"n": final_class})
    last = shown[-1]
    strip_reading = claims.occluded_strip(float(fractions[last]), float(curve[last]), float(curve[0]), name)
    trust = tr("page.trust")
    return [
        Heading(tr("prediction.occlusion_title")),
        Text(tr("prediction.occlusion_intro")),
        Figures(
            (
                Figure("prediction_occlusion", curves, subject.says(claims.occlusion_area(red, grey))),
                Figure("prediction_rollout", rollout_figure, subject.says(claims.map_focus(rollout))),
            ),
            widths=(3, 2),
        ),
        Text(subject.says(reading)),  # whether the curves rise first, where each halves, which area is lower
        # what the curves show, and no verdict: the trust page decides against many random orders
        Text(tr("prediction.occlusion_verdict", page=trust, orders=faithfulness.RANDOM_ORDERS)),
        Link("page.trust", trust),
        Text(tr("prediction.occlusion_caption", steps=steps, images=steps, patches=num_patches), role="caption"),
        Figure("prediction_occluded", strip, subject.says(strip_reading)),
    ]


def _downloads(subject: Subject, lens: torch.Tensor, occlusion: Occlusion) -> list:
    """The logit lens and the occlusion curves as .csv files, and every array as one .npz."""
    config, trace = subject.config, subject.trace
    names = config.class_names
    counts = analysis.occlusion_counts(config.num_patches, len(occlusion["rollout"][1]) - 1).numpy()
    lens_columns = {
        "block": np.arange(trace.depth + 1),
        "after": _after(subject),
        **{f"{c} {names[c]}" if names else f"class {c}": lens[:, 0, c].numpy() for c in range(config.num_classes)},
    }
    occlusion_columns = {
        "hidden_patches": counts,
        "hidden_fraction": counts / config.num_patches,
        **{f"probability_{kind}": curve for kind, (_, curve) in occlusion.items()},
    }
    arrays = {
        "logits": trace.logits[0].numpy(),
        "logit_lens": lens[:, 0].numpy(),
        "occlusion_counts": counts,
        **{f"occlusion_{kind}": curve for kind, (_, curve) in occlusion.items()},
        **{f"order_{kind}": order for kind, (order, _) in occlusion.items()},
    }
    return [
        DownloadCsv(
            "prediction.download_lens",
            "logit_lens.csv",
            "prediction_lens_csv",
            lambda: tables.columns_csv(lens_columns),
        ),
        DownloadCsv(
            "prediction.download_occlusion",
            "occlusion.csv",
            "prediction_occlusion_csv",
            lambda: tables.columns_csv(occlusion_columns),
        ),
        Download("download.npz", "prediction.npz", "prediction_npz", arrays),
    ]
