"""tools.margins' own arithmetic: what a measured figure keeps, and the file's text."""

import json

from tools.margins import grown, written
from vitviz.app import margins


def test_a_figure_keeps_the_sides_plotly_js_grew_rounded_up_and_nothing_else():
    assert grown([4, 4, 60, 4], [4, 69.4, 60, 4]) == [0, 70, 0, 0]
    assert grown([4, 4, None, 4], [55.2, 4, 0, 86]) == [56, 0, 0, 86]  # a side the layout left out: 0
    assert grown([4, 4, 60, 4], [4, 4, 60, 4]) is None  # nothing grew: no entry


def test_the_file_is_one_figure_a_line_and_reads_back_as_written():
    made = {"windows": [[1280, 720]], "figures": {"a|en|page": [[402, [0, 79, 0, 0]]], "b|ko|present": []}}
    text = written(made)
    assert json.loads(text) == made
    assert text.count("\n") == 4 and '"a|en|page": [[402, [0, 79, 0, 0]]],\n' in text


def test_the_shipped_file_holds_entries_sorted_by_width_for_both_languages_and_modes():
    shipped = json.loads(margins.FILE.read_text(encoding="utf-8"))["figures"]
    assert {key.split("|", 1)[1] for key in shipped} == {"en|page", "ko|page", "en|present", "ko|present"}
    for key, widths in shipped.items():
        assert [w for w, _ in widths] == sorted(w for w, _ in widths), key
        assert all(len(sides) == 4 and min(sides) >= 0 and any(sides) for _, sides in widths), key
