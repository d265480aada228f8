import pytest
import torch

from vitviz import patches


@pytest.mark.parametrize("size, p", [((32, 32), 4), ((32, 48), 8), ((64, 64), 32)])
def test_all_routes_give_the_same_tokens(size, p):
    torch.manual_seed(0)
    pixels = torch.randn(2, 3, *size)
    weight, bias = torch.randn(16, 3, p, p), torch.randn(16)
    reference = patches.embed_conv2d(pixels, weight, bias)
    grid_h, grid_w = size[0] // p, size[1] // p
    assert reference.shape == (2, grid_h * grid_w, 16)
    for name, route in patches.ROUTES.items():
        torch.testing.assert_close(route(pixels, weight, bias), reference, atol=1e-4, rtol=1e-4, msg=name)


def test_patchify_order_is_c_p1_p2_and_row_major():
    pixels = torch.arange(2 * 4 * 4, dtype=torch.float32).reshape(1, 2, 4, 4)
    out = patches.patchify(pixels, 2)  # 2x2 grid of 2x2 patches with 2 channels
    assert out.shape == (1, 4, 8)
    # patch (row 0, col 1): channel 0 rows 0-1 cols 2-3, then channel 1
    assert out[0, 1].tolist() == [2, 3, 6, 7, 18, 19, 22, 23]
    # patch (row 1, col 0) comes third
    assert out[0, 2, :4].tolist() == [8, 9, 12, 13]


def test_unpatchify_inverts_patchify():
    pixels = torch.randn(3, 3, 24, 40)
    flat = patches.patchify(pixels, 8)
    torch.testing.assert_close(patches.unpatchify(flat, 8, (3, 5), 3), pixels)


def test_conv_weight_is_the_linear_weight():
    weight = torch.randn(5, 3, 4, 4)
    pixels = torch.randn(1, 3, 4, 4)  # a single patch
    linear = patches.patchify(pixels, 4)[0, 0] @ weight.reshape(5, -1).T
    torch.testing.assert_close(patches.embed_conv2d(pixels, weight, None)[0, 0], linear, atol=1e-5, rtol=1e-5)


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="whole 16x16"):
        patches.patchify(torch.zeros(1, 3, 30, 32), 16)
    assert patches.num_patches((512, 512), 16) == 1024
    assert patches.patch_boxes((2, 2), 4)[3] == (4, 4, 8, 8)
