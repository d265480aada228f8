"""The Streamlit glue: the only part of vitviz that imports Streamlit (caches, the session's
choices and the URL, navigation, the sidebar, widgets). ``import vitviz`` never loads it."""
