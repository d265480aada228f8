"""Figures: functions that take arrays and return plotly figures. Nothing here calls st.*.

Images are (H, W, 3) uint8 or float in [0, 1]; maps are (grid_h, grid_w) arrays. Every figure
keeps plotly's own PNG export, and tests can read the data back from ``fig.data``.
"""

from __future__ import annotations

import base64
import functools
import io
import itertools
import unicodedata
from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline
from PIL import Image
from plotly.subplots import make_subplots

Figure = go.Figure  # what the figure functions return: callers name it without importing plotly


def plotly_js() -> str:
    """plotly.js itself, minified (about 4.8 MB), for a page that draws its figures offline
    (``vitviz.render.handout`` inlines it once; each figure then goes ``to_html(include_plotlyjs=False)``)."""
    return plotly.offline.get_plotlyjs()


FONT = dict(size=15)
HEAT = "Viridis"
DIVERGING = "RdBu_r"
CHANNEL_COLOURS = ("#d62728", "#2ca02c", "#1f77b4")  # R, G, B
GREY = "#6b6b6b"  # the one channel of a grey model
# Plotly's modebar shows at a figure's top right while the pointer is on the figure. Trimmed to
# download and reset (a drag still zooms and a double click resets; Streamlit adds full screen),
# on a nearly opaque strip, and with every title below that strip, it covers no words.
MODEBAR = dict(
    remove=["zoom2d", "pan2d", "select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"],
    bgcolor="rgba(255,255,255,0.9)",
)
LOOK = dict(font=FONT, modebar=MODEBAR)  # every figure's layout carries both
MODEBAR_STRIP = 28  # pixels at a figure's top that the modebar covers while the pointer is on the figure
PANEL_TITLES_TOP = 54  # top margin over a row of panel titles: they sit below the modebar's strip
TITLE_TOP = 60  # top margin of a figure with a title: the title's line sits below the modebar's strip
PANEL_LINE_PX = 22  # each further line of a panel's title
MOSAIC_WIDTH = 940  # px: the page's main column in a 1400-px window, for which small_multiples is sized


# Figures are built from plain dictionaries in one constructor call (``_figure``), on an empty
# template: plotly would copy its default template into each figure, the larger part of building a
# small one. The look (template, text sizes) is the renderer's (``themed``). The app builds them
# without plotly checking every property again (``build_figures_with``, vitviz.app.internals):
# tests/unit/test_plots.py builds every figure both ways and compares the JSON, so a dictionary
# that is not in plotly's own form fails there.
def _checked_figure(data: list[dict], layout: dict) -> go.Figure:
    return go.Figure(data=data, layout=layout)


FigureMaker = Callable[[list[dict], dict], go.Figure]
_make_figure: FigureMaker = _checked_figure


def build_figures_with(make: FigureMaker | None) -> FigureMaker:
    """Build every figure from its trace and layout dictionaries with ``make`` (None: plotly's
    checked constructor, the default). Returns the maker used before."""
    global _make_figure
    before, _make_figure = _make_figure, make or _checked_figure
    return before


def _figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dictionaries (each trace with its ``type``), with no
    template of its own: ``themed`` gives it the app's."""
    return _make_figure(data, {**layout, "template": {}})


@functools.cache
def _named_scale(name: str) -> tuple:
    return go.Heatmap(colorscale=name).colorscale  # plotly's own stops: Plotly.js knows fewer names


def _scale(colorscale: str | Sequence) -> Sequence:
    """A colour scale as plotly writes it: a name becomes its list of stops."""
    return _named_scale(colorscale) if isinstance(colorscale, str) else colorscale


def _title(text: str | None) -> dict | None:
    """A figure's title on its own line below the modebar's strip: Plotly would centre it in the
    top margin, where the modebar's buttons cover the end of a long title in a narrow column."""
    return dict(text=text, yref="container", y=1, yanchor="top", pad=dict(t=MODEBAR_STRIP + 6)) if text else None


# ---- the look of every figure: on a laptop, and in presenter mode on a projector ----
# Okabe and Ito's colour-blind-safe set (2008), the most distinct first: the colours of heads and of
# classes. Every pair stays apart for normal, deuteranope, protanope and tritanope eyes
# (tests/unit/test_plots.py measures CIEDE2000 between simulated colours). Yellow comes last: on
# white it is the faintest.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
TRUE_COLOUR = PALETTE[2]  # the known true class of a labelled image (bluish green)
PREDICTED_COLOUR = PALETTE[1]  # the model's answer (vermilion)
OTHER_COLOUR = PALETTE[0]  # the other classes' bars (blue)
SYMBOLS = ("circle", "square", "diamond", "triangle-up")  # with the colour, once a palette's worth is used
# Ten colours for ten classes (CIFAR-10's, on the test-set map), where the eight above would give two
# classes the colour of two others: Paul Tol's "muted" nine and black. Every pair stays apart for the
# same four kinds of eye, and every colour from the white paper (tests/unit/test_plots.py).
CLASS_PALETTE = (
    "#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499", "#000000",
)  # fmt: skip
TEXT_COLOUR = "#1a1a1a"  # 17:1 on white (WCAG AA asks 4.5:1)
HIGHLIGHT_TEXT = "#c4002f"  # red words (a marked token): 6.2:1 on white, where PREDICTED_COLOUR's pink is 3.6
TEXT_PX = {False: 15, True: 20}  # the figures' text: on a screen, and in presenter mode
TITLE_PX = {False: 18, True: 23}  # a figure's title
# A title longer than this many ems (a Latin letter is about half an em, a Hangul syllable one)
# wraps: it fits the half of the page that most figures get, at 1280 pixels, in either mode.
TITLE_EMS = 22
# A figure drawn across the page's whole width (the block diagram, the map of the test set) says so
# in its layout's meta, and its title wraps at twice that.
WIDE_TITLE_EMS = 2 * TITLE_EMS
WIDE = {"title_ems": WIDE_TITLE_EMS}
MIN_TEXT_PX = {False: 14, True: 18}  # no text in a figure is smaller
PRESENTER_SCALE = 1.25  # presenter mode draws every figure this much taller (its pictures grow with it)
FONT_FAMILY = '"Source Sans", "Source Sans Pro", "Noto Sans CJK KR", sans-serif'  # Streamlit's own text

# Tick labels are never hidden past the figure's edge (plotly.js's default, "hide past div"): the
# axes' automargin (plotly_white's) already gives every label its room, and the check measured every
# label again for each label placed, a sixth of the drawing of step 5's figures (docs/benchmarks.md).
AXIS = dict(linecolor="#8c8c8c", gridcolor="#e6e6e6", zerolinecolor="#b3b3b3", ticklabeloverflow="allow")
TEMPLATE = go.layout.Template(pio.templates["plotly_white"])  # white paper and plot, light grid
TEMPLATE.layout.update(
    font=dict(family=FONT_FAMILY, size=TEXT_PX[False], color=TEXT_COLOUR),
    colorway=PALETTE,
    hoverlabel=dict(font=dict(size=TEXT_PX[False])),
    xaxis=AXIS,
    yaxis=AXIS,
)
PRESENTER_TEMPLATE = go.layout.Template(TEMPLATE)
PRESENTER_TEMPLATE.layout.update(font=dict(size=TEXT_PX[True]), hoverlabel=dict(font=dict(size=TEXT_PX[True])))
pio.templates["vitviz"], pio.templates["vitviz_presenter"] = TEMPLATE, PRESENTER_TEMPLATE
# what themed() puts into a figure's JSON, for the screen (and paper) and for the projector (never changed there)
TEMPLATES = {False: TEMPLATE.to_plotly_json(), True: PRESENTER_TEMPLATE.to_plotly_json()}


Path = tuple[str | int, ...]  # keys and list indices into a figure's plotly JSON


def _fonts(spec: dict, path: Path = ()) -> list[tuple[Path, float | None]]:
    """(path, size) of every font in a figure's plotly JSON: each key that ends in "font" (font,
    textfont, tickfont, title.font, insidetextfont ...), in lists (annotations) too; not the template."""
    found = []
    for key, value in spec.items():
        if key == "template":
            continue
        if isinstance(value, dict):
            found += [((*path, key), value.get("size"))] if key.endswith("font") else _fonts(value, (*path, key))
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], dict):
            for index, item in enumerate(value):
                found += _fonts(item, (*path, key, index))
    return found


def _get(spec: dict, path: Path) -> object:
    for key in path:
        try:
            spec = spec[key]
        except (KeyError, IndexError, TypeError):
            return None
    return spec


def _put(spec: dict, path: Path, value: object) -> None:
    """Set ``path`` in a plotly JSON dict of the caller's own, copying the dicts and lists on the
    way (they may be shared with the figure the JSON was read from) or making the missing ones."""
    *parents, last = path
    for key in parents:
        child = spec[key] if isinstance(key, int) else spec.get(key)
        spec[key] = child = list(child) if isinstance(child, (list, tuple)) else dict(child or {})
        spec = child
    spec[last] = value


def ems(text: str) -> float:
    """About how wide a text is, in ems: Hangul and other wide letters one, the rest a half."""
    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.55 for c in text)


def wrap(text: str, width: float) -> str:
    """A text broken with <br> between words so that no line is wider than ``width`` ems (a
    single longer word keeps its own line); lines already broken are wrapped one by one."""
    lines = []
    for line in text.split("<br>"):
        current = ""
        for word in line.split(" "):
            if current and ems(f"{current} {word}") > width:
                lines.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        lines.append(current)
    return "<br>".join(lines)


def theme(fig: go.Figure, presenter: bool = False) -> go.Figure:
    """A copy of ``fig`` in the app's look (``themed``); ``fig`` itself is left as it is."""
    return go.Figure(themed(fig.to_dict(), presenter))


def themed(spec: dict, presenter: bool = False) -> dict:
    """A figure's plotly JSON (``to_dict``) in the app's look: dark text on white (the templates
    ``vitviz`` and ``vitviz_presenter``, ``TEMPLATES``), the palette, and no text under
    ``MIN_TEXT_PX``. In presenter mode every text grows by TEXT_PX[True] / TEXT_PX[False] and the
    figure (its top margin, where titles sit, too) by ``PRESENTER_SCALE``: a projector's figures
    are drawn larger, never zoomed, since a zoomed page cuts them at their column's edge.

    ``spec`` is left as it is (a figure shared by every session is themed for each session's mode,
    and may be read by another thread meanwhile): the result is a new dictionary, which shares
    with ``spec`` only what it does not change. vitviz.app.charts.draw themes every figure the app
    draws; the handout themes its own.
    """
    layout = dict(spec.get("layout") or {})
    data = [dict(trace) for trace in spec.get("data") or ()]
    specs = [layout, *data]  # the layout, then every trace
    scale, floor = TEXT_PX[presenter] / TEXT_PX[False], MIN_TEXT_PX[presenter]
    changes: dict[tuple[int, Path], object] = {}  # (0 for the layout or 1 + a trace's index, path) -> value
    for target, part in enumerate(specs):
        for path, size in _fonts(part):
            if size is not None:
                changes[target, (*path, "size")] = max(round(size * scale), floor)
    changes |= {
        (0, ("template",)): TEMPLATES[presenter],
        (0, ("font", "size")): max(round((_get(layout, ("font", "size")) or TEXT_PX[False]) * scale), floor),
        (0, ("font", "color")): TEXT_COLOUR,
        (0, ("font", "family")): FONT_FAMILY,
    }
    top = _get(layout, ("margin", "t"))
    if presenter:  # the template's hover labels are the screen's size
        changes[0, ("hoverlabel", "font", "size")] = TEXT_PX[True]
        if _get(layout, ("height",)):
            changes[0, ("height",)] = round(layout["height"] * PRESENTER_SCALE)
        top = round(top * PRESENTER_SCALE) if top else top  # room for the larger titles above
    title = _get(layout, ("title", "text"))
    if title:  # a long title wraps instead of running past its column's edge; figures leave room for one line
        meta = layout.get("meta")  # a figure across the page's width says so (WIDE)
        changes[0, ("title", "text")] = wrap(
            title, meta.get("title_ems", TITLE_EMS) if isinstance(meta, dict) else TITLE_EMS
        )
        changes[0, ("title", "font", "size")] = TITLE_PX[presenter]
        more = round(1.3 * TITLE_PX[presenter] * changes[0, ("title", "text")].count("<br>"))
        top = (top or 0) + more
        if more and _get(layout, ("height",)):  # the lines take room of their own, not the picture's
            changes[0, ("height",)] = changes.get((0, ("height",)), layout["height"]) + more
    if top != _get(layout, ("margin", "t")):
        changes[0, ("margin", "t")] = top
    if presenter:
        for index, note in enumerate(layout.get("annotations", [])):
            if note.get("yshift"):  # labels stacked at pixel offsets (the card's stage labels)
                changes[0, ("annotations", index, "yshift")] = note["yshift"] * scale
    for (target, path), value in changes.items():
        _put(specs[target], path, value)
    return {**spec, "layout": layout, "data": data}


def paper_html(fig: go.Figure, div_id: str, config: dict, width: int, height: int) -> str:
    """A figure as an HTML ``<div>`` in the app's look (``themed``), for a page that loads
    plotly.js once (``plotly_js``): written from its JSON without building and validating a second
    figure (its template alone takes tens of milliseconds to validate)."""
    return pio.to_html(
        themed(fig.to_dict()),
        validate=False,
        include_plotlyjs=False,
        full_html=False,
        div_id=div_id,
        config=config,
        default_width=f"{width}px",
        default_height=f"{height}px",
    )


def built_copy(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` for a caller that changes it: a figure the app shares between sessions is
    never changed (``themed`` works on copies of its JSON too)."""
    return go.Figure(fig)


def to_uint8(image: np.ndarray) -> np.ndarray:
    """Float [0, 1] or uint8 (H, W, C) -> uint8 (H, W, 3)."""
    array = np.asarray(image)
    if array.dtype != np.uint8:
        array = (np.clip(array, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    if array.ndim == 2:
        array = array[:, :, None]
    if array.shape[2] == 1:
        array = np.repeat(array, 3, axis=2)
    return array


def _image_layout_dict(height: int | None = None, title: str | None = None) -> dict:
    """Layout of a picture: no axes, square pixels, y downwards, no dragging."""
    layout = dict(
        xaxis=dict(visible=False, constrain="domain"),
        yaxis=dict(visible=False, scaleanchor="x", autorange="reversed"),
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 4, b=4),
        **LOOK,
        height=height,
        plot_bgcolor="white",
        dragmode=False,
    )
    if title:
        layout["title"] = _title(title)
    return layout


# Pictures above this many pixels travel to the browser as a PNG (go.Image's ``source``) instead
# of a JSON array of numbers: a 451 x 300 photo was 554 kB of JSON that the browser parsed and then
# painted pixel by pixel in JavaScript, which made page 1 and 2 the tour's slowest steps to draw.
# Smaller pictures (a CIFAR model's 32 x 32 input) stay numbers: cheap, and exact in the page.
PNG_ABOVE_PIXELS = 64 * 64


def png_data_uri(picture: np.ndarray) -> str:
    """uint8 (H, W, 3) -> "data:image/png;base64,..." (lossless; fast compression)."""
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def jpeg_data_uri(picture: np.ndarray, quality: int = 90) -> str:
    """uint8 (H, W, 3) -> "data:image/jpeg;base64,..." (a photo in about a tenth of a PNG's bytes)."""
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _image_figure(z: np.ndarray, height: int | None, title: str | None, **trace: object) -> go.Figure:
    """One go.Image trace and the picture layout, built in a single constructor call (plotly's
    update_* methods each cost milliseconds, which add up in an app rerun)."""
    return _figure([_image_trace(z, **trace)], _image_layout_dict(height, title))


# A picture goes to the browser at most this many pixels on its longer side: a figure draws it a
# few hundred pixels high (380 on page 1), about twice that on a sharp projector. A larger one (a 48 MP photo
# was a 124 MB message) is scaled down and each of its pixels drawn dx x dy wide, so the figure's
# coordinates, and maps laid over it, stay those of the picture given.
SHOWN_SIDE = 800


def shown_size(height: int, width: int, longest: int = SHOWN_SIDE) -> tuple[int, int]:
    """(height, width) a picture is sent at: its own, or scaled to ``longest`` on its longer side."""
    scale = min(1.0, longest / max(height, width))
    return max(1, round(height * scale)), max(1, round(width * scale))


def _image_trace(z: np.ndarray, jpeg: bool = False, **trace: object) -> dict:
    """A picture's trace dictionary. A picture above ``PNG_ABOVE_PIXELS`` goes as a PNG (a JPEG
    with ``jpeg``); its hover reads the pixel's colour from the picture. One above ``SHOWN_SIDE``
    goes scaled down to it."""
    height, width = z.shape[:2]
    sent_h, sent_w = shown_size(height, width)
    if (sent_h, sent_w) != (height, width):
        picture = Image.fromarray(z).resize((sent_w, sent_h), Image.Resampling.BICUBIC, reducing_gap=2.0)
        z = np.asarray(picture)
        dx, dy = width / sent_w, height / sent_h
        trace |= dict(x0=(dx - 1) / 2, y0=(dy - 1) / 2, dx=dx, dy=dy)  # the left edge stays at x = -0.5
        if isinstance(trace.get("hovertemplate"), str):
            trace["hovertemplate"] = trace["hovertemplate"].replace("%{x}", "%{x:.0f}").replace("%{y}", "%{y:.0f}")
    if z.shape[0] * z.shape[1] > PNG_ABOVE_PIXELS:
        pixels = dict(source=jpeg_data_uri(z) if jpeg else png_data_uri(z))
        if isinstance(trace.get("hovertemplate"), str):  # a PNG's pixel is [r, g, b, alpha]: show r, g, b
            rgb = "[%{color[0]}, %{color[1]}, %{color[2]}]"
            trace["hovertemplate"] = trace["hovertemplate"].replace("%{z}", rgb)
    else:
        pixels = dict(z=z)
    return dict(type="image", **pixels, **trace)


PIXEL_HOVER = "x=%{x}, y=%{y}<br>RGB %{z}<extra></extra>"


def image(array: np.ndarray, title: str | None = None, height: int | None = 380, photo: bool = False) -> go.Figure:
    """A picture, pixel for pixel, with hover showing (x, y) and the RGB values. ``photo``: a
    large picture goes as a JPEG, not a lossless PNG (for a file to keep, where bytes count more
    than exact hover colours)."""
    return _image_figure(to_uint8(array), height, title, hovertemplate=PIXEL_HOVER, jpeg=photo)


def patch_grid(
    array: np.ndarray,
    patch_size: int,
    highlight: int | None = None,
    title: str | None = None,
    height: int | None = 420,
    numbers: bool = False,
    clickable: bool = True,
) -> go.Figure:
    """The image with the P x P patch grid drawn over it; ``highlight`` outlines one patch.

    A transparent marker sits on every patch centre so hovering (or clicking, with Streamlit's
    selection) names the patch: its index in token order among the patches, its row and column.
    Not ``clickable``: an invisible map, a cell a patch, names it under the pointer instead; one
    picture where the markers were an SVG element each (step 2's "try it" grid: 1,024 of them, up
    to 4,096). With the grid's lines in one path, plotly.js drew that figure in 16-19 ms of the
    browser's main thread, where it took 58-110 ms (docs/benchmarks.md).
    """
    array = to_uint8(array)
    height_px, width_px = array.shape[:2]
    grid_h, grid_w = height_px // patch_size, width_px // patch_size
    shapes = _grid_lines((height_px, width_px), (grid_h, grid_w), patch_size, patch_size)
    if highlight is not None and 0 <= highlight < grid_h * grid_w:
        shapes.append(_patch_outline(highlight, grid_w, patch_size, width=3))
    hover = "patch %{customdata[3]} (row %{customdata[4]}, col %{customdata[5]})<extra></extra>"
    rows, cols = np.divmod(np.arange(grid_h * grid_w), grid_w)
    names = numbered(np.stack([np.arange(grid_h * grid_w), rows, cols], axis=1))
    if clickable:
        centres_x = cols * patch_size + patch_size / 2 - 0.5
        centres_y = rows * patch_size + patch_size / 2 - 0.5
        markers = click_markers(
            centres_x,
            centres_y,
            max(6, min(40, 600 // max(grid_w, 1))),
            names,
            hover,
            mode="text+markers" if numbers else "markers",
            textfont=dict(color="white", size=11),
        )
        if numbers:
            markers["text"] = [str(i + 1) for i in range(grid_h * grid_w)]
    else:
        clear = "rgba(0,0,0,0)"
        markers = dict(
            type="heatmap",
            z=np.zeros((grid_h, grid_w)),
            x0=(patch_size - 1) / 2,
            dx=patch_size,
            y0=(patch_size - 1) / 2,
            dy=patch_size,
            colorscale=[[0, clear], [1, clear]],
            showscale=False,
            customdata=names.reshape(grid_h, grid_w, 6),
            hovertemplate=hover,
        )
    layout = _image_layout_dict(height, title)
    layout["shapes"] = shapes
    return _figure([_image_trace(array, hovertemplate=PIXEL_HOVER), markers], layout)


# a patch poll's votes: few pale yellow, most orange-red; light enough for black numbers in every cell (7:1)
VOTES_SCALE = ((0.0, "#fff3b0"), (0.5, "#fdae61"), (1.0, "#f46d43"))


def patch_votes(
    array: np.ndarray,
    votes: np.ndarray,
    title: str | None = None,
    height: int | None = 380,
    chosen: int | None = None,
    hover: str = "patch %{customdata[3]} (row %{customdata[4]}, col %{customdata[5]})",
    answer: int | None = None,
) -> go.Figure:
    """A patch poll over the image: a (grid_h, grid_w) grid drawn on it (its cells need not be
    whole pixels: the grid is the poll's, the picture the viewer's), each patch's votes as a
    coloured square with the count written in it (a patch without votes stays clear), ``chosen``
    (a student's vote) outlined in blue, ``answer`` (the model's patch) in red, and on every patch
    centre a marker that hovers and clicks answer (customdata: index, row, column, then the same
    counted from 1, as ``patch_grid``'s)."""
    picture = to_uint8(array)
    height_px, width_px = picture.shape[:2]
    votes = np.asarray(votes, dtype=np.float64)  # (grid_h, grid_w)
    grid_h, grid_w = votes.shape
    cell_h, cell_w = height_px / grid_h, width_px / grid_w
    shapes = _grid_lines((height_px, width_px), (grid_h, grid_w), cell_h, cell_w)
    for patch, colour, width in ((answer, "#ff2d55", 5), (chosen, "#00a0ff", 3)):  # a vote for it shows inside
        if patch is not None and 0 <= patch < grid_h * grid_w:
            shapes.append(_patch_outline(patch, grid_w, cell_w, width, colour, cell_h=cell_h))
    counted = np.where(votes > 0, votes, np.nan)  # a patch nobody chose shows the picture
    heat = dict(
        type="heatmap",
        z=counted,
        x0=(cell_w - 1) / 2,
        dx=cell_w,
        y0=(cell_h - 1) / 2,
        dy=cell_h,
        zmin=0,
        zmax=max(1.0, float(votes.max(initial=0))),
        colorscale=[list(stop) for stop in VOTES_SCALE],
        opacity=0.85,
        showscale=False,
        text=[[f"{v:g}" if v > 0 else "" for v in row] for row in votes],
        texttemplate="<b>%{text}</b>",
        textfont=dict(color="black", size=max(14, min(28, round(0.6 * (height or 380) / grid_h)))),
        hoverinfo="skip",
    )
    rows, cols = np.divmod(np.arange(grid_h * grid_w), grid_w)
    index_row_col = np.stack([np.arange(grid_h * grid_w), rows, cols], axis=1)
    markers = click_markers(
        cols * cell_w + cell_w / 2 - 0.5,
        rows * cell_h + cell_h / 2 - 0.5,
        max(6, min(40, 600 // max(grid_w, 1))),
        numbered(index_row_col),
        hover + ": %{text}<extra></extra>",
        text=[f"{v:g}" for v in votes.ravel()],
    )
    markers["mode"] = "markers"
    layout = _image_layout_dict(height, title)
    layout["shapes"] = shapes
    # the picture's edges, not the markers', bound the axes: autorange would pad them for the markers' size
    layout["xaxis"] |= dict(range=[-0.5, width_px - 0.5], autorange=False)
    layout["yaxis"] |= dict(range=[height_px - 0.5, -0.5], autorange=False)
    return _figure([_image_trace(picture, hoverinfo="skip"), heat, markers], layout)


def numbered(index_row_col: np.ndarray) -> np.ndarray:
    """[index, row, col] rows (0-based, what a click hands back) with the same three counted from
    1 appended, for hover texts: users count patches, rows and columns from 1."""
    return np.concatenate([index_row_col, index_row_col[:, :3] + 1], axis=1)


def click_markers(
    x: Sequence, y: Sequence, size: int, customdata: np.ndarray, hovertemplate: str, **trace: object
) -> dict:
    """Square markers, nearly transparent, that answer hovers and clicks: st.plotly_chart's
    on_select reads their ``customdata``. Not hidden: hoverinfo "skip" or opacity 0 would make
    them ignore clicks too. A scatter trace's dictionary."""
    trace.setdefault("mode", "markers")
    return dict(
        type="scatter",
        x=x,
        y=y,
        marker=dict(size=size, color="rgba(0,0,0,0.01)", symbol="square"),
        customdata=customdata,
        hovertemplate=hovertemplate,
        showlegend=False,
        **trace,
    )


def outline_patch(fig: go.Figure, index: int, grid_w: int, patch_size: int, width: int = 3) -> go.Figure:
    """Draw a red square around patch ``index`` (row-major) of an image figure."""
    fig.add_shape(_patch_outline(index, grid_w, patch_size, width))
    return fig


def _patch_outline(
    index: int, grid_w: int, cell_w: float, width: int = 3, colour: str = "#ff2d55", cell_h: float | None = None
) -> dict:
    """``outline_patch``'s square as a shape dictionary: patch ``index`` of a grid ``grid_w`` wide
    whose cells are ``cell_w`` pixels wide and ``cell_h`` (default: as wide) high."""
    cell_h = cell_w if cell_h is None else cell_h
    row, col = divmod(index, grid_w)
    x0, y0 = col * cell_w - 0.5, row * cell_h - 0.5
    return dict(type="rect", x0=x0, x1=x0 + cell_w, y0=y0, y1=y0 + cell_h, line=dict(color=colour, width=width))


def _grid_lines(picture: tuple[int, int], grid: tuple[int, int], cell_h: float, cell_w: float) -> list[dict]:
    """White lines between a (grid_h, grid_w) grid's cells of ``cell_h`` x ``cell_w`` pixels, across
    a (height, width) picture: one path of every line (none for a single cell). A line shape apiece
    (62 over step 2's 32 x 32 grid) cost plotly.js a path and a pass over its layout each
    (docs/benchmarks.md)."""
    (height_px, width_px), (grid_h, grid_w) = picture, grid
    across = [f"M-0.5,{r * cell_h - 0.5:g}L{width_px - 0.5:g},{r * cell_h - 0.5:g}" for r in range(1, grid_h)]
    down = [f"M{c * cell_w - 0.5:g},-0.5L{c * cell_w - 0.5:g},{height_px - 0.5:g}" for c in range(1, grid_w)]
    if not across and not down:
        return []
    return [dict(type="path", path="".join(across + down), line=dict(color="rgba(255,255,255,0.9)", width=1))]


def patch_montage(patches: np.ndarray, columns: int, gap: int = 1) -> np.ndarray:
    """(N, P, P, 3) patches -> one (H', W', 3) uint8 picture, ``columns`` to a row, with white gaps
    between them (``tile_mosaic``)."""
    return tile_mosaic(to_uint8_stack(patches), columns, gap, gap)[0]


def to_uint8_stack(patches: np.ndarray) -> np.ndarray:
    patches = np.asarray(patches)
    if patches.dtype != np.uint8:
        patches = (np.clip(patches, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return patches


def patch_gallery(
    patches: np.ndarray, grid: tuple[int, int], title: str | None = None, height: int | None = 420
) -> go.Figure:
    """Every patch as its own tile, in token order (row by row), spaced apart."""
    p = np.asarray(patches).shape[1]
    montage = patch_montage(patches, grid[1], gap=max(1, p // 8))
    return _image_figure(montage, height, title, hoverinfo="skip")


# A patch map's hover counts as the screen does, from 1: the patch number, its row and column
# (``Subject.grid_hover`` writes it in the reader's language).
GRID_HOVER = "patch %{customdata[2]} (row %{customdata[0]}, col %{customdata[1]}): %{z:.4f}<extra></extra>"


def grid_customdata(grid_h: int, grid_w: int) -> np.ndarray:
    """(grid_h, grid_w, 3) of (row, column, patch number), each counted from 1, for GRID_HOVER."""
    rows, cols = np.mgrid[0:grid_h, 0:grid_w]
    return np.stack([rows + 1, cols + 1, rows * grid_w + cols + 1], axis=-1)


def _map_hover(grid_h: int, grid_w: int, pixels: tuple[int, int], hover: str = GRID_HOVER) -> dict:
    """A map's hover: per patch (GRID_HOVER), or per pixel ("x=3, y=7", as the image's own hover)
    when the map is as large as the image (Grad-CAM, integrated gradients)."""
    if (grid_h, grid_w) == pixels:
        return {"hovertemplate": "x=%{x:.0f}, y=%{y:.0f}: %{z:.4f}<extra></extra>"}
    return {"customdata": grid_customdata(grid_h, grid_w), "hovertemplate": hover}


def heatmap_overlay(
    array: np.ndarray,
    values: np.ndarray,
    opacity: float = 0.55,
    title: str | None = None,
    height: int | None = 380,
    colorscale: str = HEAT,
    zmin: float | None = None,
    zmax: float | None = None,
    colorbar: bool = True,
    hover: str = GRID_HOVER,
) -> go.Figure:
    """A (grid_h, grid_w) map laid over the image, one coloured square per patch (or per pixel,
    for a map the image's size)."""
    return _figure(*_overlay(array, values, opacity, title, height, colorscale, zmin, zmax, colorbar, hover))


def _overlay(
    array: np.ndarray, values: np.ndarray, opacity: float, title: str | None, height: int | None, colorscale: str,
    zmin: float | None, zmax: float | None, colorbar: bool, hover: str,
) -> tuple[list[dict], dict]:  # fmt: skip
    """``heatmap_overlay``'s traces (the picture, then the map) and layout."""
    array = to_uint8(array)
    height_px, width_px = array.shape[:2]
    values = np.asarray(values, dtype=np.float64)
    grid_h, grid_w = values.shape
    heat = dict(
        type="heatmap",
        z=values,
        x0=(width_px / grid_w - 1) / 2,
        dx=width_px / grid_w,
        y0=(height_px / grid_h - 1) / 2,
        dy=height_px / grid_h,
        colorscale=_scale(colorscale),
        opacity=opacity,
        showscale=colorbar,
        **_map_hover(grid_h, grid_w, (height_px, width_px), hover),
        colorbar=dict(thickness=12, len=0.8),
    )
    heat |= {key: value for key, value in (("zmin", zmin), ("zmax", zmax)) if value is not None}
    return [_image_trace(array, hoverinfo="skip"), heat], _image_layout_dict(height, title)


def small_multiples(
    maps: np.ndarray,
    titles: Sequence[str],
    columns: int = 6,
    colorscale: str = HEAT,
    shared_scale: bool = False,
    height_per_row: int = 170,
    hover: str = GRID_HOVER,
) -> go.Figure:
    """Many (grid_h, grid_w) maps side by side (e.g. every head of a layer), each titled.

    One heatmap of all the maps (``multiples_mosaic``), not one subplot each: plotly.js drew twelve
    heads' subplots (24 axes) in 35-45 ms and the one mosaic in 12-14 ms, to the same picture
    (docs/benchmarks.md). Each map has its own colour range, as a subplot of its own had (its values
    rescaled to 0-1 in the mosaic), unless ``shared_scale``; the pointer reads a map's own value
    (``hover``'s ``%{z}`` reads it from customdata[3]) and never a gap."""
    maps = np.asarray(maps, dtype=np.float64)
    count, grid_h, grid_w = maps.shape
    columns = max(1, min(columns, count))
    rows = int(np.ceil(count / columns))
    row_gap, column_gap = max(2, -(-grid_h // 4)), max(1, grid_w // 8)  # room for a title; a thin gutter
    shown = maps if shared_scale else rescale_each(maps)
    z, customdata, corners = multiples_mosaic(shown, maps, columns, row_gap, column_gap)
    annotations = [_title_over(title, top, left, grid_w) for (top, left), title in zip(corners, titles, strict=True)]
    trace = dict(
        type="heatmap",
        z=z,
        customdata=customdata,
        colorscale=_scale(colorscale),
        showscale=False,
        hoverongaps=False,
        hovertemplate=hover.replace("%{z", "%{customdata[3]"),
        **(dict(zmin=float(maps.min()), zmax=float(maps.max())) if shared_scale else dict(zmin=0.0, zmax=1.0)),
    )
    # as tall as the mosaic is in a column MOSAIC_WIDTH wide (square cells), at most height_per_row a
    # row of maps: in a narrower column the maps keep their shape and leave room below them
    plot_height = min(rows * height_per_row, round(MOSAIC_WIDTH * z.shape[0] / z.shape[1]))
    layout = dict(
        height=plot_height + PANEL_TITLES_TOP + 4,
        margin=dict(l=4, r=4, t=PANEL_TITLES_TOP, b=4),
        xaxis=dict(visible=False, constrain="domain"),
        yaxis=dict(visible=False, autorange="reversed", scaleanchor="x", constrain="domain", constraintoward="top"),
        annotations=annotations,
        **LOOK,
    )
    return _figure([trace], layout)


def multiples_mosaic(
    shown: np.ndarray, values: np.ndarray, columns: int, row_gap: int, column_gap: int
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """(count, grid_h, grid_w) maps laid out ``columns`` to a row in one picture, with ``row_gap``
    empty rows above every row of maps but the first and ``column_gap`` empty columns between maps.

    Returns:
        the picture of ``shown`` (NaN in the gaps); its customdata, (row, column, patch number) of
        each cell counted from 1 as ``grid_customdata`` and the map's own value from ``values`` (NaN in
        the gaps); and each map's (top row, left column) in the picture.
    """
    count, grid_h, grid_w = shown.shape
    (height, width), corners = mosaic_corners(count, columns, (grid_h, grid_w), row_gap, column_gap)
    z = np.full((height, width), np.nan)
    customdata = np.full((height, width, 4), np.nan)
    cells = grid_customdata(grid_h, grid_w)
    for index, (top, left) in enumerate(corners):
        z[top : top + grid_h, left : left + grid_w] = shown[index]
        customdata[top : top + grid_h, left : left + grid_w, :3] = cells
        customdata[top : top + grid_h, left : left + grid_w, 3] = values[index]
    return z, customdata, corners


def mosaic_corners(
    count: int, columns: int, tile: tuple[int, int], row_gap: int, column_gap: int
) -> tuple[tuple[int, int], list[tuple[int, int]]]:
    """Where ``count`` tiles of ``tile`` = (height, width) cells go, ``columns`` to a row, with
    ``row_gap`` empty rows above every row of tiles but the first and ``column_gap`` empty columns
    between tiles: the mosaic's (height, width), and each tile's (top row, left column)."""
    tile_h, tile_w = tile
    rows = int(np.ceil(count / columns))
    size = (rows * tile_h + (rows - 1) * row_gap, columns * tile_w + (columns - 1) * column_gap)
    corners = []
    for index in range(count):
        row, col = divmod(index, columns)
        corners.append((row * (tile_h + row_gap), col * (tile_w + column_gap)))
    return size, corners


def _title_over(text: str, top: int, left: int, width: int, size: int = 13) -> dict:
    """The title of a map or tile in a mosaic, centred over the one whose top-left cell is (top,
    left) and which is ``width`` cells wide: in the picture's coordinates, it moves with it."""
    return dict(
        text=text,
        x=left + (width - 1) / 2,
        y=top - 0.5,
        xref="x",
        yref="y",
        xanchor="center",
        yanchor="bottom",
        showarrow=False,
        font=dict(size=size),
    )


def channel_maps(pixels: np.ndarray, titles: Sequence[str], height: int = 300) -> go.Figure:
    """The three normalised input channels (C, H, W) as diverging heat maps around zero."""
    pixels = np.asarray(pixels, dtype=np.float64)
    limit = float(np.abs(pixels).max()) or 1.0
    axes, layout = _panel_row(list(titles), 0.03)
    data = []
    for index, (channel, (x_name, y_name)) in enumerate(zip(pixels, axes, strict=True)):
        data.append(
            dict(
                type="heatmap",
                z=channel,
                colorscale=_scale(DIVERGING),
                zmin=-limit,
                zmax=limit,
                showscale=index == len(pixels) - 1,
                hovertemplate="x=%{x}, y=%{y}: %{z:.3f}<extra></extra>",
                colorbar=dict(thickness=12),
                xaxis=x_name,
                yaxis=y_name,
            )
        )
        layout["xaxis" + x_name[1:]]["visible"] = False
        layout["yaxis" + y_name[1:]] |= dict(visible=False, autorange="reversed", scaleanchor=x_name)
    layout |= dict(height=height, margin=dict(l=4, r=4, t=PANEL_TITLES_TOP, b=4), **LOOK)
    return _figure(data, layout)


def histogram(
    series: dict[str, np.ndarray],
    title: str | None = None,
    height: int = 280,
    x_title: str | None = None,
    y_title: str | None = None,
) -> go.Figure:
    """Overlaid histograms of named value arrays."""
    data = [
        dict(
            type="histogram", x=np.asarray(values).ravel(), name=name, opacity=0.6, nbinsx=60, marker=dict(color=colour)
        )
        for (name, values), colour in zip(series.items(), itertools.cycle(CHANNEL_COLOURS), strict=False)
    ]
    layout = dict(
        barmode="overlay",
        height=height + LEGEND_ROW_PX,  # one row of legend under the plot (a title above may wrap: it had no room)
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        xaxis=_axis(x_title),
        yaxis=_axis(y_title),
        legend=_legend_below(),
    )
    if title:
        layout["title"] = _title(title)
    return _figure(data, layout)


def bars(
    labels: Sequence[str],
    values: Sequence[float],
    title: str | None = None,
    height: int = 300,
    highlight: int | None = None,
    percent: bool = True,
    x_title: str | None = None,
    correct: int | None = None,
    every_label: bool = False,
    notes: Sequence[str] = (),
    apart: int | None = None,
) -> go.Figure:
    """Horizontal bars, largest on top (top-k probabilities, counts ...).

    ``highlight`` marks one bar in red (the prediction); ``correct`` marks the bar of the known
    true class in green (it wins over ``highlight`` when both are the same bar). ``every_label``:
    every bar named, however short the figure (Plotly leaves some out where the labels crowd).
    ``notes``: words after a bar's number, bar by bar ("" for none). ``apart``: the first bar set
    apart from those above it by a dotted line (a bar that is not the next in rank).
    """
    data, layout = _bars(labels, values, title, height, highlight, percent, x_title, correct, every_label, notes)
    if apart is not None and 0 < apart < len(values):  # y counts the bars from 0, top down
        line = dict(color=AXIS["linecolor"], width=1.5, dash="dot")
        layout["shapes"] = [dict(type="line", x0=0, x1=1, xref="x domain", y0=apart - 0.5, y1=apart - 0.5, line=line)]
    return _figure(data, layout)


def _bars(
    labels: Sequence[str], values: Sequence[float], title: str | None, height: int, highlight: int | None,
    percent: bool, x_title: str | None, correct: int | None, every_label: bool = False, notes: Sequence[str] = (),
) -> tuple[list[dict], dict]:  # fmt: skip
    """``bars``' trace and layout."""
    colours = [
        TRUE_COLOUR if i == correct else PREDICTED_COLOUR if i == highlight else OTHER_COLOUR
        for i in range(len(values))
    ]
    notes = [*notes[: len(values)], *[""] * (len(values) - len(notes))]
    numbers = [f"{v:.1%}" if percent else f"{v:g}" for v in values]
    text = [f"{number} · {note}" if note else number for number, note in zip(numbers, notes, strict=True)]
    top = max(max(values, default=0), 1e-9)
    bar = dict(
        type="bar",
        x=list(values),
        y=list(labels),
        orientation="h",
        marker=dict(color=colours),
        text=text,
        # beside its bar, level and at full size: inside a short bar Plotly turned "7.0%" on its
        # side and shrank it
        textposition="outside",
        textangle=0,
        constraintext="none",
        cliponaxis=False,
    )
    # from 0, with room for the longest bar's number (0.3 of the axis for about 5 characters) and
    # for the words after a shorter bar's
    room = max(
        [top * 1.3] + [v + top * 0.06 * len(said) for v, said, note in zip(values, text, notes, strict=True) if note]
    )
    axis = _axis(x_title, range=[0, room])
    if percent:  # ticks up to the longest bar: no "120%" in the room left for its number
        step = next(s for s in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25) if top / s <= 5)
        axis |= dict(
            tickformat=".0%" if step >= 0.01 else ".1%", tickvals=list(np.round(np.arange(0, top + 1e-9, step), 6))
        )
    layout = dict(
        height=height,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        xaxis=axis,
        yaxis=dict(autorange="reversed"),
    )
    if every_label:
        layout["yaxis"] |= dict(tickmode="array", tickvals=list(labels), ticktext=list(labels))
    if title:
        layout["title"] = _title(title)
    return [bar], layout


# ---- 3. vectors ----
def _channel_scale(colour: str) -> list[list[object]]:
    return [[0.0, "#000000"], [1.0, colour]]


def plane_titles(names: Sequence[str], patch_size: int) -> list[str]:
    """The title of each channel's plane: "c = 1 (R): 1-16", its channel and the positions of x_p
    it holds, counted from 1 like the patches (README, "One numbering")."""
    pp = patch_size * patch_size
    return [f"c = {c} ({name}): {(c - 1) * pp + 1}-{c * pp}" for c, name in enumerate(names, start=1)]


def patch_planes(
    vector: np.ndarray,
    patch_size: int,
    in_chans: int,
    names: Sequence[str],
    title: str | None = None,
    height: int = 330,
    index_word: str = "index",
) -> go.Figure:
    """One flattened patch (C*P*P,) in (c p1 p2) order, drawn as its C planes of P x P (``names``:
    their titles, "<br>" between lines).

    Each plane is coloured black to its channel's colour on one scale shared by all planes.
    Channels, rows p1, columns p2 and positions in the vector count from 1 (README, "One
    numbering"): cell (p1, p2) of plane c holds position (c-1)*P*P + (p1-1)*P + p2 of the vector,
    the code's vector[(c-1)*P*P + (p1-1)*P + p2 - 1]; that position is written in the cell when
    P <= 8 and shown on hover, so the flattening order can be read off.
    """
    p = patch_size
    planes = np.asarray(vector, dtype=np.float64).reshape(in_chans, p, p)  # (C, P, P)
    position = np.arange(1, in_chans * p * p + 1).reshape(in_chans, p, p)  # (c-1)*P*P + (p1-1)*P + p2
    counted = np.arange(1, p + 1)  # p1 and p2 as a person counts them
    low, high = float(planes.min()), float(planes.max())
    if high <= low:
        high = low + 1e-6
    axes, layout = _panel_row(list(names), 0.04, font_size=15)
    data = []
    ticks = dict(tickmode="linear", tick0=1, dtick=max(1, p // 4), constrain="domain")
    for c, (x_name, y_name) in enumerate(axes):
        colour = CHANNEL_COLOURS[c] if in_chans == 3 else "#ffffff"
        trace = dict(
            type="heatmap",
            z=planes[c],
            x=counted,
            y=counted,
            customdata=position[c],
            textfont=dict(color="white", size=12),
            colorscale=_channel_scale(colour),
            zmin=low,
            zmax=high,
            showscale=False,
            hovertemplate="p1=%{y}, p2=%{x}<br>" + index_word + " %{customdata}: %{z:.3f}<extra></extra>",
            xaxis=x_name,
            yaxis=y_name,
        )
        if p <= 8:
            trace |= dict(text=position[c], texttemplate="%{text}")
        data.append(trace)
        suffix = x_name[1:]
        layout[f"xaxis{suffix}"] |= dict(title=dict(text="p2"), **ticks)
        layout[f"yaxis{suffix}"] |= dict(autorange="reversed", **ticks, showticklabels=c == 0, scaleanchor=x_name)
    layout["yaxis"]["title"] = dict(text="p1")
    more = PANEL_LINE_PX * max(name.count("<br>") for name in names)  # titles of several lines: room above
    top = (TITLE_TOP + 24 if title else PANEL_TITLES_TOP) + more
    layout |= dict(height=height + more, margin=dict(l=4, r=4, t=top, b=4), **LOOK)
    if title:
        layout["title"] = _title(title)
    return _figure(data, layout)


def vector_bars(
    values: np.ndarray,
    segment: int | None = None,
    names: Sequence[str] = (),
    title: str | None = None,
    x_title: str | None = None,
    height: int = 300,
    index_word: str = "index",
) -> go.Figure:
    """A 1-D vector as bars, its positions on x counted from 1 (README, "One numbering"). With
    ``segment``, every run of ``segment`` entries is its own trace (coloured by channel, named
    from ``names``), its first position marked on the axis."""
    values = np.asarray(values, dtype=np.float64).ravel()
    data, shapes, xaxis = [], [], _axis(x_title)
    if segment:
        starts = range(0, len(values), segment)  # 0-based: where each run starts in the array
        colours = CHANNEL_COLOURS if len(starts) == 3 else (GREY,)  # R, G, B, or one grey channel
        for number, start in enumerate(starts):
            stop = min(start + segment, len(values))
            name = names[number] if number < len(names) else str(number + 1)
            data.append(
                dict(
                    type="bar",
                    x=np.arange(start + 1, stop + 1),
                    y=values[start:stop],
                    name=name,
                    marker=dict(color=colours[number % len(colours)]),
                    hovertemplate=index_word + " %{x}: %{y:.3f}<extra>" + name + "</extra>",
                )
            )
            if start:
                shapes.append(_vline(start + 0.5, dict(color="#666", width=1, dash="dot")))
        firsts = [start + 1 for start in starts]
        labels = [f"{names[i] if i < len(names) else i + 1}: {first}" for i, first in enumerate(firsts)]
        xaxis |= dict(tickmode="array", tickvals=firsts, ticktext=labels)
    else:
        data.append(
            dict(
                type="bar",
                x=np.arange(1, len(values) + 1),
                y=values,
                marker=dict(color="#4c78a8"),
                hovertemplate=index_word + " %{x}: %{y:.3f}<extra></extra>",
            )
        )
    layout = dict(
        height=height,
        bargap=0,
        **LOOK,
        xaxis=xaxis,
        showlegend=bool(segment),
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"),
    )
    if title:
        layout["title"] = _title(title)
    if shapes:
        layout["shapes"] = shapes
    return _figure(data, layout)


def rescale_each(stack: np.ndarray) -> np.ndarray:
    """Min-max rescale every item of a stack (first axis) to [0, 1] on its own (flat items: 0.5)."""
    stack = np.asarray(stack, dtype=np.float64)
    flat = stack.reshape(len(stack), -1)
    low = flat.min(axis=1, keepdims=True)
    span = flat.max(axis=1, keepdims=True) - low
    out = np.where(span > 0, (flat - low) / np.where(span > 0, span, 1.0), 0.5)
    return out.reshape(stack.shape)


def component_tiles(
    components: np.ndarray, ratios: Sequence[float], columns: int = 8, height_per_row: int = 150
) -> go.Figure:
    """Principal components of the patch filters, (k, C, P, P), as small RGB tiles.

    Every component is rescaled to [0, 1] on its own (its sign and scale are arbitrary); the
    tile's title is its number and its share of the filters' variance. At most ``columns`` a
    row, the rows evenly filled (16 tiles: two rows of 8; 28: four of 7).

    One picture of every tile with white gaps (``tile_mosaic``), the titles written above the tiles,
    not a subplot each: plotly.js drew the shipped model's 17 tiles as subplots (34 axes, some 1,560
    elements of the page) in 40-50 ms of the browser's main thread, and the picture in 17-22 ms
    (docs/benchmarks.md).
    """
    tiles = rescale_each(components).transpose(0, 2, 3, 1)  # (k, P, P, C)
    count, p = len(tiles), tiles.shape[1]
    rows = int(np.ceil(count / max(1, columns)))
    columns = max(1, int(np.ceil(count / rows)))
    row_gap, column_gap = max(2, -(-p // 4)), max(1, p // 8)  # room for a title; a thin gutter
    picture, corners = tile_mosaic(np.stack([to_uint8(tile) for tile in tiles]), columns, row_gap, column_gap)
    annotations = [
        _title_over(f"{index + 1}: {float(ratio):.1%}", top, left, p)
        for index, ((top, left), ratio) in enumerate(zip(corners, ratios, strict=True))
    ]
    # as tall as the picture is in a column MOSAIC_WIDTH wide, at most height_per_row a row of tiles
    plot_height = min(rows * height_per_row, round(MOSAIC_WIDTH * picture.shape[0] / picture.shape[1]))
    layout = _image_layout_dict(plot_height + PANEL_TITLES_TOP + 4)
    layout["margin"] = dict(l=4, r=4, t=PANEL_TITLES_TOP, b=4)
    layout["yaxis"] |= dict(constrain="domain", constraintoward="top")
    layout["annotations"] = annotations
    return _figure([_image_trace(picture, hoverinfo="skip")], layout)


def tile_mosaic(
    tiles: np.ndarray, columns: int, row_gap: int, column_gap: int
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """(count, H, W, 3) uint8 tiles laid out ``columns`` to a row in one white picture, with
    ``row_gap`` white rows above every row of tiles but the first and ``column_gap`` white columns
    between tiles.

    Returns:
        the picture, and each tile's (top row, left column) in it.
    """
    count, tile_h, tile_w = tiles.shape[:3]
    size, corners = mosaic_corners(count, columns, (tile_h, tile_w), row_gap, column_gap)
    picture = np.full((*size, 3), 255, dtype=np.uint8)
    for tile, (top, left) in zip(tiles, corners, strict=True):
        picture[top : top + tile_h, left : left + tile_w] = tile
    return picture, corners


# (end of 3. vectors)


# ---- 4. tokens ----
def token_matrix(
    values: np.ndarray,
    row_labels: Sequence[str],
    title: str | None = None,
    marked: dict[int, str] | None = None,
    height: int = 420,
    y_title: str = "token",
    x_title: str = "channel (D)",
    channel_word: str = "channel",
    rows: Sequence[str] | None = None,
    ticks: Sequence[str] | None = None,
) -> go.Figure:
    """A token sequence (n, D) as a heat map, one row per token, named by ``row_labels``
    ("[CLS]", "patch 1", ...), channels counted from 1 on x.

    Args:
        values: (n, D).
        row_labels: (n,) what each row is; the hover and the y ticks read them.
        marked: row index -> label of a row to outline and name on the y axis, in red (e.g.
            {0: "[CLS]"}); ticks nearer to it than a line of text are left out.
        rows: the slots of the y axis, top to bottom, when there are more of them than rows in
            ``values``, whose labels must be a run of ``rows``: the patch tokens, drawn with
            ``rows`` = [CLS] and the patches, leave [CLS]'s slot empty and line up with the
            sequence that has it.
        ticks: the row labels written on the y axis (default: all of them).
    """
    values = np.asarray(values, dtype=np.float32)
    count, dim = values.shape
    rows = list(rows if rows is not None else row_labels)
    first = rows.index(row_labels[0]) if count else 0  # the slot of the first row of values
    if list(row_labels) != rows[first : first + count]:
        raise ValueError(f"{count} rows labelled {list(row_labels)[:2]}... are not a run of the slots {rows[:2]}...")
    limit = float(np.abs(values).max()) or 1.0
    heat = dict(
        type="heatmap",
        z=values,
        x=np.arange(1, dim + 1),
        y=list(row_labels),
        colorscale=_scale(DIVERGING),
        zmin=-limit,
        zmax=limit,
        colorbar=dict(thickness=12),
        hovertemplate=f"%{{y}}, {channel_word} %{{x}}: %{{z:.3f}}<extra></extra>",
    )
    shapes = [  # on a category axis, row k of the data sits at k
        dict(type="rect", x0=0.5, x1=dim + 0.5, y0=row - 0.5, y1=row + 0.5, line=dict(color="#ff2d55", width=3))
        for row in marked or {}
    ]
    # The y axis names the marked rows beside their outline, and leaves out a tick closer to one
    # than a line of text: with 65 rows in 350 pixels, "patch 1" sat level with [CLS].
    slots = {label: slot for slot, label in enumerate(rows)}
    named = {first + row: label for row, label in (marked or {}).items()}
    row_px = (height - (TITLE_TOP if title else 10) - 60) / max(len(rows), 1)  # less the x axis's ticks and title
    apart = int(np.ceil(1.2 * TEXT_PX[False] / max(row_px, 1e-9)))
    tick_slots = sorted(
        {slots[t] for t in (ticks if ticks is not None else rows) if all(abs(slots[t] - m) >= apart for m in named)}
        | set(named)
    )
    tick_text = [
        f'<b><span style="color:{HIGHLIGHT_TEXT}">{named[k]}</span></b>' if k in named else rows[k] for k in tick_slots
    ]
    layout = dict(
        height=height,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        xaxis=_axis(x_title, range=[0.5, dim + 0.5]),
        yaxis=_axis(  # every slot of ``rows`` top to bottom, empty ones too (data row k sits at k)
            y_title,
            type="category",
            range=[len(rows) - first - 0.5, -first - 0.5],
            tickmode="array",
            tickvals=[rows[k] for k in tick_slots],
            ticktext=tick_text,
        ),
    )
    if title:
        layout["title"] = _title(title)
    if shapes:
        layout["shapes"] = shapes
    return _figure([heat], layout)


def similarity_mosaic(similarity: np.ndarray, gap: int = 1) -> np.ndarray:
    """(grid_h, grid_w, grid_h, grid_w) similarities -> one picture of grid_h x grid_w maps.

    The map of position (r, c) (its similarity with every position) is the block at rows
    ``r * (grid_h + gap)`` and columns ``c * (grid_w + gap)``, so every map sits where its patch
    sits in the image (ViT paper, Fig. 7 centre). Gaps are NaN (drawn empty).

    Returns:
        (grid_h * grid_h + (grid_h - 1) * gap, grid_w * grid_w + (grid_w - 1) * gap) float.
    """
    similarity = np.asarray(similarity, dtype=np.float64)
    grid_h, grid_w = similarity.shape[:2]
    out = np.full((grid_h * grid_h + (grid_h - 1) * gap, grid_w * grid_w + (grid_w - 1) * gap), np.nan)
    for row in range(grid_h):
        for col in range(grid_w):
            top, left = row * (grid_h + gap), col * (grid_w + gap)
            out[top : top + grid_h, left : left + grid_w] = similarity[row, col]
    return out


def similarity_grid(
    similarity: np.ndarray, title: str | None = None, selected: int | None = None, height: int = 600
) -> go.Figure:
    """The grid of similarity maps as ONE heat map (cosine, -1 to 1), with a clickable marker
    on every block (customdata [index, row, col], then the three from 1 for the hover text) and
    the ``selected`` position outlined."""
    similarity = np.asarray(similarity, dtype=np.float64)
    grid_h, grid_w = similarity.shape[:2]
    gap = 1
    mosaic = similarity_mosaic(similarity, gap)  # NaN gaps show the dark plot background
    fig = go.Figure(
        go.Heatmap(
            z=mosaic,
            colorscale=DIVERGING,
            zmin=-1,
            zmax=1,
            colorbar=dict(thickness=12, title="cos"),
            hoverinfo="skip",
            hoverongaps=False,
        )
    )
    rows, cols = np.divmod(np.arange(grid_h * grid_w), grid_w)
    fig.add_trace(
        click_markers(
            cols * (grid_w + gap) + (grid_w - 1) / 2,
            rows * (grid_h + gap) + (grid_h - 1) / 2,
            max(6, min(40, 560 // max(grid_w, 1))),
            numbered(np.stack([np.arange(grid_h * grid_w), rows, cols], axis=1)),
            "position %{customdata[3]} (row %{customdata[4]}, col %{customdata[5]})<extra></extra>",
        )
    )
    if selected is not None and 0 <= selected < grid_h * grid_w:
        row, col = divmod(selected, grid_w)
        top, left = row * (grid_h + gap), col * (grid_w + gap)
        fig.add_shape(
            type="rect",
            x0=left - 0.5,
            x1=left + grid_w - 0.5,
            y0=top - 0.5,
            y1=top + grid_h - 0.5,
            line=dict(color="#ff2d55", width=3),
        )
    height_px, width_px = mosaic.shape  # fixed ranges: the markers would pad the autorange
    fig.update_xaxes(visible=False, constrain="domain", range=[-0.5, width_px - 0.5])
    fig.update_yaxes(visible=False, range=[height_px - 0.5, -0.5], scaleanchor="x", constrain="domain")
    fig.update_layout(
        height=height,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 4, b=4),
        **LOOK,
        title=_title(title),
        plot_bgcolor="#444",
        dragmode=False,
    )
    return fig


def similarity_maps(
    maps: np.ndarray,
    titles: Sequence[str],
    marked: tuple[int, int] | None = None,
    height: int = 420,
    own_range: bool = False,
    hover: str = GRID_HOVER,
) -> go.Figure:
    """(k, grid_h, grid_w) cosine-similarity maps side by side; ``marked`` (row, col) outlines
    the chosen position in every map.

    By default every map shares the -1..1 scale (red similar, blue opposite). With
    ``own_range`` each map spans its own min..max in Viridis, with a colour bar of its own:
    fixed sine-cosine tables are similar everywhere (0.6 to 1), and only their own range shows
    their row and column pattern.
    """
    maps = np.asarray(maps, dtype=np.float64)
    count = len(maps)
    fig = make_subplots(rows=1, cols=count, subplot_titles=list(titles), horizontal_spacing=0.08 if own_range else 0.04)
    for index, values in enumerate(maps):
        if own_range:  # a colour bar beside each map: its own min..max
            right = fig.layout["xaxis" if index == 0 else f"xaxis{index + 1}"].domain[1]
            scale = dict(
                colorscale=HEAT,
                zmin=values.min(),
                zmax=values.max(),
                showscale=True,
                colorbar=dict(thickness=10, x=right + 0.005, xanchor="left", len=0.8, title="cos", tickformat=".2f"),
            )
        else:
            scale = dict(
                colorscale=DIVERGING,
                zmin=-1,
                zmax=1,
                showscale=index == count - 1,
                colorbar=dict(thickness=12, title="cos"),
            )
        fig.add_trace(
            go.Heatmap(z=values, **scale, customdata=grid_customdata(*values.shape), hovertemplate=hover),
            row=1,
            col=index + 1,
        )
        if marked is not None:
            row, col = marked
            fig.add_shape(
                type="rect",
                x0=col - 0.5,
                x1=col + 0.5,
                y0=row - 0.5,
                y1=row + 0.5,
                line=dict(color="#ff2d55" if own_range else "#111", width=3),
                row=1,
                col=index + 1,
            )
    fig.update_xaxes(visible=False, constrain="domain")
    fig.update_yaxes(visible=False, autorange="reversed", constrain="domain")
    for index in range(count):
        axis = "" if index == 0 else str(index + 1)
        fig.layout[f"yaxis{axis}"].scaleanchor = f"x{axis}"
    fig.update_layout(height=height, margin=dict(l=4, r=4, t=60 if own_range else PANEL_TITLES_TOP, b=4), **LOOK)
    fig.update_annotations(font_size=15)
    return fig


# (end of 4. tokens)


# ---- 5. attention ----
def attention_picker(
    array: np.ndarray,
    values: np.ndarray,
    patch_size: int,
    query_patch: int | None = None,
    title: str | None = None,
    height: int | None = 420,
) -> go.Figure:
    """An attention map over the image that a click can pick a patch from.

    ``heatmap_overlay`` plus one transparent marker per patch centre (as in ``patch_grid``)
    whose customdata is [patch index, row, col, value] (0-based, then the three from 1 for the
    hover text), so ``clicks.patch_from_selection`` reads the clicked patch; ``query_patch`` (an index among the patches) gets a red outline.
    The markers are the last trace, and the heat map itself takes no hover or clicks.
    """
    array = to_uint8(array)
    values = np.asarray(values, dtype=np.float64)
    grid_h, grid_w = values.shape
    data, layout = _overlay(
        array, values, opacity=0.55, title=title, height=height, colorscale=HEAT, zmin=None, zmax=None,
        colorbar=True, hover=GRID_HOVER,
    )  # fmt: skip
    data[-1]["hoverinfo"] = "skip"
    data[-1].pop("hovertemplate", None)
    rows, cols = np.divmod(np.arange(grid_h * grid_w), grid_w)
    size = max(6, min(40, int(0.8 * (height or 420) / max(grid_h, grid_w))))  # about one patch on screen
    data.append(
        click_markers(
            cols * patch_size + patch_size / 2 - 0.5,
            rows * patch_size + patch_size / 2 - 0.5,
            size,
            np.concatenate(
                [
                    np.stack([np.arange(grid_h * grid_w), rows, cols, values.ravel()], axis=1),
                    numbered(np.stack([np.arange(grid_h * grid_w), rows, cols], axis=1))[:, 3:],
                ],
                axis=1,
            ),
            "patch %{customdata[4]} (row %{customdata[5]}, col %{customdata[6]}): %{customdata[3]:.4f}<extra></extra>",
        )
    )
    if query_patch is not None and 0 <= query_patch < grid_h * grid_w:
        layout["shapes"] = [_patch_outline(query_patch, grid_w, patch_size, width=4)]
    return _figure(data, layout)


def head_marker(head: int) -> dict:
    """Head ``head``'s (0-based) colour from ``PALETTE`` and, past the palette's eight, a symbol of
    its own too (ViT-B/16 has 12 heads)."""
    return dict(color=PALETTE[head % len(PALETTE)], symbol=SYMBOLS[head // len(PALETTE) % len(SYMBOLS)])


HEADS_IN_A_COLUMN = 6  # more heads than this and their legend would run off a 400-px figure at presenter sizes


def head_legend(heads: int) -> dict:
    """The layout's legend for one entry per head: plotly's column at the right for a few, rows
    under the plot (they wrap to its width) for more, whose column would be cut off at the
    figure's foot (12 heads in presenter mode)."""
    return {} if heads <= HEADS_IN_A_COLUMN else dict(legend=_legend_below())


def head_dots(distances: np.ndarray, head_word: str, x_title: str, axes: tuple[str, str] = ("x", "y")) -> list[dict]:
    """One trace of dots per head of a (depth, heads) array of pixels: x = layer (1-based, as
    users count), a colour per head named in the legend (so it says which colour is which head)."""
    depth, heads = distances.shape
    return [
        dict(
            type="scatter",
            x=np.arange(1, depth + 1),
            y=distances[:, head],
            mode="markers",
            name=f"{head_word} {head + 1}",
            marker=dict(size=12, line=dict(color="white", width=1), **head_marker(head)),
            hovertemplate=f"{x_title} %{{x}}, {head_word} {head + 1}: %{{y:.1f}} px<extra></extra>",
            **({} if axes == ("x", "y") else dict(xaxis=axes[0], yaxis=axes[1])),
        )
        for head in range(heads)
    ]


def _hline(y: float, line: dict, axes: tuple[str, str] = ("x", "y")) -> dict:
    """A horizontal line across a panel at ``y``, as plotly's ``add_hline`` draws it."""
    return dict(type="line", x0=0, x1=1, xref=f"{axes[0]} domain", y0=y, y1=y, yref=axes[1], line=line)


def _hline_label(y: float, text: str, axes: tuple[str, str] = ("x", "y")) -> dict:
    """``add_hline``'s ``annotation_text`` at "top left": above the line, at the panel's left."""
    return dict(
        showarrow=False, text=text, x=0, xanchor="left", xref=f"{axes[0]} domain", y=y, yanchor="bottom", yref=axes[1]
    )


def attention_distance(
    distances: np.ndarray,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    head_word: str = "head",
    uniform: float | None = None,
    uniform_label: str | None = None,
    height: int = 380,
) -> go.Figure:
    """Mean attention distance (depth, heads) as the ViT paper's Fig. 7 (right).

    One dot per head at x = layer (1-based, as users count) and y = distance in pixels, a colour
    per head named in the legend (1-based). ``uniform`` draws the distance of attention spread evenly.
    """
    distances = np.asarray(distances, dtype=np.float64)
    depth, heads = distances.shape
    layout = dict(
        height=height,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        **head_legend(heads),
        xaxis=_axis(x_title, tickmode="linear", tick0=1, dtick=1 if depth <= 24 else 2),
        yaxis=_axis(y_title, rangemode="tozero"),
    )
    if title:
        layout["title"] = _title(title)
    if uniform is not None:
        layout["shapes"] = [_hline(uniform, dict(color="grey", dash="dot"))]
        if uniform_label:
            layout["annotations"] = [_hline_label(uniform, uniform_label)]
    return _figure(head_dots(distances, head_word, x_title or "layer"), layout)


def reach(
    fields: Sequence[tuple[str, int]],
    distances: np.ndarray,
    image_px: int,
    cnn_title: str = "CNN: receptive field",
    vit_title: str = "ViT: mean attention distance",
    y_title: str = "pixels",
    cnn_x_title: str = "layer",
    vit_x_title: str = "layer",
    head_word: str = "head",
    image_label: str = "image side",
    height: int = 400,
    tick_text: Sequence[str] | None = None,
) -> go.Figure:
    """How far each family looks, in pixels of its input: the CNN's theoretical receptive field
    after every convolution and pooling layer (``cnn.receptive_fields``, a line that can only
    grow) beside the ViT's mean attention distance per layer and head (``analysis.mean_attention_distance``,
    a dot per head, named in the legend), on one y axis, with the image's side dashed.

    Args:
        fields: (layer name, receptive field in pixels), in the order the layers run.
        distances: (depth, heads) mean attention distance in pixels.
        image_px: the side of the input in pixels.
        tick_text: what the CNN's axis calls its layers (default: their names; the pointer shows
            the names).
    """
    distances = np.asarray(distances, dtype=np.float64)
    depth, heads = distances.shape
    (cnn_axes, vit_axes), layout = _panel_row([cnn_title, vit_title], 0.05)
    steps = np.arange(1, len(fields) + 1)
    line = dict(
        type="scatter",
        x=steps,
        y=[size for _, size in fields],
        mode="lines+markers",
        line=dict(color="#2ca02c", width=3),
        text=[name for name, _ in fields],
        hovertemplate="%{text}: %{y} px<extra></extra>",
        showlegend=False,
        xaxis="x",
        yaxis="y",
    )
    edge = dict(color="grey", dash="dash")
    layout["xaxis"] |= dict(
        title=dict(text=cnn_x_title),
        tickvals=steps,
        ticktext=list(tick_text) if tick_text is not None else [name for name, _ in fields],
        tickangle=-45,
    )
    layout["yaxis"] |= dict(title=dict(text=y_title), rangemode="tozero")
    layout["xaxis2"] |= dict(title=dict(text=vit_x_title), tickmode="linear", tick0=1, dtick=1 if depth <= 24 else 2)
    layout["yaxis2"] |= dict(matches="y", showticklabels=False)  # the CNN's y axis, shared
    layout["annotations"].append(_hline_label(image_px, image_label, cnn_axes))
    layout |= dict(
        shapes=[_hline(image_px, edge, cnn_axes), _hline(image_px, edge, vit_axes)],
        height=height,
        margin=dict(l=4, r=4, t=PANEL_TITLES_TOP, b=4),
        **LOOK,
        **head_legend(heads),
    )
    return _figure([line, *head_dots(distances, head_word, vit_x_title, vit_axes)], layout)


def key_weights(
    labels: Sequence[str], weights: Sequence[float], title: str | None = None, height: int = 360
) -> go.Figure:
    """The softmax weights of the keys a query attends to most, as ``bars`` with finer % ticks."""
    data, layout = _bars(
        labels, weights, title=title, height=height, highlight=None, percent=True, x_title=None, correct=None
    )
    layout["xaxis"] |= dict(tickformat=".1%", rangemode="tozero")
    return _figure(data, layout)


# (end of 5. attention)


# ---- 6. block ----
BLOCK_COLOURS = {"stream": "#e8e8e8", "norm": "#fff2b3", "attention": "#cfe3f7", "mlp": "#d4efd0", "add": "#ffffff"}


# The colour group of each box of the encoder-block diagram (block_diagram's boxes), by step.
BLOCK_KINDS = {
    "input": "stream",
    "norm1": "norm",
    "qkv": "attention",
    "attention": "attention",
    "attn_proj": "attention",
    "add1": "add",
    "norm2": "norm",
    "fc1": "mlp",
    "gelu": "mlp",
    "fc2": "mlp",
    "add2": "add",
}


def block_diagram(
    boxes: Sequence[tuple[str, str, str]],
    residuals: Sequence[tuple[int, int]] = (),
    title: str | None = None,
    height: int | None = None,
) -> go.Figure:
    """A flow chart drawn top to bottom: boxes joined by arrows, with the shape of the tensor
    leaving every box written beside it, and residual connections as arrows on the left.

    A residual (from, to) forks off the arrow that leaves box ``from`` (a dot marks the fork,
    halfway to the next box) and ends in an arrowhead at box ``to``: in a pre-LN block the
    second skip starts at the output of the first addition, never at the block's input.

    Args:
        boxes: (label, shape text, kind) per box in order; kind picks the fill colour from
            ``BLOCK_COLOURS`` ("stream", "norm", "attention", "mlp", "add").
        residuals: (from, to) box indices: the output of box ``from`` is added in box ``to``.
        title: the figure title.
        height: pixels; None gives 58 per box.
    """
    fig = go.Figure()
    half_w, half_h = 2.2, 0.32
    ys = [-float(i) for i in range(len(boxes))]
    # plain layout entries, set in one update: add_shape / add_annotation validate all of them again
    # on every call, which made this small chart the block page's slowest part on every rerun
    shapes, notes = [], []
    arrow = dict(xref="x", yref="y", axref="x", ayref="y", text="", showarrow=True, arrowhead=2, arrowsize=1.2)
    for y, (label, shape, kind) in zip(ys, boxes, strict=True):
        shapes.append(
            dict(
                type="rect",
                x0=-half_w,
                x1=half_w,
                y0=y - half_h,
                y1=y + half_h,
                line=dict(color="#555", width=1.5),
                fillcolor=BLOCK_COLOURS.get(kind, "#ffffff"),
                layer="below",
            )
        )
        notes.append(dict(x=0, y=y, text=label, showarrow=False, font=dict(size=15, color="#111")))
        notes.append(
            dict(
                x=half_w + 0.15,
                y=y,
                text=f"<b>{shape}</b>",
                showarrow=False,
                xanchor="left",
                font=dict(size=14, family="monospace", color="#1f4e8c"),
            )
        )
    for upper, lower in zip(ys[:-1], ys[1:], strict=True):
        notes.append(dict(x=0, y=lower + half_h, ax=0, ay=upper - half_h, **arrow, arrowwidth=2, arrowcolor="#333"))
    red, dot = "#d62728", 5  # dot: the fork's radius in pixels
    for start, end in residuals:
        fork, y1, left = ys[start] - 0.5, ys[end], -half_w - 0.55  # fork: halfway down the arrow leaving `start`
        path = f"M 0,{fork} L {left},{fork} L {left},{y1}"
        shapes.append(dict(type="path", path=path, line=dict(color=red, width=2.5)))
        shapes.append(
            dict(
                type="circle",
                xsizemode="pixel",
                ysizemode="pixel",
                xanchor=0,
                yanchor=fork,
                x0=-dot,
                x1=dot,
                y0=-dot,
                y1=dot,
                fillcolor=red,
                line=dict(color=red),
            )
        )
        notes.append(dict(x=-half_w, y=y1, ax=left, ay=y1, **arrow, arrowwidth=2.5, arrowcolor=red))
    fig.update_layout(shapes=shapes, annotations=notes)
    fig.update_xaxes(visible=False, range=[-half_w - 0.8, half_w + 3.0], fixedrange=True)
    fig.update_yaxes(visible=False, range=[min(ys, default=0) - 0.6, 0.6], fixedrange=True)
    fig.update_layout(
        height=height or 58 * len(boxes) + 70,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 8, b=4),
        **LOOK,
        title=_title(title),
        meta=WIDE,  # drawn across the page
        plot_bgcolor="white",
        showlegend=False,
        dragmode=False,
    )
    return fig


def multi_line(
    x: Sequence[float] | np.ndarray,
    series: dict[str, np.ndarray],
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    height: int = 380,
    dashed: Sequence[str] = (),
    colours: dict[str, str] | None = None,
    percent: bool = False,
    markers: bool = True,
    hover_text: Sequence[str] | None = None,
    marked_x: float | None = None,
    x_percent: bool = False,
) -> go.Figure:
    """Several named series over the same x (values over depth, over tokens ...).

    Args:
        x: (n,) positions on the x axis.
        series: name -> (n,) values, one line each, drawn in order.
        dashed: names of series drawn dashed (e.g. the [CLS] twin of a solid line).
        colours: name -> colour; others take plotly's palette.
        percent: the series are probabilities: the y axis starts at 0 (a curve from 75% to 94%
            must not look like a fall to nothing) and reads as percentages, as does the hover.
        markers: draw a marker at every point (turn off for long series).
        hover_text: (n,) a label per x shown on hover (e.g. token names).
        marked_x: draw a dotted vertical line here (e.g. the chosen layer).
        x_percent: format the x axis as percentages.
    """
    x = np.asarray(x)
    number = "%{y:.1%}" if percent else "%{y:.4g}"
    data = []
    for name, values in series.items():
        line = dict(dash="dash" if name in dashed else "solid", width=2.5)
        if (colours or {}).get(name) is not None:
            line["color"] = colours[name]
        trace = dict(
            type="scatter",
            x=x,
            y=np.asarray(values, dtype=np.float64),
            name=name,
            mode="lines+markers" if markers else "lines",
            line=line,
            hovertemplate=("%{text}" if hover_text is not None else "%{x}") + f": {number}<extra>{name}</extra>",
        )
        if hover_text is not None:
            trace["text"] = list(hover_text)
        data.append(trace)
    layout = dict(
        height=height + legend_room(len(series)),  # the legend below takes room of its own, not the plot's
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        legend=_legend_below(),
        hovermode="closest",
        xaxis=_axis(x_title, tickformat=".0%" if x_percent else None),
        yaxis=_axis(y_title, tickformat=".1~%" if percent else None, rangemode="tozero" if percent else None),
    )
    if title:
        layout["title"] = _title(title)
    if marked_x is not None:
        layout["shapes"] = [_vline(marked_x, dict(color="#444", width=1.5, dash="dot"))]
    return _figure(data, layout)


def _panel_row(titles: Sequence[str], spacing: float, font_size: int = 16) -> tuple[list[tuple[str, str]], dict]:
    """``make_subplots(rows=1, cols=len(titles), subplot_titles=titles, horizontal_spacing=spacing)``
    as plain dictionaries: each panel's (x, y) axis names for its traces, and the layout's axes and
    title annotations (an empty title has none)."""
    count = len(titles)
    width = (1.0 - spacing * (count - 1)) / count
    names, layout, notes = [], {}, []
    for index, text in enumerate(titles):
        suffix = "" if index == 0 else str(index + 1)
        x0 = sum([width] * index) + index * spacing  # plotly's own sums, to the last bit
        layout[f"xaxis{suffix}"] = dict(anchor=f"y{suffix}", domain=[x0, x0 + width])
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", domain=[0.0, 1.0])
        names.append((f"x{suffix}", f"y{suffix}"))
        if text:
            notes.append(
                dict(
                    font=dict(size=font_size),
                    showarrow=False,
                    text=text,
                    x=(x0 + x0 + width) / 2.0,
                    xanchor="center",
                    xref="paper",
                    y=1.0,
                    yanchor="bottom",
                    yref="paper",
                )  # fmt: skip
            )
    if notes:
        layout["annotations"] = notes
    return names, layout


def _axis(title: str | None = None, **settings: object) -> dict:
    """An axis's dictionary: its title (if any) and the settings that are not None."""
    axis = {key: value for key, value in settings.items() if value is not None}
    if title is not None:
        axis["title"] = dict(text=title)
    return axis


LEGEND_ROW_PX = 24  # one row of a legend, in screen pixels (theme grows it with the figure)


def legend_room(entries: int) -> int:
    """The height a legend of ``entries`` below a plot takes, in the worst case of one entry a row
    (long names in a narrow column): a figure adds it to the height it wants for its plot."""
    return LEGEND_ROW_PX * entries if entries > 1 else 0


def _legend_below() -> dict:
    """A legend in rows at the figure's foot, left-aligned: they wrap to its width, and plotly
    makes room for them under the plot."""
    return dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0)


def _vline(x: float, line: dict) -> dict:
    """A vertical line across the plot at ``x``, as plotly's ``add_vline`` draws it."""
    return dict(type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="y domain", line=line)


def gelu_histogram(
    x: np.ndarray,
    gelu: np.ndarray,
    relu: np.ndarray,
    values: np.ndarray,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    count_title: str | None = None,
    values_name: str = "fc1",
    height: int = 400,
) -> go.Figure:
    """The GELU and ReLU curves over a histogram of the values GELU really received.

    Args:
        x, gelu, relu: (n,) the curves (``analysis.activation_curves``).
        values: (m,) real pre-activations, drawn as a histogram on a second y axis.
        values_name: the histogram's legend entry.
    """
    data = [  # the histogram on the second y axis, behind the curves
        dict(
            type="histogram",
            x=np.asarray(values).ravel(),
            name=values_name,
            nbinsx=60,
            marker=dict(color="rgba(76,120,168,0.45)"),
            xaxis="x",
            yaxis="y2",
        ),
        dict(
            type="scatter",
            x=x,
            y=relu,
            name="ReLU",
            mode="lines",
            line=dict(color="#888", width=2, dash="dash"),
            xaxis="x",
            yaxis="y",
        ),  # fmt: skip
        dict(
            type="scatter",
            x=x,
            y=gelu,
            name="GELU",
            mode="lines",
            line=dict(color="#d62728", width=3),
            xaxis="x",
            yaxis="y",
        ),
    ]
    layout = dict(
        xaxis=_axis(x_title, anchor="y", domain=[0.0, 0.94]),
        yaxis=_axis(y_title, anchor="x", domain=[0.0, 1.0], zeroline=True),
        yaxis2=_axis(
            count_title, anchor="x", overlaying="y", side="right", showgrid=False, tickmode="auto", rangemode="tozero"
        ),
        height=height,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        legend=_legend_below(),
        bargap=0.02,
    )
    if title:
        layout["title"] = _title(title)
    return _figure(data, layout)


# (end of 6. block)


# ---- 7. prediction ----
def image_row(images: Sequence[np.ndarray], titles: Sequence[str], height: int = 260) -> go.Figure:
    """Several pictures side by side, each with its title (e.g. an image with more and more
    patches hidden): one picture of them all with white gaps (``tile_mosaic``), the titles over
    their pictures, not a subplot each: step 7's four took plotly.js 28-43 ms as subplots (eight
    axes) and 10-18 ms as one picture (docs/benchmarks.md). A smaller picture sits at the top left
    of a slot the largest's size."""
    pictures = [to_uint8(array) for array in images]
    titles = list(titles) + [""] * (len(pictures) - len(titles))
    layout = _image_layout_dict(height)
    layout["margin"] = dict(l=4, r=4, t=PANEL_TITLES_TOP, b=4)
    if not pictures:
        return _figure([], layout)
    slot_h, slot_w = max(p.shape[0] for p in pictures), max(p.shape[1] for p in pictures)
    slots = np.full((len(pictures), slot_h, slot_w, 3), 255, dtype=np.uint8)
    for slot, picture in zip(slots, pictures, strict=True):
        slot[: picture.shape[0], : picture.shape[1]] = picture
    mosaic, corners = tile_mosaic(slots, len(pictures), 0, max(1, slot_w // 12))
    layout["annotations"] = [
        _title_over(title, top, left, slot_w, size=14)
        for (top, left), title in zip(corners, titles, strict=False)
        if title
    ]
    return _figure([_image_trace(mosaic, hoverinfo="skip")], layout)


# (end of 7. prediction)


# ---- 9. model card ----
# the texts training_curves needs, given by the page in the user's language
CURVE_KEYS = (
    "loss",
    "accuracy",
    "lr",
    "loss_axis",
    "accuracy_axis",
    "lr_axis",
    "epoch",
    "train_loss",
    "test_loss",
    "test_accuracy",
    "train_accuracy",
)


STAGE_BAND = dict(fillcolor="rgba(0,0,0,0.07)", line=dict(width=0), layer="below")  # every other stage
# A stage's number shows over its band when the band spans at least this share of the x axis per
# em of the number: a panel is about 250 pixels wide, a number at 18 pixels about 10 per digit.
STAGE_LABEL_SHARE = 0.045


CURVES_GAP = 0.1  # between the card's panels, a share of the figure's width


def _with_unit(name: str, unit: str) -> str:
    """A panel's title with what its y axis counts, where that says more than the name."""
    return name if unit == name else f"{name} ({unit})"


def training_curves(
    history: Sequence[dict],
    labels: dict[str, str],
    total_epochs: int | None = None,
    stage_starts: Sequence[int] = (),
    stage_names: Sequence[str] = (),
    legend: dict | None = None,
) -> go.Figure:
    """Loss, accuracy and learning rate per epoch from a training history.

    Args:
        history: one dict per epoch (train_loss, train_accuracy, lr; test_loss and test_accuracy
            where the epoch was evaluated).
        labels: a text for every key of ``CURVE_KEYS``, in the user's language.
        total_epochs: the planned length of the run: the x axes span it, so an unfinished run
            shows how far it has come.
        stage_starts: the first epoch of every stage after the first (a run that went on from
            another run's weights with a schedule of its own): every other stage is shaded in
            every panel, and each stage's number sits over its band in the accuracy panel, above
            the 100% line, where the band is wide enough for it (the page's caption lists them all).
        stage_names: what the pointer on the number of stage 2, 3, ... shows, one per stage
            start (its run's name and epochs, say); none: no hover text.
        legend: where the legend goes (default: below the axes).
    """
    text = labels
    epochs = [row["epoch"] for row in history]
    # The panels beside the first name their quantity in their titles, not on a y axis: a y-axis
    # title sits in the gap left of its panel, over the panel before it ("images right" ran into the
    # loss curves); the gap keeps room for the tick labels alone (CURVES_GAP).
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=[text["loss"], *(_with_unit(text[k], text[f"{k}_axis"]) for k in ("accuracy", "lr"))],
        horizontal_spacing=CURVES_GAP,
    )
    fig.add_trace(
        go.Scatter(x=epochs, y=[r["train_loss"] for r in history], name=text["train_loss"], mode="lines"), row=1, col=1
    )
    tested = [r for r in history if "test_loss" in r]
    if tested:
        x = [r["epoch"] for r in tested]
        fig.add_trace(
            go.Scatter(x=x, y=[r["test_loss"] for r in tested], name=text["test_loss"], mode="lines"), row=1, col=1
        )
        fig.add_trace(
            go.Scatter(x=x, y=[r["test_accuracy"] for r in tested], name=text["test_accuracy"], mode="lines+markers"),
            row=1,
            col=2,
        )
    fig.add_trace(
        go.Scatter(x=epochs, y=[r["train_accuracy"] for r in history], name=text["train_accuracy"], mode="lines"),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(x=epochs, y=[r["lr"] for r in history], name=text["lr"], mode="lines", showlegend=False),
        row=1,
        col=3,
    )
    fig.update_xaxes(title_text=text["epoch"])
    if total_epochs and total_epochs > max(epochs, default=0):
        fig.update_xaxes(range=[0.5, total_epochs + 0.5])
    headroom = 1.12 if stage_starts else 1.0  # a row above 100% for the stages' numbers
    fig.update_yaxes(title_text=text["loss_axis"], row=1, col=1)
    fig.update_yaxes(
        tickformat=".0%",
        range=[0, headroom],
        tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1.0],
        row=1,
        col=2,
    )  # the whole scale: how far from 100%
    # every other stage shaded in each panel, and each stage's number centred over its band where
    # the band is wide enough for it, as plain layout entries in one update: add_vrect validates
    # every shape again on each call, on every rerun (docs/benchmarks.md)
    shapes, stage_labels = [], []
    last = max(total_epochs or 0, max(epochs, default=0))
    bounds = [1, *stage_starts, last + 1]  # stage n runs from bounds[n - 1] to bounds[n] - 1
    for n, (first, end) in enumerate(itertools.pairwise(bounds), start=1):
        if n % 2 == 0:
            for axis in ("", "2", "3"):
                x = dict(x0=first - 0.5, x1=end - 0.5, xref=f"x{axis}")
                shapes.append(dict(type="rect", **x, y0=0, y1=1, yref=f"y{axis} domain", **STAGE_BAND))
        if len(bounds) > 2 and (end - first) / max(last, 1) >= STAGE_LABEL_SHARE * ems(str(n)):
            stage_labels.append(
                dict(
                    text=str(n),
                    x=(first + end - 1) / 2,
                    xref="x2",
                    y=1,
                    yref="y2 domain",
                    yanchor="top",
                    showarrow=False,
                    hovertext=stage_names[n - 2] if 0 <= n - 2 < len(stage_names) else None,
                )
            )
    fig.update_layout(shapes=shapes, annotations=[*fig.layout.annotations, *stage_labels])
    fig.update_layout(
        height=350,
        margin=dict(l=4, r=4, t=PANEL_TITLES_TOP, b=4),
        **LOOK,
        legend=legend or dict(orientation="h", y=-0.25),
    )
    return fig


# (end of 9. model card)


# ---- lab: how the ViT learned ----
SNAPSHOT_MARKER = dict(symbol="diamond", size=11, line=dict(width=1, color="#222"))


def learning_curves(
    history: Sequence[dict],
    labels: dict[str, str],
    snapshots: Sequence[int],
    chosen: int | None = None,
    total_epochs: int | None = None,
    height: int = 340,
) -> go.Figure:
    """Accuracy and loss per epoch of one run, side by side, a diamond on the test curves at every
    epoch a snapshot was kept and a dotted line at the ``chosen`` one.

    Args:
        history: a row per epoch (epoch 0: before training, test numbers only); test_accuracy,
            test_loss, train_accuracy, train_loss where measured.
        labels: a text for every key of ``CURVE_KEYS`` and for "snapshot", in the user's language.
        snapshots: the epochs with a snapshot.
        chosen: the snapshot the page shows.
        total_epochs: the run's planned length: the x axes span it.
    """
    names, layout = _panel_row([labels["accuracy"], labels["loss"]], CURVES_GAP)
    kept = set(snapshots)
    data = []
    for (x_axis, y_axis), quantity in zip(names, ("accuracy", "loss"), strict=True):
        for split, dash in (("test", "solid"), ("train", "dot")):
            key = f"{split}_{quantity}"
            rows = [row for row in history if key in row]
            number = "%{y:.1%}" if quantity == "accuracy" else "%{y:.3f}"
            data.append(
                dict(
                    type="scatter",
                    x=[row["epoch"] for row in rows],
                    y=[row[key] for row in rows],
                    name=labels[key],
                    mode="lines",
                    line=dict(dash=dash, width=2.5, color=PALETTE[0 if split == "test" else 1]),
                    xaxis=x_axis,
                    yaxis=y_axis,
                    legendgroup=key,
                    hovertemplate=f"{labels['epoch']} %{{x}}: {number}<extra>{labels[key]}</extra>",
                )  # fmt: skip
            )
        marked = [row for row in history if row["epoch"] in kept and f"test_{quantity}" in row]
        data.append(
            dict(
                type="scatter",
                x=[row["epoch"] for row in marked],
                y=[row[f"test_{quantity}"] for row in marked],
                name=labels["snapshot"],
                mode="markers",
                marker=dict(color=PALETTE[0], **SNAPSHOT_MARKER),
                xaxis=x_axis,
                yaxis=y_axis,
                legendgroup="snapshot",
                showlegend=quantity == "accuracy",
                hovertemplate=f"{labels['snapshot']}: {labels['epoch']} %{{x}}<extra></extra>",
            )  # fmt: skip
        )
    last = max([total_epochs or 0, *(row["epoch"] for row in history)])
    for x_axis, _ in names:
        layout[f"xaxis{x_axis[1:]}"] |= _axis(labels["epoch"], range=[-0.5, last + 0.5])
    layout["yaxis"] |= dict(tickformat=".0%", range=[0, 1.0], title=dict(text=labels["accuracy_axis"]))
    layout[f"yaxis{names[1][1][1:]}"] |= dict(rangemode="tozero")
    if chosen is not None:
        line = dict(color="#444", width=1.5, dash="dot")
        layout["shapes"] = [
            dict(type="line", x0=chosen, x1=chosen, xref=x, y0=0, y1=1, yref=f"{y} domain", line=line) for x, y in names
        ]
    layout |= dict(
        height=height + legend_room(3),
        margin=dict(l=4, r=4, t=PANEL_TITLES_TOP, b=4),
        **LOOK,
        legend=_legend_below(),
        hovermode="closest",
    )
    return _figure(data, layout)


# ---- lab: misclassification ----
def confusion_matrix(
    counts: np.ndarray,
    classes: Sequence[str],
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    selected: tuple[int, int] | None = None,
    height: int | None = None,
) -> go.Figure:
    """A confusion matrix: rows are true classes, columns predicted classes, counts as text.

    The colour scale tops out at the largest off-diagonal count, so the mistakes stay visible
    beside a full diagonal. A near-invisible marker on every cell carries
    ``customdata = [true, predicted, count]`` so a click (Streamlit's point selection) names the cell
    (``vitviz.render.clicks.cell_from_selection``); ``selected`` outlines one cell.

    Args:
        counts: (K, K) integers, e.g. ``EvalResult.confusion()``.
        classes: K names, in label order.
    """
    counts = np.asarray(counts)
    k = counts.shape[0]
    names = list(classes)
    off_diagonal = counts[~np.eye(k, dtype=bool)] if k > 1 else counts.ravel()
    zmax = max(int(off_diagonal.max()) if off_diagonal.size else 0, 1)
    show_text = k <= 20
    fig = go.Figure(
        go.Heatmap(
            z=counts,
            x=names,
            y=names,
            colorscale="Blues",
            zmin=0,
            zmax=zmax,
            showscale=False,
            text=counts if show_text else None,
            texttemplate="%{text}" if show_text else None,
            textfont=dict(size=14 if k <= 12 else 10),
            hoverinfo="skip",
        )
    )
    rows, cols = np.divmod(np.arange(k * k), k)
    hover = f"{y_title or 'true'}: %{{y}}<br>{x_title or 'predicted'}: %{{x}}<br>%{{customdata[2]}}"
    fig.add_trace(
        click_markers(
            [names[c] for c in cols],
            [names[r] for r in rows],
            max(8, min(30, 320 // max(k, 1))),
            np.stack([rows, cols, counts.ravel()], axis=1),
            hover + "<extra></extra>",
        )
    )
    if selected is not None and all(0 <= v < k for v in selected):
        row, col = selected
        outline = dict(color="#ff2d55", width=3)
        fig.add_shape(type="rect", x0=col - 0.5, x1=col + 0.5, y0=row - 0.5, y1=row + 0.5, line=outline)
    fig.update_xaxes(title=x_title, side="bottom", tickangle=-45 if k > 6 else 0, showgrid=False)
    fig.update_yaxes(title=y_title, autorange="reversed", showgrid=False)
    fig.update_layout(
        height=height or 160 + 42 * min(k, 20),
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        title=_title(title),
        plot_bgcolor="white",
        dragmode=False,
        clickmode="event+select",
    )
    return fig


# (end of lab: misclassification)


# ---------------------------------------------------------------------------------------------
# Which explanation can you trust (the lab's trust page)
# ---------------------------------------------------------------------------------------------


def curves_with_band(
    x: Sequence[float] | np.ndarray,
    series: dict[str, np.ndarray],
    band: tuple[np.ndarray, np.ndarray],
    band_name: str,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    height: int = 380,
) -> go.Figure:
    """Probability curves (one per ranking) over a grey band: the lowest and highest of several
    random orders at each x, what a ranking must leave to do better than chance.

    Args:
        x: (n,) shares of the patches removed or revealed.
        series: name -> (n,) probabilities, one line each.
        band: (low, high), each (n,).
        band_name: the band's legend entry ("random orders (8): lowest to highest").
    """
    low, high = (np.asarray(v, dtype=np.float64) for v in band)
    x = np.asarray(x, dtype=np.float64)
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    fig = multi_line(x, series, title, x_title, y_title, height, colours=colours, percent=True, x_percent=True)
    fig.add_trace(
        go.Scatter(
            x=np.concatenate([x, x[::-1]]),
            y=np.concatenate([high, low[::-1]]),
            mode="lines",
            fill="toself",
            fillcolor="rgba(120, 120, 120, 0.25)",
            line=dict(width=0),
            name=band_name,
            hoverinfo="skip",
        )
    )
    fig.data = (fig.data[-1], *fig.data[:-1])  # the band under the lines
    fig.layout.height += legend_room(len(series) + 1) - legend_room(len(series))  # and its legend entry
    return fig


def percent_ticks(peak: float, most: int = 6) -> dict:
    """Ticks for a scale of shares from 0 to ``peak``: a round step (1, 2 or 5 times a power of
    ten) that gives at most ``most`` ticks, each written with the decimals that tell it from the
    next ("0.2%, 0.4%, 0.6%" where ".0%" wrote "0%, 0%, 1%")."""
    peak = max(float(peak), 1e-9)
    raw = peak / (most - 1)
    power = 10.0 ** np.floor(np.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))
    values = [round(float(k * step), 12) for k in range(int(np.floor(peak / step + 1e-9)) + 1)]
    decimals = max(0, int(-np.floor(np.log10(step * 100) + 1e-9)))
    return dict(tickmode="array", tickvals=values, ticktext=[f"{v:.{decimals}%}" for v in values])


def head_grid(
    values: np.ndarray,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    value_title: str | None = None,
    marked: Sequence[tuple[int, int]] = (),
    height: int | None = None,
) -> go.Figure:
    """A (depth, heads) grid of one number per head (the accuracy lost when it alone is
    switched off), layers and heads counted from 1, the value written in each cell as a percent.

    Args:
        values: (depth, heads).
        marked: (layer, head) cells, from 0, outlined (the heads switched off now).
    """
    values = np.asarray(values, dtype=np.float64)
    depth, heads = values.shape
    peak = max(float(np.abs(values).max()), 1e-9)
    y_word = (y_title or "layer").split(" (")[0]  # the hover names the layer without the axis's note
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=list(range(1, heads + 1)),
            y=list(range(1, depth + 1)),
            colorscale="Reds",
            zmin=0,
            zmax=peak,
            text=[[f"{v:.1%}" for v in row] for row in values],
            texttemplate="%{text}",
            textfont=dict(size=14),
            colorbar=dict(title=value_title, **percent_ticks(peak)),
            hovertemplate=f"{y_word} %{{y}}, {x_title or 'head'} %{{x}}: %{{text}}<extra></extra>",
        )
    )
    for layer, head in marked:
        outline = dict(color="#0072B2", width=3)
        fig.add_shape(type="rect", x0=head + 0.5, x1=head + 1.5, y0=layer + 0.5, y1=layer + 1.5, line=outline)
    fig.update_xaxes(title=x_title, dtick=1, showgrid=False)
    fig.update_yaxes(title=y_title, dtick=1, autorange="reversed", showgrid=False)
    fig.update_layout(
        height=height or 140 + 40 * depth,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        title=_title(title),
        plot_bgcolor="white",
    )
    return fig


def test_set_map(
    points: np.ndarray,
    groups: np.ndarray,
    group_names: Sequence[str],
    hover: Sequence[str],
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    height: int = 560,
) -> go.Figure:
    """Every test image as a point, coloured by its group (its true class, or right / wrong), one
    legend entry per group; a click selects a point, whose ``customdata`` is its image index.

    Args:
        points: (n, 2) projected coordinates.
        groups: (n,) group index of every point.
        group_names: the groups' names, by index.
        hover: (n,) what a point says under the pointer.
    """
    points = np.asarray(points, dtype=np.float64)
    groups = np.asarray(groups)
    fig = go.Figure()
    for index, name in enumerate(group_names):
        chosen = np.flatnonzero(groups == index)
        fig.add_trace(
            go.Scattergl(
                x=points[chosen, 0],
                y=points[chosen, 1],
                mode="markers",
                name=name,
                marker=dict(
                    size=5,
                    color=CLASS_PALETTE[index % len(CLASS_PALETTE)],
                    symbol=SYMBOLS[index // len(CLASS_PALETTE) % len(SYMBOLS)],
                ),
                customdata=chosen,
                text=[hover[i] for i in chosen],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    fig.update_xaxes(title=x_title, showticklabels=False, zeroline=False)
    fig.update_yaxes(title=y_title, showticklabels=False, zeroline=False, scaleanchor="x")
    fig.update_layout(
        height=height,
        margin=dict(l=4, r=4, t=TITLE_TOP if title else 10, b=4),
        **LOOK,
        title=_title(title),
        meta=WIDE,  # drawn across the page
        legend=dict(itemsizing="constant"),
        clickmode="event+select",
        dragmode="pan",
    )
    return fig
