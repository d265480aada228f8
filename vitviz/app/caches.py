"""What the pages compute from one image, cached for the whole server: decoded images, traces,
maps, experiments, keyed by what they depend on (model name, image bytes, setting). The test
split and its evaluations are ``vitviz.app.testset``'s.

Models sit in ``st.cache_resource`` (vitviz.app.models); traces and decoded images in shelves
bounded by their bytes (``vitviz.app.shelf``: one shared read-only object, not a copy unpickled
on every rerun, and as many as a class needs); small arrays in ``st.cache_data``.
"""

from __future__ import annotations

import hashlib
import logging
import os

import numpy as np
import streamlit as st
import torch
from PIL import Image

from vitviz.analyses import analysis, compare, comparison, occlusion
from vitviz.app import shelf
from vitviz.app.models import cached_model
from vitviz.models import precision, snapshots, zoo
from vitviz.models.data import image_notes, load_image, to_tensor
from vitviz.models.model import VisionTransformer, on_weights
from vitviz.models.patches import compare_routes
from vitviz.models.trace import Float32Tensors, Trace
from vitviz.render import plots

log = logging.getLogger(__name__)

SAMPLES = zoo.ASSETS / "samples"
DEFAULT_SAMPLE = "cat-chelsea.jpg"  # a CIFAR-10 class, so the shipped model has a fair first try


def sample_names() -> list[str]:
    """Sample photos, the default first."""
    names = sorted(p.name for p in SAMPLES.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    return sorted(names, key=lambda n: n != DEFAULT_SAMPLE)


def image_key(image_bytes: bytes) -> bytes:
    """What the server keys an image's decoded pixels, traces and work done ahead by: a hash of its bytes."""
    return hashlib.blake2b(image_bytes, digest_size=16).digest()


# Pillow allocates a picture in blocks of 16 MB, and glibc keeps freed blocks of that size in the
# heap of the thread that decoded them: three sessions decoding a 6900 px upload at once left the
# server 1.1 GB larger for good. Blocks over 32 MB (glibc's largest mmap threshold) are mapped
# and unmapped, so the memory goes back when the picture is freed. PILLOW_BLOCK_SIZE, Pillow's
# own setting, wins where whoever runs the server sets it.
PILLOW_BLOCK_BYTES = 64 * 2**20
if "PILLOW_BLOCK_SIZE" not in os.environ:
    Image.core.set_block_size(PILLOW_BLOCK_BYTES)

# Decoded images (Pillow keeps RGB in 4 bytes a pixel), and the same as arrays for the pages:
# load_image keeps a picture at about 1 megapixel, so 60 uploads of a class, or every CIFAR image
# it opens, fit.
IMAGE_BYTES = 256 * 2**20
IMAGES: shelf.Shelf[Image.Image] = shelf.Shelf(
    IMAGE_BYTES, size=lambda image: image.width * image.height * 4, ttl_s=3600
)
ARRAY_BYTES = 192 * 2**20
ARRAYS: shelf.Shelf[np.ndarray] = shelf.Shelf(ARRAY_BYTES, size=lambda array: array.nbytes, ttl_s=3600)


def decoded_image(image_bytes: bytes) -> Image.Image:
    """load_image once per image for the whole server (read-only: every step makes new images)."""
    return IMAGES.get(image_key(image_bytes), lambda: load_image(image_bytes))


# A resource, not data: every rerun gets the same Trace object instead of unpickling a copy (a
# ViT-B/16 trace is about 48 MB, some 95 ms to unpickle). Pages only read it (tests/app/test_app_core
# walks the tour and compares the cached trace with a fresh one). 0.6 GB: 12 traces of ViT-B/16,
# some 500 of the CIFAR ViT (a class of thirty, each on an image of their own, keeps them all).
TRACE_BYTES = 600 * 2**20
TRACES: shelf.Shelf[Trace] = shelf.Shelf(TRACE_BYTES, size=lambda trace: trace_bytes(trace), ttl_s=3600)


def trace_bytes(trace: Trace) -> int:
    """What a cached trace may come to take: every tensor in float32 (a bf16 trace keeps its own
    tensors and the float32 copies its readers made)."""
    each = 6 if trace.computed_in == "bfloat16" else 4
    tensors = [trace.pixels, trace.patches, trace.patch_tokens, trace.tokens, trace.pre_logits, trace.logits]
    numel = sum(t.numel() for t in tensors) + (0 if trace.features is None else trace.features.numel())
    for blocks in (trace.hidden_states, trace.attentions, trace.attn_outputs, trace.mlp_outputs):
        numel += blocks.numel() if isinstance(blocks, Float32Tensors) else sum(t.numel() for t in blocks)
    return numel * each


def cached_trace(model_name: str, image_bytes: bytes) -> Trace:
    """The explained forward pass of one image, on the CPU in float32, keyed by (model name, image
    bytes), computed in the model's precision (``cached_precision``). Read-only: never change its
    tensors in place."""

    def explained() -> Trace:
        model, _ = cached_model(model_name)
        image = decoded_image(image_bytes)
        pixels = on_weights(to_tensor(image, model.config.preprocess, model.config.in_chans), model)
        return precision.explain(model, pixels, cached_precision(model_name).dtype)

    return TRACES.get((model_name, image_key(image_bytes)), explained)


cached_trace.clear = TRACES.clear  # type: ignore[attr-defined]  # as Streamlit's caches have it
decoded_image.clear = IMAGES.clear  # type: ignore[attr-defined]


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def cached_precision(model_name: str) -> precision.Precision:
    """The precision of every pass the pages run with a model (the explained pass, the occlusion
    curves, the CNN beside the ViT): float32, or bf16 where the server's VITVIZ_PRECISION says
    bfloat16 and the model's device has it (``precision.served``). Nothing is timed: what a class
    reads is the same on every run."""
    model, _ = cached_model(model_name)
    setting = os.environ.get("VITVIZ_PRECISION") or "float32"
    device = next(model.parameters()).device
    try:
        return precision.served(setting, device)
    except ValueError:
        log.warning(
            "VITVIZ_PRECISION=%s is not one of %s: float32 (a precision picked by a timing would change "
            "the numbers a class reads from run to run)",
            setting,
            ", ".join(precision.SETTINGS),
        )
        return precision.Precision()


@st.cache_data(max_entries=128, ttl=3600, show_spinner=False)  # two curves a student: a class of 64
def cached_occlusion(model_name: str, image_bytes: bytes, order_kind: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """One occlusion curve, keyed by (model name, image bytes, order kind, steps).

    Returns:
        order: (N,) the patches in the order they are hidden (``analysis.occlusion_order``).
        curve: (steps + 1,) the probability of the unoccluded top class at every step.
    """
    model, _ = cached_model(model_name)
    trace = cached_trace(model_name, image_bytes)
    dtype = cached_precision(model_name).dtype
    stored = stored_occlusion(model_name) if dtype == torch.float32 else None
    found = stored.curve(image_bytes, order_kind, steps) if stored is not None else None
    if found is not None:  # a test image: its curve was computed by ``occlusion.curve`` when the model shipped
        return analysis.occlusion_order(trace, order_kind).numpy(), found  # type: ignore[arg-type]
    order, curve = occlusion.curve(model, trace, order_kind, steps, dtype)
    return order.numpy(), curve.numpy()


@st.cache_resource(max_entries=8, show_spinner=False)
def stored_occlusion(model_name: str) -> occlusion.Table | None:
    """Every test image's occlusion curves, shipped beside the model's weights when these weights
    made them (``vitviz.analyses.occlusion``), read once for the server (read-only)."""
    model, spec = cached_model(model_name)
    return occlusion.read_stored(occlusion.occlusion_path(spec.path), model) if spec.path else None


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_comparison(
    vit_name: str, cnn_name: str, image_bytes: bytes, class_index: int, with_ig: bool
) -> dict[str, np.ndarray]:
    """The ViT-vs-CNN page's arrays for one image and class, keyed by (models, image, class, IG on).

    Returns:
        "cnn_logits" (K,), "rollout" and "grad_rollout" (grid_h, grid_w), "gradcam" (H, W) of
        the CNN's input, and with ``with_ig`` "ig_vit" and "ig_cnn" (the inputs' H, W).
    """
    vit, _ = cached_model(vit_name)
    cnn, _ = cached_model(cnn_name)
    image = decoded_image(image_bytes)
    cnn_pixels = on_weights(to_tensor(image, cnn.config.preprocess, cnn.config.in_chans), cnn)
    trace = cached_trace(vit_name, image_bytes)
    stored = stored_comparison(vit_name, cnn_name)
    found = stored.row(image_bytes, class_index) if stored is not None and not with_ig else None
    if found is not None:  # a test image: computed by ``comparison.row`` when the model shipped
        size = tuple(cnn_pixels.shape[-2:])
        return {
            "cnn_logits": found["cnn_logits"],
            "rollout": analysis.rollout_map(trace)[0].float().cpu().numpy(),
            "grad_rollout": found["grad_rollout"],
            "gradcam": compare.gradcam_from_maps(
                torch.from_numpy(found["gradcam_maps"]), size, cnn.config.test_flip
            ).numpy(),
        }
    vit_pixels = on_weights(to_tensor(image, vit.config.preprocess, vit.config.in_chans), vit)
    return compare.comparison(vit, vit_pixels, trace, cnn, cnn_pixels, class_index, with_ig)


@st.cache_resource(max_entries=8, show_spinner=False)
def stored_comparison(vit_name: str, cnn_name: str) -> comparison.Table | None:
    """Every test image's first view of page 8, shipped beside the ViT's weights when these two
    models made it (``vitviz.analyses.comparison``), read once for the server (read-only)."""
    vit, spec = cached_model(vit_name)
    cnn, _ = cached_model(cnn_name)
    return comparison.read_stored(comparison.comparison_path(spec.path), vit, cnn) if spec.path else None


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_experiment(
    vit_name: str, cnn_name: str, image_bytes: bytes, kind: str, shift: int, seed: int, hidden: tuple[int, ...]
) -> compare.Experiment:
    """``compare.run_experiment`` on one image, keyed by (models, image, experiment, its setting):
    the page's reruns (another map, the next student on the same sample) run neither model."""
    vit, _ = cached_model(vit_name)
    cnn, _ = cached_model(cnn_name)
    pixels = on_weights(cached_trace(vit_name, image_bytes).pixels, vit)  # autocast where the models run
    both = {cached_precision(name).dtype for name in (vit_name, cnn_name)}  # bf16 where the server set it for both
    dtype = torch.bfloat16 if both == {torch.bfloat16} else torch.float32
    stored = stored_comparison(vit_name, cnn_name) if dtype == torch.float32 and kind == "shuffle" else None
    found = stored.row(image_bytes) if stored is not None and seed == stored.seed else None
    if found is not None:  # a test image's shuffle at the page's first seed: computed when the model shipped
        vit_logits, cnn_logits = (
            torch.from_numpy(found[name])[None] for name in ("shuffle_vit_logits", "shuffle_cnn_logits")
        )
        return compare.Experiment(vit_logits, cnn_logits, compare.shuffled_input(vit, pixels, seed))
    cnn_pixels = to_tensor(decoded_image(image_bytes), cnn.config.preprocess, cnn.config.in_chans)
    with precision.autocast(pixels.device, dtype):
        return compare.run_experiment(kind, vit, pixels, cnn, cnn_pixels, shift=shift, seed=seed, hidden=hidden)


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_filter_components(model_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every component of ``analysis.patch_embed_components`` of a model's patch embedding, once
    per model: an SVD of ViT-B/16's 768 x 768 filters takes seconds here, and the weights never
    change (read-only). All of them, so that their shares decide how many a page shows."""
    model, _ = cached_model(model_name)
    components, ratios = analysis.patch_embed_components(model.patch_embed.proj.weight, k=None)
    return components.cpu().numpy(), ratios.cpu().numpy()


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_component_tiles(model_name: str, k: int) -> plots.Figure:
    """``plots.component_tiles`` of the first ``k`` of ``cached_filter_components``: it depends on
    the model alone, and 28 small subplots took a tenth of a second to lay out on every rerun of
    page 3. Shared by every session: ``st.plotly_chart`` only reads it (``to_dict``, then JSON)."""
    components, ratios = cached_filter_components(model_name)
    return plots.component_tiles(components[:k], ratios[:k])


@st.cache_resource(show_spinner=False)
def cached_snapshots() -> snapshots.Snapshots | None:
    """The shipped run's snapshots (``models.snapshots.read``), read once for the server."""
    return snapshots.read()


@st.cache_resource(max_entries=16, show_spinner=False)
def cached_snapshot_model(epoch: int) -> VisionTransformer:
    """The shipped run's model after ``epoch``, built once for the server (read-only, shared)."""
    return cached_snapshots().model_at(epoch)


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_routes(model_name: str, image_bytes: bytes) -> dict[str, float]:
    """``patches.compare_routes`` on one image's (pixels or hybrid features) and the model's
    patch embedding, keyed by (model name, image bytes)."""
    model, _ = cached_model(model_name)
    trace = cached_trace(model_name, image_bytes)
    proj = model.patch_embed.proj
    return compare_routes(trace.pixels if trace.features is None else trace.features, proj.weight, proj.bias)


def cached_image(image_bytes: bytes, language: str) -> tuple[np.ndarray, list[str]]:
    """The decoded upload as an (H, W, 3) uint8 array (shared and read-only, in a shelf bounded by
    its bytes, not a pickled copy a run), and load_image's notes in a language."""
    image = decoded_image(image_bytes)
    return ARRAYS.get(image_key(image_bytes), lambda: _read_only(np.asarray(image))), image_notes(image, language)


cached_image.clear = ARRAYS.clear  # type: ignore[attr-defined]


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def warm_model() -> None:
    """The default model and its precision in the caches (at the server's startup, before anyone
    asks: ``vitviz.app.warm_up``), and the CNN the comparison page sets beside it (loaded there, it
    kept the first student on that page waiting)."""
    cached_precision(zoo.default_name())
    first_cnn = next((name for name, spec in zoo.REGISTRY.items() if spec.is_cnn), None)
    if first_cnn is not None:
        cached_precision(first_cnn)
