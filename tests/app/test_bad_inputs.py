"""Bad input, untrusted files and many users: nothing crashes, nothing runs, nothing leaks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tomllib
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.apptest import errors, figure, figure_array, open_page
from tests.bad_inputs import CASES, table
from tests.conftest import SHARED_DATA
from vitviz import tour, zoo
from vitviz.app import ui
from vitviz.data import ImageError, image_notes, load_image, to_tensor
from vitviz.evaluate import weights_hash

ROOT = Path(__file__).resolve().parents[2]
CASE_BYTES = {name: make() for name, make, _ in CASES}


@pytest.mark.parametrize("name, accepted", [(name, accepted) for name, _, accepted in CASES])
def test_every_case_is_accepted_or_refused_with_a_sentence(name, accepted):
    data = CASE_BYTES[name]
    if not accepted:
        with pytest.raises(ImageError) as err:
            load_image(data)
        assert str(err.value).endswith(".") and ":" in str(err.value)
        return
    image = load_image(data)
    array = np.asarray(image)
    assert image.mode == "RGB" and array.dtype == np.uint8 and array.ndim == 3


def test_the_accepted_cases_look_right():
    gif = load_image(CASE_BYTES["an animated GIF"])
    assert np.asarray(gif)[0, 0].tolist() == [255, 0, 0]  # the first (red) frame
    assert "first frame" in image_notes(gif)[0]
    rotated = load_image(CASE_BYTES["a photo with an EXIF rotation"])
    assert rotated.size == (100, 40)  # stored 40x100, shown upright
    deep = np.asarray(load_image(CASE_BYTES["a 16-bit PNG"]))
    assert deep[0, 0, 0] == 0 and deep[-1, -1, 0] == 255
    clear = np.asarray(load_image(CASE_BYTES["a palette PNG with transparency"]))
    assert clear[0, 0].tolist() == [255, 255, 255]
    half = np.asarray(load_image(CASE_BYTES["an RGBA PNG (half transparent)"]))
    assert half[0, 0].tolist() == [255, 127, 127]


def test_the_documented_table_is_what_users_really_see():
    doc = (ROOT / "docs" / "bad-inputs.md").read_text()
    assert table() in doc, "regenerate the table with: python -m tests.bad_inputs"


def test_upload_limit_is_configured_and_stated():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == 20
    at = open_page(source="upload")
    assert any("20 MB" in c.value for c in at.sidebar.caption)


# ---- fuzzing ---------------------------------------------------------------------------------

SEEDS = [CASE_BYTES[name] for name, _, accepted in CASES if accepted and len(CASE_BYTES[name]) < 20_000]


@st.composite
def mutated_images(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            del data[position : position + draw(st.integers(1, 64))]
        elif kind == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=32))
        else:
            del data[position:]
    return bytes(data)


@pytest.mark.filterwarnings("ignore:Tag data larger than file:UserWarning")  # Pillow skips a fuzzed TIFF tag
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(st.binary(max_size=512), mutated_images()))
def test_fuzz_only_image_errors_and_rgb_uint8(data):
    try:
        image = load_image(data)
    except ImageError:
        return
    array = np.asarray(image)
    assert image.mode == "RGB" and array.dtype == np.uint8 and array.shape[2] == 3


# ---- many users ------------------------------------------------------------------------------


def test_caches_are_bounded():
    for cached in (
        ui.cached_model,
        ui.cached_trace,
        ui.cached_image,
        ui.cached_test_set,
        ui.cached_evaluation,
    ):
        assert cached._info.max_entries is not None, cached
    assert ui.cached_trace._info.ttl is not None


def test_a_full_tour_never_changes_the_cached_model():
    model, _ = ui.cached_model(zoo.default_name())  # the model the sessions below use
    before = weights_hash(model)
    at = open_page()
    for script, _, _ in tour.TOUR:
        if (ROOT / script).exists():
            at.switch_page(script).run()
            assert errors(at) == [], script
    assert weights_hash(model) == before
    assert not model.training


def _cifar_images(count: int) -> list[bytes]:
    files = sorted((SHARED_DATA / "test").glob("*/0007.jpg"))[:count]
    assert len(files) == count, "the CIFAR-10 JPEG copy is expected beside the repository"
    return [f.read_bytes() for f in files]


@pytest.fixture
def shared_test_runtime(monkeypatch):
    """Let AppTests run in threads: AppTest keeps its mock Runtime in one global that every run
    sets at its start and clears at its end, so a run that ends first would pull the runtime out
    from under the others ("Runtime hasn't been created!"). While this fixture is active a
    cleared global falls back to the last mock runtime seen (they are interchangeable in-memory
    mocks); the app's own caches, which are what this test is about, are untouched."""
    from streamlit.runtime.runtime import Runtime
    from streamlit.testing.v1 import app_test

    last: list[object] = []
    original = Runtime.__dict__["instance"].__func__

    def instance(cls):
        if cls._instance is not None:
            last[:] = [cls._instance]
            return cls._instance
        if last:
            return last[0]
        return original(cls)

    monkeypatch.setattr(Runtime, "instance", classmethod(instance))
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: cls._instance is not None or bool(last)))
    # A real server holds one ScriptCache per Runtime and compiles each page once, under its lock;
    # AppTest makes a new cache per run, so eight threads would compile the same page at once,
    # which CPython 3.11.7's ast module is not safe for ("AST constructor recursion depth mismatch").
    shared_cache = app_test.ScriptCache()
    monkeypatch.setattr(app_test, "ScriptCache", lambda: shared_cache)


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.cifar10
def test_eight_concurrent_sessions_each_get_their_own_prediction(shared_test_runtime):
    images = _cifar_images(4) + [
        (ROOT / "assets" / "samples" / n).read_bytes()
        for n in ("cat-chelsea.jpg", "coffee.jpg", "rocket.jpg", "astronaut.jpg")
    ]
    model, spec = ui.cached_model(zoo.default_name())  # the model the sessions below use

    def expected(data: bytes) -> tuple[str, float]:
        pixels = to_tensor(load_image(data), model.config.preprocess)
        with torch.no_grad():
            probs = model(pixels)[0].softmax(-1)
        return model.config.class_names[int(probs.argmax())], float(probs.max())

    def session(data: bytes) -> tuple[str, float]:
        at = open_page(source="upload", upload_bytes=data)
        assert errors(at) == []
        # (CI saw this fail once in many runs with no error shown: say what the page showed instead)
        shown = {
            "elements": len(at.main.children),
            "info": [e.value for e in at.info],
            "title": [t.value for t in at.title],
        }
        charts = [c for c in at.get("plotly_chart") if c.proto.id.endswith("-home_topk")]
        assert charts, f"the overview did not finish; the page showed {shown}"
        bars = figure(at, "home_topk")["data"][0]  # the prediction as the user sees it: best first
        return bars["y"][0], float(figure_array(bars["x"])[0])

    session(images[0])  # one run first, so that lazy imports (pandas) are not raced by threads
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(session, images))
    want = [expected(data) for data in images]
    # the top probability differs from image to image, so a session shown another's image fails
    assert len({round(p, 6) for _, p in want}) == len(images)
    for (got_class, got_p), (want_class, want_p) in zip(got, want, strict=True):
        assert got_class == want_class and got_p == pytest.approx(want_p, abs=1e-5)
