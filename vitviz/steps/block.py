"""Step 6: the encoder block. pre-LN -> MHSA -> residual -> pre-LN -> MLP (GELU) -> residual.

Layers are 0-based in code and in the choices (layer 0 is blocks[0]) and counted from 1 on screen
and in the URL ("Layer 1 (blocks[0])", layer=1), as on the attention step; the token is the shared
"query" choice, a token index ([CLS], when there is one, is token 0, and token k is patch k).
"""

from __future__ import annotations

import numpy as np

from vitviz.analyses import analysis, claims
from vitviz.render import plots, tables
from vitviz.steps.blocks import (
    Choices,
    Control,
    Controls,
    Download,
    DownloadCsv,
    Figure,
    Figures,
    Heading,
    Metrics,
    Step,
    Text,
    shape_text,
)
from vitviz.steps.picks import clipped, token_label
from vitviz.steps.subject import Subject

COLOURS = {"residual_norm": "#444444", "attn_norm": "#1f77b4", "mlp_norm": "#2ca02c", "cosine": "#9467bd"}


def describe(subject: Subject, choices: Choices) -> Step:
    """The block's diagram with this model's shapes; one layer (``layer``) token by token, with
    the GELU inputs of one token (``query``); every layer's stream and branches."""
    tr, trace = subject.tr, subject.trace
    depth = trace.depth
    if depth == 0:
        return Step(tr("page.block"), tr("block.intro"), (Text(tr("block.no_blocks"), role="info"),))
    prefix = trace.num_prefix_tokens
    num_tokens = trace.hidden_states[0].shape[1]
    grid_h, grid_w = trace.grid_size
    centre = analysis.patch_index(grid_h // 2, grid_w // 2, trace.grid_size, prefix)
    layer = clipped(choices.get("layer"), 0, 0, depth - 1)
    query = clipped(choices.get("query"), centre, 0, num_tokens - 1)
    per_layer = analysis.block_statistics(trace)  # (depth,) each, mean over patch tokens
    one_layer, arrays = _layer(subject, layer, query, per_layer)
    by_layer = _by_layer(trace, per_layer)
    blocks = [*_diagram(subject), *one_layer, *_depth(subject, layer, per_layer)]
    blocks += [
        DownloadCsv("download.csv", "block_by_layer.csv", "block_depth_csv", lambda: tables.columns_csv(by_layer)),
        Download(
            "download.npz",
            f"block_layer{layer + 1}.npz",
            "block_layer_npz",
            {**arrays, **{f"by_layer_{k}": v for k, v in by_layer.items()}},
        ),
    ]
    return Step(
        tr("page.block"), tr("block.intro"), tuple(blocks), shape=shape_text(trace.hidden_states[layer + 1].shape)
    )


def mlp_width(hidden: int, dim: int) -> str:
    """The MLP's hidden width as the diagram's boxes write it against the token's D: "4D" (ViT-B/16's
    3072 of 768), "2D" (the shipped CIFAR ViT's 384 of 192), "0.5D", "D"; the number itself where
    it is no such simple multiple (1000 of 768)."""
    ratio = hidden / dim
    if abs(round(ratio, 2) - ratio) > 1e-9:
        return str(hidden)
    return "D" if ratio == 1 else f"{ratio:g}D"


def _diagram(subject: Subject) -> list:
    tr, trace = subject.tr, subject.trace
    steps = analysis.block_shapes(subject.model, trace)
    hidden, dim = dict(steps)["fc1"][-1], trace.hidden_states[0].shape[-1]
    width = mlp_width(hidden, dim)
    boxes = [
        (tr(f"block.step.{step}", width=width), shape_text(shape), plots.BLOCK_KINDS[step]) for step, shape in steps
    ]
    add1, add2 = analysis.BLOCK_STEPS.index("add1"), analysis.BLOCK_STEPS.index("add2")
    figure = plots.block_diagram(
        boxes, residuals=[(0, add1), (add1, add2)], title=tr("block.diagram_title", depth=trace.depth)
    )
    shape = dict(steps)["add2"]
    return [
        Heading(tr("block.diagram")),
        Figure("block_diagram", figure, subject.says(claims.block_shape(shape, hidden, trace.depth))),
        Text(tr("block.parts", heads=trace.num_heads, hidden=hidden, dim=dim)),
    ]


def _layer(subject: Subject, layer: int, query: int, per_layer: dict) -> tuple[list, dict[str, np.ndarray]]:
    """One layer, token by token: the tokens' lengths through the block, the branches' sizes, and
    what GELU receives for one token; and those numbers, for the download."""
    tr, trace, model = subject.tr, subject.trace, subject.model
    num_tokens = trace.hidden_states[0].shape[1]

    def layer_label(index: int) -> str:
        return tr("block.layer_n", n=index + 1, index=index)

    found: list = [
        Heading(tr("block.layer_title")),
        Controls(
            (
                Control(
                    "layer",
                    "slider",
                    tr("block.layer"),
                    tuple(range(trace.depth)),
                    layer,
                    f"{tr('block.layer')}: {layer_label(layer)}",
                    layer_label,
                ),
                Control(
                    "query",
                    "number",
                    tr("block.token"),
                    tuple(range(num_tokens)),
                    query,
                    f"{tr('block.token')}: {token_label(subject, query, 'block')}",
                ),
            )
        ),
        Text(token_label(subject, query, "block"), role="caption"),
        Metrics(
            (
                (tr("block.metric_attn"), f"{float(per_layer['attn_ratio'][layer]):.2f}"),
                (tr("block.metric_mlp"), f"{float(per_layer['mlp_ratio'][layer]):.2f}"),
                (tr("block.metric_cosine"), f"{float(per_layer['cosine'][layer]):.3f}"),
            ),
            helps=(tr("block.metric_attn_help"), tr("block.metric_mlp_help"), tr("block.metric_cosine_help")),
        ),
    ]
    norms = analysis.block_token_norms(model, trace, layer)  # (T,) each
    tokens = np.arange(num_tokens)
    labels = [token_label(subject, i, "block") for i in tokens]
    markers = num_tokens <= 80
    token_axis = subject.says(claims.token_axis(trace.num_prefix_tokens))
    where = layer_label(layer)
    series = {tr(f"block.series.{key}"): norms[key].numpy() for key in ("input", "norm1", "mid", "norm2")}
    lengths = plots.multi_line(
        tokens,
        series,
        title=tr("block.norms_title", where=where),
        x_title=token_axis,
        y_title=tr("block.y_norm"),
        dashed=(tr("block.series.mid"), tr("block.series.norm2")),
        markers=markers,
        hover_text=labels,
        marked_x=query,
    )
    ratios = plots.multi_line(
        tokens,
        {tr(f"block.series.{key}"): norms[key].numpy() for key in ("attn_ratio", "mlp_ratio")},
        title=tr("block.ratio_title", where=where),
        x_title=token_axis,
        y_title=tr("block.y_ratio"),
        markers=markers,
        hover_text=labels,
        marked_x=query,
    )
    before, after = norms["input"].numpy(), norms["norm1"].numpy()
    found += [
        Figures(
            (
                Figure("block_token_norms", lengths, subject.says(claims.layer_norm_takeaway(before, after))),
                Figure(
                    "block_token_ratios",
                    ratios,
                    subject.says(
                        claims.branch_sizes(norms["attn_ratio"].numpy(), norms["mlp_ratio"].numpy(), layer + 1)
                    ),
                ),
            ),
            apart=True,
        ),
        Text(tr("block.norms_caption", dim=trace.hidden_states[0].shape[-1]), role="caption"),
        Text(subject.says(claims.layer_norm_lengths(before, after))),
    ]
    pre = analysis.mlp_preactivations(model, trace, layer, query)  # (mlp_hidden,)
    curves = analysis.activation_curves(min(-4.0, float(pre.min())), max(4.0, float(pre.max())))
    gelu = plots.gelu_histogram(
        curves["x"].numpy(),
        curves["gelu"].numpy(),
        curves["relu"].numpy(),
        pre.numpy(),
        title=tr("block.gelu_title", token=token_label(subject, query, "block"), where=where),
        x_title=tr("block.gelu_x"),
        y_title=tr("block.gelu_y"),
        count_title=tr("block.gelu_count"),
        values_name=tr("block.gelu_values"),
    )
    found += [
        Figure("block_gelu", gelu, subject.says(claims.gelu_share(pre.numpy()))),
        Text(subject.says(claims.gelu_inputs(pre.numpy())), role="caption"),
    ]
    arrays = {f"token_{k}": v.numpy() for k, v in norms.items()}
    return found, {**arrays, "fc1_preactivations": pre.numpy(), "token": np.array(query)}


def _by_layer(trace, per_layer: dict) -> dict[str, np.ndarray]:
    """Every layer's numbers of the "layer by layer" charts, as the downloads name them."""
    columns = {"layer": np.arange(1, trace.depth + 1), **{f"patches_{k}": v.numpy() for k, v in per_layer.items()}}
    if trace.num_prefix_tokens:
        columns |= {f"cls_{k}": v.numpy() for k, v in analysis.block_statistics(trace, token=0).items()}
    return columns


def _depth(subject: Subject, layer: int, per_layer: dict) -> list:
    """Layer by layer: the stream and the two branches (patch mean, and [CLS] dashed), and the
    cosine of each block's output with its input."""
    tr, trace = subject.tr, subject.trace
    cls = analysis.block_statistics(trace, token=0) if trace.num_prefix_tokens else None
    x = np.arange(1, trace.depth + 1)
    names = {key: tr(f"block.series.{key}") for key in COLOURS}
    series, dashed, colour_of = {}, [], {}
    for key in ("residual_norm", "attn_norm", "mlp_norm"):
        series[names[key]] = per_layer[key].numpy()
        colour_of[names[key]] = COLOURS[key]
        if cls is not None:
            name = f"{names[key]} [CLS]"
            series[name], colour_of[name] = cls[key].numpy(), COLOURS[key]
            dashed.append(name)
    cosine_cls = f"{names['cosine']} [CLS]"
    cosine = {names["cosine"]: per_layer["cosine"].numpy()}
    if cls is not None:
        cosine[cosine_cls] = cls["cosine"].numpy()
    sizes = plots.multi_line(
        x,
        series,
        title=tr("block.depth_norms_title"),
        x_title=tr("block.x_layer"),
        y_title=tr("block.y_norm"),
        dashed=dashed,
        colours=colour_of,
        marked_x=layer + 1,
    )
    turns = plots.multi_line(
        x,
        cosine,
        title=tr("block.depth_cosine_title"),
        x_title=tr("block.x_layer"),
        y_title=tr("block.y_cosine"),
        dashed=[cosine_cls],
        colours={names["cosine"]: COLOURS["cosine"], cosine_cls: COLOURS["cosine"]},
        marked_x=layer + 1,
    )
    stream, branches = claims.depth_trend(
        *(per_layer[k].numpy() for k in ("residual_norm", "attn_ratio", "mlp_ratio", "cosine"))
    )
    return [
        Heading(tr("block.depth_title")),
        Text(tr("block.depth_intro")),
        Figures(
            (
                Figure("block_depth_norms", sizes, subject.says(stream)),
                Figure("block_depth_cosine", turns, subject.says(branches)),
            ),
            apart=True,
        ),
        Text(tr("block.depth_caption") if cls is not None else tr("block.no_cls"), role="caption"),
    ]
