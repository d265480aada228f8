"""tools.travel: what a device call sends stays under the device tool's 64 MiB, the lease runs
from what travels, and the weights left behind come back exactly as they were."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_DATA
from tests.helpers import make_image_folder
from tools import travel

ROOM = 8 * 2**20  # what the tree may still grow by before a lease and the call still fit


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def make_repo(root: Path) -> Path:
    """A repository with two shipped weights files, a card beside them and some code."""
    models = root / "vitviz" / "assets" / "models"
    models.mkdir(parents=True)
    (models / "a.safetensors").write_bytes(b"a" * 5000)
    (models / "b.safetensors").write_bytes(b"b" * 3000)
    (models / "a.json").write_text("{}")
    (root / "code.py").write_text("print('hi')\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"],
    ):
        assert git(root, *args).returncode == 0
    return root


def test_weights_left_behind_do_not_travel_block_commits_and_come_back_as_they_were(tmp_path):
    repo = make_repo(tmp_path / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("# mine\n*.tmp\n")
    (repo / "notes.txt").write_text("untracked, not ignored")
    before = travel.travelling(repo)
    assert set(before) == {
        "vitviz/assets/models/a.safetensors", "vitviz/assets/models/b.safetensors", "vitviz/assets/models/a.json",
        "code.py", "notes.txt",
    }  # fmt: skip
    assert travel.travelling(repo, leaving=travel.LEFT_BEHIND) == {
        k: v for k, v in before.items() if not k.endswith(".safetensors")
    }

    assert travel.leave_behind(repo) == ["vitviz/assets/models/a.safetensors", "vitviz/assets/models/b.safetensors"]
    assert travel.travelling(repo) == travel.travelling(repo, leaving=travel.LEFT_BEHIND)  # what the tool counts now
    assert (repo / "vitviz/assets/models/a.safetensors").read_bytes() == b"a" * 5000  # still on disk
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout.splitlines() == [
        "D  vitviz/assets/models/a.safetensors", "D  vitviz/assets/models/b.safetensors", "?? notes.txt",
    ]  # fmt: skip
    refused = git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "would delete them")
    assert refused.returncode != 0 and "tools.travel --back" in refused.stderr
    assert travel.leave_behind(repo) and travel.is_left_behind(repo)  # twice is once

    assert travel.take_back(repo) == ["vitviz/assets/models/a.safetensors", "vitviz/assets/models/b.safetensors"]
    assert travel.travelling(repo) == before and exclude.read_text() == "# mine\n*.tmp\n"
    assert git(repo, "status", "--porcelain").stdout.splitlines() == ["?? notes.txt"]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists() and travel.take_back(repo) == []


def test_a_hook_of_the_repository_s_own_is_never_replaced(tmp_path):
    repo = make_repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(travel.TravelError, match="hook of its own"):
        travel.leave_behind(repo)
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" and git(repo, "status", "--porcelain").stdout == ""


def test_the_data_pack_holds_both_splits_in_order_and_the_command_reports_and_restores(tmp_path, capsys):
    data = make_image_folder(tmp_path / "data", per_class=2)
    repo = make_repo(tmp_path / "repo")
    assert travel.main(["--repo", str(repo), "--data", str(data)]) == 0
    with tarfile.open(repo / travel.DATA_PACK) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
    expected = [str(p.relative_to(data)) for s in travel.SPLITS for p in sorted((data / s).rglob("*")) if p.is_file()]
    assert names == expected
    said = capsys.readouterr().out
    assert "left behind 2 files" in said and "carried: .gpu/c10.tar.xz" in said
    assert travel.is_left_behind(repo)
    assert travel.main(["--repo", str(repo), "--back"]) == 0 and not travel.is_left_behind(repo)


@pytest.mark.cifar10
def test_the_lease_s_first_call_fits_under_the_device_limit_with_room_to_spare(tmp_path):
    """The tree as this commit has it, less the weights left behind, and the CIFAR-10 (JPEG copy)
    packed as the lease's first call carries it."""
    pack = travel.pack_data(SHARED_DATA, tmp_path / "c10.tar.xz")
    tree = sum(travel.travelling(REPO, leaving=travel.LEFT_BEHIND).values())
    print(f"tree {tree / 2**20:.1f} MiB + pack {pack.stat().st_size / 2**20:.1f} MiB of {travel.LIMIT / 2**20:.0f} MiB")
    assert pack.stat().st_size > 10 * 2**20  # the whole of both splits went in
    assert tree + pack.stat().st_size <= travel.LIMIT - ROOM


def test_the_lease_runs_from_what_travels_alone(tmp_path):
    """The tiny lease, run in a copy of exactly the files a call sends (no shipped weights), imports
    its code from there and finishes both phases."""
    tree = tmp_path / "tree"
    for name in travel.travelling(REPO, leaving=travel.LEFT_BEHIND):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tree / name)
    assert not list((tree / "vitviz" / "assets" / "models").glob("*.safetensors"))
    data = make_image_folder(tmp_path / "data", per_class=90)
    script = (
        "import sys, vitviz, tools.lease as lease\n"
        f"assert vitviz.__file__.startswith({str(tree)!r}), vitviz.__file__\n"
        f"sys.exit(lease.main(['--tiny', '--no-fit', '--data', {str(data)!r}, '--out', {str(tmp_path / 'out')!r},"
        f" '--work', {str(tmp_path / 'work')!r}, '--budget', '600']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tree), "VITVIZ_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], cwd=tree, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "work" / "cifar10-vit-lee-lease" / "cifar10-vit-lee-lease.safetensors").exists()
