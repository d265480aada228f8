"""vitviz: streamlit run app.py. The navigation and the shared sidebar; pages live in app_pages/
(not pages/: that folder name beside app.py switches Streamlit to its legacy pages-folder mode).

The file plays two parts. ``streamlit run app.py`` imports it once as the module ``app`` (nothing
here loads torch) and serves the ``st.App`` below, whose startup loads the libraries and the
default model in a thread while the server already answers browsers (``vitviz.app.warm_up``),
and which sends Streamlit's frontend gzipped, compressed once per file (``vitviz.app.assets``);
then every session runs it as ``__main__`` (``main``). A fresh server's first visitor on the overview
is drawn it before the startup is ready, without torch (``vitviz.app.first_view``). Streamlit
versions without ``st.App`` only ever run it as ``__main__``."""

import os

# Before torch loads OpenMP, which reads this once: a thread that waits for the rest of its team
# sleeps instead of spinning. Every session computes in a thread of its own, with a team of its
# own; spinning, they burn the cores that the others (and, in a classroom on one machine, the
# browsers) wait for (docs/benchmarks.md has it measured).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import streamlit as st  # noqa: E402

from vitviz.app import (  # noqa: E402
    STARTUP_BEGUN,
    STARTUP_READY,
    first_view,
    load_app,
    session_run,
    startup_needed,
    warm_up,
)


def main() -> None:
    if first_view.draws(STARTUP_READY, STARTUP_BEGUN):  # a fresh server's overview, before torch has loaded
        return
    startup_needed()  # another first page: the startup loads at once what this run waits for
    load_app()  # before any page: the first sessions of a cold server import one at a time
    from vitviz.app import ahead, charts, classroom, furniture, models, navigation, sidebar, state, students, turns
    from vitviz.app.page_list import pages
    from vitviz.app.text import lang, tr
    from vitviz.app.tour import TOUR, shipped

    # a class's runs compute a few at a time, in order, from their first element on: thirty runs
    # that each set up their page at once share the interpreter, and the first student waits for all
    with turns.server_turns().turn(turns.session_id()):
        st.set_page_config(
            page_title="vitviz: inside a Vision Transformer", page_icon=furniture.favicon(), layout="wide"
        )
        state.init()
        charts.share_figures()  # once per server: figures built once, sent as JSON written once

        files = [f for f, _, _ in TOUR if shipped(f)]
        steps, lab = pages(lang(), tr)  # the tour's and the lab's st.Page objects, made once per language
        # Previous / Next: this run draws the step, not the page clicked on
        unopened = navigation.follow_asked_step(steps)
        # every page listed: collapsed, Streamlit shows 10 and hides the lab behind "View 3 more"
        page = st.navigation({tr("nav.tour"): steps, tr("nav.lab"): lab} if lab else steps, expanded=True)
        if unopened is not None:  # a Streamlit whose page manager cannot be told: st.switch_page's second run
            navigation.go_to(unopened)

        with models.within_limits():  # a visitor's model within a time limit
            classroom.open_shared_image()  # a class's shared image, before the sidebar's picker
            sidebar.sidebar()
            navigation.follow_step_link(page)
            navigation.open_at_the_top(page)
            if page in steps and students.following():  # the bar and the step, which its catch-ups redraw alone
                students.follow_page(files, [step.url_path for step in steps])
                return
            students.bar()  # a class: the teacher tells it where they are; a student follows
            if page in steps:  # while the class reads, the prediction's heaviest work for this image
                ahead.read_ahead(files[steps.index(page)])
            page.run()


if __name__ == "__main__":  # every session's run
    with session_run():  # the startup's lab data waits for the first one to end
        main()
else:  # `streamlit run app.py` imports this file once, as the module "app", and serves the st.App it finds here
    from starlette.middleware import Middleware

    from vitviz.app import where
    from vitviz.app.assets import CompressedAssets, default_store
    from vitviz.app.chart_script import ChartScripts, EarlyCharts

    # the frontend gzipped once, and kept on disk for the servers started after this one; where a
    # class is, for its students' pages, answered without a script run (vitviz.app.where); the page
    # imports the figures' chunk of the frontend as it loads (EarlyCharts)
    app = st.App(
        __file__,
        lifespan=warm_up,
        middleware=[
            Middleware(where.Answers),
            Middleware(CompressedAssets, store=default_store()),
            Middleware(EarlyCharts),
            Middleware(ChartScripts, store=default_store()),
        ],
    )
