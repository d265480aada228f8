"""The ``vitviz`` command: the app and the library's command lines under one name.

    vitviz app [--data FOLDER] [--models DIR] [--allow-hub] [--server.port 8501 ...]
    vitviz explain photo.jpg [--model NAME]
    vitviz evaluate | train | handout | faithfulness | ablation | occlusion | comparison | projection ...

``vitviz app`` starts the Streamlit app from any folder: the app's script and pages come from the
clone this package runs from, or, installed from a wheel, from where the wheel put them
(``share/vitviz`` under the environment). Streamlit's own options (a dot in the name:
``--server.port``) go to Streamlit; the others are the server's (vitviz.server.access, ``--data``).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

COMMANDS = {
    "explain": "vitviz.models.explain",
    "evaluate": "vitviz.analyses.evaluate",
    "train": "vitviz.training.train",
    "handout": "vitviz.render.handout",
    "faithfulness": "vitviz.analyses.faithfulness",
    "ablation": "vitviz.analyses.ablation",
    "occlusion": "vitviz.analyses.occlusion",
    "comparison": "vitviz.analyses.comparison",
    "projection": "vitviz.analyses.projection",
}
PATH_OPTIONS = (
    "--data",
    "--models",
)  # folders the server reads: made absolute before the app's folder becomes the working one


APP_HELP = """usage: vitviz app [the server's options] [Streamlit's options]

Starts the app's server; open the address it prints (Ctrl+C stops it).

The server's options (each also an environment variable):
  --data FOLDER          the test images: an ImageFolder copy of CIFAR-10 (VITVIZ_DATA); without
                         it the lab offers to download CIFAR-10, which needs the network
  --models DIR           a folder of models (.safetensors and .json) visitors may load; repeat
                         for more (VITVIZ_MODELS)
  --allow-hub, --no-hub  whether visitors may load timm: and hf: models, downloaded from the hub
                         (VITVIZ_ALLOW_HUB; default: only on a server that listens on this machine)
  --max-model-mb 400, --max-upload-mb 50, --load-timeout-s 300
                         limits on what visitors load
  --runs-at-once N       runs computed at once, the others wait their turn (default: one a core)
  --no-read-ahead        do not compute the next steps' figures ahead (VITVIZ_READ_AHEAD=0)
  --redis URL            keep classes (a teacher's join code, the polls) in this Redis, shared by
                         several servers (VITVIZ_REDIS); without it, in this server's memory

Streamlit's options have a dot in their name:
  --server.port 8501          the port
  --server.address 127.0.0.1  listen on this machine alone; without it Streamlit listens on
                              every network interface, so other machines can open the app
"""


def app_folder() -> Path:
    """Where app.py and app_pages/ are: the clone's root, else the installed copy."""
    clone = Path(__file__).resolve().parents[1]
    if (clone / "app.py").is_file() and (clone / "app_pages").is_dir():
        return clone
    installed = Path(sysconfig.get_path("data")) / "share" / "vitviz"
    if (installed / "app.py").is_file():
        return installed
    raise FileNotFoundError(f"vitviz's app.py is in neither {clone} nor {installed}: reinstall vitviz.")


def _options(argv: list[str]) -> list[tuple[str, str | None]]:
    """``--name value``, ``--name=value`` and ``--flag`` as (name, value or None)."""
    pairs, i = [], 0
    while i < len(argv):
        name, _, value = argv[i].partition("=")
        if not value and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            i, value = i + 1, argv[i + 1]
        pairs.append((name, value or None))
        i += 1
    return pairs


def streamlit_command(argv: list[str], folder: Path, environ: Mapping[str, str] | None = None) -> list[str]:
    """``streamlit run`` for the app in ``folder``: Streamlit's options (a dot in the name) before
    ``--``, the server's after it, its folders made absolute. The app's upload limit
    (``--max-upload-mb``, or VITVIZ_MAX_UPLOAD_MB in ``environ``) is Streamlit's
    ``server.maxUploadSize`` too, unless that is given: Streamlit refuses a larger file before
    the app sees it."""
    theirs, ours = [], []
    options = _options(argv)
    for name, value in options:
        if name in PATH_OPTIONS and value is not None:
            value = str(Path(value).expanduser().resolve())
        (theirs if "." in name else ours).append(name if value is None else f"{name}={value}")
    names = {name for name, _ in options}
    upload_mb = next((value for name, value in options if name == "--max-upload-mb"), None)
    upload_mb = upload_mb or (os.environ if environ is None else environ).get("VITVIZ_MAX_UPLOAD_MB")
    if "--server.maxUploadSize" not in names and upload_mb and re.fullmatch(r"[1-9][0-9]{0,5}", upload_mb.strip()):
        theirs.append(f"--server.maxUploadSize={int(upload_mb)}")
    return [sys.executable, "-m", "streamlit", "run", str(folder / "app.py"), *theirs, "--", *ours]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "app":
        if "-h" in rest or "--help" in rest:  # help, not a server on every interface
            print(APP_HELP.strip())
            return 0
        folder = app_folder()
        run = streamlit_command(rest, folder)
        os.chdir(folder)  # Streamlit reads .streamlit/config.toml from the working folder
        os.execv(run[0], run)
    if command not in COMMANDS:
        print(f"vitviz: no command {command!r}; try one of: app, {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    sys.argv = [f"vitviz {command}", *rest]
    result = importlib.import_module(COMMANDS[command]).main(rest)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
