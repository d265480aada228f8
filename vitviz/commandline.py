"""What the test-set analyses' command lines share (``vitviz.analyses.faithfulness``, ``vitviz.analyses.ablation``,
``vitviz.analyses.projection``, ``vitviz.analyses.occlusion``, ``vitviz.analyses.comparison``): a model and
a test split, how many of its images, torch's threads, JSON for scripts, a file to write, and a
progress bar that stays quiet when a script reads the JSON.

    parser = commandline.analysis_parser("vitviz.analyses.ablation", __doc__, images=None, out="the grid")
    parser.add_argument("--mode", ...)  # the command's own options
    args = commandline.parse(parser, argv)  # logging and threads set
    bar, advance = commandline.progress("ablation", "batch", args.json)
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from tqdm import tqdm

from vitviz.models import zoo


def parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """A command's parser: its usage line names it as it was called (``vitviz explain`` through the
    ``vitviz`` command or ``python -m vitviz explain``, ``python -m vitviz.models.explain`` otherwise), and its description is the module's
    docstring as a terminal shows it (without the double backquotes of code in docstrings)."""
    return argparse.ArgumentParser(
        prog=prog(module), description=readable(doc), formatter_class=argparse.RawDescriptionHelpFormatter
    )


def prog(module: str) -> str:
    """``vitviz <name>`` when ``vitviz.cli`` runs the command (it names it so in sys.argv[0]),
    else ``python -m <module>``."""
    called = f"vitviz {module.rsplit('.', 1)[-1]}"
    return called if sys.argv[:1] == [called] else f"python -m {module}"


def readable(doc: str | None) -> str | None:
    """A docstring for a terminal: code between double backquotes without them."""
    return re.sub(r"``([^`]+)``", r"\1", doc) if doc else doc


def analysis_parser(module: str, doc: str | None, images: int | None, out: str) -> argparse.ArgumentParser:
    """``--model``, ``--data``, ``--images``, ``--threads``, ``--json`` and ``--out``.

    Args:
        module: the command's module ("vitviz.analyses.ablation"), its name in the usage line.
        doc: the module's docstring, the command's description.
        images: how many test images by default (at even strides; None: all of them).
        out: what ``--out`` writes ("the grid"), for its help.
    """
    made = parser(module, doc)
    made.add_argument("--model", default=zoo.default_name(), help="registry name, timm:<name>, hf:<repo id> or a path")
    made.add_argument(
        "--data", default=None, help="the dataset root or its test folder (as vitviz.analyses.evaluate takes it)"
    )
    every = "all" if images is None else str(images)
    made.add_argument("--images", type=int, default=images, help=f"test images at even strides (default: {every})")
    made.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    made.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    made.add_argument("--out", type=Path, default=None, help=f"also write {out} with its weights hash here")
    return made


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The arguments, with warnings logged and torch on ``--threads`` threads when given."""
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def progress(desc: str, unit: str, quiet: bool, total: int | None = None) -> tuple[tqdm, Callable[[int, int], None]]:
    """A progress bar on stderr (none when ``quiet`` and stderr is not a terminal: a script reading
    ``--json``) and the ``progress(done, total)`` callback the analyses take."""
    bar = tqdm(total=total, unit=unit, desc=desc, disable=quiet and not sys.stderr.isatty())

    def advance(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return bar, advance


def wrote(count: int, seconds: float, out: Path, as_json: bool) -> None:
    """What a command that stored one entry per test image prints: how many, in how long, where;
    one JSON object for a script (``--json``)."""
    if as_json:
        print(json.dumps({"images": count, "seconds": round(seconds, 1), "out": str(out)}))
    else:
        print(f"{count} images in {seconds:.0f} s: {out}")
