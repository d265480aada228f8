"""What the app's words say about the tour and the server (issue 55): the overview is not "step 0",
presenter mode does not point at a menu it hides, and the sidebar's CPU reads one number, in the
right grammatical number, on every page."""

from __future__ import annotations

import pytest
import torch

from tests.apptest import errors, open_page, open_page_in_one_run
from vitviz.app import sidebar, text, turns
from vitviz.models import zoo

HOME = "app_pages/0_home.py"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_overview_is_not_step_0(lang):
    at = open_page_in_one_run(HOME, lang=lang)
    assert errors(at) == []
    said = " ".join(m.value for m in at.markdown)
    assert "Step 0" not in said and "중 0단계" not in said
    assert ("Overview, then 9 steps" if lang == "en" else "개요, 이어서 9단계") in said


@pytest.mark.parametrize("present", [False, True])
def test_the_overview_points_at_the_menu_only_where_there_is_one(present):
    at = open_page(HOME, query={"present": "1"} if present else None)
    assert errors(at) == []
    # the page's first paragraph; presenter mode's notes, under the slide's title
    intro = next(m.value for m in at.markdown if m.value.startswith("A Vision Transformer"))
    assert ("menu" in intro) is not present
    assert ("→" in intro) is present  # the clicker's key, in presenter mode


@pytest.fixture
def server_cores(monkeypatch):
    def use(cores: int) -> None:
        monkeypatch.setattr(turns, "_server", turns.Turns(slots=1, cores=cores))

    return use


def test_the_sidebar_names_the_servers_cores_not_this_runs_threads(server_cores):
    before = torch.get_num_threads()
    try:
        server_cores(4)
        torch.set_num_threads(1)  # a run that shared the cores with another session's
        assert sidebar.device_text(torch.device("cpu")) == "CPU (4 cores)"
        server_cores(1)
        assert sidebar.device_text(torch.device("cpu")) == "CPU (1 core)"
    finally:
        torch.set_num_threads(before)


def test_one_thread_is_singular(monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert zoo.device_label(torch.device("cpu")) == "CPU (1 thread)"
    monkeypatch.setattr(text, "lang", lambda: "ko")
    assert text.hardware_text("CPU (AMD EPYC 7B13, 1 thread)") == "CPU (AMD EPYC 7B13, 스레드 1개)"
    assert text.hardware_text("CPU (AMD EPYC 7B13, 2 threads)") == "CPU (AMD EPYC 7B13, 스레드 2개)"
