"""What a device call carries, and how the lease's call stays under the device tool's 64 MiB.

    python -m tools.travel --data ../shared/data/cifar10-jpeg   # before the lease's calls
    python -m tools.travel --back                               # after them, before any commit
    python -m tools.travel                                      # only say what would travel

The device tool sends the working tree with every call: the tracked files, the untracked files
git does not ignore and the paths the call carries, at most 64 MiB in all (``LIMIT``). The shipped
weights and analyses (``LEFT_BEHIND``) are most of the tracked tree, and the lease reads none of
them: it trains its own CNN and ViT. So before the lease's calls they are left behind: taken out
of git's index (the files stay where they are) and ignored in ``.git/info/exclude``, and a
pre-commit hook refuses every commit until ``--back`` puts them back (a commit meanwhile would
delete them from the repository). ``--data`` also writes the JPEGs the lease trains on into
``.gpu/c10.tar.xz`` (``pack_data``), the one path its first call carries. Each form prints what
would travel against the limit, and fails where it would not fit.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from vitviz import commandline

LIMIT = 64 * 2**20  # the device tool's limit on what one call sends
LEFT_BEHIND = ("vitviz/assets/models/*.safetensors",)  # the shipped weights and their analyses
DATA_PACK = Path(".gpu/c10.tar.xz")  # the lease's JPEGs, as its first call carries them
SPLITS = ("train", "test")
MARK = "# left behind for a device call by tools.travel (python -m tools.travel --back)"
HOOK = f"""#!/bin/sh
{MARK}
echo "The shipped weights are left behind for a device call: python -m tools.travel --back puts them back." >&2
exit 1
"""


class TravelError(RuntimeError):
    """What would travel is over the limit, or the repository is not in the state asked for."""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def git_path(repo: Path, name: str) -> Path:
    """A path inside the repository's git folder (a worktree's own, where it has one)."""
    return Path(repo) / git(repo, "rev-parse", "--git-path", name).strip()


def matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def travelling(repo: Path, carry: tuple[Path, ...] = (), leaving: tuple[str, ...] = ()) -> dict[str, int]:
    """Every file a device call would send, with its size in bytes: the tracked and the untracked
    files git does not ignore (those that exist), and every file under the carried paths, less the
    tracked paths matching ``leaving`` (as if they were left behind)."""
    repo = Path(repo)
    listed = git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    sizes = {}
    for name in filter(None, listed):
        path = repo / name
        if path.is_file() and not matches(name, leaving):
            sizes[name] = path.stat().st_size
    for carried in carry:
        top = repo / carried
        for path in [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()):
            sizes[str(path.relative_to(repo))] = path.stat().st_size
    return sizes


def tracked_left_behind(repo: Path) -> list[str]:
    """The files HEAD tracks that ``LEFT_BEHIND`` names."""
    names = git(repo, "ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0")
    return sorted(name for name in names if matches(name, LEFT_BEHIND))


def is_left_behind(repo: Path) -> bool:
    exclude = git_path(repo, "info/exclude")
    return exclude.exists() and MARK in exclude.read_text()


def leave_behind(repo: Path) -> list[str]:
    """Take the ``LEFT_BEHIND`` files out of git's index (they stay on disk), ignore them, and
    install the pre-commit hook that refuses commits meanwhile. Returns the files left behind.

    Raises:
        TravelError: the repository has a pre-commit hook of its own, which this would replace.
    """
    repo = Path(repo)
    names = tracked_left_behind(repo)
    hook = git_path(repo, "hooks/pre-commit")
    if hook.exists() and MARK not in hook.read_text():
        raise TravelError(f"{hook} is a hook of its own: leave the weights behind by hand, or move it aside.")
    if is_left_behind(repo):
        return names
    git(repo, "rm", "--cached", "-q", "--", *names)
    exclude = git_path(repo, "info/exclude")
    exclude.parent.mkdir(parents=True, exist_ok=True)
    before = exclude.read_text() if exclude.exists() else ""
    exclude.write_text(
        before + ("" if before.endswith("\n") or not before else "\n") + "\n".join([MARK, *names]) + "\n"
    )
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(HOOK)
    hook.chmod(0o755)
    return names


def take_back(repo: Path) -> list[str]:
    """Undo ``leave_behind``: the files go back into the index as HEAD has them, the exclude lines
    and the hook go. Returns the files put back (none where nothing was left behind)."""
    repo = Path(repo)
    if not is_left_behind(repo):
        return []
    exclude = git_path(repo, "info/exclude")
    lines = exclude.read_text().splitlines()
    start = lines.index(MARK)
    tracked = set(tracked_left_behind(repo))  # one git call, not one a line
    names = [line for line in lines[start + 1 :] if line in tracked]
    end = start + 1 + len(names)
    exclude.write_text("".join(line + "\n" for line in lines[:start] + lines[end:]))
    git(repo, "reset", "-q", "HEAD", "--", *names)
    hook = git_path(repo, "hooks/pre-commit")
    if hook.exists() and MARK in hook.read_text():
        hook.unlink()
    return names


def pack_data(data: Path, out: Path) -> Path:
    """The ``SPLITS`` of an ImageFolder root as one xz tar (``tar -xJf`` unpacks it on the device),
    its files in sorted order."""
    data, out = Path(data), Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w:xz", preset=6) as tar:
        for split in SPLITS:
            for path in sorted((data / split).rglob("*")):
                tar.add(path, arcname=str(path.relative_to(data)), recursive=False)
    os.replace(partial, out)
    return out


def report(repo: Path, carry: tuple[Path, ...], leaving: tuple[str, ...] = (), label: str = "") -> int:
    """Print what a call carrying ``carry`` would send; return its size in bytes."""
    sizes = travelling(repo, carry, leaving)
    carried = sum(size for name, size in sizes.items() if any(Path(name).is_relative_to(c) for c in carry))
    total = sum(sizes.values())
    print(
        f"a device call would send{label} {total / 2**20:.1f} MiB of its {LIMIT / 2**20:.0f} MiB "
        f"({len(sizes):,} files; {carried / 2**20:.1f} MiB of them carried: {', '.join(map(str, carry)) or 'nothing'})"
    )
    return total


def main(argv: list[str] | None = None) -> int:
    parser = commandline.parser("tools.travel", __doc__)
    parser.add_argument(
        "--data", type=Path, default=None, help="write the lease's JPEG pack from this ImageFolder root"
    )
    parser.add_argument("--back", action="store_true", help="put the left-behind weights back, before any commit")
    parser.add_argument("--repo", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    repo = args.repo
    try:
        if args.back:
            names = take_back(repo)
            print(f"put back {len(names)} files" if names else "nothing was left behind")
            return 0
        carry = (DATA_PACK,)
        if args.data is not None:
            pack_data(args.data, repo / DATA_PACK)
        if not (repo / DATA_PACK).exists():
            print(f"error: there is no {DATA_PACK}: give --data, the CIFAR-10 root", file=sys.stderr)
            return 2
        if args.data is None:  # only say what would travel, with and without the weights
            report(repo, carry, label=" now")
            return 0 if report(repo, carry, LEFT_BEHIND, label=" with the weights left behind") <= LIMIT else 1
        names = leave_behind(repo)
        print(f"left behind {len(names)} files until python -m tools.travel --back")
        if report(repo, carry) > LIMIT:
            print("error: that is over the limit; nothing more can be left behind here", file=sys.stderr)
            return 1
    except (TravelError, subprocess.CalledProcessError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
