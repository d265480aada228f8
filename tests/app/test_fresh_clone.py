"""A fresh clone, started without test images (issue 55): the lab says both ways to get them (the
download, which needs the network, and a folder given with --data), also after a download fails,
and the map of the test set draws the map that ships with the model, without its pictures."""

from __future__ import annotations

import json

import pytest

from tests.apptest import charts, errors, figure_array, open_page, open_page_in_one_run
from vitviz.app import testset
from vitviz.models import data as vdata

MISTAKES, MAP = "app_pages/10_mistakes.py", "app_pages/12_map.py"


@pytest.fixture(autouse=True)
def no_test_images(tmp_path, monkeypatch):
    monkeypatch.delenv("VITVIZ_DATA", raising=False)
    monkeypatch.setattr(vdata, "find_cifar_test_folder", lambda: None)
    empty = tmp_path / "nothing here"
    empty.mkdir()
    monkeypatch.setattr(vdata, "default_data_dir", lambda: empty)
    testset.split_for.cache_clear()
    yield
    testset.split_for.cache_clear()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_lab_says_both_ways_to_get_the_test_set(lang):
    at = open_page_in_one_run(MISTAKES, lang=lang)
    assert errors(at) == []
    (said,) = [info.value for info in at.info]
    assert "vitviz app --data FOLDER" in said  # a folder, for a server without the network
    assert ("network" if lang == "en" else "네트워크") in said  # and the download, which needs it
    assert at.button(key="mistakes_download") is not None


def test_a_failed_download_says_the_other_way(monkeypatch):
    def offline(*args, **kwargs):
        raise FileNotFoundError("CIFAR-10 could not be downloaded (no network).")

    monkeypatch.setattr(vdata, "load_split", offline)
    at = open_page(MISTAKES)
    at.button(key="mistakes_download").click().run()
    assert errors(at) == []
    failed = [info.value for info in at.info if "did not work" in info.value]
    assert failed and "vitviz app --data FOLDER" in failed[0]


def test_the_map_draws_the_shipped_map_without_pictures():
    at = open_page(MAP)
    assert errors(at) == [] and [e.value for e in at.exception] == []
    (chart,) = charts(at)
    figure = json.loads(chart.proto.spec)
    points = sum(len(figure_array(trace["customdata"])) for trace in figure["data"])
    assert len(figure["data"]) == 10 and points == 10_000  # every class, every test image's point
    assert any("vitviz app --data FOLDER" in info.value for info in at.info)  # why there are no pictures
    hovers = [text for trace in figure["data"] for text in trace["text"]]
    assert any(text.startswith("test image 1:") for text in hovers)  # counted from 1, not a file name
