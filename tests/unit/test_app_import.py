"""vitviz.app.load_ui: the app's imports, one session at a time, and the collector told to skip them."""

import gc

from vitviz.app import load_ui


def test_load_ui_freezes_the_startup_heap_once():
    ui = load_ui()
    assert ui.__name__ == "vitviz.app.ui"
    frozen = gc.get_freeze_count()
    assert frozen > 100_000  # torch, Plotly, pandas, Streamlit: objects that live as long as the server
    assert load_ui() is ui and gc.get_freeze_count() == frozen  # later runs freeze nothing more
