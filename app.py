"""vitviz: streamlit run app.py. The navigation and the shared sidebar; pages live in app_pages/
(not pages/: that folder name beside app.py switches Streamlit to its legacy pages-folder mode)."""

import streamlit as st

from vitviz import tour
from vitviz.app import load_ui

ui = load_ui()  # before any page: the first sessions of a cold server import one at a time

st.set_page_config(
    page_title="vitviz: inside a Vision Transformer", page_icon=str(ui.ROOT / "assets" / "icon.png"), layout="wide"
)
ui.init_state()

steps = [
    st.Page(f, title=ui.tr(k), icon=i, default=(n == 0))
    for n, (f, k, i) in enumerate(tour.TOUR)
    if (tour.ROOT / f).exists()
]
lab = [st.Page(f, title=ui.tr(k), icon=i) for f, k, i in tour.LAB if (tour.ROOT / f).exists()]
page = st.navigation({ui.tr("nav.tour"): steps, ui.tr("nav.lab"): lab} if lab else steps)
ui.follow_asked_step()  # Previous / Next: straight to the step, without drawing the page clicked on again

ui.sidebar()
ui.follow_step_link(page)
page.run()
