"""The bad (and awkward) image files the project tries, each built in memory.

Used by tests/app/test_bad_inputs.py, and by ``python -m tests.bad_inputs`` to print the table in
docs/bad-inputs.md (a test checks that the table says what load_image really answers).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from tests.helpers import lossless_webp


def _encode(image: Image.Image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **kwargs)
    return buffer.getvalue()


def _noise(size=(64, 48)) -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8))


def _animated(fmt: str) -> bytes:
    frames = [Image.new("RGB", (16, 16), c) for c in ((255, 0, 0), (0, 0, 255), (0, 255, 0))]
    buffer = io.BytesIO()
    frames[0].save(buffer, fmt, save_all=True, append_images=frames[1:], duration=100, loop=0)
    return buffer.getvalue()


def _large_photo() -> bytes:
    """A 48-megapixel JPEG (8000 x 6000, a phone camera's largest): smooth, as a photo is."""
    rng = np.random.default_rng(0)
    return _encode(Image.fromarray(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)).resize((8000, 6000)), "JPEG")


def _exif_rotated() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
    return _encode(Image.new("RGB", (40, 100), (10, 200, 10)), "JPEG", exif=exif.tobytes())


def _palette_transparent() -> bytes:
    image = Image.new("P", (8, 8), 0)
    image.putpalette([0, 0, 0, 255, 0, 0] + [0, 0, 0] * 254)
    return _encode(image, "PNG", transparency=0)


def _truncated(fmt: str) -> bytes:
    data = _encode(_noise(), fmt)
    return data[: len(data) // 2]


# (what the user uploads, how to make it, whether it is accepted)
CASES: list[tuple[str, Callable[[], bytes], bool]] = [
    ("an empty file", lambda: b"", False),
    ("a text file renamed .png", lambda: b"These are my notes for Monday.\n", False),
    ("a PDF renamed .png", lambda: b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n", False),
    ("an unknown format (a ZIP archive)", lambda: b"PK\x03\x04" + bytes(60), False),
    ("a truncated JPEG", lambda: _truncated("JPEG"), False),
    ("a truncated PNG", lambda: _truncated("PNG"), False),
    ("a decompression bomb (20000x20000 PNG)", lambda: _encode(Image.new("1", (20000, 20000)), "PNG"), False),
    ("an animated GIF", lambda: _animated("GIF"), True),
    ("an animated WebP", lambda: _animated("WEBP"), True),
    (
        "a 16-bit PNG",
        lambda: _encode(Image.fromarray(np.linspace(0, 65535, 64, dtype=np.uint16).reshape(8, 8)), "PNG"),
        True,
    ),
    ("a CMYK JPEG", lambda: _encode(Image.new("CMYK", (16, 16), (0, 200, 200, 0)), "JPEG"), True),
    ("a palette PNG with transparency", _palette_transparent, True),
    ("a grayscale JPEG", lambda: _encode(Image.new("L", (16, 16), 90), "JPEG"), True),
    ("an RGBA PNG (half transparent)", lambda: _encode(Image.new("RGBA", (16, 16), (255, 0, 0, 128)), "PNG"), True),
    ("an LA PNG (grey + alpha)", lambda: _encode(Image.new("LA", (16, 16), (0, 0)), "PNG"), True),
    ("a 1x1 image", lambda: _encode(Image.new("RGB", (1, 1), (9, 9, 9)), "PNG"), True),
    ("a 10000x20 strip", lambda: _encode(Image.new("RGB", (10000, 20), (5, 5, 200)), "PNG"), True),
    ("a photo with an EXIF rotation", _exif_rotated, True),
    ("a 6900x6900 lossless WebP (44 kB)", lambda: lossless_webp(6900), True),
    ("a 48-megapixel JPEG (8000x6000)", _large_photo, True),
    ("a PNG over the pixel limit (7100x7100)", lambda: _encode(Image.new("1", (7100, 7100)), "PNG"), False),
]


def outcome(data: bytes, lang: str = "en") -> str:
    """What the user sees: the error sentence, or what happened to an accepted image."""
    from vitviz.models.data import ImageError, image_notes, load_image

    try:
        image = load_image(data)
    except ImageError as err:
        return err.sentence(lang)
    notes = " ".join(image_notes(image, lang))
    return f"{image.width}x{image.height} RGB" + (f"; {notes}" if notes else "")


def table() -> str:
    """The markdown table of docs/bad-inputs.md."""
    rows = ["| upload | accepted | what the user sees | 한국어 화면 |", "|---|---|---|---|"]
    for name, make, accepted in CASES:
        data = make()
        rows.append(f"| {name} | {'yes' if accepted else 'no'} | {outcome(data)} | {outcome(data, 'ko')} |")
    return "\n".join(rows) + "\n"


# ---- model names a visitor types (issue 40) ---------------------------------------------------


def model_outcomes() -> list[tuple[str, str, str]]:
    """(what is typed, the English sentence, the Korean one) for each hostile model name, on a
    server with one model folder (``<models>``) and no downloads, and for uploads; the typed path
    shows as ``<name>``. Builds its files in a temporary folder and removes them."""
    import json
    import os
    import pickle
    import tempfile

    from vitviz.models import zoo
    from vitviz.models.config import ViTConfig
    from vitviz.models.model import VisionTransformer
    from vitviz.server import access

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        models, private = Path(tmp) / "models", Path(tmp) / "private"
        models.mkdir()
        private.mkdir()
        policy = access.Policy(model_dirs=(models.resolve(),))
        tiny = VisionTransformer(
            ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=1, num_heads=2)
        )
        zoo.save(tiny, private / "planted.safetensors")
        zoo.save(tiny, models / "mismatch.safetensors")
        meta = json.loads((models / "mismatch.json").read_text())
        meta["config"]["depth"] = 2
        (models / "mismatch.json").write_text(json.dumps(meta))
        (models / "escape.safetensors").symlink_to(private / "planted.safetensors")
        os.mkfifo(models / "pipe.safetensors")
        (models / "notes.pt").write_text("These are my notes for Monday.\n")
        (models / "empty.pt").write_bytes(b"")
        (models / "broken.safetensors").write_bytes(b"\x00" * 20)
        with open(models / "evil.pth", "wb") as file:
            pickle.dump({"weight": _RunsCode()}, file)
        typed = [
            ("an unknown name", "no-such-model"),
            ("a valid checkpoint outside the model folders", str(private / "planted.safetensors")),
            ("the password-hash file", "/etc/shadow"),
            ("the server's own environment", "/proc/self/environ"),
            ("a folder outside the model folders", str(private)),
            ("a symlink in the model folder to a file outside it", str(models / "escape.safetensors")),
            ("a FIFO (named pipe) in the model folder", str(models / "pipe.safetensors")),
            ("a text file named .pt", str(models / "notes.pt")),
            ("an empty .pt file", str(models / "empty.pt")),
            ("a broken .safetensors file", str(models / "broken.safetensors")),
            ("a pickle that would run code when loaded", str(models / "evil.pth")),
            ("weights that do not match their json config", str(models / "mismatch.safetensors")),
            ("a hub name on a server that does not download", "timm:deit_tiny_patch16_224"),
            ("a path dressed as a hub name", "hf:../../etc/passwd"),
        ]
        for what, name in typed:
            rows.append(
                (what, *_sentences(lambda name=name: zoo.load(name, device="cpu", policy=policy), name, models))
            )
        hub = access.Policy(allow_hub=True)  # HF_HUB_OFFLINE: the tests' machine has no network
        rows.append(
            (
                "a hub name with no network",
                *_sentences(lambda: zoo.load("hf:google/vit-base-patch16-224", policy=hub), None, models),
            )
        )
        uploads = [
            ("an upload of a text file", {"notes.txt": b"hello"}),
            ("an upload of a broken .safetensors file", {"mine.safetensors": b"\x00" * 64}),
        ] + [(what, files) for what, files, _ in hostile_uploads()]
        for what, files in uploads:
            rows.append((what, *_sentences(lambda files=files: zoo.load_upload(files, access.Policy()), None, models)))
    return rows


def hostile_uploads() -> list[tuple[str, dict[str, bytes], str]]:
    """(what, the uploaded files, the sentence's key) for checkpoints built to cost the server
    memory or time, or to crash the page that draws them: tiny files whose json asks for a huge
    model, configs of the wrong kind, weights that are not numbers (issue 53)."""
    import json

    import torch
    from safetensors.torch import save

    from vitviz.models.config import ViTConfig
    from vitviz.models.model import VisionTransformer

    tiny_config = ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=1, num_heads=2)
    torch.manual_seed(0)
    tiny = VisionTransformer(tiny_config)
    weights = save({k: v.contiguous() for k, v in tiny.state_dict().items()})
    stub = save({"x": torch.zeros(2)})  # 80-odd bytes: the json alone describes the model

    def with_config(**changes: object) -> dict[str, bytes]:
        config = {**tiny_config.to_dict(), **changes}
        return {"w.safetensors": stub, "w.json": json.dumps({"config": config}).encode()}

    def broken(value: float) -> dict[str, bytes]:
        state = {k: v.clone() for k, v in tiny.state_dict().items()}
        state["head.weight"][0, 0] = value
        return {"w.safetensors": save(state), "w.json": json.dumps({"config": tiny_config.to_dict()}).encode()}

    def card(**fields: object) -> dict[str, bytes]:
        return {"w.safetensors": weights, "w.json": json.dumps({"config": tiny_config.to_dict(), **fields}).encode()}

    big = {"image_size": 512, "patch_size": 4, "embed_dim": 8, "num_heads": 1, "depth": 12}
    many_tokens = VisionTransformer(ViTConfig(**{**tiny_config.to_dict(), **big, "preprocess": None}))
    return [
        (
            "a json asking for embed_dim 8192 (80 bytes of weights)",
            with_config(embed_dim=8192, depth=4, num_heads=8),
            "model.budget_params",
        ),
        (
            "a json asking for embed_dim 16384 and 12 blocks",
            with_config(embed_dim=16384, depth=12, num_heads=16),
            "model.budget_params",
        ),
        ("a json asking for 40,000 blocks", with_config(depth=40_000), "model.budget_shape"),
        ("a json asking for 16,384 tokens", with_config(**big, preprocess=None), "model.budget_memory"),
        (
            "a valid model of 16,384 tokens",
            {
                "w.safetensors": save({k: v.contiguous() for k, v in many_tokens.state_dict().items()}),
                "w.json": json.dumps({"config": many_tokens.config.to_dict()}).encode(),
            },
            "model.budget_memory",
        ),
        ("mlp_ratio -1", with_config(mlp_ratio=-1), "model.load_failed"),
        ("mlp_ratio 1e308", with_config(mlp_ratio=1e308), "model.load_failed"),
        ("num_classes 100,001", with_config(num_classes=100_001, class_names=[]), "model.budget_shape"),
        ("num_classes 1e10", with_config(num_classes=1e10, class_names=[]), "model.load_failed"),
        ("depth 0", with_config(depth=0), "model.budget_shape"),
        (
            "a json nested 100,000 deep",
            {"w.safetensors": weights, "w.json": b"[" * 100_000 + b"]" * 100_000},
            "model.bad_json",
        ),
        ('a card whose test_accuracy is "high"', card(test_accuracy="high"), "model.load_failed"),
        (
            'a card whose one-view accuracy is "high"',
            card(evaluated={"one_view_accuracy": "high"}),
            "model.load_failed",
        ),
        ("a weight that is NaN", broken(float("nan")), "model.not_finite"),
        ("a weight that is infinite", broken(float("inf")), "model.not_finite"),
        ("timm-style weights without a json", {"w.safetensors": weights}, "model.needs_heads"),
    ]


class _RunsCode:
    def __reduce__(self):
        return (print, ("this would have run",))


def _sentences(load, name: str | None, models: Path) -> tuple[str, str]:
    from vitviz.models import zoo
    from vitviz.render.i18n import plain

    try:
        load()
    except zoo.ModelLoadError as err:
        texts = [plain(err.sentence(lang)) for lang in ("en", "ko")]  # as read: paths hold "_"
    else:
        raise AssertionError(f"{name} loaded")
    if name is not None:
        texts = [text.replace(repr(name), "<name>").replace(Path(name).name, "<name>") for text in texts]
    return tuple(
        text.replace(str(models.resolve()), "<models>").replace("|", "\\|").replace("\n", " ") for text in texts
    )


def model_table() -> str:
    """The markdown table of model names in docs/bad-inputs.md."""
    rows = ["| typed or uploaded | what the user sees | 한국어 화면 |", "|---|---|---|"]
    rows += [f"| {what} | {en} | {ko} |" for what, en, ko in model_outcomes()]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    import sys

    print(model_table() if sys.argv[1:] == ["models"] else table(), end="")
