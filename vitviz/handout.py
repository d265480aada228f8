"""A handout: one image's tour through the ViT as one HTML file a student opens anywhere, offline.

    python -m vitviz.handout IMAGE [--model NAME] [--lang en|ko] [--data FOLDER] -o FILE.html

IMAGE is an image file, a sample photo's name (vitviz/assets/samples/, with or without its extension)
or ``test=class/index``: a test image of the model's dataset, found as the app's sidebar finds it
(``vitviz.lab.test_split_for``; ``--data`` plays the part of the server's ``--data``).

The file holds plotly.js once, inlined, then every figure of the tour as Plotly's own JSON
(``to_html(include_plotlyjs=False, full_html=False)``), the image as a data: URI, and a few lines
of script for the attention step's layer and head selectors: it asks for nothing over the
network. Only what the figures show is stored: the readout rows of attention ([CLS], or the mean
of the patch queries), never whole (layers, heads, T, T) tensors; figure arrays travel as
Plotly's base64 typed arrays, exact, and the selectors' maps with 4 significant digits. A print
stylesheet starts every step on a page of its own. The sentences are the app's: the same i18n
keys, and ``vitviz.claims`` for the sentences that read the numbers.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn

from vitviz import analysis, claims, commandline, faithfulness, lab, plots, zoo
from vitviz import data as vdata
from vitviz.data import ImageError, denormalize, input_pixels, load_image, original_size, to_tensor
from vitviz.i18n import DEFAULT_LANGUAGE, ESCAPED, LANGUAGES, TranslatedError, class_label, plain, t
from vitviz.model import VisionTransformer, on_weights
from vitviz.prediction import Verdict, legend_key, top_k, verdict
from vitviz.steps import blocks, card, patches, testset, trust
from vitviz.steps.subject import Subject
from vitviz.trace import Trace, forward_steps
from vitviz.values import echo, test_image

SAMPLES = zoo.ASSETS / "samples"
WIDTH = 720  # pixels of the page's column: A4 portrait, less 10 mm margins, at 96 dpi
HALF = 352  # two figures side by side
IMAGE_SIDE = 640  # the embedded photo's longer side at most (a 12-megapixel photo would be megabytes)
DIGITS = 4  # significant digits of the selectors' attention maps (the figures' own arrays are exact)
TOP = 5
PLOT_CONFIG = {"displaylogo": False, "responsive": False}


class HandoutError(TranslatedError, ValueError):
    """A handout cannot be made as asked; the sentence says what to give instead."""


@dataclass(frozen=True)
class Truth:
    """The known class of a test image, and its dataset's name as the verdict sentence writes it."""

    class_name: str
    dataset: str


@dataclass(frozen=True)
class Chosen:
    """An image as the command line names it: its bytes, the name the handout shows, its class if known."""

    data: bytes
    name: str
    truth: Truth | None = None


# ---------------------------------------------------------------------------------------------
# Which image, which CNN
# ---------------------------------------------------------------------------------------------


def sample_names() -> list[str]:
    return sorted(p.name for p in SAMPLES.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))


def choose_image(text: str, class_names: Sequence[str], data_root: Path | str | None = None) -> Chosen:
    """The image IMAGE names: ``test=class/index``, a file, or a sample photo (see the module docstring).

    Raises:
        HandoutError: a sentence saying what is wrong and what to give instead.
    """
    if text.startswith("test="):
        return _test_image(text.removeprefix("test="), class_names, data_root)
    path = Path(text).expanduser()
    try:
        is_file = path.is_file()
    except OSError:  # a name too long for the file system names no file
        is_file = False
    if is_file:
        return Chosen(path.read_bytes(), path.name)
    samples = sample_names()
    found = [name for name in samples if text in (name, Path(name).stem)]
    if found:
        return Chosen((SAMPLES / found[0]).read_bytes(), found[0])
    raise HandoutError("handout.no_image", name=echo(text), samples=", ".join(samples))


def _test_image(spec: str, class_names: Sequence[str], data_root: Path | str | None) -> Chosen:
    chosen = test_image(spec)  # class names may hold "/" ("T-shirt/top/3")
    if chosen is None:
        raise HandoutError("handout.test_form", given=echo(spec))
    cls, index = chosen
    root = lab.default_test_root(data_root)
    split = lab.test_split_for(class_names, root)
    if split is None:
        raise HandoutError("handout.no_test")
    images = lab.TestImages(split, lambda location: vdata.load_split(location, "test", download=False))
    classes = images.classes()
    if cls not in classes:
        raise HandoutError("handout.test_class", name=echo(cls), classes=", ".join(classes))
    count = images.count(cls)
    if index >= count:
        raise HandoutError("handout.test_index", name=cls, count=count, last=count - 1)
    return Chosen(images.image_bytes(cls, index), f"test={cls}/{index}", Truth(cls, split.label))


def matching_cnn(class_names: Sequence[str]) -> str | None:
    """The registry's first CNN that predicts the same classes (the ViT-vs-CNN step's), or None."""
    for name, spec in zoo.REGISTRY.items():
        if spec.is_cnn and list(spec.config.class_names) == list(class_names) and spec.offline:
            return name
    return None


# ---------------------------------------------------------------------------------------------
# The page, piece by piece
# ---------------------------------------------------------------------------------------------


def markdown(text: str) -> str:
    """The little Markdown the locale files use (paragraphs, "- " lists, **bold**, *italic*,
    `code`, a backslash before a character that would be markup) as HTML, everything else escaped."""

    def inline(line: str) -> str:
        line = re.sub(r"`([^`]+)`", r"<code>\1</code>", line)
        line = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", line)
        return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", line)

    out, items = [], []
    literal = ESCAPED.sub(lambda m: f"&#{ord(m[1])};", html.escape(text, quote=False))  # no longer markup
    for line in literal.split("\n"):
        if line.startswith("- "):
            items.append(f"<li>{inline(line[2:])}</li>")
            continue
        if items:
            out.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if line.strip():
            out.append(f"<p>{inline(line)}</p>")
    if items:
        out.append("<ul>" + "".join(items) + "</ul>")
    return "\n".join(out)


def table(rows: Sequence[dict[str, object]]) -> str:
    """Rows of {column: value} as an HTML table (the columns of the first row)."""
    if not rows:
        return ""
    columns = list(rows[0])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(row.get(c, '')))}</td>" for c in columns) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def image_uri(array: np.ndarray, longest: int = IMAGE_SIDE) -> tuple[str, tuple[int, int]]:
    """An (H, W, 3) uint8 picture as a data: URI (PNG when small, else JPEG), at most ``longest``
    pixels on its longer side; and the (width, height) it has in the file."""
    picture = Image.fromarray(plots.to_uint8(array))
    if max(picture.size) > longest:
        picture.thumbnail((longest, longest), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    small = picture.width * picture.height <= 128 * 128
    picture.save(buffer, "PNG" if small else "JPEG", quality=90)
    kind = "png" if small else "jpeg"
    return f"data:image/{kind};base64," + base64.b64encode(buffer.getvalue()).decode("ascii"), picture.size


def _json_script(element_id: str, value: object) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def rounded(values: np.ndarray, digits: int = DIGITS) -> list:
    """An array as nested lists of numbers with ``digits`` significant digits (for the JSON the
    selectors read)."""
    return np.vectorize(lambda v: float(f"{v:.{digits}g}"), otypes=[float])(np.asarray(values, np.float64)).tolist()


class _Page:
    """The handout's HTML in the making: steps, each a title, a paragraph, a shape and its figures."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.parts: list[str] = []
        self.names: set[str] = set()
        self.in_step = False

    def tr(self, key: str, **values: object) -> str:
        return plain(t(key, self.lang, **values))  # the handout writes its own HTML

    def label(self, name: str) -> str:
        return class_label(name, self.lang)

    def step(self, number: int, total: int, title_key: str, intro: str, shape: str | None = None) -> None:
        if self.in_step:
            self.parts.append("</section>")
        self.in_step = True
        counter = (
            self.tr("nav.overview", total=total) if number == 0 else self.tr("nav.step", index=number, total=total)
        )
        self.parts.append(f'<section class="step" id="step-{number}"><p class="counter">{html.escape(counter)}</p>')
        self.parts.append(f"<h2>{html.escape(self.tr(title_key))}</h2>")
        self.parts.append(markdown(intro))
        if shape is not None:
            self.parts.append(
                f'<p class="shape"><strong>{html.escape(self.tr("shape.label"))}:</strong> <code>{html.escape(shape)}</code></p>'
            )

    def heading(self, text: str) -> None:
        self.parts.append(f"<h3>{html.escape(plain(text))}</h3>")

    def text(self, text: str) -> None:
        self.parts.append(markdown(text))

    def raw(self, markup: str) -> None:
        self.parts.append(markup)

    def figures(self, *named: tuple[str, plots.Figure]) -> None:
        """One figure across the column, or several side by side."""
        width = WIDTH if len(named) == 1 else (WIDTH - 16 * (len(named) - 1)) // len(named)
        self.parts.append(
            '<div class="row">' + "".join(self.figure(name, fig, width) for name, fig in named) + "</div>"
        )

    def figure(self, name: str, fig: plots.Figure, width: int = WIDTH) -> str:
        assert name not in self.names, name
        self.names.add(name)
        height = fig.layout.height or 380
        title = fig.layout.title.text
        if title:  # wrapped to this figure's width; the theme makes room above the plot for its lines
            title = plots.wrap(title, (width - 24) / plots.TITLE_PX[False])
            height += round(1.3 * plots.TITLE_PX[False] * title.count("<br>"))  # and the plot keeps its height
            fig.update_layout(title_text=title)
        fig.update_layout(width=width, height=height, autosize=False)
        plots.theme(fig)  # the app's look (vitviz.app.ui themes every figure it draws)
        markup = fig.to_html(
            include_plotlyjs=False,
            full_html=False,
            div_id=f"fig-{name}",
            config=PLOT_CONFIG,
            default_width=f"{width}px",
            default_height=f"{height}px",
        )
        return f'<div class="figure" style="width:{width}px">{markup}</div>'

    def html(self) -> str:
        return "\n".join([*self.parts, "</section>"] if self.in_step else self.parts)

    def described(self, number: int, total: int, step: blocks.Step, lab: bool = False) -> None:
        """A step described as data (``vitviz.steps``): the same blocks the page and the slides
        draw. A control becomes the sentence of the value it was described with; downloads stay
        in the app. ``lab``: a lab page after the tour's steps (its counter says "Lab")."""
        if self.in_step:
            self.parts.append("</section>")
        self.in_step = True
        if lab:
            counter = self.tr("nav.lab")
        elif number == 0:
            counter = self.tr("nav.overview", total=total)
        else:
            counter = self.tr("nav.step", index=number, total=total)
        self.parts.append(f'<section class="step" id="step-{number}"><p class="counter">{html.escape(counter)}</p>')
        self.parts.append(f"<h2>{html.escape(plain(step.title))}</h2>")
        self.text(step.intro)
        if step.shape is not None:
            label = html.escape(self.tr("shape.label"))
            self.parts.append(f'<p class="shape"><strong>{label}:</strong> <code>{html.escape(step.shape)}</code></p>')
        for block in step.blocks:
            self.block(block)

    def block(self, block: blocks.Block) -> None:
        """One block of a described step, on paper."""
        if isinstance(block, blocks.Text):
            kind = {"info": "note", "success": "verdict right", "warning": "verdict wrong"}.get(block.role)
            self.raw(f'<div class="{kind}">{markdown(block.text)}</div>' if kind else markdown(block.text))
        elif isinstance(block, blocks.Heading):
            self.heading(block.text)
        elif isinstance(block, blocks.Metrics):
            self.raw(table([{plain(label): value for label, value in block.items}]))
        elif isinstance(block, blocks.Figure | blocks.Figures):
            shown = (block,) if isinstance(block, blocks.Figure) else block.figures
            self.figures(*((figure.key.replace("_", "-"), figure.figure) for figure in shown))
            self.raw(
                '<div class="row takeaways">'
                + "".join(f'<p class="takeaway">{html.escape(plain(figure.takeaway))}</p>' for figure in shown)
                + "</div>"
            )
        elif isinstance(block, blocks.Table):
            self.raw(table([{plain(str(k)): v for k, v in row.items()} for row in block.rows]))
            if block.caption:
                self.text(block.caption)
        elif isinstance(block, blocks.Controls):
            chosen = " · ".join(html.escape(plain(control.static)) for control in block.controls)
            self.raw(f'<p class="chosen">{chosen}</p>')
        elif not isinstance(block, blocks.Download | blocks.OpenInTour):  # buttons stay in the app
            raise TypeError(f"No handout for {type(block).__name__}")


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def _grid_hover(page: _Page) -> str:
    where = page.tr("hover.row_col", row="%{customdata[0]}", col="%{customdata[1]}")
    return f"{page.tr('hover.patch')} %{{customdata[2]}} ({where}): %{{z:.4f}}<extra></extra>"


# ---------------------------------------------------------------------------------------------
# The steps
# ---------------------------------------------------------------------------------------------


@dataclass
class _Tour:
    """What every step reads: the model, the image, its trace and what the app derives from them."""

    model: VisionTransformer
    spec: zoo.ModelSpec
    image: np.ndarray  # (H, W, 3) uint8, upright, as load_image kept it
    original_size: tuple[int, int]  # (width, height) in the file: larger where load_image scaled it down
    name: str
    trace: Trace
    truth: Truth | None
    found: Verdict | None
    model_input: np.ndarray  # (H, W, 3) in [0, 1], as the model saw it

    @property
    def config(self):
        return self.model.config


def _overview(page: _Page, tour: _Tour, total: int) -> None:
    trace, config = tour.trace, tour.config
    page.step(0, total, "page.home", page.tr("home.intro"), _shape(trace.pixels.shape))
    grid = plots.patch_grid(tour.model_input, config.token_size, height=360)
    named = [("home-grid", grid)]
    if config.num_classes:
        named.append(("home-topk", _class_bars(page, tour, trace.logits, page.tr("home.prediction"), 360)))
    page.figures(*named)
    _verdict(page, tour)
    page.heading(page.tr("home.pipeline"))
    page.raw(
        table(
            [
                {
                    page.tr("home.col.step"): code,
                    page.tr("home.col.shape"): _shape(shape),
                    page.tr("home.col.meaning"): page.tr(f"home.step.{step}"),
                }
                for step, code, shape in forward_steps(config, trace)
            ]
        )
    )


def _found(tour: _Tour, logits: torch.Tensor) -> Verdict | None:
    return verdict(logits[0].float().softmax(dim=-1), tour.config.class_names, tour.truth and tour.truth.class_name)


def _class_bars(
    page: _Page, tour: _Tour, logits: torch.Tensor, title: str, height: int, beside: tuple[Verdict | None, ...] = ()
) -> plots.Figure:
    """Top-5 bars as the app draws them (``current.class_bars``): the answer red, the true class
    green, one legend for this chart and the charts of the verdicts ``beside`` it."""
    ranked = top_k(tour.config.class_names, logits, TOP)
    names = [name for name, _ in ranked]
    found = _found(tour, logits)
    correct = names.index(found.true_class) if found is not None and found.true_class in names else None
    key = legend_key([found, *beside])
    if key:
        title = f"{title} ({page.tr(key)})"
    return plots.bars(
        [page.label(n) for n in names], [p for _, p in ranked], title=title, height=height, highlight=0, correct=correct
    )


def _verdict(page: _Page, tour: _Tour) -> None:
    """Right or wrong, as the app's ``ui.show_verdict`` says it (nothing when the class is unknown)."""
    found = tour.found
    if found is None or tour.truth is None:
        return
    values = {
        "truth": page.label(found.true_class),
        "pred": page.label(found.predicted),
        "p": f"{found.probability:.1%}",
        "rank": found.rank,
        "n": found.num_classes,
        "dataset": tour.truth.dataset,
    }
    kind = "right" if found.correct else "wrong"
    page.raw(f'<div class="verdict {kind}">{markdown(page.tr(f"verdict.{kind}", **values))}</div>')


def _input(page: _Page, tour: _Tour, total: int) -> None:
    config, pre = tour.config, tour.config.preprocess
    page.step(1, total, "page.input", page.tr("input.intro"), _shape(tour.trace.pixels.shape))
    kept_height, kept_width = tour.image.shape[:2]
    width, height = tour.original_size
    uri, _ = image_uri(tour.image)
    if (width, height) == (kept_width, kept_height):
        original = html.escape(page.tr("input.original", width=width, height=height))
    else:
        values = dict(width=width, height=height, kept_width=kept_width, kept_height=kept_height)
        original = html.escape(page.tr("input.original_scaled", **values))
    resized = input_pixels(Image.fromarray(tour.image), pre, config.in_chans).permute(1, 2, 0).numpy()  # (H, W, C)
    title = "input.resized_gray" if config.in_chans == 1 else "input.resized"
    page.raw(
        '<div class="row">'
        f'<figure class="photo" style="width:{HALF}px"><img src="{uri}" alt="{html.escape(tour.name)}">'
        f"<figcaption>{original}</figcaption></figure>"
        + page.figure(
            "input-resized",
            plots.image(resized, page.tr(title, width=resized.shape[1], height=resized.shape[0]), height=360),
            HALF,
        )
        + "</div>"
    )
    means, stds = ", ".join(f"{m:.4g}" for m in pre.mean), ", ".join(f"{s:.4g}" for s in pre.std)
    page.text(f"`(x - mean) / std, mean=({means}), std=({stds})`")


def _vectors(page: _Page, tour: _Tour, total: int) -> None:
    trace, config, model = tour.trace, tour.config, tour.model
    p, chans, dim = config.patch_size, config.feature_dim, config.embed_dim
    length = chans * p * p
    grid_h, grid_w = trace.grid_size
    shape = f"patch_tokens {_shape(trace.patch_tokens.shape)}  ·  x_p: {chans} x {p} x {p} = {length}"
    page.step(3, total, "page.vectors", page.tr("vectors.intro_gray" if chans == 1 else "vectors.intro"), shape)
    index = (grid_h // 2) * grid_w + grid_w // 2  # the centre patch, as the page opens
    vector = trace.patches[0, index].numpy()  # (C*P*P,) in (c p1 p2) order
    token = trace.patch_tokens[0, index].numpy()  # (D,)
    page.figures(("vectors-grid", plots.patch_grid(tour.model_input, config.token_size, highlight=index, height=360)))
    if not config.is_hybrid:
        names = ["R", "G", "B"] if chans == 3 else ["L"] if chans == 1 else [f"c{c}" for c in range(1, chans + 1)]
        planes = plots.patch_planes(
            vector,
            p,
            chans,
            plots.plane_titles(names, p),
            title=page.tr("vectors.planes", index=index + 1, p=p),
            index_word=page.tr("hover.index"),
        )
        page.figures(("vectors-planes", planes))
    bars = plots.vector_bars(
        vector,
        index_word=page.tr("hover.index"),
        segment=None if config.is_hybrid else p * p,
        names=[] if config.is_hybrid else (["R", "G", "B"] if chans == 3 else ["L"]),
        title=page.tr("vectors.flat", length=length, pp=p * p, p=p),
        x_title=page.tr("vectors.index_axis"),
    )
    page.figures(("vectors-flat", bars))
    page.figures(
        (
            "vectors-token",
            plots.vector_bars(
                token,
                index_word=page.tr("hover.channel"),
                title=page.tr("vectors.token", dim=dim),
                x_title=page.tr("vectors.token_axis"),
            ),
        )
    )
    page.text(page.tr("vectors.formula_note", dim=dim, length=length, p=p))
    if not config.is_hybrid:
        components, ratios = analysis.patch_embed_components(model.patch_embed.proj.weight.detach().cpu(), k=None)
        reading = claims.filter_components(ratios.numpy(), p)
        page.heading(claims.text(reading["title"], page.lang))
        page.text(page.tr("vectors.filters_intro", dim=dim))
        page.text(claims.text([reading["spread"], reading["size"]], page.lang))
        shown = claims.components_to_show(ratios.numpy())
        page.figures(("vectors-components", plots.component_tiles(components[:shown].numpy(), ratios[:shown].numpy())))


def _tokens(page: _Page, tour: _Tour, total: int) -> None:
    trace, model = tour.trace, tour.model
    grid_h, grid_w = trace.grid_size
    shape = f"{_shape(trace.patch_tokens.shape)} → {_shape(trace.tokens.shape)}"
    page.step(4, total, "page.tokens", page.tr("tokens.intro"), shape)
    page.heading(page.tr("tokens.similarity"))
    page.text(page.tr("tokens.similarity_intro"))
    pos_embed = model.pos_embed.detach()[0].cpu()  # (T, D)
    similarity = analysis.pos_embed_similarity(pos_embed, trace.grid_size, trace.num_prefix_tokens).numpy()
    row, col = grid_h // 2, grid_w // 2
    large = page.tr("tokens.large_title", index=row * grid_w + col + 1, row=row + 1, col=col + 1)
    page.figures(
        (
            "tokens-mosaic",
            plots.similarity_grid(
                similarity,
                title=page.tr("tokens.mosaic_title", h=grid_h, w=grid_w),
                selected=row * grid_w + col,
                height=420,
            ),
        ),
        (
            "tokens-large",
            plots.similarity_maps(
                similarity[row, col][None], [large], marked=(row, col), height=420, hover=_grid_hover(page)
            ),
        ),
    )


def _attention(page: _Page, tour: _Tour, total: int) -> None:
    trace, config = tour.trace, tour.config
    depth, heads = trace.depth, trace.num_heads
    prefix = trace.num_prefix_tokens
    page.step(5, total, "page.attention", page.tr("attention.intro"), _shape(trace.attentions[0].shape))
    # every layer's readout maps, and their mean over the heads last: (depth, heads + 1, grid_h, grid_w)
    maps = torch.stack([analysis.readout_attention(trace, layer)[0] for layer in range(depth)])
    maps = torch.cat([maps, maps.mean(dim=1, keepdim=True)], dim=1).numpy()
    layer_names = [page.tr("attention.layer_n", n=n + 1) for n in range(depth)]
    head_names = [page.tr("attention.head_n", n=n + 1) for n in range(heads)] + [page.tr("attention.mean_heads")]
    title_key = "attention.cls_title" if prefix else "attention.mean_title"
    titles = [[page.tr(title_key, where=f"{layer}, {head}") for head in head_names] for layer in layer_names]
    page.heading(page.tr("attention.maps"))
    options = "".join(f'<option value="{i}">{html.escape(n)}</option>' for i, n in enumerate(layer_names))
    head_options = "".join(
        f'<option value="{i}"{" selected" if i == heads else ""}>{html.escape(n)}</option>'
        for i, n in enumerate(head_names)
    )
    page.raw(
        '<div class="controls">'
        f'<label>{html.escape(page.tr("attention.layer"))} <select id="attention-layer">{options}</select></label>'
        f'<label>{html.escape(page.tr("attention.head"))} <select id="attention-head">{head_options}</select></label>'
        "</div>"
    )
    first = plots.heatmap_overlay(
        tour.model_input, maps[0, heads], title=titles[0][heads], height=440, hover=_grid_hover(page)
    )
    page.figures(("attention", first))
    page.heading(page.tr("attention.heads"))
    every = plots.small_multiples(
        maps[0, :heads], head_names[:heads], columns=min(heads, 6), height_per_row=160, hover=_grid_hover(page)
    )
    page.figures(("attention-heads", every))
    page.raw(
        _json_script(
            "attention-data",
            {"heads": heads, "titles": titles, "layers": layer_names, "maps": rounded(maps)},
        )
    )
    # rollout beside the last layer alone
    page.heading(page.tr("attention.rollout"))
    readout = page.tr("attention.rollout_readout.cls" if prefix else "attention.rollout_readout.mean")
    page.text(page.tr("attention.rollout_intro", readout=readout))
    rollout = analysis.rollout_map(trace)[0].numpy()
    rollout_title = page.tr("attention.rollout_title", depth=depth, fusion=page.tr("attention.fusion.mean"))
    page.figures(
        (
            "attention-rollout",
            plots.heatmap_overlay(tour.model_input, rollout, title=rollout_title, height=360, hover=_grid_hover(page)),
        ),
        (
            "attention-last",
            plots.heatmap_overlay(
                tour.model_input, maps[-1, heads], title=titles[-1][heads], height=360, hover=_grid_hover(page)
            ),
        ),
    )
    page.text(page.tr("attention.rollout_caption"))
    # mean attention distance
    page.heading(page.tr("attention.distance"))
    page.text(page.tr("attention.distance_intro"))
    distances = analysis.mean_attention_distance(trace, config.token_size).numpy()  # (depth, heads)
    uniform = analysis.uniform_attention_distance(trace.grid_size, config.token_size)
    page.figures(
        (
            "attention-distance",
            plots.attention_distance(
                distances,
                title=page.tr("attention.distance_title"),
                x_title=page.tr("attention.distance_x"),
                y_title=page.tr("attention.distance_y"),
                head_word=page.tr("attention.distance_head"),
                uniform=uniform,
                uniform_label=page.tr("attention.distance_uniform"),
            ),
        )
    )
    page.text(claims.text(claims.attention_distance(distances, uniform, max(trace.pixels.shape[-2:])), page.lang))


def _block(page: _Page, tour: _Tour, total: int) -> None:
    trace, model = tour.trace, tour.model
    depth, prefix = trace.depth, trace.num_prefix_tokens
    page.step(6, total, "page.block", page.tr("block.intro"), _shape(trace.hidden_states[1].shape))
    steps = analysis.block_shapes(model, trace)
    boxes = [(page.tr(f"block.step.{step}"), _shape(shape), plots.BLOCK_KINDS[step]) for step, shape in steps]
    add1, add2 = analysis.BLOCK_STEPS.index("add1"), analysis.BLOCK_STEPS.index("add2")
    dim = trace.hidden_states[0].shape[-1]
    page.heading(page.tr("block.diagram"))
    page.figures(
        (
            "block-diagram",
            plots.block_diagram(
                boxes, residuals=[(0, add1), (add1, add2)], title=page.tr("block.diagram_title", depth=depth)
            ),
        )
    )
    page.text(page.tr("block.parts", heads=trace.num_heads, hidden=dict(steps)["fc1"][-1], dim=dim))
    # the block's numbers, every layer (the app shows one at a time)
    per_layer = analysis.block_statistics(trace)  # (depth,) each, mean over patch tokens
    page.raw(
        table(
            [
                {
                    page.tr("block.x_layer"): page.tr("block.layer_n", n=i + 1, index=i),
                    page.tr("block.metric_attn"): f"{float(per_layer['attn_ratio'][i]):.2f}",
                    page.tr("block.metric_mlp"): f"{float(per_layer['mlp_ratio'][i]):.2f}",
                    page.tr("block.metric_cosine"): f"{float(per_layer['cosine'][i]):.3f}",
                }
                for i in range(depth)
            ]
        )
    )
    # layer 1, token by token: what LayerNorm does to the tokens' lengths (the app's first view)
    norms = analysis.block_token_norms(model, trace, 0)
    tokens = np.arange(trace.hidden_states[0].shape[1])
    where = page.tr("block.layer_n", n=1, index=0)
    page.heading(page.tr("block.layer_title"))
    page.figures(
        (
            "block-norms",
            plots.multi_line(
                tokens,
                {page.tr(f"block.series.{k}"): norms[k].numpy() for k in ("input", "norm1", "mid", "norm2")},
                title=page.tr("block.norms_title", where=where),
                x_title=plain(claims.text(claims.token_axis(prefix), page.lang)),
                y_title=page.tr("block.y_norm"),
                dashed=(page.tr("block.series.mid"), page.tr("block.series.norm2")),
                markers=len(tokens) <= 80,
            ),
        )
    )
    page.text(claims.text(claims.layer_norm_lengths(norms["input"].numpy(), norms["norm1"].numpy()), page.lang))
    # layer by layer
    page.heading(page.tr("block.depth_title"))
    page.text(page.tr("block.depth_intro"))
    x = np.arange(1, depth + 1)
    series = {page.tr(f"block.series.{k}"): per_layer[k].numpy() for k in ("residual_norm", "attn_norm", "mlp_norm")}
    cosine = {page.tr("block.series.cosine"): per_layer["cosine"].numpy()}
    page.figures(
        (
            "block-depth-norms",
            plots.multi_line(
                x,
                series,
                title=page.tr("block.depth_norms_title"),
                x_title=page.tr("block.x_layer"),
                y_title=page.tr("block.y_norm"),
            ),
        ),
        (
            "block-depth-cosine",
            plots.multi_line(
                x,
                cosine,
                title=page.tr("block.depth_cosine_title"),
                x_title=page.tr("block.x_layer"),
                y_title=page.tr("block.y_cosine"),
            ),
        ),
    )


def _prediction(page: _Page, tour: _Tour, total: int) -> None:
    trace, model, config = tour.trace, tour.model, tour.config
    page.step(7, total, "page.prediction", page.tr("prediction.intro"), _shape(trace.logits.shape))
    if config.num_classes == 0:
        page.text(page.tr("prediction.no_head"))
        return
    page.heading(page.tr("prediction.topk_title"))
    page.figures(
        (
            "prediction-topk",
            _class_bars(page, tour, trace.logits, page.tr("prediction.topk_chart", k=TOP), 90 + 36 * TOP),
        )
    )
    _verdict(page, tour)
    # the logit lens
    page.heading(page.tr("prediction.lens_title"))
    page.text(page.tr("prediction.lens_intro_cls" if config.global_pool == "token" else "prediction.lens_intro_avg"))
    lens = analysis.logit_lens(model, trace).float().cpu()  # (depth + 1, B, K)
    blocks = np.arange(trace.depth + 1)
    after = [
        page.tr("prediction.after_embed") if i == 0 else page.tr("prediction.after_layer", n=i, index=i - 1)
        for i in blocks
    ]
    tracked, scores = analysis.logit_lens_tracks(lens, k=min(TOP, config.num_classes))
    names = config.class_names

    def class_name(index: int) -> str:
        return page.label(names[index]) if names else page.tr("prediction.class_n", n=index)

    page.figures(
        (
            "prediction-lens",
            plots.multi_line(
                blocks,
                {class_name(int(c)): scores[:, j].numpy() for j, c in enumerate(tracked)},
                title=page.tr("prediction.lens_chart"),
                x_title=page.tr("prediction.x_block"),
                y_title=page.tr("prediction.y_prob"),
                percent=True,
                hover_text=after,
            ),
        )
    )
    top1, top1_prob = analysis.logit_lens_top1(lens)
    final_class = int(trace.logits[0].argmax())
    final_rank = analysis.class_rank_by_layer(lens, final_class)[:, 0]
    page.raw(
        table(
            [
                {
                    page.tr("prediction.col.after"): after[i],
                    page.tr("prediction.col.top1"): class_name(int(top1[i])),
                    page.tr("prediction.col.prob"): f"{float(top1_prob[i]):.1%}",
                    page.tr("prediction.col.rank", name=class_name(final_class)): int(final_rank[i]) + 1,
                }
                for i in blocks
            ]
        )
    )
    # occlusion
    page.heading(page.tr("prediction.occlusion_title"))
    page.text(page.tr("prediction.occlusion_intro"))
    steps = analysis.occlusion_steps(model)
    num_patches = config.num_patches
    curves = {}
    start = trace.logits[0].float().softmax(dim=-1)  # the top-k bars' numbers: the curves start from them
    for kind in analysis.OCCLUSION_ORDERS:
        order = analysis.occlusion_order(trace, kind)
        with torch.inference_mode():
            curve = analysis.occlusion_curve(model, trace.pixels, order, steps, target=final_class, start=start)
        curves[kind] = curve.numpy()
    counts = analysis.occlusion_counts(num_patches, steps).numpy()
    fractions = counts / num_patches
    curve_names = {kind: page.tr(f"prediction.order.{kind}") for kind in analysis.OCCLUSION_ORDERS}
    page.figures(
        (
            "prediction-occlusion",
            plots.multi_line(
                fractions,
                {curve_names[kind]: curve for kind, curve in curves.items()},
                title=page.tr("prediction.occlusion_chart", name=class_name(final_class)),
                x_title=page.tr("prediction.x_hidden"),
                y_title=page.tr("prediction.y_prob"),
                percent=True,
                x_percent=True,
                colours={curve_names["rollout"]: "#d62728", curve_names["random"]: "#7f7f7f"},
                hover_text=[page.tr("prediction.hidden_n", n=int(c), total=num_patches) for c in counts],
            ),
        )
    )
    page.text(claims.text(claims.occlusion(fractions, curves["rollout"], curves["random"]), page.lang))
    orders = faithfulness.RANDOM_ORDERS
    page.text(page.tr("prediction.occlusion_verdict", page=page.tr("page.trust"), orders=orders))
    page.text(page.tr("prediction.occlusion_caption", steps=steps, images=steps, patches=num_patches))


def _compare(page: _Page, tour: _Tour, total: int, cnn: nn.Module) -> None:
    from vitviz import compare

    trace, vit = tour.trace, tour.model
    names = list(vit.config.class_names)
    image = Image.fromarray(tour.image)
    cnn_pixels = on_weights(to_tensor(image, cnn.config.preprocess, cnn.config.in_chans), cnn)
    with torch.inference_mode():
        cnn_logits = cnn(cnn_pixels).float().cpu()  # (1, K)
    page.step(
        8,
        total,
        "page.compare",
        page.tr("compare.intro"),
        f"ViT {_shape(trace.logits.shape)}, CNN {_shape(cnn_logits.shape)}",
    )
    page.heading(page.tr("compare.answers"))
    page.figures(
        (
            "compare-vit-top",
            _class_bars(
                page, tour, trace.logits, page.tr("compare.vit_top"), 90 + 36 * TOP, (_found(tour, cnn_logits),)
            ),
        ),
        (
            "compare-cnn-top",
            _class_bars(page, tour, cnn_logits, page.tr("compare.cnn_top"), 90 + 36 * TOP, (tour.found,)),
        ),
    )
    truth = tour.truth.class_name if tour.truth else None
    class_index = names.index(truth) if truth in names else int(trace.logits[0].argmax())
    shown = page.label(names[class_index])
    page.heading(page.tr("compare.maps_title"))
    page.text(page.tr("compare.maps_intro"))
    vit_pixels = on_weights(trace.pixels, vit)
    cnn_input = denormalize(cnn_pixels[0].cpu(), cnn.config.preprocess)
    maps = {
        "rollout": (analysis.rollout_map(trace)[0].numpy(), tour.model_input, page.tr("compare.map.rollout")),
        "grad_rollout": (
            analysis.grad_rollout(vit, vit_pixels, class_index).numpy(),
            tour.model_input,
            page.tr("compare.map.grad_rollout", name=shown),
        ),
        "gradcam": (
            compare.gradcam(cnn, cnn_pixels, class_index).numpy(),
            cnn_input,
            page.tr("compare.map.gradcam", name=shown),
        ),
    }
    figures = []
    for key, (values, picture, title) in maps.items():
        scaled = values / max(float(values.max()), 1e-12)  # its own maximum: one 0..1 scale for all
        fig = plots.heatmap_overlay(
            picture,
            scaled,
            title=title,
            height=300,
            zmin=0.0,
            zmax=1.0,
            colorbar=key == "gradcam",
            hover=_grid_hover(page),
        )
        figures.append((f"compare-{key.replace('_', '-')}", fig))
    page.figures(*figures)


# ---------------------------------------------------------------------------------------------
# The whole file
# ---------------------------------------------------------------------------------------------


STYLE = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK KR", "Apple SD Gothic Neo",
  "Malgun Gothic", sans-serif; margin: 0; color: #1f1f1f; background: #fff; line-height: 1.5; word-break: keep-all;
  overflow-wrap: break-word; }
main { width: 720px; margin: 0 auto; padding: 24px 16px 48px; }
h1 { font-size: 1.7rem; margin: 0.2em 0; }
h2 { font-size: 1.5rem; margin: 0.3em 0 0.4em; }
h3 { font-size: 1.15rem; margin: 1.2em 0 0.4em; }
section.step { border-top: 2px solid #e4e4e4; padding-top: 12px; margin-top: 28px; }
.counter { color: #6b6b6b; margin: 0; font-size: 0.9rem; }
.shape code, code { background: #f2f2f2; padding: 1px 4px; border-radius: 3px; font-size: 0.9em; }
.row { display: flex; gap: 16px; align-items: flex-start; margin: 8px 0; }
.figure { flex: none; }
figure.photo { margin: 0; }
figure.photo img { max-width: 100%; max-height: 360px; display: block; margin: 0 auto; }
figure.photo figcaption { text-align: center; font-size: 0.9rem; color: #444; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; }
.controls { display: flex; gap: 24px; margin: 8px 0; }
.controls select { font-size: 1rem; margin-left: 6px; }
.takeaways p { flex: 1; margin: 0 0 8px; font-weight: 600; }
.chosen { color: #444; font-style: italic; }
.note { padding: 6px 12px; border-radius: 6px; margin: 8px 0; background: #e8f0fb; }
.verdict { padding: 6px 12px; border-radius: 6px; margin: 8px 0; }
.verdict.right { background: #e7f5e9; }
.verdict.wrong { background: #fdf0e1; }
@page { size: A4 portrait; margin: 10mm; }
@media print {
  main { padding: 0; }
  section.step { break-before: page; border-top: none; margin-top: 0; }
  section.step:first-of-type { break-before: auto; }
  .row, .figure, table, h3 { break-inside: avoid; }
  h3 { break-after: avoid; }
  .controls { display: none; }
  .modebar-container { display: none !important; }
}
"""

# The attention step's selectors: the chosen layer's and head's map into the figure, and every
# head of the chosen layer into the small multiples (Plotly.restyle; no request, no library).
SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById("attention-data").textContent);
  var layer = document.getElementById("attention-layer");
  var head = document.getElementById("attention-head");
  function show() {
    var l = Number(layer.value), h = Number(head.value);
    Plotly.restyle("fig-attention", {z: [data.maps[l][h]]}, [1]);
    Plotly.relayout("fig-attention", {"title.text": data.titles[l][h]});
    Plotly.restyle("fig-attention-heads", {z: data.maps[l].slice(0, data.heads)});
  }
  layer.addEventListener("change", show);
  head.addEventListener("change", show);
})();
"""


def build(
    model: VisionTransformer,
    spec: zoo.ModelSpec,
    image_bytes: bytes,
    lang: str = DEFAULT_LANGUAGE,
    *,
    image_name: str = "",
    truth: Truth | None = None,
    trace: Trace | None = None,
    cnn: nn.Module | None = None,
) -> str:
    """The handout of one image through one model, in one language, as the text of an HTML file.

    Args:
        model: a VisionTransformer in eval mode (on any device; the figures come back to the CPU).
        spec: its registry entry (title, description, card).
        image_bytes: the image file's bytes (``vitviz.data.load_image`` reads them).
        lang: "en" or "ko".
        image_name: what the handout calls the image (a file name, or ``test=class/index``).
        truth: the image's known class, for a test image.
        trace: the image's Trace, when it is already computed (the app's cached one); else
            ``model.explain`` in float32 here.
        cnn: a CNN with the same classes for the ViT-vs-CNN step; None leaves the step out.

    Raises:
        ImageError: the bytes are not an image this project reads.
    """
    config = model.config
    picture = load_image(image_bytes)
    if trace is None:
        pixels = on_weights(to_tensor(picture, config.preprocess, config.in_chans), model)
        with torch.inference_mode():
            trace = model.explain(pixels).detach()
    probs = trace.logits[0].float().softmax(dim=-1)
    found = verdict(probs, config.class_names, truth.class_name) if truth else None
    tour = _Tour(
        model=model,
        spec=spec,
        image=np.asarray(picture),
        original_size=original_size(picture),
        name=image_name,
        trace=trace,
        truth=truth,
        found=found,
        model_input=denormalize(trace.pixels[0], config.preprocess),
    )
    subject = Subject(model, np.asarray(picture), trace, lang, found, spec.name, image_bytes, spec=spec, paper=True)
    page = _Page(lang)
    total = 9
    model_title = spec.title_in(lang)
    page.raw(f"<h1>{html.escape(page.tr('handout.heading'))}</h1>")
    page.text(page.tr("handout.about", model=model_title, image=image_name or "-"))
    if not spec.trained:
        page.raw(f'<div class="verdict wrong">{markdown(page.tr("sidebar.untrained"))}</div>')
    _overview(page, tour, total)
    _input(page, tour, total)
    page.described(2, total, patches.describe(subject, {}))
    _vectors(page, tour, total)
    _tokens(page, tour, total)
    if trace.depth:
        _attention(page, tour, total)
        _block(page, tour, total)
    _prediction(page, tour, total)
    if cnn is not None and config.num_classes:
        _compare(page, tour, total, cnn)
    page.described(9, total, card.describe(subject, {}))
    if trace.depth:  # the lab, for this image and the model's test set
        page.described(10, total, trust.describe(subject, {}), lab=True)
    page.described(11, total, testset.describe(subject, {}), lab=True)
    title = f"vitviz: {model_title} · {image_name}" if image_name else f"vitviz: {model_title}"
    script = f"<script>{SCRIPT}</script>" if trace.depth else ""
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{html.escape(title)}</title>\n'
        f"<style>{STYLE}</style>\n"
        '<script type="text/javascript">window.PlotlyConfig = {MathJaxConfig: "local"};</script>\n'
        f'<script type="text/javascript">{plots.plotly_js()}</script>\n'
        f"</head>\n<body>\n<main>\n{page.html()}\n</main>\n{script}\n</body>\n</html>\n"
    )


def file_name(model_name: str, image_name: str, lang: str) -> str:
    """A file name for a handout: "vitviz-cifar10-vit-cat-chelsea-en.html"."""
    stem = Path(image_name).stem if not image_name.startswith("test=") else image_name.removeprefix("test=")
    words = re.sub(r"[^A-Za-z0-9]+", "-", f"{Path(model_name).stem}-{stem}").strip("-").lower()
    return f"vitviz-{words or 'tour'}-{lang}.html"


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = commandline.parser("vitviz.handout", __doc__)
    parser.add_argument(
        "image", help="an image file, a sample photo's name (vitviz/assets/samples/), or test=class/index"
    )
    parser.add_argument(
        "--model", default=zoo.default_name(), help="registry name, timm:<name>, hf:<repo id> or a path"
    )
    parser.add_argument("--lang", choices=list(LANGUAGES), default=DEFAULT_LANGUAGE)
    parser.add_argument(
        "--data", default=None, help="where test=class/index finds the test images (as the app's --data)"
    )
    parser.add_argument("-o", "--output", required=True, help="the HTML file to write")
    args = parser.parse_args(argv)  # a wrong argument: argparse's usage line and one sentence, exit 2
    output = Path(args.output).expanduser()
    try:
        if not output.parent.is_dir():
            raise HandoutError("handout.no_folder", path=str(output))
        model, spec = zoo.load(args.model, device="cpu")
        if spec.is_cnn:
            raise HandoutError("handout.cnn_model", name=args.model)
        chosen = choose_image(args.image, model.config.class_names, args.data)
        cnn_name = matching_cnn(model.config.class_names)
        cnn = zoo.load(cnn_name, device="cpu").model if cnn_name else None
        text = build(model, spec, chosen.data, args.lang, image_name=chosen.name, truth=chosen.truth, cnn=cnn)
        output.write_text(text, encoding="utf-8")
    except (HandoutError, ImageError, zoo.ModelLoadError) as err:
        print(f"error: {plain(err.sentence(args.lang))}", file=sys.stderr)
        return 2
    except OSError as err:
        print(
            f"error: {plain(t('handout.cannot_write', args.lang, path=str(output), reason=err.strerror or err))}",
            file=sys.stderr,
        )
        return 2
    size_mb = output.stat().st_size / 1e6
    print(
        plain(
            t(
                "handout.written",
                args.lang,
                path=str(output),
                mb=f"{size_mb:.1f}",
                model=spec.title_in(args.lang),
                image=chosen.name,
            )
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
