"""vitviz.app.assets: Streamlit's frontend gzipped once per file, everything else untouched."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vitviz.app import assets, chart_script
from vitviz.app.assets import CompressedAssets, streamlit_static_dir

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "console.log('vitviz');\n" * 2000


@pytest.fixture
def build(tmp_path: Path) -> Path:
    """A frontend build shaped like Streamlit's: index.html, static/js, static/css, a font."""
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "css").mkdir()
    (tmp_path / "index.html").write_text("<html></html>")
    (tmp_path / "static" / "js" / "index.abc123.js").write_text(SCRIPT)
    (tmp_path / "static" / "css" / "index.def456.css").write_text("body { margin: 0 }\n" * 500)
    (tmp_path / "static" / "media" / "font.woff2").parent.mkdir()
    (tmp_path / "static" / "media" / "font.woff2").write_bytes(b"\x00" * 1000)
    (tmp_path.parent / "outside.js").write_text("secret")
    return tmp_path


async def ask(middleware: CompressedAssets, path: str, method: str = "GET", **headers: str) -> tuple[int, dict, bytes]:
    """One request through the middleware: (status, headers, body); Streamlit's part answers 418."""
    sent: list[dict] = []
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
    }

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    async def send(message: dict) -> None:
        sent.append(message)

    await middleware(scope, receive, send)
    start = sent[0]
    return (
        start["status"],
        {k.decode(): v.decode() for k, v in start["headers"]},
        b"".join(m.get("body", b"") for m in sent[1:]),
    )


def request(middleware: CompressedAssets, path: str, method: str = "GET", **headers: str) -> tuple[int, dict, bytes]:
    return asyncio.run(ask(middleware, path, method, **headers))


async def streamlit(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 418, "headers": [(b"x-from", b"streamlit")]})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture
def compressions(monkeypatch) -> list[int]:
    """One entry per gzip compression the middleware runs."""
    calls: list[int] = []
    real = assets.gzip.compress
    monkeypatch.setattr(assets.gzip, "compress", lambda data, **kw: calls.append(1) or real(data, **kw))
    return calls


def test_a_script_is_sent_gzipped_and_compressed_once(build, compressions):
    middleware = CompressedAssets(streamlit, static_dir=build, base_url="")
    for _ in range(3):
        status, headers, body = request(middleware, "/static/js/index.abc123.js", accept_encoding="gzip, deflate, br")
        assert status == 200 and headers["content-encoding"] == "gzip" and headers["vary"] == "Accept-Encoding"
        assert gzip.decompress(body).decode() == SCRIPT
        assert int(headers["content-length"]) == len(body) < len(SCRIPT) / 10
        assert "javascript" in headers["content-type"] and "immutable" in headers["cache-control"]
    assert compressions == [1]  # once per file for the server's life
    status, headers, body = request(middleware, "/static/css/index.def456.css", accept_encoding="gzip")
    assert headers["content-type"].startswith("text/css") and gzip.decompress(body).startswith(b"body")


def test_browsers_asking_at_once_wait_for_one_compression(build, compressions):
    middleware = CompressedAssets(streamlit, static_dir=build, base_url="")

    async def class_of(n: int) -> list[tuple[int, dict, bytes]]:
        return await asyncio.gather(
            *(ask(middleware, "/static/js/index.abc123.js", accept_encoding="gzip") for _ in range(n))
        )

    bodies = [body for _, _, body in asyncio.run(class_of(8))]
    assert compressions == [1] and len(bodies) == 8 and all(gzip.decompress(b).decode() == SCRIPT for b in bodies)


@pytest.mark.parametrize(
    ("path", "method", "headers"),
    [
        ("/static/js/index.abc123.js", "GET", {}),  # the browser does not take gzip
        ("/static/js/index.abc123.js", "GET", {"accept_encoding": "br"}),
        ("/static/js/index.abc123.js", "HEAD", {"accept_encoding": "gzip"}),
        ("/static/js/index.abc123.js", "GET", {"accept_encoding": "gzip", "range": "bytes=0-10"}),
        ("/static/js/index.abc123.js", "GET", {"accept_encoding": "gzip", "if_none_match": '"x"'}),
        ("/static/media/font.woff2", "GET", {"accept_encoding": "gzip"}),  # compressed already
        ("/static/js/missing.js", "GET", {"accept_encoding": "gzip"}),
        ("/static/../../outside.js", "GET", {"accept_encoding": "gzip"}),  # outside the build
        ("/index.html", "GET", {"accept_encoding": "gzip"}),
        ("/_stcore/health", "GET", {"accept_encoding": "gzip"}),
    ],
)
def test_everything_else_goes_to_streamlit(build, path, method, headers):
    status, answer, _ = request(CompressedAssets(streamlit, static_dir=build, base_url=""), path, method, **headers)
    assert status == 418 and answer["x-from"] == "streamlit"


def test_under_a_base_url_path_only_its_static_folder_is_served(build):
    middleware = CompressedAssets(streamlit, static_dir=build, base_url="/class/")
    status, headers, body = request(middleware, "/class/static/js/index.abc123.js", accept_encoding="gzip")
    assert status == 200 and gzip.decompress(body).decode() == SCRIPT
    assert request(middleware, "/static/js/index.abc123.js", accept_encoding="gzip")[0] == 418


def test_the_installed_streamlit_has_the_build_it_serves():
    scripts = list((streamlit_static_dir() / "static" / "js").glob("*.js"))
    assert (streamlit_static_dir() / "index.html").is_file() and len(scripts) > 10


def test_a_server_started_later_reads_the_compressed_file_kept_on_disk(build, compressions, tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    first = CompressedAssets(streamlit, static_dir=build, base_url="", store=store)
    _, headers, body = request(first, "/static/js/index.abc123.js", accept_encoding="gzip")
    assert compressions == [1] and len(list(store.glob("*.gz"))) == 1
    later = CompressedAssets(streamlit, static_dir=build, base_url="", store=store)  # another server
    _, later_headers, later_body = request(later, "/static/js/index.abc123.js", accept_encoding="gzip")
    assert compressions == [1]  # read, not compressed again
    assert later_body == body and later_headers["etag"] == headers["etag"]
    assert gzip.decompress(later_body).decode() == SCRIPT


def test_a_damaged_or_missing_kept_file_is_compressed_afresh(build, compressions, tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    request(
        CompressedAssets(streamlit, static_dir=build, base_url="", store=store),
        "/static/js/index.abc123.js",
        accept_encoding="gzip",
    )
    (kept,) = store.glob("*.gz")
    kept.write_bytes(kept.read_bytes()[:100])  # a half-written file, or a disk that lost it
    _, _, body = request(
        CompressedAssets(streamlit, static_dir=build, base_url="", store=store),
        "/static/js/index.abc123.js",
        accept_encoding="gzip",
    )
    assert gzip.decompress(body).decode() == SCRIPT and compressions == [1, 1]
    unwritable = store / "a-file-not-a-folder"
    unwritable.write_text("")
    _, _, body = request(
        CompressedAssets(streamlit, static_dir=build, base_url="", store=unwritable),
        "/static/js/index.abc123.js",
        accept_encoding="gzip",
    )
    assert gzip.decompress(body).decode() == SCRIPT  # a store it cannot write only costs the compression


def test_the_apps_store_is_in_vitviz_cache_folder_without_importing_torch(monkeypatch, tmp_path):
    from vitviz.models.data import cache_dir

    for value in (None, str(tmp_path)):
        if value is None:
            monkeypatch.delenv("VITVIZ_CACHE", raising=False)
        else:
            monkeypatch.setenv("VITVIZ_CACHE", value)
        assert assets.default_store() == cache_dir() / "frontend-gzip"
    # app.py asks for it while the server starts: it must not wait for torch's import
    code = "import sys, vitviz.app.assets as a; a.default_store(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "False"


# ---- EarlyCharts: the page loads plotly.js as its first run starts -----------------------------

PAGE = b"<html><head><script type='module' src='./static/js/index.abc123.js'></script></head><body></body></html>"


def html_app(body: bytes, encoding: str | None = None, kind: bytes = b"text/html; charset=utf-8"):
    """Streamlit's part: answers every request with ``body``, in ``encoding`` (gzip, br or none),
    in two pieces as a streamed answer may come."""
    sent = gzip.compress(body) if encoding == "gzip" else body

    async def app(scope, receive, send) -> None:
        headers = [(b"content-type", kind), (b"content-length", str(len(sent)).encode())]
        headers += [(b"content-encoding", encoding.encode())] if encoding else []
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": sent[:10], "more_body": True})
        await send({"type": "http.response.body", "body": sent[10:]})

    return app


@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_the_page_loads_plotly_js_plain_or_gzipped(encoding):
    middleware = chart_script.EarlyCharts(html_app(PAGE, encoding))
    status, headers, body = request(middleware, "/mistakes", accept_encoding="gzip")
    page = gzip.decompress(body) if encoding else body
    assert status == 200 and int(headers["content-length"]) == len(body)
    assert headers.get("content-encoding") == encoding
    head = page[: page.index(b"</head>")]
    assert head.startswith(PAGE[: PAGE.index(b"</head>")]) and page.count(b"<script>") == 1
    path = chart_script.cartesian_script_path().encode()  # the bundle every tour page draws with
    assert b'"' + path + b'"' in head and b'link.rel = "preload"' in head
    assert b'"running"' in head  # evaluated once the first run has started, not while the page loads
    first = [f"static/js/{name}" for name in assets.frontend_chunks(streamlit_static_dir(), ["Html"])]
    assert first and all(f'"{path}"'.encode() in head for path in first)  # the first view's chunks, and
    assert f'"{chart_script.chart_script_path()}"'.encode() in head  # the chart element's drawing


# ---- frontend_chunks: what the page fetches before its first runs ask ------------------------


def fake_frontend(root: Path, chunks: dict[str, str]) -> Path:
    """A frontend build as Streamlit ships one: index.html naming its entry, and chunks that import
    others as a minified bundle writes them."""
    js = root / "static" / "js"
    js.mkdir(parents=True)
    (root / "index.html").write_text('<script type="module" crossorigin src="./static/js/index.E1.js"></script>')
    for name, text in chunks.items():
        (js / name).write_text(text)
    return root


def test_frontend_chunks_are_the_elements_chunks_and_their_imports_less_the_entrys(tmp_path):
    static = fake_frontend(
        tmp_path,
        {
            "index.E1.js": 'import{a}from"./react.R1.js";import"./style.S1.js";const x=import("./Html.H1.js");',
            "react.R1.js": "export const a=1;",
            "style.S1.js": "",
            "Html.H1.js": 'import{a}from"./react.R1.js";import{p}from"./purify.P1.js";',
            "purify.P1.js": 'import{q}from"./deep.D1.js";',
            "deep.D1.js": "",
            "Html.esm.X1.js": "",  # another element whose name starts alike
            "Table.T1.js": 'import{p}from"./purify.P1.js";import{t}from"./table.U1.js";',
            "table.U1.js": "",
        },
    )
    assert assets.frontend_chunks(static, ["Html"]) == ["Html.H1.js", "purify.P1.js", "deep.D1.js"]
    assert assets.frontend_chunks(static, ["Table", "Html", "Slider"]) == [
        "Table.T1.js",
        "purify.P1.js",
        "table.U1.js",
        "deep.D1.js",
        "Html.H1.js",
    ]  # in the elements' order, each chunk once, the entry's imports (react, style) never; no Slider here
    first = assets.frontend_chunks(static, ["Html"])
    assert assets.frontend_chunks(static, ["Table"], leaving_out=first) == ["Table.T1.js", "table.U1.js"]


def test_an_untested_streamlit_gets_no_chunk_names_only_the_chart_elements_drawing(monkeypatch):
    """The chunks' names are the frontend build's own: on a Streamlit not tested (or with
    VITVIZ_INTERNALS=0) the page fetches nothing early but vitviz's own script."""
    from vitviz.app import internals

    chunks = assets.frontend_chunks(streamlit_static_dir(), assets.FIRST_VIEW_ELEMENTS + assets.LATER_ELEMENTS)
    assert chunks and all(name.encode() in chart_script.early_script() for name in chunks)
    monkeypatch.setattr(internals, "ACTIVE", False)
    script = chart_script.early_script()
    assert not [name for name in chunks if name.encode() in script]
    assert f'"{chart_script.chart_script_path()}"'.encode() in script


def test_every_element_the_pages_draw_has_its_chunk_in_the_installed_streamlit():
    """A Streamlit that renames an element's chunk would quietly stop the early fetch: say which."""
    js = streamlit_static_dir() / "static" / "js"
    names = [path.name for path in js.glob("*.js")]
    for element in assets.FIRST_VIEW_ELEMENTS + assets.LATER_ELEMENTS:
        own = [name for name in names if assets._is_chunk_of(name, element)]
        assert len(own) == 1, f"Streamlit's frontend has {own or 'no chunk'} for {element!r}"
    first = assets.frontend_chunks(streamlit_static_dir(), assets.FIRST_VIEW_ELEMENTS)
    assert len(first) >= len(assets.FIRST_VIEW_ELEMENTS)


@pytest.mark.parametrize(
    ("app", "method"),
    [(html_app(PAGE, "br"), "GET"), (html_app(PAGE), "POST"), (html_app(b"x = 1", kind=b"text/javascript"), "GET")],
    ids=["another encoding", "not a GET", "not a page"],
)
def test_other_answers_pass_untouched(app, method):
    expected = request(app, "/", method)
    assert request(chart_script.EarlyCharts(app), "/", method) == expected


# ---- ChartScripts: the chart element's scripts ------------------------------------------------


def test_plotly_js_is_the_installed_plotly_packages_named_by_its_version():
    import plotly

    assert chart_script.plotly_js().is_file() and chart_script.plotly_js().stat().st_size > 1_000_000
    assert chart_script.plotly_script_path() == f"vitviz/plotly-{plotly.__version__}.min.js"


def test_the_cartesian_bundle_is_named_by_its_version_and_content_and_draws_what_it_has():
    first_lines = chart_script.cartesian_js().read_bytes()[:400].decode()
    name = chart_script.cartesian_script_path().removeprefix("vitviz/plotly-cartesian-").removesuffix(".min.js")
    version, digest = name.split("-")
    assert f"plotly.js (cartesian - minified) v{version}" in first_lines
    assert digest == hashlib.md5(chart_script.cartesian_js().read_bytes()).hexdigest()[:12]
    named = first_lines.split("traces: ", 1)[1].split(";", 1)[0].split()  # the bundle's own first line
    assert chart_script.CARTESIAN_TRACES == set(named) == {"bar", "heatmap", "histogram", "image", "scatter"}
    assert chart_script.cartesian_js().stat().st_size < chart_script.plotly_js().stat().st_size / 2
    assert (chart_script.cartesian_js().parent / "plotly-cartesian.LICENSE").read_text().count("MIT License") == 1
    assert chart_script.script_for(["image", "heatmap", "scatter"]) == chart_script.cartesian_script_path()
    assert chart_script.script_for(["bar", "scattergl"]) == chart_script.plotly_script_path()


def test_every_figure_of_the_library_but_the_test_set_map_is_drawn_by_the_cartesian_bundle():
    """Every figure function of vitviz.render.plots (tests/unit/test_plots.py builds each) draws
    trace types the cartesian bundle has, but for the map of the test set's scattergl (10,000
    points: WebGL), which the full plotly.js draws."""
    from tests.unit.test_plots import BUILDERS

    types = {name: {trace.type for trace in build().data} for name, build in BUILDERS.items()}
    assert {name for name, found in types.items() if not found <= chart_script.CARTESIAN_TRACES} == {"test_set_map"}
    assert set.union(*types.values()) >= {"scatter", "bar", "heatmap", "histogram", "image", "scattergl"}


def test_the_drawing_code_is_named_by_its_content_and_the_element_imports_it():
    digest = hashlib.md5(chart_script.chart_js().read_bytes()).hexdigest()[:12]
    assert chart_script.chart_script_path() == f"vitviz/chart-{digest}.js"
    element = chart_script.element_js()
    assert json.dumps(chart_script.chart_script_path()) in element and "import(" in element
    assert len(element) < len(chart_script.chart_js().read_text()) / 2  # sent with every figure: a few lines


@pytest.mark.parametrize("base_url", ["", "class/one"])
def test_the_scripts_are_served_gzipped_once_or_plain_at_their_paths(tmp_path, base_url):
    scripts = {"vitviz/plotly-1.min.js": tmp_path / "plotly.min.js", "vitviz/chart-ab.js": tmp_path / "chart.js"}
    for i, file in enumerate(scripts.values()):
        file.write_text(SCRIPT + f"// {i}\n")
    middleware = chart_script.ChartScripts(streamlit, files=scripts, base_url=base_url, store=tmp_path / "store")
    for served, file in scripts.items():
        path = "/" + "/".join(p for p in (base_url, served) if p)
        status, headers, body = request(middleware, path, accept_encoding="gzip, deflate")
        assert status == 200 and headers["content-encoding"] == "gzip"
        assert gzip.decompress(body).decode() == file.read_text()
        assert headers["content-type"].startswith("text/javascript") and int(headers["content-length"]) == len(body)
        assert "immutable" in headers["cache-control"]
        status, headers, body = request(middleware, path)  # a browser that takes no gzip
        assert status == 200 and "content-encoding" not in headers and body.decode() == file.read_text()
        for other in (path + "x", "/static/" + served):
            assert request(middleware, other, accept_encoding="gzip")[0] == 418  # passed on to Streamlit
        assert request(middleware, path, "POST")[0] == 418
    assert len(list((tmp_path / "store").glob("*.gz"))) == 2  # kept for the next server


def test_the_apps_own_paths_serve_the_installed_scripts():
    middleware = chart_script.ChartScripts(streamlit, base_url="")
    for served, file in (
        (chart_script.plotly_script_path(), chart_script.plotly_js()),
        (chart_script.cartesian_script_path(), chart_script.cartesian_js()),
        (chart_script.chart_script_path(), chart_script.chart_js()),
    ):
        status, _, body = request(middleware, "/" + served)
        assert status == 200 and body == file.read_bytes()
