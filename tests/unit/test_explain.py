import sys

import pytest

from vitviz import cli, commandline
from vitviz.models import zoo
from vitviz.models.explain import known_classes, main

SAMPLES = zoo.ASSETS / "samples"


def test_prints_top5_and_every_shape(tmp_path, tiny_config, capsys):
    import torch

    from vitviz.models.model import VisionTransformer

    torch.manual_seed(0)
    zoo.save(VisionTransformer(tiny_config), tmp_path / "tiny.safetensors")
    assert main([str(SAMPLES / "cat-chelsea.jpg"), "--model", str(tmp_path / "tiny.safetensors")]) == 0
    out = capsys.readouterr().out
    assert out.count("%") == 5
    for shape in ["(1,3,32,32)", "(1,32,8,8)", "(1,64,48)", "(1,64,32)", "(1,65,32)", "(1,4,65,65)", "(1,10)"]:
        assert shape in out
    assert "blocks[1].attn" in out


def test_vit_b16_table(capsys):
    assert main([str(SAMPLES / "coffee.jpg"), "--model", "untrained-vit-b16"]) == 0
    out = capsys.readouterr().out
    assert "(1,3,224,224) -> (1,768,14,14) -> (1,196,768) -> (1,196,768) -> (1,197,768) -> ... -> (1,1000)" in out
    assert "UNTRAINED" in out


def test_bad_image_gets_a_sentence(tmp_path, capsys):
    bad = tmp_path / "notes.png"
    bad.write_text("not a picture")
    assert main([str(bad), "--model", zoo.UNTRAINED]) == 2
    assert "not an image" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.jpg")]) == 2


def test_verdict_ranks_the_true_class():
    import pytest
    import torch

    from vitviz.models.prediction import verdict

    names = tuple("abcdefghij")
    probs = torch.tensor([0.0, 3.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]).softmax(-1)
    wrong = verdict(probs, names, "d")
    assert (wrong.predicted, wrong.correct, wrong.rank, wrong.num_classes) == ("b", False, 2, 10)
    assert wrong.probability == pytest.approx(float(probs[3]))
    right = verdict(probs, names, "b")
    assert (right.correct, right.rank) == (True, 1)
    assert verdict(probs, names, "j").rank == 10
    assert verdict(probs, names, "zebra") is None and verdict(probs, names, None) is None
    assert verdict(probs, (), "b") is None  # a model without class names


def test_the_legend_names_red_only_when_an_answer_is_wrong():
    import torch

    from vitviz.models.prediction import legend_key, verdict

    names = ("a", "b", "c")
    says_a, says_b = torch.tensor([0.7, 0.2, 0.1]), torch.tensor([0.1, 0.7, 0.2])
    right, wrong = verdict(says_a, names, "a"), verdict(says_b, names, "a")
    assert legend_key([right]) == "verdict.legend_right" and legend_key([wrong]) == "verdict.legend_wrong"
    assert legend_key([right, right]) == "verdict.legend_right"
    assert legend_key([right, wrong]) == legend_key([wrong, right]) == "verdict.legend_any_wrong"  # charts side by side
    assert legend_key([None, None]) is None and legend_key([]) is None  # no known class: no green to explain
    assert legend_key([right, None]) == "verdict.legend_right"


def test_bars_mark_the_true_class_green():
    from vitviz.render import plots

    colours = plots.bars(["b", "d", "c"], [0.5, 0.3, 0.2], highlight=0, correct=1).data[0].marker.color
    assert colours[0] != colours[2] and colours[1] == plots.TRUE_COLOUR
    assert plots.bars(["b", "d"], [0.6, 0.4], highlight=0, correct=0).data[0].marker.color[0] == plots.TRUE_COLOUR


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_true_class_below_the_top_k_gets_a_green_bar_of_its_own_with_its_rank(lang):
    import torch

    from vitviz.models.prediction import top_k, verdict
    from vitviz.render import plots
    from vitviz.render.i18n import class_label, t
    from vitviz.steps.bars import class_bars

    names = tuple("abcdefgh")
    probs = torch.tensor([0.02, 0.3, 0.25, 0.2, 0.1, 0.08, 0.03, 0.02])  # "a" ranks 7th (tied with "h", below it)
    ranked = top_k(names, probs.log()[None], k=3)
    shown, values = [n for n, _ in ranked], [p for _, p in ranked]
    found = verdict(probs, names, "a")
    assert found.rank == 7 and "a" not in shown
    chart = class_bars(lang, shown, values, "top 3", found, height=90 + 36 * 3)
    bar = chart.data[0]
    assert list(bar.y) == [class_label(n, lang) for n in ("b", "c", "d", "a")]
    assert list(bar.marker.color) == [plots.PREDICTED_COLOUR, *[plots.OTHER_COLOUR] * 2, plots.TRUE_COLOUR]
    assert bar.x[-1] == pytest.approx(0.02)
    assert bar.text[-1] == f"2.0% · {t('verdict.rank_bar', lang, rank=7, n=8)}" and bar.text[0] == "30.0%"
    assert chart.layout.height == 90 + 36 * 4  # one bar's height more: the bars keep their thickness
    (line,) = chart.layout.shapes  # a dotted line sets it apart: it is not 4th
    assert (line.y0, line.y1, line.xref, line.line.dash) == (2.5, 2.5, "x domain", "dot")
    assert chart.layout.xaxis.range[1] > 0.02 + 0.3 * 0.06 * len(bar.text[-1]) - 1e-9  # room for its words

    inside = verdict(probs, names, "c")  # among the bars: green where it is, and said, no bar more
    chart = class_bars(lang, shown, values, "top 3", inside, height=90 + 36 * 3)
    assert list(chart.data[0].marker.color) == [plots.PREDICTED_COLOUR, plots.TRUE_COLOUR, plots.OTHER_COLOUR]
    assert list(chart.data[0].text) == ["30.0%", f"25.0% · {t('verdict.true_bar', lang)}", "20.0%"]
    right = class_bars(lang, shown, values, "top 3", verdict(probs, names, "b"), height=90 + 36 * 3)
    assert list(right.data[0].text) == ["30.0%", "25.0%", "20.0%"]  # right: the top bar, and the verdict says so
    assert len(chart.data[0].y) == 3 and chart.layout.height == 90 + 36 * 3 and not chart.layout.shapes
    unknown = class_bars(lang, shown, values, "top 3", None, height=90 + 36 * 3)  # a photo: the top 3 alone
    assert len(unknown.data[0].y) == 3 and plots.TRUE_COLOUR not in unknown.data[0].marker.color
    assert list(unknown.data[0].text) == ["30.0%", "25.0%", "20.0%"]


# ---- what a newcomer reads on the command line (issue 55) ----


def test_the_answer_says_which_classes_the_model_knows(tmp_path, tiny_config, capsys):
    import torch

    from vitviz.models.model import VisionTransformer

    torch.manual_seed(0)
    zoo.save(VisionTransformer(tiny_config), tmp_path / "tiny.safetensors")
    assert main([str(SAMPLES / "cat-chelsea.jpg"), "--model", str(tmp_path / "tiny.safetensors")]) == 0
    out = capsys.readouterr().out
    names = list(tiny_config.class_names)
    assert f"knows only these {len(names)} classes: {', '.join(names)}." in out  # "92% cat" for a flower
    many = [f"class {n}" for n in range(1000)]
    assert known_classes(many).startswith("The model knows only these 1000 classes (the first: class 0, class 1")


def test_vitviz_app_help_prints_help_and_starts_no_server(monkeypatch, capsys):
    def no_server(*args):
        raise AssertionError(f"a server was started: {args}")

    monkeypatch.setattr(cli.os, "execv", no_server)
    for flag in ("--help", "-h"):
        assert cli.main(["app", flag]) == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: vitviz app") and "--data FOLDER" in out and "--server.address" in out


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_commands_help_names_it_as_called_and_reads_as_text(command, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # cli.main names the command in sys.argv[0]
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: vitviz {command} ")  # not "python -m vitviz.models.explain"
    assert "``" not in out  # a docstring's code marks are not help


def test_a_module_run_on_its_own_names_itself_so(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/runpy.py"])
    assert commandline.prog("vitviz.models.explain") == "python -m vitviz.models.explain"
