import pytest
import torch

from vitviz.models import patches


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
    with pytest.raises(ValueError, match="32x30 image"):  # the width is checked too
        patches.grid_size((32, 30), 16)
    assert patches.grid_size((32, 48), 16) == (2, 3)  # (grid_h, grid_w), not (grid_w, grid_h)
    assert patches.num_patches((512, 512), 16) == 1024
    assert patches.patch_boxes((2, 2), 4)[3] == (4, 4, 8, 8)


def test_patch_boxes_on_a_grid_wider_than_tall():
    boxes = patches.patch_boxes((2, 3), 4)  # 2 rows of 3 patches, in token order
    assert len(boxes) == 6
    assert boxes[1] == (0, 4, 4, 8)  # row 0, column 1: (top, left, bottom, right)
    assert boxes[3] == (4, 0, 8, 4)  # row 1, column 0
    assert boxes[5] == (4, 8, 8, 12)


def test_patch_tiles_undo_the_normalisation():
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.5)
    image = torch.rand(1, 3, 8, 12)  # pixels in [0, 1]
    normalised = (image - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]
    tiles = patches.patch_tiles(patches.patchify(normalised, 4)[0], 4, 3, mean, std)  # (6, 4, 4, 3)
    assert tiles.shape == (6, 4, 4, 3)
    torch.testing.assert_close(tiles[4], image[0, :, 4:8, 4:8].permute(1, 2, 0))  # row 1, column 1


def test_patch_numbers_count_from_one_in_reading_order() -> None:
    assert patches.patch_number(0, 0, (8, 8)) == 1
    assert patches.patch_number(1, 0, (8, 8)) == 9  # below patch 1 on an 8 x 8 grid
    assert patches.patch_number(1, 0, (14, 14)) == 15  # ViT-B/16's grid
    assert patches.patch_number(2, 3, (3, 5)) == 14  # the last patch of a 3 x 5 grid: the width counts, not the height
    with pytest.raises(IndexError):
        patches.patch_number(0, 5, (3, 5))
