"""tools/mutants.py's list keeps up with the code: every mutant plants its bug somewhere, and the
runs can be chosen by the file that changed (docs/mutants.md, "The routine")."""

from __future__ import annotations

from pathlib import Path

from tools import mutants

ROOT = Path(__file__).resolve().parents[2]


def test_every_mutant_s_text_is_in_its_file_once_and_its_tests_exist() -> None:
    """A mutant whose text the code no longer holds plants nothing ("stale"): five handout mutants
    did so for weeks, found only when someone ran the whole list. Here the suite finds it."""
    names = [m.name for m in mutants.MUTANTS]
    assert len(names) == len(set(names))
    stale = {
        m.name: (ROOT / m.path).read_text(encoding="utf-8").count(m.old)
        for m in mutants.MUTANTS
        if (ROOT / m.path).read_text(encoding="utf-8").count(m.old) != 1
    }
    assert stale == {}, f"mutants whose text is not in their file exactly once (name: times found): {stale}"
    assert all(m.old != m.new for m in mutants.MUTANTS)
    files = {arg for m in mutants.MUTANTS for arg in m.tests if arg.endswith(".py") or ".py::" in arg}
    assert all((ROOT / arg.split("::")[0]).is_file() for arg in files), sorted(files)


def test_mutants_are_chosen_by_the_file_they_plant_in(capsys) -> None:
    assert mutants.main(["--file", "vitviz/steps/prediction.py", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [m.name for m in mutants.MUTANTS if m.path == "vitviz/steps/prediction.py"]
    assert len(listed) >= 2

    assert mutants.main(["--file", "steps/prediction.py,steps/vectors.py", "-k", "handout-", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [
        "handout-centre-patch-one-left",
        "handout-lens-rank-from-zero",
        "handout-occlusion-share-of-the-tokens",
    ]
