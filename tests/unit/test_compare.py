"""vitviz.analyses.compare: Grad-CAM and integrated gradients against hand computations, and the
experiments' inputs (shuffled patches, shifts, no position embeddings) on tiny models."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from vitviz.analyses import compare
from vitviz.models.cnn import ConvNet
from vitviz.models.config import CNNConfig, ViTConfig
from vitviz.models.model import VisionTransformer

torch.set_num_threads(1)  # a training job shares the CPU; these models are tiny

TINY_CNN = CNNConfig(image_size=16, num_classes=3, stem_width=4, widths=(8, 8), class_names=("a", "b", "c"))
TINY_VIT = ViTConfig(image_size=16, patch_size=4, num_classes=3, embed_dim=32, depth=2, num_heads=4)


@pytest.fixture
def cnn() -> ConvNet:
    torch.manual_seed(0)
    model = ConvNet(TINY_CNN)
    for module in model.modules():  # BatchNorm statistics that are not the identity
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    return model.eval()


@pytest.mark.parametrize("convs", [2, 3])
def test_gradcam_is_the_hand_computed_one_on_the_map_the_head_pools(cnn, convs):
    if convs == 3:  # airbench96's groups: the map is x + BN(conv3(...)), more than conv3's output
        torch.manual_seed(0)
        cnn = ConvNet(TINY_CNN.replace(group_convs=3)).eval()
    pixels = torch.randn(1, 3, 16, 16)
    for target in range(3):
        features: dict[str, torch.Tensor] = {}
        handle = cnn.groups[-1].register_forward_hook(lambda _m, _i, out, seen=features: seen.setdefault("a", out))
        logits = cnn(pixels)
        handle.remove()
        activation = features["a"]  # (1, K, h, w)
        torch.testing.assert_close(cnn.forward_features(pixels), activation)
        (grad,) = torch.autograd.grad(logits[0, target], activation)
        alpha = grad.mean(dim=(2, 3), keepdim=True)  # (1, K, 1, 1)
        cam = F.relu((alpha * activation).sum(dim=1, keepdim=True))  # (1, 1, h, w)
        expected = F.interpolate(cam, size=(16, 16), mode="bilinear")[0, 0]
        found = compare.gradcam(cnn, pixels, target)
        assert found.shape == (16, 16)
        torch.testing.assert_close(found, expected.detach(), rtol=1e-4, atol=1e-6)
    assert not any(p.grad is not None for p in cnn.parameters())  # the model is left as it was


def test_gradcam_of_a_mirror_averaging_cnn_is_the_mean_of_both_views(cnn):
    flipping = ConvNet(TINY_CNN.replace(test_flip=True)).eval()
    flipping.load_state_dict(cnn.state_dict())
    pixels = torch.randn(1, 3, 16, 16)
    for target in range(3):
        found = compare.gradcam(flipping, pixels, target)
        expected = (compare.gradcam(cnn, pixels, target) + compare.gradcam(cnn, pixels.flip(-1), target).flip(-1)) / 2
        torch.testing.assert_close(found, expected)
        # the averaged model answers the same for the mirror image, and its map is the mirror of this one
        torch.testing.assert_close(compare.gradcam(flipping, pixels.flip(-1), target), found.flip(-1))
    assert not torch.allclose(compare.gradcam(cnn, pixels, 0), compare.gradcam(flipping, pixels, 0))


@pytest.mark.parametrize("family", ["cnn", "vit"])
def test_integrated_gradients_add_up_to_the_logit_change(family, cnn):
    torch.manual_seed(1)
    model = cnn if family == "cnn" else VisionTransformer(TINY_VIT).eval()
    pixels = torch.randn(1, 3, 16, 16)
    from captum.attr import IntegratedGradients

    raw = IntegratedGradients(model).attribute(pixels, target=1, n_steps=256)
    with torch.no_grad():
        change = model(pixels)[0, 1] - model(torch.zeros_like(pixels))[0, 1]
    assert float(raw.sum()) == pytest.approx(float(change), rel=0.05, abs=1e-3)  # completeness: what IG promises
    shown = compare.integrated_gradients(model, pixels, 1)
    assert shown.shape == (16, 16) and float(shown.min()) >= 0


def hand_integrated_gradients(model: torch.nn.Module, pixels: torch.Tensor, target: int, steps: int) -> torch.Tensor:
    """IG from the all-zero baseline (the dataset's mean colour after normalisation, not black) by
    Gauss-Legendre quadrature with ``steps`` nodes (Captum's default rule): (x - 0) * sum_k w_k *
    d logit / d x at a_k x, summed over channels, absolute. (H, W)."""
    import numpy as np

    nodes, weights = np.polynomial.legendre.leggauss(steps)  # on [-1, 1]
    total = torch.zeros_like(pixels)
    for node, weight in zip(nodes, weights, strict=True):
        point = (0.5 * (1 + float(node)) * pixels).requires_grad_(True)  # a_k in [0, 1]
        (grad,) = torch.autograd.grad(model(point)[0, target], point)
        total += 0.5 * float(weight) * grad
    return (pixels * total)[0].sum(dim=0).abs()


@pytest.mark.parametrize("family", ["cnn", "vit"])
def test_integrated_gradients_explain_the_asked_class_with_the_asked_steps(family, cnn):
    """Our wrapper, not only Captum: a class other than 0, and so few steps that their number shows."""
    torch.manual_seed(1)
    model = cnn if family == "cnn" else VisionTransformer(TINY_VIT).eval()
    pixels = torch.randn(1, 3, 16, 16)
    for target, steps in ((1, 2), (2, 3)):
        expected = hand_integrated_gradients(model, pixels, target, steps)
        found = compare.integrated_gradients(model, pixels, target, steps=steps)
        torch.testing.assert_close(found, expected, rtol=1e-4, atol=1e-5)
        # the fixture tells classes and step counts apart, so a wrapper that mixed them up would fail
        assert not torch.allclose(expected, hand_integrated_gradients(model, pixels, 0, steps), rtol=1e-2)
        assert not torch.allclose(expected, hand_integrated_gradients(model, pixels, target, steps + 1), rtol=1e-2)


def test_shuffled_patches_are_the_same_patches_elsewhere():
    pixels = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    permutation = torch.tensor([3, 0, 2, 1])
    shuffled = compare.shuffle_patches(pixels, 4, permutation)
    assert torch.equal(shuffled[..., :4, :4], pixels[..., 4:, 4:])  # position 0 holds patch 3
    assert torch.equal(shuffled[..., :4, 4:], pixels[..., :4, :4])  # position 1 holds patch 0
    assert torch.equal(compare.shuffle_patches(shuffled, 4, torch.argsort(permutation)), pixels)
    with pytest.raises(ValueError, match="reorder all 4"):
        compare.shuffle_patches(pixels, 4, torch.tensor([0, 0, 1, 2]))


def test_shifts_wrap_or_pad():
    pixels = torch.arange(16, dtype=torch.float32).reshape(1, 1, 4, 4)
    assert torch.equal(compare.shift_image(pixels, 1, 0)[0, 0, :, 0], pixels[0, 0, :, 3])  # wrapped round
    padded = compare.shift_image(pixels, 1, 2, mode="pad")
    assert torch.equal(padded[0, 0, 2:, 1:], pixels[0, 0, :2, :3]) and float(padded[0, 0, :2].abs().sum()) == 0
    assert torch.equal(
        compare.shift_image(compare.shift_image(pixels, -3, 1, "pad"), 0, 0, "pad"),
        compare.shift_image(pixels, -3, 1, "pad"),
    )


def test_without_position_the_cls_output_ignores_the_order_of_the_patches():
    torch.manual_seed(2)
    model = VisionTransformer(TINY_VIT).eval()
    with torch.no_grad():
        model.pos_embed.normal_(std=0.5)  # position information that matters
    pixels = torch.randn(1, 3, 16, 16)
    permutation = torch.randperm(16, generator=torch.Generator().manual_seed(0))
    shuffled = compare.shuffle_patches(pixels, 4, permutation)
    with torch.no_grad():
        assert not torch.allclose(model(pixels), model(shuffled), atol=1e-4)  # with positions: the order matters
    for mode in ("zero", "mean"):
        torch.testing.assert_close(
            compare.logits_without_position(model, pixels, mode),
            compare.logits_without_position(model, shuffled, mode),
            rtol=1e-4,
            atol=1e-5,
        )  # without them, self-attention cannot tell where a patch was
    before = model.pos_embed.detach().clone()
    with torch.no_grad():
        model.pos_embed.zero_()
        torch.testing.assert_close(compare.logits_without_position(model, pixels, "zero"), model(pixels))
        model.pos_embed.copy_(before)
    assert torch.equal(model.pos_embed, before)


def test_the_experiments_change_what_they_say(cnn):
    torch.manual_seed(3)
    vit = VisionTransformer(TINY_VIT).eval()
    with torch.no_grad():
        vit.pos_embed.normal_(std=0.5)
    vit_pixels, cnn_pixels = torch.randn(1, 3, 16, 16), torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        before_vit, before_cnn = vit(vit_pixels), cnn(cnn_pixels)
    shuffled = compare.run_experiment("shuffle", vit, vit_pixels, cnn, cnn_pixels, seed=0)
    assert not torch.equal(shuffled.vit_input, vit_pixels) and sorted(shuffled.vit_input.flatten().tolist()) == sorted(
        vit_pixels.flatten().tolist()
    )
    assert shuffled.cnn_logits is not None and not torch.allclose(shuffled.cnn_logits, before_cnn)
    moved = compare.run_experiment("shift", vit, vit_pixels, cnn, cnn_pixels, shift=2)
    assert torch.equal(moved.vit_input, torch.roll(vit_pixels, (2, 2), (-2, -1)))
    with torch.no_grad():
        assert torch.allclose(moved.cnn_logits, cnn(torch.roll(cnn_pixels, (2, 2), (-2, -1))))
    unplaced = compare.run_experiment("no_position", vit, vit_pixels, cnn, cnn_pixels)
    assert unplaced.cnn_logits is None and not torch.allclose(unplaced.vit_logits, before_vit)
    hidden = compare.run_experiment("hide", vit, vit_pixels, cnn, cnn_pixels, hidden=[0, 5])
    assert (
        float(hidden.vit_input[..., :4, :4].abs().sum()) == 0
        and float(hidden.vit_input[..., 4:8, 4:8].abs().sum()) == 0
    )
    assert torch.equal(hidden.vit_input[..., 8:, 8:], vit_pixels[..., 8:, 8:])  # only patches 0 and 5 are hidden
    cnn_hidden = cnn_pixels.clone()
    cnn_hidden[..., :4, :4] = 0
    cnn_hidden[..., 4:8, 4:8] = 0
    with torch.no_grad():
        assert torch.allclose(hidden.cnn_logits, cnn(cnn_hidden))
    with pytest.raises(ValueError, match="Unknown experiment"):
        compare.run_experiment("melt", vit, vit_pixels, cnn, cnn_pixels)


def test_gradcam_on_a_model_shared_by_many_sessions_at_once(cnn):
    """The app caches one CNN for every visitor: Grad-CAMs computed at the same moment in
    several threads each get their own map (Captum hooks the layer it explains; the classroom
    benchmark caught two sessions' hooks crossing: 'The differentiated Tensor ... not used')."""
    from concurrent.futures import ThreadPoolExecutor

    images = [torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(i)) for i in range(8)]
    expected = [compare.gradcam(cnn, image, i % 3) for i, image in enumerate(images)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(5):
            maps = list(pool.map(lambda i: compare.gradcam(cnn, images[i], i % 3), range(8)))
            assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(maps, expected, strict=True))


@pytest.mark.parametrize("test_flip", [False, True])
def test_gradcam_and_logits_answer_what_the_model_answers_from_one_pass(cnn, test_flip):
    model = ConvNet(TINY_CNN.replace(test_flip=test_flip)).eval()
    model.load_state_dict(cnn.state_dict())
    pixels = torch.randn(1, 3, 16, 16)
    for target in range(3):
        cam, logits = compare.gradcam_and_logits(model, pixels, target)
        torch.testing.assert_close(cam, compare.gradcam(model, pixels, target))
        with torch.no_grad():
            torch.testing.assert_close(logits, model(pixels)[0])
    assert not any(p.grad is not None for p in model.parameters())


def test_the_comparison_explains_the_true_class_when_known_else_the_answer():
    names = ["cat", "dog", "ship"]
    logits = torch.tensor([0.1, 0.2, 3.0])  # the model says ship
    assert compare.explained_class(names, logits, "dog") == 1
    assert compare.explained_class(names, logits, None) == 2
    assert compare.explained_class(names, logits, "truck") == 2  # a class the model does not know
