"""The ``vitviz`` command: how ``vitviz app`` starts Streamlit."""

from __future__ import annotations

from pathlib import Path

from vitviz.cli import streamlit_command


def _split(command: list[str]) -> tuple[list[str], list[str]]:
    """(Streamlit's options, the app's options) of a ``streamlit run`` command."""
    cut = command.index("--")
    return command[command.index("run") + 2 : cut], command[cut + 1 :]


def test_the_apps_upload_limit_is_streamlits_too():
    """Streamlit refuses an upload over its server.maxUploadSize (HTTP 413) before the app sees
    it: ``vitviz app --max-upload-mb 80`` gives Streamlit the same 80."""
    theirs, ours = _split(streamlit_command(["--max-upload-mb", "80", "--server.port", "8510"], Path("/app"), {}))
    assert theirs == ["--server.port=8510", "--server.maxUploadSize=80"] and ours == ["--max-upload-mb=80"]
    theirs, _ = _split(streamlit_command(["--max-upload-mb=64"], Path("/app"), {}))
    assert theirs == ["--server.maxUploadSize=64"]


def test_the_limit_from_the_environment_and_an_explicit_streamlit_option():
    theirs, ours = _split(streamlit_command([], Path("/app"), {"VITVIZ_MAX_UPLOAD_MB": "30"}))
    assert theirs == ["--server.maxUploadSize=30"] and ours == []
    # whoever names Streamlit's option keeps it (the app then holds to the smaller, and says so)
    theirs, _ = _split(streamlit_command(["--max-upload-mb", "80", "--server.maxUploadSize", "20"], Path("/app"), {}))
    assert theirs == ["--server.maxUploadSize=20"]


def test_a_limit_the_app_would_not_take_is_not_given_to_streamlit():
    """The app reads 0, a negative or a word as its default (vitviz.server.access), which is Streamlit's
    default in .streamlit/config.toml: nothing is passed."""
    for value in ("0", "-5", "lots", "1e3", "9" * 40):
        theirs, _ = _split(streamlit_command(["--max-upload-mb", value], Path("/app"), {}))
        assert theirs == [], value
