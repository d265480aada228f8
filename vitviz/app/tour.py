"""The app's pages, in order, as data: what app.py navigates, the journeys walk and the
benchmarks time."""

from __future__ import annotations

import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: app.py and app_pages/ sit there

# (script, title key in vitviz.render.i18n, icon): the tour in order, then the lab.
TOUR = [
    ("app_pages/0_home.py", "page.home", ":material/home:"),
    ("app_pages/1_input.py", "page.input", ":material/image:"),
    ("app_pages/2_patches.py", "page.patches", ":material/grid_on:"),
    ("app_pages/3_vectors.py", "page.vectors", ":material/linear_scale:"),
    ("app_pages/4_tokens.py", "page.tokens", ":material/pin_drop:"),
    ("app_pages/5_attention.py", "page.attention", ":material/visibility:"),
    ("app_pages/6_block.py", "page.block", ":material/layers:"),
    ("app_pages/7_prediction.py", "page.prediction", ":material/flag:"),
    ("app_pages/8_compare.py", "page.compare", ":material/compare:"),
    ("app_pages/9_card.py", "page.card", ":material/description:"),
]
LAB = [
    ("app_pages/10_mistakes.py", "page.mistakes", ":material/bug_report:"),
    ("app_pages/11_trust.py", "page.trust", ":material/fact_check:"),
    ("app_pages/12_map.py", "page.map", ":material/scatter_plot:"),
    ("app_pages/13_learn.py", "page.learn", ":material/timeline:"),
]


@functools.cache
def shipped(script: str) -> bool:
    """Whether the page script is there: looked for once per process, for app.py asks on every
    run of every session (docs/benchmarks.md: where a following class's CPU goes)."""
    return (ROOT / script).exists()


@functools.cache
def _code(script: str):
    path = ROOT / script
    return compile(path.read_bytes(), str(path), "exec")


def run_script(script: str) -> None:
    """Draw a page of the tour as its ``st.Page`` would, without it: the page a following student's
    catch-up draws in a fragment's run (``students.follow_page``), where the page the run started on
    is the last one and no other ``st.Page`` may be run. Compiled once per process."""
    exec(_code(script), {"__name__": "__page__", "__file__": str(ROOT / script)})


def scripts() -> list[str]:
    """Every page script that exists, the tour's first."""
    return [script for script, _, _ in TOUR + LAB if shipped(script)]
