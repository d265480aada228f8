"""Step 4, [CLS] and positions, as data (vitviz.steps.tokens): the takeaways read the tokens, the
position embeddings and their similarities; the chosen position is clipped to the grid."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

from vitviz.analyses import analysis, claims
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer, sincos_1d, sincos_2d
from vitviz.render import handout
from vitviz.render.i18n import plain
from vitviz.steps import blocks, tokens
from vitviz.steps.subject import Subject


def subject(lang: str = "en", paper: bool = False, trained: bool = True, **config) -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(image_size=32, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2, **config)
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 3, 32, 32))
    return Subject(model, image, trace, lang, trained=trained, paper=paper)


def takeaways(step: blocks.Step) -> list[str]:
    return [plain(figure.takeaway) for figure in step.figures()]


def grid_similarity(table: torch.Tensor, grid: tuple[int, int]) -> np.ndarray:
    return analysis.pos_embed_similarity(table, grid, 0).numpy()


# ---- the claims it adds ---------------------------------------------------------------------------


def test_the_rows_and_the_sequence_count_the_tokens():
    assert claims.text(claims.patch_rows(64, 192)) == "64 rows, one per patch, each a token of 192 numbers."
    assert claims.text(claims.patch_rows(196, 768)).startswith("196 rows")
    assert "65 = 64 + 1 tokens of 192 numbers" in claims.text(claims.sequence(64, 192, 1))
    assert claims.text(claims.sequence(64, 192, 0)).startswith("No [CLS] row: the 64 patch tokens")


def test_position_embeddings_are_small_or_large_beside_the_tokens():
    patch_tokens = np.ones((4, 8))
    small = claims.position_share(patch_tokens, np.full((5, 8), 0.1), 1)
    large = claims.position_share(patch_tokens, np.full((5, 8), 2.0), 1)
    assert small.key == "claims.pos_small" and "(10% of their length" in claims.text(small)
    assert large.key == "claims.pos_large" and "200% as long" in claims.text(large)


def test_a_2d_table_holds_the_layout_and_random_vectors_do_not():
    layout = grid_similarity(sincos_2d((6, 6), 64), (6, 6))
    noise = grid_similarity(torch.randn(36, 64, generator=torch.Generator().manual_seed(0)), (6, 6))
    assert claims.position_layout(layout).key == "claims.layout_learned"
    assert claims.position_layout(noise).key == "claims.layout_none"
    assert claims.position_layout(np.ones((1, 1, 1, 1))).key == "claims.layout_one"


def test_the_nearest_position_is_beside_or_far():
    similarity = np.zeros((3, 3))
    similarity[1, 2] = 0.9
    beside = claims.text(claims.nearest_position(similarity, (1, 1)))
    assert beside == "Most like position 5 is position 6 (row 2, col 3), right beside it: cosine 0.90."
    similarity[1, 2], similarity[0, 0] = 0.0, 0.8
    far = claims.nearest_position(similarity, (2, 2))
    assert far.key == "claims.nearest_far" and "position 1 (row 1, col 1)" in claims.text(far)


def test_the_closest_scheme_is_the_better_correlated():
    two, one = np.arange(9.0).reshape(3, 3), np.arange(9.0).reshape(3, 3).T
    assert claims.closest_scheme(two + 0.1 * one, one, two).key == "claims.scheme_2d"
    assert claims.closest_scheme(one + 0.1 * two, one, two).key == "claims.scheme_1d"
    assert "(correlation 1.00)" in claims.text(claims.closest_scheme(two, one, two))


# ---- the step --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("chosen", "used"), [(None, 36), (0, 0), (64, 63), (-1, 0)])
def test_the_position_control_holds_a_position_of_the_grid(chosen, used):
    step = tokens.describe(subject(), {"pos": chosen} if chosen is not None else {})
    (control,) = step.controls()
    assert control.key == "pos" and control.value == used
    assert control.static == f"Position shown: patch {used + 1} (row {used // 8 + 1}, col {used % 8 + 1})"
    large = next(figure for figure in step.figures() if figure.key == "tokens_large")
    assert f"Position {used + 1} (row {used // 8 + 1}, col {used % 8 + 1})" in str(large.figure.to_dict())
    assert plain(large.takeaway).startswith(f"Most like position {used + 1} is")
    mosaic = next(figure for figure in step.figures() if figure.key == "tokens_mosaic")
    assert mosaic.select == blocks.Select("pos", 64)


def test_the_figures_and_what_they_say():
    shown = subject()
    step = tokens.describe(shown, {})
    assert [figure.key for figure in step.figures()] == [
        "tokens_before",
        "tokens_after",
        "tokens_pos_embed",
        "tokens_mosaic",
        "tokens_large",
        "tokens_compare",
    ]
    said = takeaways(step)
    assert said[0] == "64 rows, one per patch, each a token of 16 numbers."
    assert said[1].startswith("[CLS] adds a row on top: 65 = 64 + 1 tokens of 16 numbers")
    tokens_length = np.linalg.norm(shown.trace.patch_tokens[0].numpy(), axis=-1)
    positions_length = np.linalg.norm(shown.model.pos_embed.detach()[0, 1:].numpy(), axis=-1)
    assert f"{np.mean(positions_length / tokens_length):.0%}" in said[2]
    # the similarities made here from the table and the two fixed schemes; the shown position is the centre, 37
    own = grid_similarity(shown.model.pos_embed.detach()[0, 1:], (8, 8))
    one = grid_similarity(sincos_1d(64, 16), (8, 8))
    two = grid_similarity(sincos_2d((8, 8), 16), (8, 8))
    assert said[3] == plain(claims.text(claims.position_layout(own)))
    assert said[4] == plain(claims.text(claims.nearest_position(own[4, 4], (4, 4))))
    assert said[5] == plain(claims.text(claims.closest_scheme(own[4, 4], one[4, 4], two[4, 4])))
    (formula,) = [block for block in step.blocks if isinstance(block, blocks.Formula)]
    assert formula.text == "z_0 = [x_class; x_p^1 W; x_p^2 W; ...; x_p^64 W] + E_pos"
    assert step.shape == "(1, 64, 16) → (1, 65, 16)"


def test_a_model_without_cls_and_with_fixed_positions():
    shown = subject(class_token=False, global_pool="avg", pos_embed="sincos2d")
    step = tokens.describe(shown, {})
    said = takeaways(step)
    assert said[1].startswith("No [CLS] row")
    own = grid_similarity(shown.model.pos_embed.detach()[0], (8, 8))  # no [CLS] row to leave out
    assert said[3] == plain(claims.text(claims.position_layout(own)))
    assert said[3].endswith("the embeddings hold the 2D layout.")  # a fixed 2D table holds it by construction
    assert said[-1].startswith("Here the model's map follows the 2D sine-cosine one (correlation 1.00)")
    assert any(
        block.role == "info" and "no [CLS]" in block.text for block in step.blocks if isinstance(block, blocks.Text)
    )
    (formula,) = [block for block in step.blocks if isinstance(block, blocks.Formula)]
    assert "x_class" not in formula.text and "x_\\mathrm{class}" not in formula.latex


def test_an_untrained_model_is_warned_about_its_positions():
    def notes(step):
        return [block.text for block in step.blocks if isinstance(block, blocks.Text) and block.role == "info"]

    assert notes(tokens.describe(subject(trained=True), {})) == []
    assert len(notes(tokens.describe(subject(trained=False), {}))) == 1


def test_slides_are_the_figure_rows_with_the_position_control_from_the_mosaic_on():
    slides = tokens.describe(subject(), {}).slides()
    assert [len(slide.figures) for slide in slides] == [2, 1, 2, 1]
    assert [[control.key for control in slide.controls] for slide in slides] == [[], [], ["pos"], ["pos"]]


def test_korean_takeaways_are_korean():
    assert "패치마다 한 행씩" in takeaways(tokens.describe(subject("ko"), {}))[0]


def test_the_handout_draws_every_figure_and_takeaway():
    step = tokens.describe(subject(paper=True), {})
    page = handout._Page("en")
    page.described(4, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert html.escape(plain(figure.takeaway)) in markup
    assert "Position shown: patch 37 (row 5, col 5)" in markup and "click" not in markup.lower()
