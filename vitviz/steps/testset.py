"""The lab's map of the test set: every test image's [CLS] token (or mean patch token) after a
chosen layer, projected to 2D (``vitviz.analyses.projection``; shipped for the shipped model, else made once
by the app); a click on a point shows the image and opens it in the tour. Without the test images
it is the shipped map without its pictures."""

from __future__ import annotations

from vitviz.analyses import claims, lab, projection
from vitviz.analyses.evaluate import OtherClasses, inference
from vitviz.models.data import named_dataset, named_label
from vitviz.render import plots
from vitviz.render.i18n import plain
from vitviz.steps.blocks import Choices, Control, Controls, Figure, OpenInTour, Select, Step, Text
from vitviz.steps.subject import Subject

PICTURE_HEIGHT = 260  # the clicked image's figure


def describe(subject: Subject, choices: Choices) -> Step:
    """The map for the choices ``map_method``, ``map_token``, ``map_layer`` and ``map_colour``, and
    the image of the point ``map_point`` (a click) where the test images are at hand."""
    tr = subject.tr
    paper = "_paper" if subject.paper else ""  # paper: no point to click, no server to start
    title, intro = tr("page.map"), tr(f"map.intro{paper}")
    try:
        found, data, total = subject.compute.projection(subject)
    except OtherClasses:  # the server's test images are not this model's classes (an ImageNet model's 1,000)
        return Step(title, intro, (Text(tr("map.other_classes", n=subject.config.num_classes), role="info"),))
    if found is None:
        return Step(title, intro, (Text(tr(f"map.missing{paper}"), role="info"),))
    blocks: list = [] if data is not None else [_no_images(subject, paper)]
    classes = found.classes or list(subject.config.class_names)
    methods = tuple(sorted({m for m, _, _ in found.points}, key=projection.METHODS.index))
    tokens = tuple(t for t in projection.TOKENS if any(k == t for _, k, _ in found.points))
    method, token = _one_of(choices.get("map_method"), methods), _one_of(choices.get("map_token"), tokens)
    layers = tuple(found.layers)
    layer = choices.get("map_layer")
    layer = layer if layer in layers else layers[-1]
    colour = _one_of(choices.get("map_colour"), ("class", "right"))

    def layer_text(n: int) -> str:
        return tr("map.layer_option", n=n) if n else tr("map.layer_embed")

    def control(key: str, kind: str, label: str, options: tuple, value, shown) -> Control:
        return Control(key, kind, label, options, value, f"{label}: {shown(value)}", format=shown)

    blocks.append(
        Controls(
            (
                control("map_method", "radio", tr("map.method"), methods, method, lambda m: tr(f"map.method.{m}")),
                control("map_token", "radio", tr("map.token"), tokens, token, lambda t: tr(f"map.token.{t}")),
                control("map_layer", "select", tr("map.layer"), layers, layer, layer_text),
                control(
                    "map_colour", "radio", tr("map.colour"), ("class", "right"), colour, lambda c: tr(f"map.colour.{c}")
                ),
            )
        )
    )
    points = found.points[(method, token, layer)].numpy()
    labels, predictions = found.labels.numpy(), found.predictions.numpy()
    files = found.files or [tr("map.image_n", n=i + 1) for i in range(len(labels))]
    if colour == "class":
        groups, group_names = labels, [subject.label(c) for c in classes]
    else:
        groups, group_names = (labels != predictions).astype(int), [tr("map.right"), tr("map.wrong")]

    def about(i: int, key: str) -> str:
        return tr(
            key, file=files[i], true=subject.label(classes[labels[i]]), predicted=subject.label(classes[predictions[i]])
        )

    hover = [plain(about(i, "map.hover")) for i in range(len(labels))]  # figure text: plain, not Markdown
    count = f"{len(labels):,}"
    chart = plots.test_set_map(
        points,
        groups,
        group_names,
        hover,
        title=tr("map.title", count=count, token=tr(f"map.token.{token}"), layer=layer_text(layer)),
    )
    # the classes' legend in rows under the map: beside it, ten classes ran past a slide's height
    chart = plots.built_copy(chart)  # a copy to change: the app shares the built figure
    chart.update_layout(legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0))
    mirrored = inference(subject.model) != "image"  # the lab counts another answer than the map's one pass
    said = subject.says(claims.test_set_map(points, labels, predictions, mirrored))
    clickable = Select("map_point", len(labels)) if data is not None else None
    blocks.append(Figure("map_points", chart, said, select=clickable))
    seconds = ", ".join(f"{tr(f'map.method.{m}')}: {s:.0f} s" for m, s in found.seconds.items())
    blocks.append(Text(tr("map.note", seconds=seconds or "-"), role="caption"))
    if total is not None and len(labels) < total:
        blocks.append(Text(tr("map.subset", count=count), role="caption"))
    if data is None:  # no pictures to show for a click
        return Step(title, intro, tuple(blocks))
    index = choices.get("map_point")
    if not isinstance(index, int) or not 0 <= index < len(labels):
        return Step(title, intro, (*blocks, Text(tr("map.pick"), role="caption")))
    picture = lab.thumbnails(data.images[index : index + 1], 2 * lab.THUMBNAIL)[0]
    blocks.append(Figure("map_picked", plots.image(picture, height=PICTURE_HEIGHT), about(index, "map.picked")))
    blocks.append(OpenInTour("map_open_tour", *lab.class_position(data, index)))
    return Step(title, intro, tuple(blocks))


def _no_images(subject: Subject, paper: str) -> Text:
    """The map without its pictures, and how the server gets them: a folder of CIFAR-10's images,
    or a named dataset's own package or download (Fashion-MNIST's is Debian's)."""
    named = named_dataset(subject.config.class_names)
    if named is None or paper:
        return Text(subject.tr(f"map.no_images{paper}"), role="info")
    return Text(subject.tr("map.no_images_named", dataset=named_label(named)), role="info")


def _one_of(value, options: tuple):
    """``value`` if it is one of ``options``, else the first (a widget's default)."""
    return value if value in options else options[0]
