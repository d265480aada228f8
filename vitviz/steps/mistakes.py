"""The misclassification lab, as blocks: the test set's accuracy and confusion, a page of the
gallery, and one image up close (its top 5, where the model looked for each class, and when the
true class lost in the logit lens). The page (``app_pages/10_mistakes.py``) draws these blocks
among its widgets (filters, the gallery's buttons, a second model); presenter mode shows
``describe``'s slides. The handout has no lab section."""

from __future__ import annotations

import numpy as np

from vitviz.analyses import claims, lab
from vitviz.analyses.evaluate import EvalResult, inference
from vitviz.models import zoo
from vitviz.models.data import ImageSet, dataset_label
from vitviz.models.prediction import verdict
from vitviz.render import plots
from vitviz.steps.bars import class_bars
from vitviz.steps.blocks import Choices, Figure, Figures, Heading, Metrics, Step, Text
from vitviz.steps.names import dataset_text
from vitviz.steps.subject import Subject

MAP_HEIGHT = 380
EVERY_NAME = 20  # classes whose every name the axes show


def describe(subject: Subject, choices: Choices) -> Step:
    """The lab for the session's filters (``mistakes_true``, ``mistakes_predicted``,
    ``mistakes_range``, a second model ``mistakes_other`` / ``mistakes_other_path`` and
    ``mistakes_pair``), gallery page (``mistakes_page``) and image up close (``mistake``)."""
    tr = subject.tr
    title, intro = tr("page.mistakes"), tr("mistakes.intro")
    split = subject.compute.test_split(subject)
    if split is None:
        return Step(title, intro, (Text(tr("mistakes.no_data"), role="info"),))
    try:
        data = subject.compute.test_set(subject, split.location)
        result = subject.compute.evaluation(subject, subject.name, split.location)
    except (FileNotFoundError, ValueError) as err:
        return Step(title, intro, (Text(tr("mistakes.bad_data", message=str(err)), role="info"),))
    classes = result.classes
    true, predicted = (_class_choice(choices.get(key), len(classes)) for key in ("mistakes_true", "mistakes_predicted"))
    low, high = _range(choices.get("mistakes_range"))
    other, which = _other(subject, choices, split.location, classes)
    keep = lab.pair_mask(result, other, which) if other is not None and which != "first_wrong" else None
    diagonal = true is not None and true == predicted
    indices = lab.filter_mistakes(result, true, predicted, low, high, include_correct=diagonal, keep=keep)
    blocks = overview(subject, result, data)
    if len(indices) == 0:
        return Step(title, intro, (*blocks, Text(tr("mistakes.none"), role="info")), shape=_shape(result))
    page = _clip(choices.get("mistakes_page"), lab.page_bounds(len(indices), 1)[2])
    number = _clip(choices.get("mistake"), len(indices))
    blocks.append(gallery(subject, result, data, indices, page))
    index = int(indices[number - 1])
    blocks += up_close(subject, result, data, index, number, subject.compute.mistake(subject, split.location, index))
    return Step(title, intro, tuple(blocks), shape=_shape(result))


def overview(subject: Subject, result: EvalResult, data: ImageSet) -> list:
    """The accuracy, the mistakes and the speed; accuracy per class beside the confusion matrix."""
    tr = subject.tr
    metrics = Metrics(
        (
            (tr("mistakes.accuracy"), f"{result.accuracy:.1%}"),
            (tr("mistakes.misclassified", n=f"{result.n:,}"), tr("mistakes.of", m=f"{result.misclassified:,}")),
            (tr("mistakes.speed"), tr("mistakes.speed_value", speed=f"{result.images_per_s:,.0f}")),
        )
    )
    said = caption_of_data(subject, result, data)
    # a slide each (the page sets them side by side): ten classes' names and a 10 x 10 matrix's numbers
    # need a slide's width
    return [metrics, Text(said, role="caption"), *class_figures(subject, result, slide=True)]


def caption_of_data(subject: Subject, result: EvalResult, data: ImageSet) -> str:
    """Under the numbers: the test split, whether they were stored, and for a model that averages
    its mirror image that it does (``_mirror``)."""
    tr = subject.tr
    said = tr("mistakes.data", dataset=dataset_text(dataset_label(data), subject.lang), n=f"{len(data):,}")
    said += " " + tr("mistakes.stored") if result.cached else ""
    return said + _mirror(subject, data)


def _mirror(subject: Subject, data: ImageSet) -> str:
    """For a model that answers with the mean of its logits for each image and its mirror image
    (what the lab counts), that it does, and, from its card where the card measured these very
    images, its accuracy looking once at each: the figure model cards compare."""
    if inference(subject.model) == "image":
        return ""
    said = " " + subject.tr("mistakes.mirror")
    card = subject.spec.card if subject.spec is not None else None
    if (
        card is not None
        and card.one_view_accuracy is not None
        and card.tested_on.get("fingerprint") == data.fingerprint
    ):
        wrong = card.evaluated.get("one_view_misclassified")
        said += " " + subject.tr(
            "mistakes.mirror_one_view",
            accuracy=f"{card.one_view_accuracy:.2%}",
            wrong=f"{wrong:,}" if isinstance(wrong, int) else "?",
        )
    return said


def class_figures(
    subject: Subject, result: EvalResult, cell: tuple[int, int] | None = None, slide: bool = False
) -> tuple[Figure, Figure]:
    """Accuracy per true class, and the confusion matrix (``cell``: the filters' cell, outlined).
    ``slide``: the matrix for a projector, in colour alone (a slide's height leaves 10 x 10 counts
    unreadable) and without the page's "click a cell"."""
    tr, classes = subject.tr, result.classes
    labels = [subject.label(c) for c in classes]
    accuracy = result.per_class_accuracy()
    height = 160 + 42 * min(len(classes), 20)
    bars = plots.built_copy(plots.bars(labels, accuracy, title=tr("mistakes.per_class_title"), height=height))  # a copy
    confusion = result.confusion().numpy()
    matrix = plots.built_copy(  # a copy to change: the app shares the built figure
        plots.confusion_matrix(
            confusion,
            labels,
            title=tr("mistakes.confusion_slide" if slide else "mistakes.confusion_title"),
            x_title=tr("mistakes.axis_predicted"),
            y_title=tr("mistakes.axis_true"),
            selected=cell,
        )
    )
    if len(classes) <= EVERY_NAME:  # every class named, at a slide's height too (plotly drops every other)
        bars.update_yaxes(tickmode="array", tickvals=labels, ticktext=labels)
        matrix.update_yaxes(tickmode="array", tickvals=labels, ticktext=labels)
        matrix.update_xaxes(tickmode="array", tickvals=labels, ticktext=labels)
    if slide:
        matrix.update_traces(text=None, texttemplate=None, selector=dict(type="heatmap"))
        matrix.update_xaxes(title=None)  # the title says which axis is which, in one line
        matrix.update_yaxes(title=None)
        if len(classes) <= EVERY_NAME:
            short = [subject.label(c, short=True) for c in classes]
            matrix.update_xaxes(ticktext=short, tickangle=-30)  # less height than the page's -45
            matrix.update_yaxes(ticktext=short)
    return (
        Figure(
            "mistakes_per_class", bars, subject.says(claims.class_accuracy(dict(zip(classes, accuracy, strict=True))))
        ),
        Figure("mistakes_confusion", matrix, subject.says(claims.most_confused(confusion, classes))),
    )


def gallery(subject: Subject, result: EvalResult, data: ImageSet, indices, page: int) -> Figure:
    """Gallery page ``page`` of the filtered images (most confident first) as one picture."""
    start, end, pages = lab.page_bounds(len(indices), page, lab.PER_PAGE)
    shown = indices[start:end].tolist()
    pictures = lab.thumbnails(data.images[shown])  # (n, s, s, 3)
    rows = (len(shown) + lab.PER_ROW - 1) // lab.PER_ROW
    montage = plots.patch_montage(pictures, min(len(shown), lab.PER_ROW), gap=4)
    title = subject.tr("mistakes.page_of", page=page, pages=pages, start=start + 1, stop=end, count=f"{len(indices):,}")
    figure = plots.image(montage, title=title, height=120 + 110 * rows)
    classes = result.classes
    true = [classes[int(result.labels[i])] for i in shown]
    answered = [classes[int(result.predictions[i])] for i in shown]
    confidence = [float(result.confidence[i]) for i in shown]
    return Figure("mistakes_gallery_page", figure, subject.says(claims.gallery_page(true, answered, confidence)))


def caption(subject: Subject, result: EvalResult, number: int, index: int) -> str:
    """A thumbnail's caption: "#3 cat → dog (97%)"."""
    classes = result.classes
    return subject.tr(
        "mistakes.caption",
        n=number,
        true=subject.label(classes[int(result.labels[index])], short=True),
        predicted=subject.label(classes[int(result.predictions[index])], short=True),
        confidence=f"{float(result.confidence[index]):.0%}",
    )


def up_close(
    subject: Subject, result: EvalResult, data: ImageSet, index: int, number: int, inspected: dict[str, np.ndarray]
) -> list:
    """Test image ``index`` (#``number`` of the filtered list): the picture and its top 5, where the
    model looked for the predicted and the true class, and the logit lens of both."""
    tr, classes = subject.tr, result.classes
    true_class, predicted_class = int(result.labels[index]), int(result.predictions[index])
    true_label, predicted_label = subject.label(classes[true_class]), subject.label(classes[predicted_class])
    large = lab.thumbnails(data.images[index : index + 1], 2 * lab.THUMBNAIL)[0]
    said = tr(
        "mistakes.verdict",
        file=result.files[index],
        true=true_label,
        predicted=predicted_label,
        confidence=f"{float(result.confidence[index]):.1%}",
    )
    picture = Figure("mistakes_picture", plots.image(large, title=caption(subject, result, number, index)), said)
    return [Figures((picture, top5(subject, result, index))), *where_and_when(subject, result, data, index, inspected)]


def top5(subject: Subject, result: EvalResult, index: int) -> Figure:
    """The image's top classes (its answer red, its true class green), and where the true class ranks."""
    classes = result.classes
    probs = result.probs[index]  # (K,)
    values, top = probs.topk(k := min(5, len(classes)))
    found = verdict(probs, classes, classes[int(result.labels[index])])
    names = [classes[c] for c in top.tolist()]
    chart = class_bars(subject.lang, names, values.tolist(), subject.tr("mistakes.top5_title"), found, 90 + 40 * k)
    rank = subject.tr("mistakes.true_rank", name=subject.label(found.true_class), rank=found.rank, k=len(classes))
    return Figure("mistakes_top5", chart, rank)


def where_and_when(
    subject: Subject, result: EvalResult, data: ImageSet, index: int, inspected: dict[str, np.ndarray]
) -> list:
    """The two classes' maps (gradient-weighted rollout) and the logit lens of the true and the
    predicted class, layer by layer, each under its heading and introduction."""
    tr, classes = subject.tr, result.classes
    true_class, predicted_class = int(result.labels[index]), int(result.predictions[index])
    names = {"true": subject.label(classes[true_class]), "predicted": subject.label(classes[predicted_class])}
    picture = data.images[index].permute(1, 2, 0).numpy()  # (H, W, C) uint8, C = 1 or 3
    hover = subject.tr("hover.row_col", row="%{customdata[0]}", col="%{customdata[1]}")
    hover = f"{tr('hover.patch')} %{{customdata[2]}} ({hover}): %{{z:.4f}}<extra></extra>"
    maps = []
    for which in ("predicted", "true"):
        values = inspected[f"map_{which}"]  # (grid_h, grid_w)
        title = tr(f"mistakes.map_{which}", name=names[which])
        chart = plots.heatmap_overlay(picture, values, title=title, height=MAP_HEIGHT, hover=hover)
        maps.append(Figure(f"mistakes_map_{which}", chart, subject.says(claims.map_peak(values))))
    lens = inspected["logit_lens"]  # (depth + 1, K) probabilities
    rank_true, rank_predicted = inspected["rank_true"], inspected["rank_predicted"]  # (depth + 1,)
    points = np.arange(len(lens))
    series_true = tr("mistakes.series_true", name=names["true"])
    series_predicted = tr("mistakes.series_predicted", name=names["predicted"])
    chart = plots.multi_line(
        points,
        {series_true: lens[:, true_class], series_predicted: lens[:, predicted_class]},
        title=tr("mistakes.lens_chart"),
        x_title=tr("mistakes.x_block"),
        y_title=tr("mistakes.y_prob"),
        percent=True,
        colours={series_true: plots.TRUE_COLOUR, series_predicted: plots.PREDICTED_COLOUR},
        hover_text=[
            tr(
                "mistakes.hover" if b else "mistakes.hover_embed",  # no "after layer 0": layers count from 1
                block=b,
                true=names["true"],
                rank_true=int(rank_true[b]) + 1,
                predicted=names["predicted"],
                rank_predicted=int(rank_predicted[b]) + 1,
            )
            for b in points
        ],
    )
    lost = claims.lens_lost([int(r) for r in rank_true], len(lens) - 1, classes[true_class])
    lens_figure = Figure("mistakes_lens", chart, subject.says(lost))
    said = [Heading(tr("mistakes.maps_title"), minor=True), Text(tr("mistakes.maps_intro"))]
    said += [Text(tr("mistakes.maps_no_cls"), role="caption")] if subject.model.num_prefix_tokens == 0 else []
    when = [Heading(tr("mistakes.lens_title"), minor=True), Text(tr("mistakes.lens_intro"))]
    return [*said, *_one_pass(subject, classes, predicted_class, lens), Figures(tuple(maps)), *when, lens_figure]


def _one_pass(subject: Subject, classes: list[str], predicted: int, lens: np.ndarray) -> list[Text]:
    """For a model whose answer in the lab is the mean with the mirror image: that the maps and the
    lens follow one pass of the image as it is (``lab.inspect_mistake``, as the tour does), and
    that pass's answer (the lens's last point) where it is not the lab's ``predicted``: a caption
    where they agree, a box where they do not."""
    if inference(subject.model) == "image":
        return []
    one = int(np.argmax(lens[-1]))  # (K,) the last layer's read: the one pass's probabilities
    filled = {"pred": subject.label(classes[predicted]), "one": subject.label(classes[one])}
    if one == predicted:
        return [Text(subject.tr("mistakes.one_pass_same", **filled), role="caption")]
    return [Text(subject.tr("mistakes.one_pass_differs", **filled), role="info", slide=True)]


def _shape(result: EvalResult) -> str:
    """EvalResult.probs' shape: one probability per image and class."""
    return f"({result.n}, {len(result.classes)})"


def _class_choice(value: object, count: int) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < count else None


def _range(value: object) -> tuple[float, float]:
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        return tuple(sorted(min(max(float(v), 0.0), 1.0) for v in value))
    return 0.0, 1.0


def _clip(value: object, last: int) -> int:
    return min(max(value, 1), max(last, 1)) if isinstance(value, int) and not isinstance(value, bool) else 1


def _other(subject: Subject, choices: Choices, location: str, classes) -> tuple[EvalResult | None, str]:
    """The second model's evaluation on the same images, and which of the pair's mistakes to list."""
    name = str(choices.get("mistakes_other_path") or "").strip() or str(choices.get("mistakes_other") or "")
    which = choices.get("mistakes_pair")
    which = which if which in lab.PAIRS else "first_wrong"
    if not name:
        return None, "first_wrong"
    try:
        return subject.compute.evaluation(subject, name, location), which
    except (zoo.ModelLoadError, ValueError):  # the page says why it cannot be compared; a slide leaves it out
        return None, "first_wrong"
