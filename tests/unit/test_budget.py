"""A visitor's model is costed from its config before anything is built: parameters, memory for
one explained image, FLOPs; and refused over the server's limits with the limit named."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save

from tests.bad_inputs import hostile_uploads
from vitviz import access, budget, zoo
from vitviz.config import CNNConfig, ViTConfig
from vitviz.model import build_model

TINY = ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=2, mlp_ratio=4)


def test_a_vits_cost_is_what_its_shapes_say():
    found = budget.cost(TINY)
    tokens, patches, width, heads, hidden, classes, depth, side, chans = 17, 16, 32, 2, 128, 3, 2, 8, 3
    head_dim = width // heads
    # by hand: the patch projection, per block qkv, Q K^T and A V, the projection, the MLP; the head
    matmuls = 2 * patches * width * side * side * chans + 2 * width * classes
    matmuls += depth * (
        2 * tokens * width * 3 * width
        + 2 * (2 * heads * tokens * tokens * head_dim)
        + 2 * tokens * width * width
        + 2 * (2 * tokens * width * hidden)
    )
    rollout = depth * 2 * tokens**3
    assert found.tokens == tokens
    assert found.gflop * 1e9 == pytest.approx(matmuls + rollout, abs=1)
    kept = 3 * depth * tokens * width + depth * heads * tokens * tokens  # outputs, branches, attention maps
    assert found.image_mb == pytest.approx(kept * 4 / 2**20)
    real = build_model(TINY)
    assert found.params == sum(p.numel() for p in real.parameters())
    assert found.model_mb == pytest.approx(found.params * 4 / 2**20)


def test_a_cnns_cost_counts_its_real_parameters_and_layer_outputs():
    config = CNNConfig(image_size=32, num_classes=10, stem_width=8, widths=(8, 16, 16))
    found = budget.cost(config)
    real = build_model(config).eval()
    outputs = []
    hooks = [
        m.register_forward_hook(lambda m, i, o: outputs.append(o.numel()))
        for m in real.modules()
        if not list(m.children())
    ]
    with torch.no_grad():
        real(torch.zeros(1, 3, 32, 32))
    for hook in hooks:
        hook.remove()
    assert found.params == sum(p.numel() for p in real.parameters())
    assert found.image_mb == pytest.approx(sum(outputs) * 4 / 2**20)
    assert found.tokens == 0 and found.gflop > 0


@pytest.mark.parametrize("limit", ["model_mb", "image_mb", "gflop"])
def test_each_limit_refuses_just_above_and_takes_just_at_it(limit):
    found = budget.cost(TINY)
    at = budget.Limits(**{limit: getattr(found, limit)})
    assert budget.check(TINY, at) == found
    below = budget.Limits(**{limit: getattr(found, limit) * 0.999})
    with pytest.raises(budget.OverBudget) as caught:
        budget.check(TINY, below)
    key = {"model_mb": "model.budget_params", "image_mb": "model.budget_memory", "gflop": "model.budget_flops"}
    assert caught.value.key == key[limit]


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"depth": 0}, "depth"),
        ({"depth": budget.MAX_DEPTH + 1}, "depth"),
        ({"num_classes": budget.MAX_CLASSES + 1}, "num_classes"),
    ],
)
def test_shapes_out_of_range_are_refused_before_any_build(changes, field, monkeypatch):
    monkeypatch.setattr(budget, "build_model", lambda config: pytest.fail("built a model it should refuse"))
    config = TINY.replace(**changes, **({"class_names": ()} if "num_classes" in changes else {}))
    with pytest.raises(budget.OverBudget) as caught:
        budget.cost(config)
    assert caught.value.key == "model.budget_shape" and caught.value.values["field"] == field
    budget.check_shape(TINY.replace(depth=budget.MAX_DEPTH))  # the edges of the range are taken
    budget.check_shape(TINY.replace(depth=1, num_classes=0, class_names=()))  # no head: features only


def test_the_default_limits_take_every_registry_model():
    limits = budget.Limits()
    for spec in zoo.REGISTRY.values():
        if spec.offline:
            budget.check(spec.config, limits)  # raises when a registered model would be refused


@pytest.mark.parametrize("what, files, key", hostile_uploads(), ids=[what for what, _, _ in hostile_uploads()])
def test_every_hostile_upload_gets_its_sentence_and_no_oversized_build(what, files, key, monkeypatch):
    built = []
    real_build = zoo.build_model
    monkeypatch.setattr(zoo, "build_model", lambda config: built.append(config) or real_build(config))
    with pytest.raises(zoo.ModelLoadError) as caught:
        zoo.load_upload(files, access.Policy(), device="cpu")
    assert caught.value.key == key
    assert all(sentence and "Traceback" not in sentence for sentence in map(caught.value.sentence, ("en", "ko")))
    if key.startswith("model.budget"):
        assert not built  # refused from the config alone: nothing of its size was allocated


def test_the_servers_flags_set_the_limits():
    policy = access.server_policy(["--max-image-mb", "8", "--max-gflop", "3"], {}, "127.0.0.1")
    assert (policy.max_image_mb, policy.max_gflop) == (8, 3)
    policy = access.server_policy([], {"VITVIZ_MAX_IMAGE_MB": "9", "VITVIZ_MAX_GFLOP": "4"}, "127.0.0.1")
    assert (policy.max_image_mb, policy.max_gflop) == (9, 4)
    # a model within the default limits but over a lowered one is refused by the upload path
    files = {
        "w.safetensors": save(build_model(TINY).state_dict()),
        "w.json": json.dumps({"config": TINY.to_dict()}).encode(),
    }
    name, loaded = zoo.load_upload(files, access.Policy(), device="cpu")
    assert loaded.spec.config == TINY
    with pytest.raises(zoo.ModelLoadError) as caught:
        zoo.load_upload(files, access.Policy(max_image_mb=0.001), device="cpu")
    assert caught.value.key == "model.budget_memory"


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"class_token": False, "global_pool": "avg"},
        {"mlp_ratio": 2.0, "depth": 3, "num_heads": 4},
        {"image_size": (32, 64), "patch_size": 4, "num_classes": 0, "class_names": ()},
    ],
)
def test_a_plain_vits_flops_are_what_torch_counts(changes):
    from torch.utils.flop_counter import FlopCounterMode

    config = TINY.replace(**changes)
    with torch.device("meta"):  # on the CPU, torch's counter misses its flash-attention kernel
        model = build_model(config).eval()
        pixels = torch.zeros(1, 3, *config.image_size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(pixels)
    assert budget.vit_flops(config) == counter.get_total_flops()
