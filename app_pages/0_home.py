"""Overview: the whole forward pass of the chosen image, with its shapes."""

from vitviz.app import first_view

if not first_view.page_drawn():  # a fresh server's first view, before torch has loaded
    from vitviz.app import render
    from vitviz.steps import overview

    render.page(overview.describe, "app_pages/0_home.py")
