"""The team's tools, run from a clone (``python -m tools.ship``, ``python -m tools.lease``,
``python tools/mutants.py``): what the people who make vitviz run, never installed with it."""
