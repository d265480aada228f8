"""The lab's "Which map to trust?": deletion and insertion curves of every map the app draws,
against random orders, for the tour's image and over the test set; heads and layers switched off.

Every sentence is read from the numbers it describes (``vitviz.analyses.faithfulness.sentences``,
``vitviz.analyses.claims``); the curves and the ablated pass come from ``subject.compute``."""

from __future__ import annotations

import numpy as np

from vitviz.analyses import ablation, claims, faithfulness
from vitviz.render import plots, tables
from vitviz.steps import answers
from vitviz.steps.bars import class_bars
from vitviz.steps.blocks import Choices, Control, Controls, Figure, Figures, Heading, Step, Table, Text
from vitviz.steps.names import dataset_text, model_title
from vitviz.steps.subject import Subject

TOP = 5  # the bars before and after the switches
LEGEND_BESIDE = dict(orientation="v", yref="paper", y=1.0, yanchor="top", x=1.02, xanchor="left")


def describe(subject: Subject, choices: Choices) -> Step:
    """This image's curves, the shipped table of the test set, and the subject's image through the
    model with the heads (``trust_heads``) and layers (``trust_layers``) chosen switched off,
    giving zero or their mean output (``trust_mode``)."""
    blocks = _this_image(subject) + _over_the_test_set(subject) + _switched_off(subject, choices)
    return Step(subject.tr("page.trust"), subject.tr("trust.intro"), tuple(blocks))


def _this_image(subject: Subject) -> list:
    """Remove, or reveal, the patches in each map's order: the curves, their areas and verdicts."""
    tr = subject.tr
    result = subject.compute.faithfulness(subject)
    reading = faithfulness.read(result)
    names = _class_names(subject)
    answer = subject.label(names[result.target])
    removed = tr("trust.removed", p=f"{result.probability:.1%}", blank=f"{result.blank_probability:.1%}", answer=answer)
    shown: list = [
        Heading(tr("trust.image_title")),
        Text(subject.says(faithfulness.sentences(reading))),
        Text(removed, role="caption"),
        *answers.mirror(subject, "trust"),
    ]
    x = result.fractions.numpy()
    chance = result.methods[faithfulness.RANDOM]
    band_name = tr("trust.band", orders=len(chance.orders))
    ranked = {tr(f"trust.method.{m}"): c for m, c in result.methods.items() if m != faithfulness.RANDOM}
    for kind in ("deletion", "insertion"):
        runs = getattr(chance, kind).numpy()  # (orders, steps + 1)
        curves = plots.curves_with_band(
            x,
            {name: getattr(curves, f"{kind}_curve").numpy() for name, curves in ranked.items()},
            (runs.min(axis=0), runs.max(axis=0)),
            band_name,
            title=tr(f"trust.{kind}_title"),
            x_title=tr(f"trust.x_{kind}"),
            y_title=tr("trust.y", answer=answer),
        )
        # the legend (a line per map) beside the plot, not under it: under it, it took a slide's height
        curves = plots.built_copy(curves)  # a copy to change: the app shares the built figure
        curves.update_layout(legend=LEGEND_BESIDE, height=curves.layout.height - plots.legend_room(len(ranked) + 1))
        shown.append(Figure(f"trust_{kind}", curves, subject.says(claims.trust_curve(reading, kind))))
    rows = tables.trust_rows(reading, [m for m in result.methods if m != faithfulness.RANDOM])
    table = tuple(
        {
            tr("trust.col.method"): tr(f"trust.method.{method}"),
            tr("trust.col.deletion"): f"{deletion:.3f}",
            tr("trust.col.insertion"): f"{insertion:.3f}",
            tr("trust.col.margin"): f"{margin:+.3f}",
            tr("trust.col.verdict"): tr(f"trust.verdict.{verdict}"),
        }
        for method, deletion, insertion, margin, verdict in rows
    )
    note = tr("trust.table_note", low=f"{reading.chance_low:+.3f}", high=f"{reading.chance_high:+.3f}")
    shown.append(Table(table, caption=note, whole=True))
    return shown


def _over_the_test_set(subject: Subject) -> list:
    """The same areas over the test images, as shipped beside the weights."""
    tr = subject.tr
    shown: list = [Heading(tr("trust.set_title"))]
    summary = subject.compute.stored(subject, "faithfulness")
    if summary is None:
        return [*shown, Text(tr("trust.set_missing", name=model_title(subject.name, subject.lang)), role="info")]
    methods = [m for m in summary["methods"] if m != faithfulness.RANDOM]
    table = tuple(
        {
            tr("trust.col.method"): tr(f"trust.method.{method}"),
            tr("trust.col.deletion"): f"{row['deletion_auc']:.3f} ± {row['deletion_auc_std']:.3f}",
            tr("trust.col.insertion"): f"{row['insertion_auc']:.3f} ± {row['insertion_auc_std']:.3f}",
            tr("trust.col.beats"): f"{row['beats_random']:.0%}" if "beats_random" in row else "—",
        }
        for method in [faithfulness.RANDOM, *methods]
        for row in [summary["methods"][method]]
    )
    dataset = dataset_text(summary.get("dataset", ""), subject.lang)
    note = tr("trust.set_note", images=summary["images"], dataset=dataset)
    return [*shown, Text(subject.says(claims.trust_over_images(summary))), Table(table, caption=note, whole=True)]


def _switched_off(subject: Subject, choices: Choices) -> list:
    """Heads and layers switched off: the answer and rollout before and after, and the shipped grid
    of the test accuracy each head costs alone."""
    tr, config = subject.tr, subject.config
    depth, heads = config.depth, config.num_heads
    intro = tr(  # paper: nothing to choose
        "trust.ablation_intro_paper" if subject.paper else "trust.ablation_intro", images=ablation.MEAN_REFERENCE_IMAGES
    )
    shown: list = [Heading(tr("trust.ablation_title")), Text(intro)]
    picked = [i for i in _numbers(choices.get("trust_heads")) if 0 <= i < depth * heads]
    skipped = [i for i in _numbers(choices.get("trust_layers")) if 0 <= i < depth]
    mode = choices.get("trust_mode")
    mode = mode if mode in ablation.MODES else ablation.MODES[0]
    none, nothing = tr("trust.none_chosen"), tr("trust.none")  # the empty widget's prompt; on paper

    def head_name(i: int) -> str:
        return tr("trust.head_option", layer=i // heads + 1, head=i % heads + 1)

    def layer_name(i: int) -> str:
        return tr("attention.layer_n", n=i + 1)

    controls = (
        Control(
            "trust_heads",
            "multiselect",
            tr("trust.heads"),
            tuple(range(depth * heads)),
            picked,
            f"{tr('trust.heads')}: {', '.join(map(head_name, picked)) or nothing}",
            format=head_name,
            placeholder=none,
        ),
        Control(
            "trust_layers",
            "multiselect",
            tr("trust.layers"),
            tuple(range(depth)),
            skipped,
            f"{tr('trust.layers')}: {', '.join(map(layer_name, skipped)) or nothing}",
            format=layer_name,
            placeholder=none,
        ),
        Control(
            "trust_mode",
            "radio",
            tr("trust.mode"),
            ablation.MODES,
            mode,
            f"{tr('trust.mode')}: {tr(f'trust.mode.{mode}')}",
            format=lambda m: tr(f"trust.mode.{m}"),
        ),
    )
    shown.append(Controls(controls))
    switched_heads = tuple(sorted((i // heads, i % heads) for i in picked))
    split = subject.compute.test_split(subject) if mode == "mean" and switched_heads else None
    if mode == "mean" and switched_heads and split is None:
        shown.append(Text(tr("trust.mean_needs_data"), role="info"))
        mode = "zero"
    location = split.location if split else None
    after = subject.compute.ablated(subject, switched_heads, tuple(sorted(skipped)), mode, location)
    before = subject.compute.ablated(subject, (), (), "zero", None)
    names = _class_names(subject)
    answer = claims.ablation_answer(before["probs"], after["probs"], names, len(switched_heads), len(skipped))
    shown.append(Text(subject.says(answer)))
    bars, maps = [], []
    for arrays, key in ((before, "before"), (after, "after")):
        top = np.argsort(-arrays["probs"])[:TOP]
        chart = class_bars(
            subject.lang, [names[i] for i in top], arrays["probs"][top].tolist(), tr(f"trust.bars_{key}"), None, 300
        )
        bars.append(Figure(f"trust_bars_{key}", chart, subject.says(claims.top_two(arrays["probs"], names))))
        rollout = plots.heatmap_overlay(subject.image, arrays["rollout"], title=tr(f"trust.rollout_{key}"))
        said = (
            claims.map_peak(before["rollout"])
            if key == "before"
            else claims.map_shift(before["rollout"], after["rollout"])
        )
        maps.append(Figure(f"trust_rollout_{key}", rollout, subject.says(said)))
    shown += [Figures(tuple(bars)), Figures(tuple(maps))]
    return shown + _head_grid(subject, mode, switched_heads)


def _head_grid(subject: Subject, mode: str, switched_heads: tuple[tuple[int, int], ...]) -> list:
    """The test accuracy lost with each head switched off alone, as shipped beside the weights."""
    tr = subject.tr
    grid = subject.compute.stored(subject, "ablation")
    if grid is None:
        return [Text(tr("trust.grid_missing", name=model_title(subject.name, subject.lang)), role="info")]
    drops = np.asarray(grid["head_drop"].get(mode, grid["head_drop"]["zero"]))
    chart = plots.head_grid(
        drops,
        title=tr("trust.grid_title", mode=tr(f"trust.mode.{mode}")),
        x_title=tr("trust.grid_x"),
        y_title=tr("trust.grid_y"),
        value_title=tr("trust.grid_value"),
        marked=switched_heads,
    )
    said = subject.says(claims.costliest_head(drops, grid["accuracy"], grid["images"], mode))
    note = tr("trust.grid_note", images=grid["images"], accuracy=f"{grid['accuracy']:.1%}")
    return [Figure("trust_grid", chart, said), Text(note, role="caption")]


def _class_names(subject: Subject) -> list[str]:
    config = subject.config
    return list(config.class_names) or [str(i) for i in range(config.num_classes)]


def _numbers(value: object) -> list[int]:
    """A list choice's whole numbers (anything else in it is dropped)."""
    if not isinstance(value, list | tuple):
        return []
    return sorted({v for v in value if isinstance(v, int) and not isinstance(v, bool)})
