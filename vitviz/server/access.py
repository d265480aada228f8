"""What a server lets its visitors load, decided by whoever starts it and never by a visitor.

A classroom server is shared: whatever a student types into a model box must neither read the
server's files nor hang it. The server's options (flags after ``--``, else environment variables)::

    streamlit run app.py -- --models DIR [--models DIR2] [--allow-hub | --no-hub]
                            [--max-model-mb 400] [--max-upload-mb 50] [--load-timeout-s 300]
                            [--max-image-mb 1024] [--max-gflop 200] [--max-run-s 60]

    VITVIZ_MODELS=DIR:DIR2  VITVIZ_ALLOW_HUB=1|0  VITVIZ_MAX_MODEL_MB  VITVIZ_MAX_UPLOAD_MB
    VITVIZ_LOAD_TIMEOUT_S  VITVIZ_MAX_IMAGE_MB  VITVIZ_MAX_GFLOP  VITVIZ_MAX_RUN_S

A visitor's model (an upload, a file of the model folders, a download) is costed from its config
before it is built (``vitviz.models.budget``): its parameters against ``--max-model-mb``, the memory one
explained image keeps against ``--max-image-mb``, and the FLOPs of one image against
``--max-gflop``. The defaults fit a class server of 2 cores and 24 GB. Such a model then computes
within ``--max-run-s`` seconds a run, and stops when its visitor leaves (``vitviz.server.deadline``).

By default a visitor may load the registry's models, no file of the server (no ``--models``),
hub names (``timm:``, ``hf:``) only when the server listens on this machine alone (Streamlit's
``server.address`` is a loopback address), and their own ``.safetensors`` upload.

``decide`` is the one place that says whether a typed name may be loaded. A path outside the
model folders gets the answer a missing name gets ("unknown"), so nobody can tell the two apart;
the app's own files are no exception (its models load by their registry names alone), a
relative name is looked for in the model folders only, symlinks are resolved before the check, and special files (pipes, devices, the kernel's
``/proc`` and ``/sys`` files) are refused from their ``stat`` alone, never opened.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import ssl
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple, TypeVar

HUB_PREFIXES = ("timm:", "hf:")
LOOPBACK = ("localhost", "127.0.0.1", "::1")
# Never a model, whatever folder a server names: the kernel's process files and devices.
SYSTEM_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
HUB_HOST = ("huggingface.co", 443)  # where timm and transformers download from
PROBE_S = 3.0  # how long a hub name waits to learn that there is no network
# A timm model name (with its optional pretrained tag) and a Hugging Face repo id. Nothing else
# reaches the libraries: timm reads "local-dir:" names and transformers reads a folder named as
# a repo id from the server's disk.
TIMM_NAME = r"[A-Za-z0-9][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)?"
HF_REPO = r"[A-Za-z0-9][A-Za-z0-9_\-.]*/[A-Za-z0-9][A-Za-z0-9_\-.]*"

T = TypeVar("T")


@dataclass(frozen=True)
class Policy:
    """A server's rules for what visitors may load.

    Attributes:
        model_dirs: folders whose files visitors may name (resolved; none by default).
        allow_hub: whether ``timm:`` and ``hf:`` names may download.
        max_model_mb: the largest model a download or a model folder's file may be (float32 size).
        max_upload_mb: the largest checkpoint a visitor may upload.
        load_timeout_s: how long a download may take before the visitor is told to try later.
        max_image_mb: the memory one explained image of a visitor's model may keep.
        max_gflop: the FLOPs (in billions) one image of a visitor's model may take.
        max_run_s: how long one run of a page may compute with a visitor's model.
    """

    model_dirs: tuple[Path, ...] = ()
    allow_hub: bool = False
    max_model_mb: int = 400
    max_upload_mb: int = 50
    load_timeout_s: float = 300.0
    max_image_mb: int = 1024
    max_gflop: int = 200
    max_run_s: float = 60.0
    notes: tuple[str, ...] = field(default=(), compare=False)  # options the server ignored, and why


def is_loopback(address: str | None) -> bool:
    """Whether Streamlit's ``server.address`` keeps the server to this machine (unset: every address)."""
    return bool(address) and (address in LOOPBACK or address.startswith("127."))


def _flag(text: str | None) -> bool | None:
    if text is None or not text.strip():
        return None
    return text.strip().lower() in ("1", "true", "yes", "on")


def data_flag(argv: Sequence[str]) -> str | None:
    """The test images' folder given on the server's command line, ``streamlit run app.py -- --data
    FOLDER`` (the app reads it and passes it down; a visitor can neither see nor change it)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--data", default=None)
    return parser.parse_known_args(list(argv))[0].data or None


def server_policy(argv: Sequence[str], environ: Mapping[str, str], address: str | None) -> Policy:
    """The policy a server was started with: flags in ``argv`` win over ``environ``'s variables.

    Args:
        argv: the arguments after ``streamlit run app.py --``.
        environ: the server's environment (VITVIZ_MODELS, VITVIZ_ALLOW_HUB, ...).
        address: Streamlit's ``server.address`` (None when unset: the server listens everywhere).
    """
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--models", action="append", default=[])
    parser.add_argument("--allow-hub", dest="hub", action="store_true", default=None)
    parser.add_argument("--no-hub", dest="hub", action="store_false")
    parser.add_argument("--max-model-mb", type=int, default=None)
    parser.add_argument("--max-upload-mb", type=int, default=None)
    parser.add_argument("--load-timeout-s", type=float, default=None)
    parser.add_argument("--max-image-mb", type=int, default=None)
    parser.add_argument("--max-gflop", type=int, default=None)
    parser.add_argument("--max-run-s", type=float, default=None)
    args, _ = parser.parse_known_args(list(argv))

    folders = list(args.models) or [p for p in environ.get("VITVIZ_MODELS", "").split(os.pathsep) if p]
    dirs, notes = [], []
    for folder in folders:
        resolved = Path(os.path.realpath(Path(folder).expanduser()))
        if not resolved.is_dir() or any(_within(resolved, root) for root in SYSTEM_ROOTS) or resolved == Path("/"):
            notes.append(f"--models {folder}: not a folder that can hold models, ignored")
            continue
        dirs.append(resolved)
    hub = args.hub if args.hub is not None else _flag(environ.get("VITVIZ_ALLOW_HUB"))

    def number(value, name: str, default):
        value = value if value is not None else environ.get(name)
        try:
            return type(default)(value) if value is not None and float(value) > 0 else default
        except ValueError:
            notes.append(f"{name}={value}: not a number, {default} used")
            return default

    return Policy(
        model_dirs=tuple(dirs),
        allow_hub=is_loopback(address) if hub is None else hub,
        max_model_mb=number(args.max_model_mb, "VITVIZ_MAX_MODEL_MB", Policy.max_model_mb),
        max_upload_mb=number(args.max_upload_mb, "VITVIZ_MAX_UPLOAD_MB", Policy.max_upload_mb),
        load_timeout_s=number(args.load_timeout_s, "VITVIZ_LOAD_TIMEOUT_S", Policy.load_timeout_s),
        max_image_mb=number(args.max_image_mb, "VITVIZ_MAX_IMAGE_MB", Policy.max_image_mb),
        max_gflop=number(args.max_gflop, "VITVIZ_MAX_GFLOP", Policy.max_gflop),
        max_run_s=number(args.max_run_s, "VITVIZ_MAX_RUN_S", Policy.max_run_s),
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------------------------
# May this name be loaded?
# ---------------------------------------------------------------------------------------------

Kind = Literal["registry", "hub", "hub_off", "file", "folder", "special", "too_large", "unknown"]


class Decision(NamedTuple):
    """What ``decide`` found: ``kind``, and the registry name, hub name or resolved path it is about.

    Kinds: "registry" (a registry name), "hub" (a hub
    name the server allows), "hub_off" (one it does not), "file" / "folder" (inside the model
    folders: load it), "special" (inside, but a pipe, a device or a folder with one: refused
    unopened), "too_large" (inside, over ``max_model_mb``), "unknown" (missing, or outside the
    model folders: the same answer for both).
    """

    kind: Kind
    target: str | Path | None = None


def is_hub_name(name: str) -> bool:
    """``timm:<model name>`` or ``hf:<owner>/<repo>``, spelled as the hubs spell them (no paths)."""
    if name.startswith("timm:"):
        return re.fullmatch(TIMM_NAME, name.removeprefix("timm:")) is not None
    repo = name.removeprefix("hf:")
    return name.startswith("hf:") and re.fullmatch(HF_REPO, repo) is not None and ".." not in repo


def _within(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def resolve(name: str) -> Path | None:
    """The path a typed name means, with ``~`` expanded and every symlink resolved (relative to
    the server's working folder); None for text that is no path (a NUL byte, too long)."""
    if not name or "\x00" in name or len(name) > 4096:
        return None
    try:
        return Path(os.path.realpath(Path(name).expanduser()))
    except (OSError, ValueError, RuntimeError):
        return None


def allowed(path: Path, policy: Policy) -> bool:
    """Whether a resolved path lies in one of the server's model folders (and outside the kernel's)."""
    if any(_within(path, root) for root in SYSTEM_ROOTS):
        return False
    return any(_within(path, folder) for folder in policy.model_dirs)


def decide(name: str, policy: Policy, registry: Mapping[str, Path | None]) -> Decision:
    """Whether a typed name may be loaded under ``policy``, and as what.

    Args:
        name: what the visitor typed (stripped).
        policy: the server's rules.
        registry: the registry's names and their weights files (None for entries without one).

    Returns:
        A Decision. Nothing outside the model folders is opened or stat-ed on the way (only
        resolved); inside them a file is stat-ed, never opened.
    """
    if name in registry:
        if name.startswith(HUB_PREFIXES):
            return Decision("hub" if policy.allow_hub else "hub_off", name)
        return Decision("registry", name)
    if name.startswith(HUB_PREFIXES):
        if not is_hub_name(name):
            return Decision("unknown")
        return Decision("hub" if policy.allow_hub else "hub_off", name)
    path = _in_model_folders(name, policy)
    if path is None:  # missing, or outside the model folders (the app's own files too): one answer
        return Decision("unknown")
    try:
        info = os.stat(path)
    except OSError:
        return Decision("unknown")
    if stat.S_ISDIR(info.st_mode):
        return Decision("folder" if _plain_folder(path, policy) else "special", path)
    if not stat.S_ISREG(info.st_mode):
        return Decision("special", path)
    if info.st_size > policy.max_model_mb * 2**20:
        return Decision("too_large", path)
    return Decision("file", path)


def _in_model_folders(name: str, policy: Policy) -> Path | None:
    """The resolved path a typed name means inside the model folders: an absolute path as it is,
    a relative one (``mine.safetensors``) in the first model folder that has it; None when it
    means nothing there. The server's working folder plays no part."""
    if not name or "\x00" in name or len(name) > 4096:
        return None
    candidates = [name] if Path(name).is_absolute() else [str(folder / name) for folder in policy.model_dirs]
    for candidate in candidates:
        path = resolve(candidate)
        if path is not None and allowed(path, policy) and os.path.lexists(path):
            return path
    return None


MODEL_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin")
OFFERED = 12  # names a sentence lists


def offered(policy: Policy) -> list[str]:
    """What a visitor may type to load a file of the model folders: the checkpoints and Hugging
    Face model folders (with a config.json) at their top level, by name (no server path), the
    first ``OFFERED`` in order."""
    names = set()
    for folder in policy.model_dirs:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            checkpoint = entry.name.lower().endswith(MODEL_SUFFIXES)
            if checkpoint or (entry.is_dir() and os.path.isfile(os.path.join(entry.path, "config.json"))):
                names.add(entry.name)
    return sorted(names)[:OFFERED]


def _plain_folder(folder: Path, policy: Policy) -> bool:
    """A model folder (Hugging Face's) whose entries are all regular files or folders inside the
    model folders: the libraries that read it then open nothing else."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    for entry in entries:
        target = resolve(entry.path)
        if target is None or not allowed(target, policy):
            return False
        try:
            mode = os.stat(target).st_mode
        except OSError:
            return False
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return False
    return True


def companion(path: Path, policy: Policy | None) -> Path | None:
    """A file read beside a checkpoint (its json, a config.json), when it may be read: a regular
    file inside the model folders (any regular file where there is no policy); else None."""
    target = resolve(str(path))
    if target is None or (policy is not None and not allowed(target, policy)):
        return None
    try:
        return target if stat.S_ISREG(os.stat(target).st_mode) else None
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# Hub downloads: a quick look for the network, one at a time, a time limit
# ---------------------------------------------------------------------------------------------


def hub_offline_mode() -> bool:
    """HF_HUB_OFFLINE: the libraries read only their cache, and fail at once without it."""
    return _flag(os.environ.get("HF_HUB_OFFLINE")) is True


def hub_reachable(host: tuple[str, int] | None = None, timeout: float = PROBE_S) -> bool:
    """Whether the hub completes a TLS handshake within ``timeout`` seconds, name lookup included
    (which no socket timeout bounds: it runs in a thread that is left behind if it hangs). A
    bare TCP connection proves nothing: a proxy or a firewall may accept it and answer nothing."""
    address = host or HUB_HOST

    def connect() -> bool:
        context = ssl.create_default_context()
        with (
            socket.create_connection(address, timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=address[0]),
        ):
            return True

    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(connect).result(timeout=timeout)
    except (OSError, FutureTimeout):
        return False
    finally:
        pool.shutdown(wait=False)


class Busy(Exception):
    """Another download holds the server's one download slot."""


class TooSlow(Exception):
    """A download ran past the server's time limit (it goes on in the background, holding the slot)."""


_DOWNLOAD = threading.Lock()


def one_download(work: Callable[[], T], limit_s: float, wait_s: float = 5.0) -> T:
    """Run ``work`` (a download) while holding the server's one download slot, for at most
    ``limit_s`` seconds.

    Raises:
        Busy: another download kept the slot for ``wait_s`` seconds.
        TooSlow: ``work`` did not finish in ``limit_s`` seconds (it goes on, holding the slot
            until it ends, so that a class cannot start thirty downloads).
    """
    if not _DOWNLOAD.acquire(timeout=wait_s):
        raise Busy
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as err:  # handed to the waiting caller
            outcome["error"] = err
        finally:
            _DOWNLOAD.release()

    worker = threading.Thread(target=run, name="vitviz-download", daemon=True)
    worker.start()
    worker.join(limit_s)
    if worker.is_alive():
        raise TooSlow
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
