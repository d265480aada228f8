"""The batched augmentation of ``loader="device"`` (vitviz.training.augment): each operation against
torchvision's own kernel image by image, crops and flips pixel by pixel, the policies' draws
against torchvision's tables, erasing, mixing and determinism."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from torchvision.transforms import v2

from tests.helpers import make_image_folder, tiny_recipe
from vitviz.models.config import cifar10_vit_config
from vitviz.models.data import load_split
from vitviz.training import augment
from vitviz.training import train as train_module

PRE = cifar10_vit_config().preprocess
# every device this machine has: on a lent GPU the same checks run there against the CPU's kernels
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pictures(n: int = 48, channels: int = 3, seed: int = 0) -> torch.Tensor:
    """Random uint8 pictures, a few of low contrast (where AutoContrast and Equalize act)."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (n, channels, 32, 32), generator=generator, dtype=torch.uint8)
    images[: n // 2] = images[: n // 2] // 3 + 60
    return images


def levels_of(pixels: torch.Tensor) -> torch.Tensor:
    """Normalised pixels back to levels 0-255."""
    mean, std = (torch.tensor(v).view(1, -1, 1, 1) for v in (PRE.mean, PRE.std))
    return (pixels.cpu() * std + mean) * 255.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("name", sorted(augment.OPERATIONS))
def test_each_operation_is_torchvisions_with_a_magnitude_per_image(name, channels, device):
    reference = v2.TrivialAugmentWide()  # the widest magnitudes: rotations to 135 degrees, shifts of 32 pixels
    images = pictures(channels=channels)
    generator = torch.Generator().manual_seed(1)
    values, signed = reference._AUGMENTATION_SPACE.get(name, (lambda *a: None, False))
    bins = values(31, 32, 32)
    if bins is None:
        magnitudes = torch.zeros(len(images), dtype=torch.float64)
    else:
        magnitudes = bins[torch.randint(1, 31, (len(images),), generator=generator)].double()
        if signed:
            magnitudes = torch.where(torch.rand(len(images), generator=generator) < 0.5, -magnitudes, magnitudes)
    ours = augment.OPERATIONS[name](images.float().to(device), magnitudes.to(device)).cpu()
    theirs = torch.stack(
        [
            reference._apply_image_or_video_transform(
                image, name, m, interpolation=v2.InterpolationMode.NEAREST, fill=reference._fill
            )
            for image, m in zip(images, magnitudes.tolist(), strict=True)
        ]
    ).float()
    assert ours.shape == images.shape and ours.dtype == torch.float32
    if device == "cpu":
        assert torch.equal(ours, theirs)  # bit for bit, every image with its own magnitude
    else:  # another device's arithmetic may round a level the other way
        assert (ours - theirs).abs().max() <= 1 and (ours == theirs).float().mean() > 0.999
    if name not in ("Color",) or channels == 3:
        changed = [not torch.equal(a, b) for a, b in zip(ours, images.float(), strict=True)]
        assert sum(changed) > len(images) // 3  # it did something to many images


def test_apply_ops_gives_each_image_its_own_operation():
    images = pictures(12).float()
    names = ["Identity", "Invert", "Rotate", "Solarize", "Invert", "Identity"] * 2
    ops = torch.tensor([augment.OPS.index(n) for n in names])
    magnitudes = torch.linspace(-20, 0.7, 12, dtype=torch.float64).abs()
    out = augment.apply_ops(images, ops, magnitudes)
    for i, name in enumerate(names):
        if name == "Identity":
            assert torch.equal(out[i], images[i])
        else:
            alone = augment.OPERATIONS[name](images[i : i + 1], magnitudes[i : i + 1])[0]
            assert torch.equal(out[i], alone), (i, name)


@pytest.mark.parametrize("policy", ["autoaugment", "trivialaugment", "randaugment"])
def test_a_policy_draws_torchvisions_operations_magnitudes_and_signs(policy):
    drawn = augment.Policy(policy, 32, 32)
    ops, magnitudes = drawn.draw(20_000, torch.Generator().manual_seed(0))
    reference = augment.POLICIES[policy]() if policy != "autoaugment" else v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10)
    space = reference._AUGMENTATION_SPACE
    bins = 10 if policy == "autoaugment" else reference.num_magnitude_bins
    assert ops.shape == magnitudes.shape == ({"trivialaugment": 1}.get(policy, 2), 20_000)
    for op in ops.unique().tolist():
        name = augment.OPS[op]
        values = {0.0} if name == "Identity" else None
        if name != "Identity":
            table = space[name][0](bins, 32, 32)
            values = {0.0} if table is None else {round(float(v), 5) for v in table}
        seen = magnitudes[ops == op]
        assert {round(v, 5) for v in seen.abs().tolist()} <= values, name
        if name != "Identity" and space[name][1]:  # signed: about half negated (bin 0 has no sign)
            assert 0.4 < (seen[seen != 0] < 0).float().mean() < 0.6, name
        else:
            assert (seen >= 0).all(), name
    if policy == "autoaugment":  # each image one of the 25 pairs, each half applied with its probability
        pairs = reference._policies
        applied = (ops != 0).float().mean().item()
        expected = sum(p for pair in pairs for _, p, _ in pair) / (2 * len(pairs))
        assert applied == pytest.approx(expected, abs=0.01)
        allowed = {(augment.OPS.index(a), augment.OPS.index(b)) for (a, _, _), (b, _, _) in pairs}
        both = (ops[0] != 0) & (ops[1] != 0)
        assert {tuple(pair) for pair in ops[:, both].T.tolist()} <= allowed
    else:
        counts = torch.bincount(ops.flatten(), minlength=len(augment.OPS)).float()
        share = counts[counts > 0] / counts.sum()
        assert len(share) == len(space) and share.min() > 0.8 / len(space)  # uniform over the space


def test_crops_are_shifts_of_the_reflect_padded_image_and_flips_mirror_them():
    images = pictures(40)
    generator = torch.Generator().manual_seed(3)
    top, left = torch.randint(0, 9, (2, 40), generator=generator)
    flip = torch.rand(40, generator=generator) < 0.5
    out = augment.crop_and_flip(images, top, left, flip, padding=4)
    padded = F.pad(images.float(), (4, 4, 4, 4), mode="reflect")
    for i in range(40):
        crop = padded[i, :, top[i] : top[i] + 32, left[i] : left[i] + 32]
        expected = crop.flip(-1) if flip[i] else crop
        assert torch.equal(out[i].float(), expected), i
    assert out.dtype == torch.uint8 and flip.any() and (~flip).any()
    assert len(set(zip(top.tolist(), left.tolist(), strict=True))) > 20
    still = augment.crop_and_flip(images, torch.zeros(40, dtype=torch.long), torch.zeros(40, dtype=torch.long), torch.zeros(40, dtype=torch.bool), 0)  # fmt: skip
    assert torch.equal(still, images)


def test_the_whole_batch_crops_flips_and_normalises_what_it_drew():
    batch = augment.BatchAugment((32, 32), PRE, crop_padding=4, flip=True)
    images = pictures(32)
    draws = batch.draw(32, torch.Generator().manual_seed(5))
    out = batch(images, draws)
    assert out.shape == (32, 3, 32, 32) and out.dtype == torch.float32
    padded = F.pad(images.float(), (4, 4, 4, 4), mode="reflect")
    for i in range(32):
        crop = padded[i, :, draws.top[i] : draws.top[i] + 32, draws.left[i] : draws.left[i] + 32]
        expected = crop.flip(-1) if draws.flip[i] else crop
        torch.testing.assert_close(levels_of(out[i : i + 1])[0], expected, atol=1e-3, rtol=0)
    assert 8 < draws.flip.sum() < 24


def test_random_erasing_draws_boxes_as_torchvision_does():
    boxes = augment.draw_erasing(4000, 32, 32, 0.25, torch.Generator().manual_seed(0))
    erased = boxes[:, 2] > 0
    assert erased.float().mean() == pytest.approx(0.25, abs=0.03)
    top, left, tall, wide = boxes[erased].T
    assert ((tall < 32) & (wide < 32) & (top >= 0) & (left >= 0)).all()
    assert ((top + tall <= 32) & (left + wide <= 32)).all()  # inside the image
    area = (tall * wide).float() / 1024
    assert area.min() >= 0.015 and area.max() <= 0.36  # 2-33% of the area, rounded to whole pixels
    assert (tall.float() / wide).min() < 0.5 and (tall.float() / wide).max() > 2  # tall and wide boxes
    assert (boxes[~erased] == 0).all()

    batch = augment.BatchAugment((32, 32), PRE, random_erasing=1.0, cutout=8)
    images = pictures(16) // 2 + 100  # no level normalises to exactly 0
    draws = batch.draw(16, torch.Generator().manual_seed(1))
    out = batch(images, draws)
    blank = (out == 0).all(dim=1)
    mask = augment.box_mask(draws.erase, 32, 32) | augment.box_mask(
        torch.cat([draws.cutout, torch.full_like(draws.cutout, 8)], 1), 32, 32
    )
    assert torch.equal(blank, mask)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_image_folder(tmp_path_factory.mktemp("data"), per_class=40)


def device_batches(dataset, **changes) -> train_module.DeviceBatches:
    recipe = tiny_recipe(dataset, loader="device", **changes)
    data = load_split(dataset, "train", (32, 32))
    steps = len(data) // recipe.batch_size
    return train_module.DeviceBatches(data, recipe, (32, 32), PRE, steps, torch.device("cpu"))


@pytest.mark.parametrize("policy", ["autoaugment", "trivialaugment", "randaugment", "none"])
def test_device_batches_keep_shapes_and_labels_and_come_from_their_seed(dataset, policy):
    recipe = dict(augment=policy, crop_padding=4, random_erasing=0.5, cutout=4)
    batches = device_batches(dataset, **recipe)
    pixels, labels, _ = batches[0]
    assert pixels.shape == (32, 3, 32, 32) and pixels.dtype == torch.float32 and labels.dtype == torch.long
    assert torch.equal(labels, batches.labels[batches.order(0)[:32]])  # the same images as the DataLoader's
    assert torch.equal(batches[0][2], batches.order(0)[:32])  # and which they are
    again = device_batches(dataset, **recipe)[0]
    assert torch.equal(pixels, again[0]) and torch.equal(labels, again[1])  # from the seed alone
    assert not torch.equal(pixels, batches[1][0])
    other = device_batches(dataset, seed=1, **recipe)[0]
    assert not torch.equal(pixels, other[0])


@pytest.mark.parametrize("kind", ["mixup", "cutmix"])
def test_mixing_the_device_batch_mixes_labels_by_the_drawn_lambda(dataset, kind):
    batches = device_batches(dataset, augment="autoaugment", mixup_alpha=0.8, cutmix_alpha=1.0)
    pixels, labels, _ = batches[0]
    cfg = dataclasses.replace(batches.cfg, mix_prob=1.0, **({"cutmix_alpha": 0.0} if kind == "mixup" else {"mixup_alpha": 0.0}))  # fmt: skip
    labels = torch.arange(32) % 32  # every image its own class: each row's two weights are readable
    torch.manual_seed(0)
    mixed, targets = train_module.mix_batch(pixels, labels, 32, cfg, torch.Generator().manual_seed(2))
    assert mixed.shape == pixels.shape and targets.shape == (32, 32)
    torch.testing.assert_close(targets.sum(1), torch.ones(32))
    lam = targets[0, 0].item()
    partner = targets.clone()
    partner[torch.arange(32), torch.arange(32)] = 0
    perm, moved = partner.argmax(1), partner.sum(1) > 0  # an image drawn as its own partner is not mixed
    assert moved.sum() > 20 and 0 < lam < 1
    torch.testing.assert_close(targets[moved, labels[moved]], torch.full((int(moved.sum()),), lam))
    if kind == "mixup":
        torch.testing.assert_close(mixed[moved], lam * pixels[moved] + (1 - lam) * pixels[perm[moved]])
    else:  # one box, the same for the batch, pasted from the partner: its area is 1 - lambda
        pasted = (mixed != pixels).any(dim=1)[moved]  # (M, H, W)
        from_partner = (mixed[moved] == pixels[perm[moved]]).all(dim=1)
        assert (from_partner | ~pasted).all()
        area = (mixed[moved] == pixels[perm[moved]]).all(dim=1).float().mean(dim=(1, 2))
        assert area.max().item() == pytest.approx(1 - lam, abs=1e-6)
