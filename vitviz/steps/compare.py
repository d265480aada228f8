"""Step 8: the ViT beside a CNN on the same image: both answers, where each looked, how far each
looks layer by layer, and experiments that show what each needs.

The ViT is the subject's model; the CNN is a choice (the registry's CNNs, or a CNN file). The
maps for one class (the test image's true class, else the ViT's answer) are each divided by their
own maximum, so all read on one 0..1 scale. The heavier work comes from ``subject.compute``
(``comparison`` and ``experiment``; in the app, ``caches.cached_comparison`` and
``cached_experiment``, which ``vitviz.app.ahead`` fills before the class gets here).
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image

from vitviz.analyses import analysis, claims, compare
from vitviz.models import zoo
from vitviz.models.cnn import receptive_fields
from vitviz.models.data import denormalize, to_tensor
from vitviz.models.prediction import top_k, verdict
from vitviz.render import plots
from vitviz.steps import answers
from vitviz.steps.blocks import (
    Choices,
    Control,
    Controls,
    Download,
    Figure,
    Figures,
    Heading,
    Step,
    Text,
    shape_text,
)
from vitviz.steps.compare_experiments import experiments
from vitviz.steps.names import dataset_text, model_title
from vitviz.steps.subject import Subject

TOP = 5
MAPS_A_ROW = 3  # five in one row cut their titles
TITLE_EMS = 14  # a map's title wraps at this many ems (a third of the page)


def describe(subject: Subject, choices: Choices) -> Step:
    """The ViT and the chosen CNN (``compare_cnn``, or a file in ``compare_cnn_path``) on the
    subject's image; with the CNN missing, unloadable or of other classes, one sentence saying so."""
    tr = subject.tr
    picked, notes = _cnn(subject, choices)
    if picked is None or isinstance(picked, str):  # a sentence: why there is no CNN to compare with
        return Step(tr("page.compare"), tr("compare.intro"), (*notes, Text(picked or tr("compare.no_cnn"), "info")))
    cnn_name, (cnn, cnn_spec) = picked
    vit, trace = subject.model, subject.trace
    names = list(vit.config.class_names)
    if list(cnn.config.class_names) != names or cnn.config.num_classes != vit.config.num_classes:
        return Step(tr("page.compare"), tr("compare.intro"), (*notes, Text(tr("compare.classes_differ"), "info")))
    true_name = subject.verdict.true_class if subject.verdict is not None else None
    class_index = choices.get("compare_class")
    if not isinstance(class_index, int) or isinstance(class_index, bool):
        class_index = compare.explained_class(names, trace.logits[0], true_name)
    class_index = min(max(class_index, 0), len(names) - 1)
    with_ig = bool(choices.get("compare_ig", False))
    arrays = subject.compute.comparison(subject, cnn_name, class_index, with_ig)
    cnn_logits = torch.from_numpy(arrays["cnn_logits"])[None]  # (1, K)
    shape = f"ViT {shape_text(trace.logits.shape)}, CNN {shape_text(cnn_logits.shape)}"
    blocks = [
        *notes,
        *_answers(subject, cnn, cnn_spec, cnn_logits, true_name),
        *_maps(subject, cnn, arrays, class_index, with_ig),
        *_reach(subject, cnn),
        *experiments(subject, choices, cnn_name, cnn, cnn_logits),
    ]
    fields = receptive_fields(cnn)
    blocks.append(
        Download(
            "compare.download",
            "vit_vs_cnn.npz",
            "compare_npz",
            {
                "class_index": np.array(class_index),
                "vit_logits": trace.logits[0].numpy(),
                **arrays,
                "receptive_field": np.array([field.size for field in fields]),
                "mean_attention_distance": _distances(subject, cnn),
            },
        )
    )
    return Step(tr("page.compare"), tr("compare.intro"), tuple(blocks), shape=shape)


def _cnn(subject: Subject, choices: Choices) -> tuple[tuple[str, zoo.Loaded] | str | None, list]:
    """The CNN to compare with, as (name, loaded), or the sentence saying why there is none; and
    the blocks that choose it (the list's CNN, a CNN file), with a note when a typed file is not used."""
    tr, lang = subject.tr, subject.lang
    offered = subject.compute.cnns()
    listed = choices.get("compare_cnn")
    listed = listed if listed in offered else (offered[0] if offered else None)
    path = str(choices.get("compare_cnn_path") or "").strip()
    message, name = None, listed
    if path:  # a typed name that does not load, or is no CNN: one sentence, and the list's CNN
        try:
            loaded = subject.compute.model(path)
            message = None if loaded.spec.is_cnn else tr("compare.not_cnn", name=model_title(path, lang))
        except zoo.ModelLoadError as err:
            message = tr("error.model", message=err.sentence(lang))
        name = path if message is None else listed
    picked: tuple[str, zoo.Loaded] | str | None = None
    if name is not None:
        try:
            picked = (name, subject.compute.model(name))
        except zoo.ModelLoadError as err:
            picked = tr("error.model", message=err.sentence(lang))
    label = tr("compare.cnn")
    used = f"{label}: {model_title(name, lang)}" if name else ""
    controls = []
    if offered:
        title = lambda n: zoo.REGISTRY[n].title_in(lang)  # noqa: E731
        controls.append(Control("compare_cnn", "select", label, tuple(offered), listed, used, format=title))
    path_static = "" if offered else used
    controls.append(
        Control(
            "compare_cnn_path",
            "model_name",
            tr("compare.cnn_path"),
            (),
            path,
            path_static,
            placeholder="cnn.safetensors",
        )
    )
    notes: list = [Controls(tuple(controls))]
    if message is not None:
        if listed is None:
            return message, notes
        notes.append(Text(tr("compare.cnn_not_used", message=message, cnn=model_title(listed, lang)), "info"))
    return picked, notes


def _answers(subject: Subject, cnn, cnn_spec: zoo.ModelSpec, cnn_logits: torch.Tensor, true_name: str | None) -> list:
    tr, trace = subject.tr, subject.trace
    names = list(subject.config.class_names)
    blocks: list = [Heading(tr("compare.answers"))]
    spec = subject.spec
    accuracies = zoo.compared_accuracies(spec.card, cnn_spec.card) if spec is not None else None
    if accuracies is not None:  # one protocol for both: one view
        said = tr(
            "compare.accuracies",
            dataset=dataset_text(spec.card.tested_on.get("dataset", ""), subject.lang),
            vit=f"{accuracies[0]:.2%}",
            cnn=f"{accuracies[1]:.2%}",
        )
        if cnn_spec.card.views != "image" and cnn_spec.card.test_accuracy is not None:
            said += " " + tr("compare.accuracies_mirror", accuracy=f"{cnn_spec.card.test_accuracy:.2%}")
        blocks.append(Text(said, "caption"))
    sides = (("vit", subject.model, trace.logits), ("cnn", cnn, cnn_logits))
    verdicts = {which: verdict(logits[0].float().softmax(dim=-1), names, true_name) for which, _, logits in sides}
    figures = []
    for which, model, logits in sides:
        ranked = top_k(model.config.class_names, logits, TOP)
        found = verdicts[which]
        bars = answers.class_bars(
            subject,
            [n for n, _ in ranked],
            [p for _, p in ranked],
            tr(f"compare.{which}_top"),
            found,
            height=90 + 36 * len(ranked),
            beside=[v for w, v in verdicts.items() if w != which],  # one legend for both: the bars start level
        )
        takeaway = subject.says(claims.top_answer([n for n, _ in ranked], [p for _, p in ranked]))
        figures.append(Figure(f"compare_{which}_top", bars, takeaway))
    blocks.append(Figures(tuple(figures)))
    for found in verdicts.values():
        blocks += answers.verdict(subject, found)
    return blocks


def _cnn_input(subject: Subject, cnn) -> np.ndarray:
    """The image as the CNN reads it, (H, W, 3) in [0, 1]."""
    pixels = to_tensor(Image.fromarray(subject.image), cnn.config.preprocess, cnn.config.in_chans)
    return denormalize(pixels[0], cnn.config.preprocess)


def _maps(subject: Subject, cnn, arrays: dict[str, np.ndarray], class_index: int, with_ig: bool) -> list:
    tr, config = subject.tr, subject.config
    names = list(config.class_names)
    blocks: list = [Heading(tr("compare.maps_title")), Text(tr("compare.maps_intro"))]
    if cnn.config.test_flip:
        blocks.append(Text(tr("compare.gradcam_mirror"), "caption"))
    class_label, ig_label = tr("compare.class"), tr("compare.ig_toggle", steps=compare.IG_STEPS)
    shown_class = subject.label(names[class_index])
    blocks.append(
        Controls(
            (
                Control(
                    "compare_class",
                    "select",
                    class_label,
                    tuple(range(len(names))),
                    class_index,
                    f"{class_label}: {shown_class}",
                    format=lambda i: subject.label(names[i]),
                ),
                Control(
                    "compare_ig", "toggle", ig_label, (False, True), with_ig, f"{ig_label}: {'✓' if with_ig else '✗'}"
                ),
            )
        )
    )
    vit_input = denormalize(subject.trace.pixels[0], config.preprocess)  # (H, W, 3) in [0, 1]
    cnn_input = _cnn_input(subject, cnn)
    panels = [
        ("rollout", vit_input, tr("compare.map.rollout")),
        ("grad_rollout", vit_input, tr("compare.map.grad_rollout", name=shown_class)),
        ("gradcam", cnn_input, tr("compare.map.gradcam", name=shown_class)),
    ]
    if with_ig:
        panels += [("ig_vit", vit_input, tr("compare.map.ig_vit")), ("ig_cnn", cnn_input, tr("compare.map.ig_cnn"))]
    figures = []
    for key, picture, title in panels:
        values = arrays[key] / max(float(arrays[key].max()), 1e-12)  # its own maximum: one 0..1 scale for all
        figure = plots.heatmap_overlay(
            picture,
            values,
            title=plots.wrap(title, TITLE_EMS),
            height=300,
            zmin=0.0,
            zmax=1.0,
            hover=answers.grid_hover(subject),
        )
        figures.append(Figure(f"compare_map_{key}", figure, subject.says(claims.map_focus(values))))
    # three maps a row, each with its colour bar (the last row's columns keep a third of the page)
    for start in range(0, len(figures), MAPS_A_ROW):
        row = tuple(figures[start : start + MAPS_A_ROW])
        blocks.append(Figures(row, widths=(1,) * MAPS_A_ROW if len(row) < MAPS_A_ROW else ()))
    if with_ig:
        blocks.append(Text(tr("compare.ig_note"), "caption"))
    return blocks


def _distances(subject: Subject, cnn) -> np.ndarray:
    """(depth, heads) mean attention distances in pixels of the CNN's input: scaled when the ViT
    reads another size (224 against 32)."""
    side = max(cnn.config.image_size)
    distances = analysis.mean_attention_distance(subject.trace, subject.config.token_size).numpy()
    return distances * side / max(subject.config.image_size)


def _reach(subject: Subject, cnn) -> list:
    tr = subject.tr
    fields = [(field.name, field.size) for field in receptive_fields(cnn)]
    side = max(cnn.config.image_size)
    distances = _distances(subject, cnn)
    # the CNN's layers by their place in its groups ("1.conv3", hover: "groups.1.conv3"): the full
    # names, turned 45 degrees, took more of a slide's height than the plot
    chart = plots.reach(
        fields,
        distances,
        side,
        cnn_title=tr("compare.reach.cnn"),
        vit_title=tr("compare.reach.vit"),
        y_title=tr("compare.reach.y"),
        cnn_x_title=tr("compare.reach.x_cnn"),
        vit_x_title=tr("compare.reach.x_vit"),
        head_word=tr("attention.distance_head"),
        image_label=tr("compare.reach.image"),
        tick_text=[name.removeprefix("groups.") for name, _ in fields],
    )
    return [
        Heading(tr("compare.reach_title")),
        Text(tr("compare.reach_intro")),
        Figure("compare_reach", chart, subject.says(claims.reach(fields, distances, side))),
    ]
