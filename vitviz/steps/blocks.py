"""What a step of the tour says, as data: a title, a paragraph and an ordered list of small typed
blocks. ``vitviz.steps.<step>.describe`` returns one ``Step`` from the session's choices; the
Streamlit page, the slides and the handout draw it (``vitviz.app.render``, ``vitviz.render.handout``).
Nothing here imports Streamlit."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vitviz.render import plots

Choices = Mapping[str, Any]  # the session's choices by key (vitviz.app.state.CHOICES); absent: the default


@dataclass(frozen=True)
class Text:
    """A paragraph of Markdown. ``role``: "body" (a paragraph), "caption" (small print under what it
    describes), or a coloured box: "info", "success", "warning", "error". ``slide``: a box a slide
    shows under its takeaways, not only in the notes, where the figure alone would mislead a class
    (the lab answers another class than the pass drawn)."""

    text: str
    role: str = "body"
    paper: str | None = None  # what paper says instead, where ``text`` asks for a click or a key ("" : nothing)
    slide: bool = False


@dataclass(frozen=True)
class Heading:
    """A section's heading within a step (``minor``: a part of the section above it)."""

    text: str
    minor: bool = False


@dataclass(frozen=True)
class Metrics:
    """A row of numbers with their labels ("Patches: 8 x 8 = 64")."""

    items: tuple[tuple[str, str], ...]
    helps: tuple[str, ...] = ()  # a tooltip per item, on the page


@dataclass(frozen=True)
class Select:
    """A click on a patch figure chooses a patch: the choice ``key`` becomes the clicked patch (of
    ``count``) plus ``offset`` (the [CLS] and other prefix tokens, for a token index)."""

    key: str
    count: int
    offset: int = 0
    toggle: bool = False  # the choice is a list of patches: a click adds the patch, a second removes it


@dataclass(frozen=True)
class Figure:
    """One figure and the one line it shows, computed from its numbers (the slide's large type)."""

    key: str  # unique within the step: the widget key on the page, the anchor in the handout
    figure: plots.Figure
    takeaway: str
    select: Select | None = None


@dataclass(frozen=True)
class Figures:
    """Figures side by side: on the page, on one slide and in the handout. ``apart``: a slide
    each instead (charts whose legends and titles need a slide's whole width to leave their
    plots room at a slide's height)."""

    figures: tuple[Figure, ...]
    widths: tuple[float, ...] = ()  # their columns' relative widths (equal when empty; more: the last stay empty)
    apart: bool = False


@dataclass(frozen=True)
class Table:
    """Rows of a table, each a mapping from column title to cell."""

    rows: tuple[Mapping[str, object], ...]
    caption: str = ""
    whole: bool = False  # every row at once and every cell wrapped (a static table), not a scrolling grid


@dataclass(frozen=True)
class Control:
    """A widget the step needs: a choice of ``vitviz.app.state.CHOICES`` (``key``), drawn as a
    ``kind`` ("select", "slider", "radio", "toggle"; "multiselect": ``value`` a list of options;
    "int_slider" and "number": a slider or a number box from the first option to the last;
    "model_name": a box to type a model's name in) over ``options``. ``value`` is the value this
    description was made with (the session's, clipped to the options), ``static`` the sentence a
    page of paper says instead of the widget ("Patch side: 16 pixels"; "": paper says nothing of
    it). ``help``: the widget's tooltip; ``placeholder``: what an empty box says; ``disabled``:
    drawn, but not in use; ``quiet_default``: the URL names the choice only while it is not the
    first option (a link to the default view says nothing)."""

    key: str
    kind: str
    label: str
    options: tuple[Any, ...]
    value: Any
    static: str
    format: Callable[[Any], str] | None = None
    placeholder: str = ""
    disabled: bool = False
    help: str = ""  # the widget's tooltip
    quiet_default: bool = False


@dataclass(frozen=True)
class Controls:
    """Widgets side by side, above what they change."""

    controls: tuple[Control, ...]


@dataclass(frozen=True)
class Download:
    """Arrays a page offers as one .npz file, or a table as a .csv file (the handout has no downloads)."""

    label_key: str  # the i18n key of the button's sentence
    file_name: str
    key: str
    arrays: Mapping[str, Any]
    csv: Callable[[], str] | None = None  # a table as CSV text instead of the arrays, made when clicked


@dataclass(frozen=True)
class Formula:
    """A displayed formula: LaTeX on the page and on slides, ``text`` (plain Unicode) on paper."""

    latex: str
    text: str


@dataclass(frozen=True)
class DownloadCsv:
    """A table a page offers as a .csv file, made when the button is clicked (the handout has no downloads)."""

    label_key: str  # the i18n key of the button's sentence
    file_name: str
    key: str
    text: Callable[[], str]


@dataclass(frozen=True)
class Link:
    """A link to another page of the app, named by its title's key ("page.trust": the renderer
    finds its script and icon in ``vitviz.app.tour``); paper has no link: the handout leaves it
    out (the sentences around it name the page)."""

    page: str
    label: str


@dataclass(frozen=True)
class Button:
    """A button that sets choices (``sets``: key -> value), "Show every patch again"; paper leaves it out."""

    key: str
    label: str
    sets: Mapping[str, Any]
    disabled: bool = False


@dataclass(frozen=True)
class OpenInTour:
    """The lab's button that makes test image ``index`` of class ``class_name`` the tour's image and
    opens the overview (paper has no button: the handout leaves it out)."""

    key: str
    class_name: str
    index: int  # within its class


Block = (
    Text
    | Heading
    | Metrics
    | Figure
    | Figures
    | Table
    | Controls
    | Download
    | Formula
    | DownloadCsv
    | Link
    | Button
    | OpenInTour
)


@dataclass(frozen=True)
class Slide:
    """What a projector shows at once: one figure, or figures side by side, with their takeaways;
    the step's paragraphs before it are the presenter's notes, the controls before it change it."""

    figures: tuple[Figure, ...]
    notes: tuple[str, ...]
    controls: tuple[Control, ...]
    widths: tuple[float, ...] = ()  # the figures' relative widths (a ``Figures`` row's)
    callouts: tuple[Text, ...] = ()  # boxes shown under the takeaways (``Text.slide``)


@dataclass(frozen=True)
class Step:
    """A step of the tour, described once."""

    title: str
    intro: str
    blocks: tuple[Block, ...]
    shape: str | None = None  # the live shape of the tensor at this step, "(1, 64, 48)"
    notes: tuple[str, ...] = field(default=())  # said by the presenter, not shown on a slide
    paper_intro: str | None = None  # the intro on paper, where ``intro`` asks for a click or a key

    def figures(self) -> list[Figure]:
        """Every figure, in order."""
        found = []
        for block in self.blocks:
            found += [block] if isinstance(block, Figure) else list(getattr(block, "figures", ()))
        return found

    def controls(self) -> list[Control]:
        """Every control, in order."""
        return [control for block in self.blocks if isinstance(block, Controls) for control in block.controls]

    def slides(self) -> list[Slide]:
        """One slide per figure block (a ``Figures`` row is one slide, or a slide a figure when
        ``apart``), each with the paragraphs since the last figure as notes (the intro on the
        first) and every control declared before it (a later figure may depend on an earlier
        control). Captions and boxes right after a figure (its verdict, what it leaves out) are
        that figure's: they join its slide's notes, not the next one's. A box marked ``slide`` is
        shown on its slide, under the takeaways. A step with no figure is one slide of notes."""
        slides: list[Slide] = []
        notes: list[str] = [self.intro, *self.notes]
        callouts: list[Text] = []
        controls: list[Control] = []
        after_figure = False  # the blocks since the last figure are its captions and boxes so far
        for block in self.blocks:
            if isinstance(block, Text) and after_figure and block.role != "body":
                last = slides[-1]
                more = (
                    dict(callouts=last.callouts + (block,)) if block.slide else dict(notes=last.notes + (block.text,))
                )
                slides[-1] = dataclasses.replace(last, **more)
                continue
            after_figure = isinstance(block, Figure | Figures)
            if isinstance(block, Text) and block.slide:
                callouts.append(block)
            elif isinstance(block, Text | Heading):
                notes.append(block.text)
            elif isinstance(block, Metrics):
                notes.append(" · ".join(f"{label}: {value}" for label, value in block.items))
            elif isinstance(block, Formula):
                notes.append(f"$$\n{block.latex}\n$$")
            elif isinstance(block, Controls):
                controls += block.controls
            elif isinstance(block, Figure | Figures):
                shown, widths = ((block,), ()) if isinstance(block, Figure) else (block.figures, block.widths)
                rows = [((figure,), ()) for figure in shown] if getattr(block, "apart", False) else [(shown, widths)]
                for row, row_widths in rows:
                    slides.append(Slide(tuple(row), tuple(notes), tuple(controls), row_widths, tuple(callouts)))
                    notes, callouts = [], []
        if not slides:
            return [Slide((), (*notes, *(callout.text for callout in callouts)), tuple(controls))]
        if notes or callouts:  # paragraphs after the last figure belong to it
            last = slides[-1]
            slides[-1] = dataclasses.replace(
                last, notes=last.notes + tuple(notes), callouts=last.callouts + tuple(callouts)
            )
        return slides


def shape_text(shape: Sequence[int]) -> str:
    """A tensor's shape as the pages write it: "(1, 64, 48)"."""
    return "(" + ", ".join(map(str, shape)) + ")"
