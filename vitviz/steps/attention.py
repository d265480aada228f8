"""Step 5: self-attention. Where [CLS] and any patch look, every head, rollout, distance, and one
query worked out (``vitviz.steps.attention_worked``).

Layers and heads are 0-based in code and in the choices (layer 0 is blocks[0]) and counted from 1
on screen and in the URL ("Layer 1", "Head 1", layer=1), as on every page; so are patches, rows and
columns. A token keeps its index in the sequence, where [CLS] is token 0, so with a [CLS] token,
token k is patch k. ``picks.HEAD_MEAN`` (-1) as the "head" choice means the mean of the heads; it is
never passed to vitviz.analyses.analysis as a head index (``picks`` names and clips the choices).
"""

from __future__ import annotations

import numpy as np

from vitviz.analyses import analysis, claims
from vitviz.models.data import denormalize
from vitviz.render import plots, tables
from vitviz.steps.attention_worked import worked
from vitviz.steps.blocks import (
    Choices,
    Control,
    Controls,
    Download,
    DownloadCsv,
    Figure,
    Figures,
    Heading,
    Select,
    Step,
    Text,
    shape_text,
)
from vitviz.steps.picks import HEAD_MEAN, clipped, head_label, layer_label, token_label
from vitviz.steps.subject import Subject

HEADS_OF = ("readout", "query")  # the small multiples show [CLS] (or the mean patch query), or the query


def describe(subject: Subject, choices: Choices) -> Step:
    """Attention at the chosen layer, head and query (``layer``, ``head``, ``query``): the maps of
    [CLS] and of the query, every head, rollout (``attention_fusion``), mean attention distance,
    and softmax(q K^T / sqrt(d)) V worked out for the query."""
    tr, trace = subject.tr, subject.trace
    depth, heads = trace.depth, trace.num_heads
    if depth == 0:
        return Step(tr("page.attention"), tr("attention.intro"), (Text(tr("attention.no_blocks"), role="info"),))
    prefix = trace.num_prefix_tokens
    grid_h, grid_w = trace.grid_size
    num_tokens = prefix + grid_h * grid_w
    centre = analysis.patch_index(grid_h // 2, grid_w // 2, trace.grid_size, prefix)
    layer = clipped(choices.get("layer"), 0, 0, depth - 1)
    head = clipped(choices.get("head"), 0, HEAD_MEAN, heads - 1)
    query = clipped(choices.get("query"), centre, 0, num_tokens - 1)
    view = View(subject, layer, head, query)
    blocks = [*view.controls(), *view.maps(), *view.every_head(choices), *view.rollout(choices), *view.distance()]
    blocks += [*worked(subject, layer, view.head_index, query), *view.downloads()]
    shape = shape_text(trace.attentions[layer].shape)
    paper = tr("attention.intro_paper")
    return Step(tr("page.attention"), tr("attention.intro"), tuple(blocks), shape=shape, paper_intro=paper)


class View:
    """The attention step at one layer, head and query: its sections, each a list of blocks."""

    def __init__(self, subject: Subject, layer: int, head: int, query: int) -> None:
        self.subject, self.tr, self.trace = subject, subject.tr, subject.trace
        self.layer, self.head, self.query = layer, head, query
        self.head_index = None if head == HEAD_MEAN else head
        trace = self.trace
        self.prefix, self.heads = trace.num_prefix_tokens, trace.num_heads
        self.num_tokens = self.prefix + trace.grid_size[0] * trace.grid_size[1]
        self.where = f"{self.layer_label(layer)}, {self.head_label(head)}"
        self.model_input = denormalize(trace.pixels[0], subject.config.preprocess)  # (H, W, 3) in [0, 1]
        self.readout_maps = analysis.readout_attention(trace, layer)[0]  # (heads, grid_h, grid_w)
        self.query_maps = analysis.query_attention(trace, layer, query)[0]  # (heads, grid_h, grid_w)
        self.readout_map = analysis.select_head(self.readout_maps, self.head_index).numpy()  # (grid_h, grid_w)
        self.query_map = analysis.select_head(self.query_maps, self.head_index).numpy()
        self.rollout_map: np.ndarray | None = None
        self.fusion = "mean"

    def layer_label(self, index: int) -> str:
        return layer_label(self.subject, index)

    def head_label(self, index: int) -> str:
        return head_label(self.subject, index)

    def readout_who(self, where: str) -> str:
        return self.tr("claims.who.cls" if self.prefix else "claims.who.mean", where=where)

    def controls(self) -> list:
        tr, depth, heads = self.tr, self.trace.depth, self.heads
        help_key = "attention.query_help_cls" if self.prefix else "attention.query_help_no_cls"
        return [
            Controls(
                (
                    Control(
                        "layer",
                        "slider",
                        tr("attention.layer"),
                        tuple(range(depth)),
                        self.layer,
                        f"{tr('attention.layer')}: {self.layer_label(self.layer)}",
                        self.layer_label,
                    ),
                    Control(
                        "head",
                        "select",
                        tr("attention.head"),
                        (*range(heads), HEAD_MEAN),
                        self.head,
                        f"{tr('attention.head')}: {self.head_label(self.head)}",
                        self.head_label,
                    ),
                    Control(
                        "query",
                        "number",
                        tr("attention.query"),
                        tuple(range(self.num_tokens)),
                        self.query,
                        f"{tr('attention.query')}: {token_label(self.subject, self.query)}",
                        help=tr(help_key, last=self.num_tokens - 1),
                    ),
                )
            ),
            Text(token_label(self.subject, self.query), role="caption"),
        ]

    def maps(self) -> list:
        """Where [CLS] (or the mean patch query) and the chosen query look; a click picks the query."""
        tr, trace, subject = self.tr, self.trace, self.subject
        count = trace.grid_size[0] * trace.grid_size[1]
        size = subject.config.token_size  # pixels per token
        query_patch = self.query - self.prefix if self.query >= self.prefix else None
        found: list = [Heading(tr("attention.maps"))]
        if not self.prefix:
            found.append(Text(tr("attention.no_cls"), role="info"))
        readout_title = tr("attention.cls_title" if self.prefix else "attention.mean_title", where=self.where)
        query_title = tr("attention.query_title", token=self.query, where=self.where)
        query_who = tr("claims.who.token", token=self.query, where=self.where)
        select = Select("query", count, self.prefix)
        found.append(
            Figures(
                (
                    Figure(
                        "attention_readout",
                        plots.attention_picker(self.model_input, self.readout_map, size, None, title=readout_title),
                        subject.says(claims.attention_focus(self.readout_map, self.readout_who(self.where))),
                        select,
                    ),
                    Figure(
                        "attention_query",
                        plots.attention_picker(self.model_input, self.query_map, size, query_patch, title=query_title),
                        subject.says(claims.attention_focus(self.query_map, query_who, query_patch)),
                        select,
                    ),
                )
            )
        )
        caption = tr("attention.maps_caption", tokens=self.num_tokens)
        found.append(Text(f"{tr('attention.click_hint')} {caption}", role="caption", paper=caption))
        return found

    def every_head(self, choices: Choices) -> list:
        """Every head of this layer, for [CLS] (or the mean patch query) or for the query."""
        tr, heads = self.tr, self.heads
        view = choices.get("attention_heads_of")
        view = view if view in HEADS_OF else HEADS_OF[0]
        readout_word = tr("attention.heads_of.readout" if self.prefix else "attention.heads_of.readout_mean")

        def shown(option: str) -> str:
            return readout_word if option == "readout" else f"{tr('attention.heads_of.query')} ({self.query})"

        multiples = (self.readout_maps if view == "readout" else self.query_maps).numpy()  # (heads, grid_h, grid_w)
        titles = [self.head_label(h) for h in range(heads)]
        figure = plots.small_multiples(
            multiples, titles, columns=min(heads, 6), height_per_row=200, hover=self.subject.grid_hover()
        )
        layer = self.layer_label(self.layer)
        return [
            Heading(tr("attention.heads")),
            Controls(
                (
                    Control(
                        "attention_heads_of",
                        "radio",
                        tr("attention.heads_of"),
                        HEADS_OF,
                        view,
                        f"{tr('attention.heads_of')}: {shown(view)}",
                        shown,
                    ),
                )
            ),
            Figure("attention_heads", figure, self.subject.says(claims.head_peaks(multiples, layer))),
            Text(tr("attention.heads_caption", heads=heads, layer=layer), role="caption"),
        ]

    def rollout(self, choices: Choices) -> list:
        """Rollout through every layer beside the last layer alone."""
        tr, trace, subject, depth = self.tr, self.trace, self.subject, self.trace.depth
        fusion = choices.get("attention_fusion")
        self.fusion = fusion if fusion in analysis.HEAD_FUSIONS else analysis.HEAD_FUSIONS[0]
        readout = tr("attention.rollout_readout.cls" if self.prefix else "attention.rollout_readout.mean")
        self.rollout_map = analysis.rollout_map(trace, head_fusion=self.fusion)[0].numpy()  # (grid_h, grid_w)
        fusion_word = tr(f"attention.fusion.{self.fusion}")
        rollout_title = tr("attention.rollout_title", depth=depth, fusion=fusion_word)
        # beside it, the last layer alone (heads averaged): where the two differ, earlier layers have mixed the tokens
        last_layer = analysis.select_head(analysis.readout_attention(trace, depth - 1)[0], None).numpy()
        last_where = f"{self.layer_label(depth - 1)}, {self.head_label(HEAD_MEAN)}"
        last_title = tr("attention.cls_title" if self.prefix else "attention.mean_title", where=last_where)
        hover = subject.grid_hover()
        rollout_who = tr("claims.who.rollout", readout=readout)
        return [
            Heading(tr("attention.rollout")),
            Text(tr("attention.rollout_intro", readout=readout)),
            Controls(
                (
                    Control(
                        "attention_fusion",
                        "radio",
                        tr("attention.fusion"),
                        analysis.HEAD_FUSIONS,
                        self.fusion,
                        f"{tr('attention.fusion')}: {fusion_word}",
                        lambda f: tr(f"attention.fusion.{f}"),
                        help=tr("attention.fusion_help"),
                    ),
                )
            ),
            Figures(
                (
                    Figure(
                        "attention_rollout",
                        plots.heatmap_overlay(
                            self.model_input, self.rollout_map, title=rollout_title, height=420, hover=hover
                        ),
                        subject.says(claims.attention_focus(self.rollout_map, rollout_who)),
                    ),
                    Figure(
                        "attention_last_layer",
                        plots.heatmap_overlay(self.model_input, last_layer, title=last_title, height=420, hover=hover),
                        subject.says(claims.attention_focus(last_layer, self.readout_who(last_where))),
                    ),
                )
            ),
            Text(tr("attention.rollout_caption"), role="caption"),
        ]

    def distance(self) -> list:
        """Mean attention distance of every head (the ViT paper's Fig. 7, right)."""
        tr, trace = self.tr, self.trace
        size = self.subject.config.token_size
        self.distances = analysis.mean_attention_distance(trace, size).numpy()  # (depth, heads)
        uniform = analysis.uniform_attention_distance(trace.grid_size, size)
        figure = plots.attention_distance(
            self.distances,
            title=tr("attention.distance_title"),
            x_title=tr("attention.distance_x"),
            y_title=tr("attention.distance_y"),
            head_word=tr("attention.distance_head"),
            uniform=uniform,
            uniform_label=tr("attention.distance_uniform"),
        )
        reading = claims.attention_distance(self.distances, uniform, max(trace.pixels.shape[-2:]))
        patches = trace.grid_size[0] * trace.grid_size[1]
        return [
            Heading(tr("attention.distance")),
            Text(tr("attention.distance_intro")),
            Figure("attention_distance", figure, self.subject.says(reading[-1])),
            Text(self.subject.says(reading)),
            Text(tr("attention.distance_single", patches=patches), role="caption"),
        ]

    def downloads(self) -> list:
        readout_name = "cls" if self.prefix else "mean_patch_queries"
        head_name = "mean" if self.head_index is None else self.head + 1
        maps = {readout_name: self.readout_map, f"query_{self.query}": self.query_map}
        maps[f"rollout_{self.fusion}"] = self.rollout_map
        attention = self.trace.attentions[self.layer]
        return [
            DownloadCsv(
                "attention.download_maps",
                f"attention_layer{self.layer + 1}_head{head_name}.csv",
                "attention_csv",
                lambda: tables.maps_csv(maps),
            ),
            Download(
                "attention.download_tensor",
                f"attention_layer{self.layer}.npz",
                "attention_npz",
                {
                    "attention": attention.numpy(),
                    "layer": np.array(self.layer),
                    "mean_attention_distance": self.distances,
                },
            ),
        ]
