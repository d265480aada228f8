import gzip
import io

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from tests.helpers import lossless_webp, write_idx
from vitviz.models import data as vdata
from vitviz.models.config import CIFAR10_CLASSES, Preprocess
from vitviz.models.data import ImageError, image_notes, load_image, preprocess_batch, resize_and_crop, to_tensor


def encode(image: Image.Image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **kwargs)
    return buffer.getvalue()


def rgb(size=(8, 6), colour=(200, 30, 10)) -> Image.Image:
    return Image.new("RGB", size, colour)


def test_plain_jpeg_and_png():
    for fmt in ("JPEG", "PNG", "WEBP", "BMP"):
        image = load_image(encode(rgb(), fmt))
        assert image.mode == "RGB" and image.size == (8, 6)


@pytest.mark.parametrize(
    "data, words",
    [
        (b"", "empty"),
        (b"hello, this is text", "not an image"),
        (b"%PDF-1.4\n%...", "not an image"),
    ],
)
def test_non_images_get_a_sentence(data, words):
    with pytest.raises(ImageError, match=words):
        load_image(data)


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_truncated_files(fmt):
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    data = encode(noise, fmt)
    with pytest.raises(ImageError, match="damaged or incomplete"):
        load_image(data[: len(data) // 2])


def test_pixel_limit():
    data = encode(Image.new("L", (3000, 3000)), "PNG")
    with pytest.raises(ImageError, match="megapixels"):
        load_image(data, max_pixels=1_000_000)


def test_modes_become_rgb():
    sixteen = Image.fromarray(np.full((4, 4), 65535, dtype=np.uint16))
    assert np.asarray(load_image(encode(sixteen, "PNG")))[0, 0].tolist() == [255, 255, 255]
    cmyk = Image.new("CMYK", (4, 4), (0, 255, 255, 0))
    out = np.asarray(load_image(encode(cmyk, "JPEG")))
    assert out[0, 0, 0] > 200 and out[0, 0, 1] < 60
    grey = load_image(encode(Image.new("L", (4, 4), 77), "PNG"))
    assert np.asarray(grey)[0, 0].tolist() == [77, 77, 77]
    assert load_image(encode(Image.new("1", (4, 4), 1), "PNG")).mode == "RGB"


def test_transparency_is_composited_on_white():
    clear = Image.new("RGBA", (4, 4), (255, 0, 0, 0))
    assert np.asarray(load_image(encode(clear, "PNG")))[0, 0].tolist() == [255, 255, 255]
    half = Image.new("LA", (4, 4), (0, 128))
    assert np.asarray(load_image(encode(half, "PNG")))[0, 0].tolist() == [127, 127, 127]
    palette = Image.new("P", (4, 4), 0)
    palette.putpalette([0, 0, 0] * 256)
    palette.info["transparency"] = 0
    assert np.asarray(load_image(encode(palette, "PNG", transparency=0)))[0, 0].tolist() == [255, 255, 255]


def test_animated_gif_gives_first_frame_and_says_so():
    frames = [Image.new("RGB", (4, 4), c) for c in ((255, 0, 0), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:])
    image = load_image(buffer.getvalue())
    assert np.asarray(image)[0, 0, 0] > 200
    assert "first frame" in " ".join(image_notes(image))


def test_exif_rotation_is_applied():
    tall = rgb((4, 10))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    image = load_image(encode(tall, "JPEG", exif=exif.tobytes()))
    assert image.size == (10, 4)


def test_tiny_and_extreme_images_preprocess():
    pre = Preprocess(resize=32, crop=(32, 32))
    assert to_tensor(load_image(encode(rgb((1, 1)), "PNG")), pre).shape == (1, 3, 32, 32)
    strip = load_image(encode(rgb((10000, 20)), "PNG"))
    assert resize_and_crop(strip, pre).size == (32, 32)


def test_resize_and_crop_matches_resize_then_crop():
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 255, (60, 90, 3), dtype=np.uint8)).resize((300, 200), Image.BICUBIC)
    pre = Preprocess(resize=100, crop=(80, 80), interpolation="bilinear")
    ours = np.asarray(resize_and_crop(image, pre), dtype=np.float32)
    two_step = image.resize((150, 100), Image.BILINEAR).crop((35, 10, 115, 90))
    assert np.abs(ours - np.asarray(two_step, dtype=np.float32)).mean() < 3.0


def _image_set(classes: list[str], files: list[str], source: str) -> vdata.ImageSet:
    n = len(files)
    return vdata.ImageSet(
        torch.zeros(n, 3, 2, 2, dtype=torch.uint8), torch.zeros(n, dtype=torch.long), classes, files, source, "x"
    )


def test_dataset_label_names_cifar10_and_its_jpeg_copy():
    cifar = list(CIFAR10_CLASSES)
    assert (
        vdata.dataset_label(_image_set(cifar, ["cat/0001.jpg", "dog/0002.jpg"], "/d/cifar10-jpeg/test"))
        == "CIFAR-10 (JPEG copy)"
    )
    assert vdata.dataset_label(_image_set(cifar, ["cat/0001.png"], "/d/pngs/train")) == "CIFAR-10 (image folder)"
    assert vdata.dataset_label(_image_set(cifar, ["cifar10/test/0"], "torchvision CIFAR10 (/root)")) == "CIFAR-10"
    assert vdata.dataset_label(_image_set(["a", "b"], ["a/1.png"], "/d/flowers/train")) == "flowers"
    assert vdata.dataset_label(_image_set(["a", "b"], ["a/1.png"], "/d/flowers")) == "flowers"


def test_random_folder_image_reaches_every_image_of_an_uneven_folder(tmp_path):
    import random
    from collections import Counter

    for name, count in (("a", 1), ("b", 3), ("c", 0)):
        (tmp_path / name).mkdir()
        for i in range(count):
            Image.new("RGB", (4, 4)).save(tmp_path / name / f"{i}.png")
    (tmp_path / "b" / "notes.txt").write_text("not an image")
    rng = random.Random(0)
    picks = Counter(vdata.random_folder_image(tmp_path, rng) for _ in range(400))
    assert set(picks) == {("a", 0), ("b", 0), ("b", 1), ("b", 2)}  # every image, nothing else
    assert min(picks.values()) > 60  # each about 100 of 400: images, not classes, are equally likely
    with pytest.raises(FileNotFoundError):
        vdata.random_folder_image(tmp_path / "c")


def test_a_class_folder_is_listed_again_once_it_changes(tmp_path):
    import time

    (tmp_path / "a").mkdir()
    for name in ("1.png", "3.png"):
        Image.new("RGB", (4, 4), "red").save(tmp_path / "a" / name)
    assert vdata.count_images(tmp_path / "a") == 2
    time.sleep(0.05)  # past the file system's clock tick, as a teacher's next copy would be
    Image.new("RGB", (4, 4), "blue").save(tmp_path / "a" / "2.png")
    assert vdata.count_images(tmp_path / "a") == 3
    assert vdata.folder_image_bytes(tmp_path, "a", 1) == (tmp_path / "a" / "2.png").read_bytes()  # sorted order
    time.sleep(0.05)
    (tmp_path / "a" / "1.png").unlink()
    assert vdata.count_images(tmp_path / "a") == 2 and vdata.folder_image_bytes(tmp_path, "a", 2) is None


def test_cache_writers_that_race_each_leave_a_whole_file(tmp_path):
    # the two ranks of a torchrun decode the same dataset and write the same cache file at once
    from concurrent.futures import ThreadPoolExecutor

    target = tmp_path / "datasets" / "same.pt"
    payloads = [{"writer": torch.full((20_000,), float(i))} for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda payload: vdata.save_atomic(payload, target), payloads * 4))
    stored = torch.load(target, weights_only=True)
    assert stored["writer"].unique().numel() == 1  # one writer's whole file, not a mix
    assert [p.name for p in target.parent.iterdir()] == ["same.pt"]  # no temporary files left


@pytest.mark.parametrize(
    ("pre", "in_chans"),
    [
        (Preprocess(resize=(32, 32), mean=(0.5,) * 3, std=(0.25,) * 3), 3),  # the CIFAR model: only normalised
        (Preprocess(resize=73, crop=(64, 64)), 3),  # a bigger model: resize and centre crop
        (Preprocess(resize=(28, 28), mean=(0.5,), std=(0.5,)), 1),  # a grayscale model on colour images
    ],
)
def test_a_batch_is_preprocessed_exactly_as_the_tour_preprocesses_each_image(pre, in_chans):
    images = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    batch = preprocess_batch(images, pre, in_chans)
    one_by_one = torch.cat([to_tensor(Image.fromarray(im.permute(1, 2, 0).numpy()), pre, in_chans) for im in images])
    assert batch.shape == one_by_one.shape == (4, in_chans, *pre.output_size())
    assert torch.equal(batch, one_by_one)


def test_a_dark_ground_model_inverts_a_light_edged_photo_and_says_so():
    pre = Preprocess(resize=(28, 28), mean=(0.0,), std=(1.0,), dark_background=True)
    shirt = Image.new("L", (56, 56), 240)  # a dark shirt photographed on a white table
    shirt.paste(30, (14, 14, 42, 42))
    assert vdata.inverts(shirt, pre, 1)
    pixels = to_tensor(shirt, pre, 1)[0, 0]  # (28, 28) in [0, 1]
    assert pixels[0, 0] < 0.1 and pixels[14, 14] > 0.8  # now a light shirt on a dark ground
    garment = Image.eval(shirt, lambda v: 255 - v)  # already light on dark, as the dataset draws it
    assert not vdata.inverts(garment, pre, 1)
    assert torch.allclose(to_tensor(garment, pre, 1)[0, 0], pixels, atol=1 / 255)  # the same picture either way
    plain = Preprocess(resize=(28, 28), mean=(0.0,), std=(1.0,))  # any other model: never inverted
    assert not vdata.inverts(shirt, plain, 1) and to_tensor(shirt, plain, 1)[0, 0, 0, 0] > 0.9
    batch = torch.stack([torch.from_numpy(np.asarray(im.resize((28, 28))).copy())[None] for im in (shirt, garment)])
    edges = preprocess_batch(batch, pre, 1)[:, 0, 0, 0]  # both dark-edged now: 255 - 240
    assert torch.allclose(edges, torch.full((2,), 15 / 255))


# ---- MNIST and Fashion-MNIST (idx files) ----


@pytest.mark.parametrize("gz", [True, False])
def test_idx_files_read_back_as_written(tmp_path, gz):
    images = np.random.default_rng(0).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    for image_stem, label_stem in vdata.IDX_FILES.values():
        write_idx(tmp_path / (image_stem + (".gz" if gz else "")), images, gz)
        write_idx(tmp_path / (label_stem + (".gz" if gz else "")), labels, gz)
    data = vdata.load_split(tmp_path, "test")  # a folder of the four files: read as MNIST
    assert data.images.shape == (5, 1, 28, 28) and data.images.dtype == torch.uint8
    assert torch.equal(data.images[:, 0], torch.from_numpy(images)) and data.labels.tolist() == [3, 1, 4, 1, 5]
    assert data.classes == list("0123456789") and vdata.describe(data)["dataset"] == "MNIST"
    with pytest.raises(ValueError, match="not an idx file"):
        (tmp_path / "bad").write_bytes(b"\x00\x00\x0d\x01")
        vdata.read_idx(tmp_path / "bad")


@pytest.mark.fashion_mnist
def test_the_installed_fashion_mnist_reads_as_torchvision_reads_it(tmp_path):
    from torchvision.datasets.mnist import read_image_file, read_label_file

    test = vdata.load_split("fashion-mnist", "test")
    assert (
        len(test) == 10_000 and test.classes[0] == "T-shirt/top" and vdata.describe(test)["dataset"] == "Fashion-MNIST"
    )
    for stem, mine in (("t10k-images-idx3-ubyte", test.images[:, 0]), ("t10k-labels-idx1-ubyte", test.labels)):
        plain = tmp_path / stem
        plain.write_bytes(gzip.decompress((vdata.DEBIAN_FOLDERS["fashion-mnist"] / f"{stem}.gz").read_bytes()))
        theirs = read_image_file(str(plain)) if "images" in stem else read_label_file(str(plain))
        assert torch.equal(mine, theirs.to(mine.dtype))
    train = vdata.load_split("fashion-mnist", "train")
    assert len(train) == 60_000 and train.fingerprint != test.fingerprint
    assert torch.bincount(test.labels).tolist() == [1000] * 10


def test_folder_classes_are_listed_again_when_a_class_folder_comes_or_goes(tmp_path):
    import os

    from vitviz.models.data import folder_classes

    (tmp_path / "cat").mkdir()
    (tmp_path / "dog").mkdir()
    (tmp_path / "notes.txt").write_text("not a class")
    assert folder_classes(tmp_path) == ["cat", "dog"]
    (tmp_path / "bird").mkdir()
    os.utime(tmp_path, ns=(0, tmp_path.stat().st_mtime_ns + 1))  # a coarse clock: the change still shows
    assert folder_classes(tmp_path) == ["bird", "cat", "dog"]


# ---- large pictures: a pixel limit, and scaled down as they are opened (issue 53) ---------------


@pytest.mark.parametrize("lang, words", [("en", "over 50 megapixels"), ("ko", "50 메가픽셀 초과")])
def test_a_decompression_bomb_gets_a_sentence_in_each_language(lang, words):
    bomb = encode(Image.new("1", (20000, 20000)), "PNG")  # 400 megapixels in about 50 kB
    assert len(bomb) < 100_000
    with pytest.raises(ImageError) as refused:
        load_image(bomb)
    assert words in refused.value.sentence(lang)


def test_over_the_pixel_limit_is_refused_before_decoding(monkeypatch):
    data = encode(Image.new("RGB", (7100, 7100)), "WEBP", lossless=True, quality=0, method=0)  # 50.4 megapixels
    monkeypatch.setattr(Image.Image, "load", lambda self: pytest.fail("decoded a picture over the limit"))
    with pytest.raises(ImageError) as refused:
        load_image(data)
    assert refused.value.sentence("en").startswith("The image is 7100x7100 pixels (50.4 megapixels), over the limit")
    assert "7100x7100 픽셀" in refused.value.sentence("ko")


def test_a_6900_px_webp_is_scaled_down_to_the_working_size_and_says_so():
    image = load_image(lossless_webp(6900))
    assert image.size == (1024, 1024) and image.width * image.height <= vdata.WORK_PIXELS
    assert vdata.original_size(image) == (6900, 6900)
    assert "6900x6900" in " ".join(image_notes(image)) and "1024x1024" in " ".join(image_notes(image, "ko"))
    assert np.asarray(image).shape == (1024, 1024, 3)


def test_a_large_jpeg_is_decoded_at_a_fraction_of_its_size(monkeypatch):
    """A 48 MP photo is never held whole: its JPEG draft decodes it at 1/4 scale (2000 x 1500),
    and the resize that follows starts from that."""
    photo = Image.fromarray(np.random.default_rng(0).integers(0, 255, (60, 80, 3), dtype=np.uint8))
    data = encode(photo.resize((8000, 6000), Image.BICUBIC), "JPEG", quality=85)
    resized_from = []
    resize = Image.Image.resize

    def spy(self, size, *args, **kwargs):
        resized_from.append(self.size)
        return resize(self, size, *args, **kwargs)

    monkeypatch.setattr(Image.Image, "resize", spy)
    image = load_image(data)
    assert resized_from == [(2000, 1500)]
    assert image.size == vdata.working_size(8000, 6000) == (1182, 887)
    assert vdata.original_size(image) == (8000, 6000)


def test_scaling_down_keeps_orientation_and_a_panorama_sharp():
    tall = encode(rgb((3000, 1000)), "JPEG", exif=_orientation(6))  # stored wide, shown tall
    image = load_image(tall)
    assert image.size == (591, 1774) and vdata.original_size(image) == (1000, 3000)
    assert "1000x3000" in " ".join(image_notes(image))
    panorama = load_image(encode(rgb((12000, 600)), "PNG"))
    assert panorama.height == vdata.WORK_MIN_SIDE  # the area alone would make it 229 pixels high


def _orientation(value: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = value
    return exif.tobytes()


@pytest.mark.parametrize("mode", ["P", "I;16", "RGBA"])
def test_large_pictures_of_every_mode_scale_down_to_rgb(mode):
    if mode == "I;16":
        picture = Image.fromarray(np.full((1200, 2000), 40000, dtype=np.uint16))
    else:
        picture = Image.new("RGBA", (2000, 1200), (10, 200, 30, 255)).convert(mode)
    image = load_image(encode(picture, "PNG"))
    assert image.mode == "RGB" and image.size == vdata.working_size(2000, 1200) != (2000, 1200)


def test_normal_pictures_reach_the_model_exactly_as_before():
    """Pictures within WORK_PIXELS are not touched: the shipped samples give the pixels an
    independent decode gives, and so the same model input."""
    from vitviz.models import zoo

    pre = Preprocess(resize=248, crop=(224, 224), interpolation="bicubic")
    samples = sorted((zoo.ASSETS / "samples").glob("*.jpg"))
    assert len(samples) >= 4
    for path in samples:
        ours = load_image(path.read_bytes())
        independent = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
        assert np.array_equal(np.asarray(ours), np.asarray(independent)), path.name
        assert torch.equal(to_tensor(ours, pre), to_tensor(independent, pre)), path.name
        assert image_notes(ours) == []
    edge = load_image(encode(rgb((2048, 512)), "PNG"))  # exactly WORK_PIXELS
    assert edge.size == (2048, 512)
