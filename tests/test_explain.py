from pathlib import Path

from vitviz import zoo
from vitviz.explain import main

SAMPLES = Path(__file__).resolve().parents[1] / "assets" / "samples"


def test_prints_top5_and_every_shape(tmp_path, tiny_config, capsys):
    import torch

    from vitviz.model import VisionTransformer

    torch.manual_seed(0)
    zoo.save(VisionTransformer(tiny_config), tmp_path / "tiny.safetensors")
    assert main([str(SAMPLES / "cat-chelsea.jpg"), "--model", str(tmp_path / "tiny.safetensors")]) == 0
    out = capsys.readouterr().out
    assert out.count("%") == 5
    for shape in ["(1,3,32,32)", "(1,32,8,8)", "(1,64,48)", "(1,64,32)", "(1,65,32)", "(1,4,65,65)", "(1,10)"]:
        assert shape in out
    assert "blocks.1.attn" in out


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
