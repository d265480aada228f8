"""Lab: which explanation can you trust? Deletion and insertion curves of every map the app draws,
against random orders, for the tour's image and over the test set; heads and layers switched off."""

from vitviz.app import render
from vitviz.steps import trust

render.page(trust.describe, "app_pages/11_trust.py")
