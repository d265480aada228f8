"""The tour's steps, each described once as data (``blocks``) from the session's choices: the
Streamlit page and its slides (``vitviz.app.render``) and the handout (``vitviz.render.handout``) draw
the same description. Nothing here imports Streamlit."""
