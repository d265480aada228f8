"""Deletion and insertion curves (vitviz.analyses.faithfulness): a model whose evidence is known, the
curves' invariants on tiny ViTs and CNNs, the reading, the sentences, the command and the
shipped tables."""

from __future__ import annotations

import json

import pytest
import torch
from torch import Tensor, nn

from tests.helpers import CLASSES, make_image_folder
from vitviz.analyses import analysis, claims, compare, faithfulness
from vitviz.analyses.evaluate import weights_hash
from vitviz.models import patches, zoo
from vitviz.models.cnn import ConvNet
from vitviz.models.config import CNNConfig
from vitviz.models.data import ImageSet, load_split
from vitviz.models.model import VisionTransformer

EVIDENCE = (5, 6, 9)  # the patches of a 4 x 4 grid that the probe reads


class PatchProbe(nn.Module):
    """A classifier whose answer depends on three known patches only: class 0's logit is the
    sum of their pixels (times 0.01), class 1's its negative; every other pixel is ignored."""

    def __init__(self, size: int = 16, patch: int = 4, evidence: tuple[int, ...] = EVIDENCE) -> None:
        super().__init__()
        grid = size // patch
        mask = torch.zeros(grid * grid)
        mask[list(evidence)] = 1.0
        pixels = mask.reshape(1, 1, grid, grid).repeat_interleave(patch, 2).repeat_interleave(patch, 3)
        self.register_buffer("mask", pixels)  # (1, 1, H, W)
        self.scale = nn.Parameter(torch.tensor(0.01))  # a parameter tells the library its device and dtype

    def forward(self, pixels: Tensor) -> Tensor:
        evidence = self.scale * (pixels * self.mask).sum(dim=(1, 2, 3))  # (B,)
        return torch.stack([evidence, -evidence], dim=1)  # (B, 2)


@pytest.fixture
def probe_image() -> Tensor:
    torch.manual_seed(0)
    return torch.rand(1, 3, 16, 16) + 0.5  # positive everywhere: the evidence says class 0


def test_occlusion_ranks_the_known_patches_first_and_its_deletion_falls_faster_than_random(probe_image):
    result = faithfulness.faithfulness(PatchProbe().eval(), probe_image, patch_size=4)
    assert result.target == 0 and result.grid_size == (4, 4)
    occlusion, random = result.methods["occlusion"], result.methods["random"]
    assert set(occlusion.order[:3].tolist()) == set(EVIDENCE)
    assert set(result.methods["integrated_gradients"].order[:3].tolist()) == set(EVIDENCE)
    # below every random order's area, and lower at every step after the start
    assert occlusion.deletion_auc < float(random.deletion_aucs.min())
    assert occlusion.insertion_auc > float(random.insertion_aucs.max())
    assert (occlusion.deletion_curve[1:-1] <= random.deletion_curve[1:-1] + 1e-6).all()
    reading = faithfulness.read(result)
    assert reading.verdicts == {"occlusion": "better", "integrated_gradients": "better"}
    # both rank the evidence by its pixels' sum, the largest first (the probe's logit is linear in
    # it), so their curves are the same, and the best is the highest margin read off the curves
    sums = {patch: float(p.sum()) for patch, p in enumerate(patches.patchify(probe_image, 4)[0])}
    by_sum = sorted(EVIDENCE, key=sums.get, reverse=True)
    assert occlusion.order[:3].tolist() == result.methods["integrated_gradients"].order[:3].tolist() == by_sum
    margins = {m: float(c.insertion.mean() - c.deletion.mean()) for m, c in result.methods.items() if m != "random"}
    assert margins["occlusion"] == pytest.approx(margins["integrated_gradients"])
    chance = float((random.insertion.mean(-1) - random.deletion.mean(-1)).max())  # the best random order's
    assert margins[reading.best] == max(margins.values()) > chance


def test_a_ranking_that_puts_the_evidence_last_is_worse_than_chance(probe_image):
    backwards = torch.ones(16)
    backwards[list(EVIDENCE)] = -1.0  # every other patch first
    result = faithfulness.faithfulness(
        PatchProbe().eval(),
        probe_image,
        methods=["occlusion", "integrated_gradients"],
        maps={"integrated_gradients": backwards.reshape(4, 4)},
        patch_size=4,
    )
    reading = faithfulness.read(result)
    assert reading.verdicts["integrated_gradients"] == "worse" and reading.verdicts["occlusion"] == "better"
    assert reading.with_verdict("worse") == ["integrated_gradients"]
    assert reading.best == reading.best_deletion == reading.best_insertion == "occlusion"


def test_every_curve_starts_and_ends_at_the_full_and_the_blank_image(tiny_config):
    torch.manual_seed(0)
    model = VisionTransformer(tiny_config).eval()
    pixels = torch.randn(1, 3, 32, 32)
    result = faithfulness.faithfulness(model, pixels, steps=8, num_random=3)
    assert list(result.methods) == list(faithfulness.methods_for(model))
    with torch.no_grad():
        probs = model(pixels).softmax(dim=-1)[0]
        blank = model(torch.zeros_like(pixels)).softmax(dim=-1)[0]
    assert result.target == int(probs.argmax())
    assert result.counts.tolist() == analysis.occlusion_counts(64, 8).tolist()
    for curves in result.methods.values():
        rows = len(curves.orders)
        assert curves.deletion.shape == curves.insertion.shape == (rows, 9)
        assert torch.allclose(curves.deletion[:, 0], probs[result.target].expand(rows), atol=1e-5)
        assert torch.allclose(curves.insertion[:, -1], probs[result.target].expand(rows), atol=1e-5)
        assert torch.allclose(curves.deletion[:, -1], blank[result.target].expand(rows), atol=1e-5)
        assert torch.allclose(curves.insertion[:, 0], blank[result.target].expand(rows), atol=1e-5)
        assert curves.deletion_auc == pytest.approx(float(curves.deletion.mean()))  # the mean over the steps
        assert curves.margin == pytest.approx(curves.insertion_auc - curves.deletion_auc, abs=1e-6)
        assert sorted(curves.order.tolist()) == list(range(64))
    assert len(result.methods["random"].orders) == 3
    assert result.probability == pytest.approx(float(probs[result.target]), abs=1e-5)


def test_pixels_not_where_the_weights_are_go_there_for_every_ranking(tiny_config):
    """The app's traces keep their pixels on the CPU while a GPU holds the model (a lent H200 found
    the rankings' own pass fed CPU pixels to CUDA weights). Here the weights are float64 and the
    pixels float32: the same move (``on_weights``) that a GPU needs, checked on any machine."""
    torch.manual_seed(0)
    model = VisionTransformer(tiny_config).eval().double()
    pixels = torch.randn(1, 3, 32, 32)
    result = faithfulness.faithfulness(model, pixels, steps=4, num_random=2)  # no trace: each ranking runs the model
    assert list(result.methods) == list(faithfulness.methods_for(model))
    with torch.no_grad():
        probs = model(pixels.double()).softmax(dim=-1)[0]
    assert result.probability == pytest.approx(float(probs.max()), abs=1e-6)


def test_one_step_of_a_curve_is_the_model_on_the_image_with_those_patches_removed(tiny_config):
    torch.manual_seed(1)
    model = VisionTransformer(tiny_config).eval()
    pixels = torch.randn(1, 3, 32, 32)
    result = faithfulness.faithfulness(model, pixels, methods=["rollout"], steps=4, num_random=1)
    rollout = result.methods["rollout"]
    trace = model.explain(pixels)
    assert torch.equal(rollout.order, analysis.occlusion_order(trace, "rollout"))
    removed = rollout.order[:32]  # step 2 of 4
    mask = torch.zeros(1, 64, dtype=torch.bool)
    mask[0, removed] = True
    with torch.no_grad():
        deleted = model(analysis.occlude(pixels, mask, 4)).softmax(-1)[0, result.target]
        inserted = model(analysis.occlude(pixels, ~mask, 4)).softmax(-1)[0, result.target]
    assert float(rollout.deletion[0, 2]) == pytest.approx(float(deleted), abs=1e-6)
    assert float(rollout.insertion[0, 2]) == pytest.approx(float(inserted), abs=1e-6)


def test_maps_the_app_already_has_give_the_rankings_computed_here(tiny_config):
    torch.manual_seed(2)
    model = VisionTransformer(tiny_config).eval()
    pixels = torch.randn(1, 3, 32, 32)
    trace = model.explain(pixels)
    target = int(trace.logits[0].argmax())
    fresh = faithfulness.faithfulness(model, pixels, num_random=2)
    maps = {
        "gradient_rollout": analysis.grad_rollout(model, pixels, target),  # per patch
        "integrated_gradients": compare.integrated_gradients(model, pixels, target),  # per pixel
    }
    reused = faithfulness.faithfulness(model, pixels, num_random=2, trace=trace, maps=maps)
    for method in fresh.methods:
        assert torch.equal(fresh.methods[method].order, reused.methods[method].order), method
        assert torch.allclose(fresh.methods[method].deletion, reused.methods[method].deletion), method
    attention = analysis.cls_attention(trace, -1).mean(dim=1)[0].flatten()  # last layer, mean of heads
    assert torch.equal(fresh.methods["attention"].order, faithfulness.ranking(attention))


def test_a_cnn_is_ranked_by_grad_cam_on_a_grid_of_squares():
    torch.manual_seed(0)
    config = CNNConfig(image_size=16, num_classes=3, stem_width=4, widths=(8, 8), class_names=CLASSES)
    model = ConvNet(config).eval()
    pixels = torch.randn(1, 3, 16, 16)
    assert faithfulness.methods_for(model) == ("random", "occlusion", "gradcam", "integrated_gradients")
    result = faithfulness.faithfulness(model, pixels, num_random=2)
    assert result.patch_size == 2 and result.grid_size == (8, 8)  # about 8 squares a side
    gradcam = compare.gradcam(model, pixels, result.target)
    assert torch.equal(result.methods["gradcam"].scores, faithfulness.per_patch(gradcam, 2))
    with pytest.raises(ValueError, match="cannot rank"):
        faithfulness.faithfulness(model, pixels, methods=["rollout"])


def test_per_patch_sums_each_square_in_row_major_order():
    values = torch.arange(36.0).reshape(6, 6)
    sums = faithfulness.per_patch(values, 3)
    assert sums.tolist() == [values[:3, :3].sum(), values[:3, 3:].sum(), values[3:, :3].sum(), values[3:, 3:].sum()]
    assert faithfulness.per_patch(torch.ones(7, 7), 3).tolist() == [9.0] * 4  # the edge is left out


def test_shared_masks_run_once_and_give_what_each_would_alone(tiny_config, monkeypatch):
    torch.manual_seed(3)
    model = VisionTransformer(tiny_config).eval()
    pixels = torch.randn(1, 3, 32, 32)
    hidden = torch.rand(5, 64) > 0.5
    repeated = torch.cat([hidden, hidden[:2], torch.zeros(2, 64, dtype=torch.bool)])
    seen = []
    forward = model.forward_one_view  # the pass the maps explain (explained_pass)
    monkeypatch.setattr(model, "forward_one_view", lambda x: seen.append(len(x)) or forward(x))
    probs = faithfulness.probabilities(model, pixels, repeated, 4, target=1)
    assert sum(seen) == len(torch.unique(repeated, dim=0)) == 6
    with torch.no_grad():
        direct = forward(analysis.occlude(pixels, repeated, 4)).softmax(-1)[:, 1]
    assert torch.allclose(probs, direct, atol=1e-6)


def test_the_sentences_name_the_best_and_the_chance_rankings_in_both_languages(probe_image):
    backwards = torch.ones(16)
    backwards[list(EVIDENCE)] = -1.0
    result = faithfulness.faithfulness(
        PatchProbe().eval(),
        probe_image,
        methods=["occlusion", "integrated_gradients"],
        maps={"integrated_gradients": backwards},
        patch_size=4,
    )
    said = faithfulness.sentences(faithfulness.read(result))
    assert [c.key for c in said] == ["trust.best_both", "trust.worse"]
    english, korean = claims.text(said, "en"), claims.text(said, "ko")
    assert "occlusion" in english and "integrated gradients" in english
    assert "가리기" in korean and "통합 기울기" in korean
    chance = faithfulness.Reading(
        best="rollout",
        best_deletion="attention",
        best_insertion="rollout",
        margins={"random": 0.0, "rollout": 0.2, "attention": 0.1},
        deletion={"random": 0.4, "rollout": 0.3, "attention": 0.2},
        insertion={"random": 0.4, "rollout": 0.5, "attention": 0.3},
        chance_low=-0.1,
        chance_high=0.15,
        verdicts={"rollout": "better", "attention": "chance"},
        orders=8,
    )
    said = faithfulness.sentences(chance)
    assert [c.key for c in said] == ["trust.best_insertion", "trust.chance"]  # rollout restores fastest
    assert "[CLS] attention" in claims.text(said, "en") and "8 random orders" in claims.text(said, "en")
    nothing = chance.__class__(**{**chance.__dict__, "verdicts": {"rollout": "chance", "attention": "chance"}})
    assert [c.key for c in faithfulness.sentences(nothing)] == [
        "trust.best_insertion",
        "trust.none_better",
        "trust.chance",
    ]
    everything = chance.__class__(**{**chance.__dict__, "verdicts": {"rollout": "better", "attention": "better"}})
    assert [c.key for c in faithfulness.sentences(everything)] == ["trust.best_insertion", "trust.all_better"]
    elsewhere = chance.__class__(**{**chance.__dict__, "best_insertion": "attention"})  # both extremes elsewhere
    assert faithfulness.sentences(elsewhere)[0].key == "trust.best_split"
    removing = chance.__class__(**{**chance.__dict__, "best_deletion": "rollout", "best_insertion": "attention"})
    assert faithfulness.sentences(removing)[0].key == "trust.best_deletion"
    assert "[CLS] attention" in claims.text(faithfulness.sentences(removing)[0], "en")


def hand_curves(method: str, deletion: list[list[float]], insertion: list[list[float]]) -> faithfulness.MethodCurves:
    """Curves written by hand, (R, S + 1) each: their areas and margins are exact in binary."""
    rows = len(deletion)
    scores = None if method == faithfulness.RANDOM else torch.zeros(4)
    orders = torch.arange(4).repeat(rows, 1)
    return faithfulness.MethodCurves(method, scores, orders, torch.tensor(deletion), torch.tensor(insertion))


def hand_result(**methods: tuple[list[list[float]], list[list[float]]]) -> faithfulness.Faithfulness:
    """A 2 x 2 grid's result from curves given by hand, the random orders' first."""
    curves = {name: hand_curves(name, *pair) for name, pair in methods.items()}
    return faithfulness.Faithfulness(
        target=0,
        probability=1.0,
        blank_probability=0.0,
        counts=torch.tensor([0, 4]),
        patch_size=4,
        grid_size=(2, 2),
        methods=curves,
    )


# the random orders' margins (insertion area minus deletion area) are 0 and 0.5: the band [0, 0.5]
BAND = {"random": ([[0.5, 0.5], [0.25, 0.25]], [[0.5, 0.5], [0.75, 0.75]])}


def test_the_verdict_at_the_edges_of_the_chance_band_is_chance():
    result = hand_result(
        **BAND,
        rollout=([[0.25, 0.25]], [[0.75, 0.75]]),  # margin 0.5: the band's top, not above it
        attention=([[0.5, 0.5]], [[0.5, 0.5]]),  # margin 0: the band's bottom, not below it
        occlusion=([[0.0, 0.0]], [[0.875, 0.875]]),  # margin 0.875, the best; lowest deletion
        gradient_rollout=([[0.75, 0.75]], [[1.0, 1.0]]),  # margin 0.25; the highest insertion
        integrated_gradients=([[0.75, 0.75]], [[0.25, 0.25]]),  # margin -0.5: below every order
    )
    reading = faithfulness.read(result)
    assert (reading.chance_low, reading.chance_high) == (0.0, 0.5)
    assert reading.verdicts == {
        "rollout": "chance",
        "attention": "chance",
        "occlusion": "better",
        "gradient_rollout": "chance",
        "integrated_gradients": "worse",
    }
    # the best margin is not the best insertion: the sentence says so
    assert (reading.best, reading.best_deletion, reading.best_insertion) == (
        "occlusion",
        "occlusion",
        "gradient_rollout",
    )
    said = faithfulness.sentences(reading)
    assert [c.key for c in said] == ["trust.best_deletion", "trust.chance", "trust.worse"]
    assert said[0].values["margin"] == 0.875


def test_the_summary_over_images_counts_better_and_worse_on_each_image():
    first = hand_result(
        **BAND,
        occlusion=([[0.0, 0.0]], [[1.0, 1.0]]),  # better
        rollout=([[0.5, 0.5]], [[0.75, 0.75]]),  # margin 0.25: chance
        attention=([[0.75, 0.75]], [[0.25, 0.25]]),  # worse
    )
    second = hand_result(
        **BAND,
        occlusion=([[0.5, 0.5]], [[0.75, 0.75]]),  # chance
        rollout=([[0.25, 0.5]], [[0.5, 0.75]]),  # margin 0.25: chance
        attention=([[0.0, 0.0]], [[1.0, 1.0]]),  # better
    )
    table = faithfulness.summarise([first, second])
    assert table["images"] == 2
    rows = table["methods"]
    assert (rows["occlusion"]["beats_random"], rows["occlusion"]["below_random"]) == (0.5, 0.0)
    assert (rows["rollout"]["beats_random"], rows["rollout"]["below_random"]) == (0.0, 0.0)
    assert (rows["attention"]["beats_random"], rows["attention"]["below_random"]) == (0.5, 0.5)
    # areas: the mean over the images of each image's mean over the steps, and their population std
    assert rows["rollout"]["deletion_auc"] == 0.4375 and rows["rollout"]["deletion_auc_std"] == 0.0625
    assert rows["random"]["deletion_auc_orders_std"] == 0.125  # each image's two orders: 0.5 and 0.25
    assert table["curves"]["rollout"]["deletion"] == [0.375, 0.5]


def test_every_image_over_images_gets_random_orders_of_its_own(tiny_config):
    """The same image twice: what the rankings give is the same for both, so any spread of the
    random orders' areas across the two images comes from their seeds (``seed + i``)."""
    torch.manual_seed(0)
    model = VisionTransformer(tiny_config.replace(num_classes=3, class_names=CLASSES)).eval()
    image = torch.randint(0, 256, (1, 3, 32, 32), dtype=torch.uint8)
    twice = ImageSet(image.repeat(2, 1, 1, 1), torch.tensor([0, 0]), list(CLASSES), ["a", "a"], "hand", "twice")
    rows = faithfulness.over_images(model, twice, steps=4, num_random=2, seed=5)["methods"]
    assert rows["rollout"]["deletion_auc_std"] == 0.0 and rows["occlusion"]["insertion_auc_std"] == 0.0
    assert rows["random"]["deletion_auc_std"] > 0.0 and rows["random"]["insertion_auc_std"] > 0.0


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_image_folder(tmp_path_factory.mktemp("data"), per_class=4, splits=("test",))


def test_the_table_over_images_is_stored_with_the_weights_hash_and_goes_stale(folder, tiny_config, tmp_path):
    torch.manual_seed(0)
    model = VisionTransformer(tiny_config.replace(num_classes=3, class_names=CLASSES)).eval()
    data = load_split(folder, "test")
    done = []
    summary = faithfulness.over_images(model, data, num_random=2, progress=lambda i, n: done.append((i, n)))
    assert done[-1] == (12, 12) and summary["images"] == 12
    assert list(summary["methods"]) == list(faithfulness.methods_for(model))
    assert {"deletion_auc", "deletion_auc_std", "insertion_auc", "insertion_auc_std"} <= set(
        summary["methods"]["rollout"]
    )
    assert 0.0 <= summary["methods"]["rollout"]["beats_random"] <= 1.0
    assert "deletion_auc_orders_std" in summary["methods"]["random"]
    assert len(summary["curves"]["rollout"]["deletion"]) == len(summary["counts"]) == faithfulness.STEPS + 1
    path = faithfulness.faithfulness_path(tmp_path / "tiny.safetensors")
    assert path.name == "tiny.faithfulness.json"
    faithfulness.save(summary, path, model, data, {"steps": faithfulness.STEPS})
    stored = faithfulness.read_stored(path, model)
    assert stored["methods"] == summary["methods"] and stored["weights_sha256"] == weights_hash(model)
    with torch.no_grad():
        model.head.bias += 1.0  # other weights: the stored table is stale
    assert faithfulness.read_stored(path, model) is None
    assert faithfulness.read_stored(tmp_path / "missing.json", model) is None


def test_the_command_prints_the_table_last(folder, tiny_config, tmp_path, capsys):
    torch.manual_seed(0)
    model = VisionTransformer(tiny_config.replace(num_classes=3, class_names=CLASSES)).eval()
    zoo.save(model, tmp_path / "tiny.safetensors")
    out = tmp_path / "table.json"
    argv = ["--model", str(tmp_path / "tiny.safetensors"), "--data", str(folder / "test"), "--images", "5"]
    assert faithfulness.main([*argv, "--random-orders", "2", "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(printed) == {"images", "methods"} and printed["images"] == 5
    assert list(printed["methods"]) == ["random", *faithfulness.VIT_METHODS]
    stored = json.loads(out.read_text())
    assert stored["methods"] == printed["methods"] and stored["random_orders"] == 2
    assert faithfulness.main(["--model", "nope", "--data", str(folder)]) == 2


@pytest.mark.parametrize(
    ("name", "dataset"),
    [
        (zoo.SHIPPED, "CIFAR-10 (JPEG copy)"),
        (zoo.SHIPPED_CNN, "CIFAR-10 (JPEG copy)"),
        (zoo.SHIPPED_FASHION, "Fashion-MNIST"),
    ],
)
def test_the_shipped_tables_were_made_by_the_shipped_weights(name, dataset):
    model, _ = zoo.load(name, device="cpu")
    path = faithfulness.faithfulness_path(zoo.MODELS_DIR / f"{name}.safetensors")
    stored = faithfulness.read_stored(path, model)
    assert stored is not None, (
        f"{path.name} is missing or was made by other weights: python -m tools.ship --analyses-only"
    )
    assert stored["images"] == 500 and stored["dataset"] == dataset
    assert list(stored["methods"]) == list(faithfulness.methods_for(model))


def test_one_command_writes_every_analysis_beside_the_weights(folder, tiny_config, tmp_path, monkeypatch):
    from tools import ship
    from vitviz.analyses import ablation, occlusion, projection

    monkeypatch.setattr(projection, "METHODS", ("pca",))  # UMAP compiles for most of a minute: its own test
    torch.manual_seed(0)
    model = VisionTransformer(tiny_config.replace(depth=2, num_classes=3, class_names=CLASSES)).eval()
    zoo.save(model, tmp_path / "tiny.safetensors")
    written = ship.write_analyses("tiny", str(folder), tmp_path)
    assert [p.name for p in written] == [
        "tiny.faithfulness.json", "tiny.ablation.json", "tiny.projection.safetensors", "tiny.occlusion.safetensors"
    ]  # fmt: skip
    assert faithfulness.read_stored(written[0], model)["images"] == 12
    assert ablation.read_stored(written[1], model)["images"] == 12
    assert projection.read_stored(written[2], model) is not None
    assert len(occlusion.read_stored(written[3], model).rows) == 12
