"""Step 3: one patch as a vector of P*P*C numbers, and its linear projection to a D-dim token."""

from __future__ import annotations

from vitviz.analyses import claims
from vitviz.models.data import denormalize
from vitviz.models.patches import ROUTE_TOLERANCE
from vitviz.render import plots
from vitviz.steps.blocks import (
    Choices,
    Control,
    Controls,
    Download,
    Figure,
    Figures,
    Formula,
    Heading,
    Select,
    Step,
    Table,
    Text,
    shape_text,
)
from vitviz.steps.subject import Subject


def chosen(value: object, grid: tuple[int, int]) -> int:
    """A patch choice (0-based) clipped to the grid; the centre patch when there is none."""
    grid_h, grid_w = grid
    if not isinstance(value, int) or isinstance(value, bool):
        return (grid_h // 2) * grid_w + grid_w // 2
    return min(max(value, 0), grid_h * grid_w - 1)


def patch_control(subject: Subject, key: str, label_key: str, static_key: str, grid: tuple[int, int], value: int):
    """A select box of the patches, counted from 1 with their row and column."""
    grid_w = grid[1]

    def name(i: int) -> str:
        return subject.tr("vectors.patch_option", index=i + 1, row=i // grid_w + 1, col=i % grid_w + 1)

    options = tuple(range(grid[0] * grid_w))
    return Control(
        key, "select", subject.tr(label_key), options, value, f"{subject.tr(static_key)}: {name(value)}", name
    )


def describe(subject: Subject, choices: Choices) -> Step:
    """The chosen patch (``patch``) as its P x P planes and as the flat vector x_p, its token
    W x_p + b, a check that the model's Conv2d is exactly that, and the patch filters' principal
    components."""
    tr, config, trace = subject.tr, subject.config, subject.trace
    p, chans, dim = config.patch_size, config.feature_dim, config.embed_dim  # chans: a hybrid's ResNet channels
    length = chans * p * p
    gray = "_gray" if chans == 1 else ""  # one channel: the filters are grey pictures, not colour ones
    grid_h, grid_w = trace.grid_size
    count = grid_h * grid_w
    names = ["R", "G", "B"] if chans == 3 else ["L"] if chans == 1 else [f"c{c}" for c in range(1, chans + 1)]
    blocks: list = []
    if config.is_hybrid:
        blocks.append(Text(tr("vectors.hybrid", p=p, chans=chans, length=length), role="info"))

    index = chosen(choices.get("patch"), (grid_h, grid_w))
    blocks.append(
        Controls((patch_control(subject, "patch", "vectors.choose", "vectors.patch_shown", (grid_h, grid_w), index),))
    )
    model_input = denormalize(trace.pixels[0], config.preprocess)
    grid_title = tr("vectors.grid_paper", index=index + 1) if subject.paper else tr("vectors.grid")
    grid = plots.patch_grid(
        model_input, config.token_size, highlight=index, title=grid_title, numbers=count <= 64, height=400
    )
    where = subject.says(claims.chosen_patch(index, (grid_h, grid_w), config.token_size))
    grid_figure = Figure("vectors_grid", grid, where, select=Select("patch", count))

    vector = trace.patches[0, index].numpy()  # (C*P*P,) in (c p1 p2) order
    index_word = tr("hover.index")
    if config.is_hybrid:  # thousands of channels: one bar each, no picture
        title = tr("vectors.hybrid_flat", index=index + 1, length=length)
        flat = plots.vector_bars(vector, index_word=index_word, title=title, x_title=tr("vectors.hybrid_axis"))
        peak = subject.says(claims.vector_peak(vector, p, None))
        blocks.append(Figures((grid_figure, Figure("vectors_flat", flat, peak))))
    else:
        title = tr("vectors.planes", index=index + 1, p=p)
        # each plane's title on two lines ("c = 1 (R)", "1-16"): three fit side by side on half a slide
        plane_titles = [name.replace(": ", "<br>") for name in plots.plane_titles(names, p)]
        planes = plots.patch_planes(vector, p, chans, plane_titles, title=title, index_word=index_word)
        means = subject.says(claims.channel_means(names, vector.reshape(chans, p * p)))
        blocks.append(Figures((grid_figure, Figure("vectors_planes", planes, means))))
        blocks.append(Text(tr("vectors.planes_note_paper" if subject.paper else "vectors.planes_note"), role="caption"))
        flat = plots.vector_bars(
            vector,
            index_word=index_word,
            segment=p * p,
            names=names,
            title=tr("vectors.flat", length=length, pp=p * p, p=p),
            x_title=tr("vectors.index_axis"),
        )
        blocks.append(Figure("vectors_flat", flat, subject.says(claims.vector_peak(vector, p, names))))

    token = trace.patch_tokens[0, index].numpy()  # (D,)
    blocks.append(
        Formula(
            rf"\underbrace{{z_p}}_{{{dim}}} = \underbrace{{W}}_{{{dim} \times {length}}}\;"
            rf"\underbrace{{x_p}}_{{{length}}} + \underbrace{{b}}_{{{dim}}}",
            f"z_p ({dim}) = W ({dim} x {length}) x_p ({length}) + b ({dim})",
        )
    )
    note = "vectors.formula_note_hybrid" if config.is_hybrid else f"vectors.formula_note{gray}"
    blocks.append(Text(tr(note, dim=dim, length=length, p=p), role="caption"))
    bars = plots.vector_bars(
        token, index_word=tr("hover.channel"), title=tr("vectors.token", dim=dim), x_title=tr("vectors.token_axis")
    )
    blocks.append(Figure("vectors_token", bars, subject.says(claims.projection(length, dim))))
    place = {"patch": index, "row": index // grid_w, "col": index % grid_w, "vector": vector, "token": token}
    blocks.append(Download("vectors.download_vector", f"patch_{index + 1}_vector_token.npz", "vectors_npz", place))

    blocks += [Heading(tr("vectors.check")), Text(tr("vectors.check_intro"))]
    differences = subject.compute.routes(subject)
    rows = tuple(
        {
            tr("vectors.col.route"): name,
            tr("vectors.col.how"): tr(f"vectors.route.{name}"),
            tr("vectors.col.diff"): f"{diff:.2e}",
        }
        for name, diff in differences.items()
    )
    agree = claims.routes(differences, ROUTE_TOLERANCE)
    blocks += [Table(rows), Text(subject.says(agree), role="success" if agree.key == "vectors.check_ok" else "error")]

    if config.is_hybrid:
        blocks.append(Text(tr("vectors.filters_hybrid", chans=chans), role="caption"))
    else:
        components, ratios = subject.compute.filter_components(subject)  # all: their shares decide how many to show
        reading = claims.filter_components(ratios, p)
        blocks += [
            Heading(subject.says(reading["title"])),
            Text(tr(f"vectors.filters_intro{gray}", dim=dim)),
            Text(subject.says([reading["spread"], reading["size"]])),
        ]
        if not subject.trained:
            blocks.append(Text(tr("vectors.filters_untrained"), role="info"))
        tiles = subject.compute.component_tiles(subject, claims.components_to_show(ratios))
        blocks.append(Figure("vectors_components", tiles, subject.says(reading["spread"])))
        arrays = {"components": components, "explained_variance_ratio": ratios}
        blocks.append(
            Download("vectors.download_components", "patch_embed_components.npz", "vectors_components_npz", arrays)
        )
    intro = tr(f"vectors.intro{gray}")
    shape = f"patch_tokens {shape_text(trace.patch_tokens.shape)}  ·  x_p: {chans} x {p} x {p} = {length}"
    return Step(tr("page.vectors"), intro, tuple(blocks), shape=shape)
