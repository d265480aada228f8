"""Drawing the numbers for people: figures (``plots``), tables, what a click chose, the
sentences' languages (``i18n``), and the handout, a step's third renderer (paper)."""
