"""A handout: one image's tour through the ViT as one HTML file a student opens anywhere, offline.

    python -m vitviz handout IMAGE [--model NAME] [--lang en|ko] [--data FOLDER] -o FILE.html

IMAGE is an image file, a sample photo's name (vitviz/assets/samples/, with or without its extension)
or ``test=class/index``: a test image of the model's dataset, found as the app's sidebar finds it
(``vitviz.analyses.lab.test_split_for``; ``--data`` plays the part of the server's ``--data``).

The file holds plotly.js once, inlined, then every figure of the tour as Plotly's own JSON
(``to_html(include_plotlyjs=False, full_html=False)``) and the image as a data: URI: it asks for
nothing over the network. The steps described as data (``vitviz.steps``) are drawn from the same
blocks as the page, each control as the sentence of the value the page opens with (the attention
step at layer 1, head 1, the centre patch as the query). Only what the figures show is stored,
never whole (layers, heads, T, T) tensors; figure arrays travel as Plotly's base64 typed arrays,
exact. A print stylesheet starts every step on a page of its own. The sentences are the app's: the same i18n
keys, and ``vitviz.analyses.claims`` for the sentences that read the numbers.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vitviz import commandline
from vitviz.analyses import lab
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.models.data import ImageError, load_image, to_tensor
from vitviz.models.model import VisionTransformer, on_weights
from vitviz.models.prediction import verdict
from vitviz.models.trace import Trace
from vitviz.render import plots
from vitviz.render.i18n import DEFAULT_LANGUAGE, ESCAPED, LANGUAGES, TranslatedError, class_label, plain, t
from vitviz.server.values import echo, test_image
from vitviz.steps import (
    attention,
    blocks,
    card,
    compare,
    learn,
    model_input,
    overview,
    patches,
    prediction,
    testset,
    tokens,
    trust,
    vectors,
)
from vitviz.steps import block as encoder_block
from vitviz.steps.remembered import RememberedCompute, remember
from vitviz.steps.subject import Subject

SAMPLES = zoo.ASSETS / "samples"
WIDTH = 720  # pixels of the page's column: A4 portrait, less 10 mm margins, at 96 dpi
HALF = 352  # two figures side by side
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

    def heading(self, text: str) -> None:
        self.parts.append(f"<h3>{html.escape(plain(text))}</h3>")

    def text(self, text: str) -> None:
        self.parts.append(markdown(text))

    def raw(self, markup: str) -> None:
        self.parts.append(markup)

    def figures(self, *named: tuple[str, plots.Figure], widths: Sequence[float] = ()) -> None:
        """One figure across the column, or several side by side (``widths``: their relative widths)."""
        shares = list(widths) or [1.0] * len(named)  # more shares than figures: the last columns stay empty
        room = WIDTH - 16 * (len(shares) - 1)
        self.parts.append(
            '<div class="row">'
            + "".join(
                self.figure(name, fig, int(room * share / sum(shares)))
                for (name, fig), share in zip(named, shares, strict=False)
            )
            + "</div>"
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
        # the app's look, on paper as on the screen (vitviz.app.charts.draw themes the app's)
        markup = plots.paper_html(fig, f"fig-{name}", PLOT_CONFIG, width, height)
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
        self.text(step.intro if step.paper_intro is None else step.paper_intro)
        if step.shape is not None:
            label = html.escape(self.tr("shape.label"))
            self.parts.append(f'<p class="shape"><strong>{label}:</strong> <code>{html.escape(step.shape)}</code></p>')
        for block in step.blocks:
            self.block(block)

    def remembered(
        self,
        model: VisionTransformer,
        key: tuple,
        number: int,
        total: int,
        describe: Callable[[], blocks.Step],
        lab: bool,
    ) -> None:
        """``described`` for a step about the model alone (its card, its test set's map): its HTML
        made once per process, model and ``key`` (``vitviz.steps.remembered``), then copied."""

        def made() -> tuple[tuple[str, ...], frozenset[str]]:
            alone = _Page(self.lang)
            alone.described(number, total, describe(), lab=lab)
            return tuple(alone.parts), frozenset(alone.names)

        parts, names = remember(model, ("handout", self.lang, number, total, lab, *key), made)
        assert not names & self.names, names & self.names
        if self.in_step:
            self.parts.append("</section>")
        self.in_step = True
        self.parts.extend(parts)
        self.names |= names

    def block(self, block: blocks.Block) -> None:
        """One block of a described step, on paper."""
        if isinstance(block, blocks.Text):
            said = block.text if block.paper is None else block.paper
            kind = {"info": "note", "success": "verdict right", "warning": "verdict wrong", "error": "verdict wrong"}
            kind = kind.get(block.role)
            if said:
                self.raw(f'<div class="{kind}">{markdown(said)}</div>' if kind else markdown(said))
        elif isinstance(block, blocks.Heading):
            self.heading(block.text)
        elif isinstance(block, blocks.Metrics):
            self.raw(table([{plain(label): value for label, value in block.items}]))
        elif isinstance(block, blocks.Figure | blocks.Figures):
            shown, widths = ((block,), ()) if isinstance(block, blocks.Figure) else (block.figures, block.widths)
            self.figures(*((figure.key.replace("_", "-"), figure.figure) for figure in shown), widths=widths)
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
            chosen = " · ".join(html.escape(plain(control.static)) for control in block.controls if control.static)
            if chosen:
                self.raw(f'<p class="chosen">{chosen}</p>')
        elif isinstance(block, blocks.Formula):
            self.raw(f'<p class="formula"><code>{html.escape(block.text)}</code></p>')
        elif not isinstance(
            block, blocks.Download | blocks.DownloadCsv | blocks.Link | blocks.Button | blocks.OpenInTour
        ):
            raise TypeError(f"No handout for {type(block).__name__}")


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
table { border-collapse: collapse; margin: 8px 0; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; }
.takeaways p { flex: 1; margin: 0 0 8px; font-weight: 600; }
.chosen { color: #444; font-style: italic; }
.formula { text-align: center; font-family: "Cambria Math", "STIX Two Math", serif; font-size: 1.1rem; }
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
  .modebar-container { display: none !important; }
}
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
    cnn: zoo.Loaded | None = None,
) -> str:
    """The handout of one image through one model, in one language, as the text of an HTML file.

    Args:
        model: a VisionTransformer in eval mode (on any device; the figures come back to the CPU).
        spec: its registry entry (title, description, card).
        image_bytes: the image file's bytes (``vitviz.models.data.load_image`` reads them).
        lang: "en" or "ko".
        image_name: what the handout calls the image (a file name, or ``test=class/index``).
        truth: the image's known class, for a test image.
        trace: the image's Trace, when it is already computed (the app's cached one); else
            ``model.explain`` in float32 here.
        cnn: a CNN with the same classes, and its registry entry, for the ViT-vs-CNN step; None
            leaves the step out.

    Raises:
        ImageError: the bytes are not an image this project reads.
    """
    subject = _subject(model, spec, image_bytes, lang, truth, trace, cnn)
    page = _Page(lang)
    model_title = spec.title_in(lang)
    page.raw(f"<h1>{html.escape(page.tr('handout.heading'))}</h1>")
    page.text(page.tr("handout.about", model=model_title, image=image_name or "-"))
    if not spec.trained:
        page.raw(f'<div class="verdict wrong">{markdown(page.tr("sidebar.untrained"))}</div>')
    _steps(page, subject, cnn.spec.name if cnn is not None else None)
    title = f"vitviz: {model_title} · {image_name}" if image_name else f"vitviz: {model_title}"
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{html.escape(title)}</title>\n'
        f"<style>{STYLE}</style>\n"
        '<script type="text/javascript">window.PlotlyConfig = {MathJaxConfig: "local"};</script>\n'
        f'<script type="text/javascript">{plots.plotly_js()}</script>\n'
        f"</head>\n<body>\n<main>\n{page.html()}\n</main>\n</body>\n</html>\n"
    )


def _subject(
    model: VisionTransformer,
    spec: zoo.ModelSpec,
    image_bytes: bytes,
    lang: str,
    truth: Truth | None,
    trace: Trace | None,
    cnn: zoo.Loaded | None,
) -> Subject:
    """What the handout's steps describe: ``build``'s arguments, the trace computed here when the
    caller has none (float32)."""
    config = model.config
    picture = load_image(image_bytes)
    if trace is None:
        pixels = on_weights(to_tensor(picture, config.preprocess, config.in_chans), model)
        with torch.inference_mode():
            trace = model.explain(pixels).detach()
    probs = trace.logits[0].float().softmax(dim=-1)
    found = verdict(probs, config.class_names, truth.class_name) if truth else None
    return Subject(
        model,
        np.asarray(picture),
        trace,
        lang,
        found,
        name=spec.name,
        image_bytes=image_bytes,
        compute=RememberedCompute({cnn.spec.name: cnn} if cnn is not None else None),
        dataset=truth.dataset if truth else "",
        spec=spec,
        trained=spec.trained,
        paper=True,
    )


def _steps(page: _Page, subject: Subject, cnn_name: str | None) -> None:
    """Every step the tour's pages draw for this subject, in the tour's order, then the lab's."""
    total, depth = 9, subject.trace.depth
    page.described(0, total, overview.describe(subject, {}))
    page.described(1, total, model_input.describe(subject, {}))
    page.described(2, total, patches.describe(subject, {}))
    page.described(3, total, vectors.describe(subject, {}))
    page.described(4, total, tokens.describe(subject, {}))
    if depth:
        page.described(5, total, attention.describe(subject, {}))
        page.described(6, total, encoder_block.describe(subject, {}))
    page.described(7, total, prediction.describe(subject, {}))
    if cnn_name is not None and subject.model.config.num_classes:
        listed = cnn_name in subject.compute.cnns()  # the page's list, else its box for a CNN file
        page.described(8, total, compare.describe(subject, {"compare_cnn" if listed else "compare_cnn_path": cnn_name}))
    # the card and the map of the test set are the model's alone (its name, its shipped files)
    alone = (subject.name, subject.spec.path if subject.spec is not None else None)
    page.remembered(subject.model, alone, 9, total, lambda: card.describe(subject, {}), lab=False)
    if depth:  # the lab, for this image and the model's test set
        page.described(10, total, trust.describe(subject, {}), lab=True)
    page.remembered(subject.model, alone, 11, total, lambda: testset.describe(subject, {}), lab=True)
    page.described(12, total, learn.describe(subject, {}), lab=True)


def file_name(model_name: str, image_name: str, lang: str) -> str:
    """A file name for a handout: "vitviz-cifar10-vit-cat-chelsea-en.html"."""
    stem = Path(image_name).stem if not image_name.startswith("test=") else image_name.removeprefix("test=")
    words = re.sub(r"[^A-Za-z0-9]+", "-", f"{Path(model_name).stem}-{stem}").strip("-").lower()
    return f"vitviz-{words or 'tour'}-{lang}.html"


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = commandline.parser("vitviz.render.handout", __doc__)
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
        cnn = zoo.load(cnn_name, device="cpu") if cnn_name else None
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
