"""The lab's "which explanation can you trust?" pages, cached for the server: one image's deletion
and insertion curves, an ablated pass of the tour's image, and what ships beside the weights (the
test set's faithfulness table, the head-ablation grid, the map of the test set)."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from vitviz.analyses import ablation, faithfulness, projection
from vitviz.app import turns
from vitviz.app.caches import cached_trace
from vitviz.app.models import cached_model
from vitviz.app.testset import cached_test_set
from vitviz.app.text import tr
from vitviz.models.data import ImageSet, spread_subset
from vitviz.models.model import VisionTransformer


@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def cached_faithfulness(model_name: str, image_bytes: bytes) -> faithfulness.Faithfulness:
    """Every ranking's deletion and insertion curves for one image (read-only, shared by sessions),
    from the tour's cached trace."""
    model, _ = cached_model(model_name)
    trace = cached_trace(model_name, image_bytes)
    turns.step_aside()  # every ranking's curves, both ways: the class goes on beside it
    return faithfulness.faithfulness(model, trace.pixels, trace=trace)


def stored(model_name: str, kind: str) -> dict | None:
    """What ships beside the model's weights ("faithfulness" or "ablation"), when these weights made it."""
    model, spec = cached_model(model_name)
    if spec.path is None:
        return None
    if kind == "faithfulness":
        return faithfulness.read_stored(faithfulness.faithfulness_path(spec.path), model)
    return ablation.read_stored(ablation.ablation_path(spec.path), model)


@st.cache_resource(max_entries=4, show_spinner=False)
def cached_head_means(model_name: str, location: str) -> torch.Tensor:
    """Every head's mean output over ablation.MEAN_REFERENCE_IMAGES test images at even strides (read-only)."""
    model, _ = cached_model(model_name)
    return ablation.reference_means(model, cached_test_set(location))


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_ablated(
    model_name: str,
    image_bytes: bytes,
    heads: tuple[tuple[int, int], ...],
    layers: tuple[int, ...],
    mode: str,
    location: str | None,
) -> dict[str, np.ndarray]:
    """The tour's image through the model with some heads or layers switched off: its class
    probabilities, and its last layer's [CLS] attention (mean of heads) and rollout.

    Returns:
        "probs" (K,), "cls_attention" and "rollout" (grid_h, grid_w).
    """
    model, _ = cached_model(model_name)
    assert isinstance(model, VisionTransformer)
    means = cached_head_means(model_name, location) if mode == "mean" and heads and location else None
    switch = ablation.Ablation.of(heads, layers, mode, means)
    return ablation.switched_off(model, cached_trace(model_name, image_bytes).pixels, switch)


@st.cache_resource(max_entries=2, show_spinner=False)
def shipped_projection(model_name: str) -> projection.Projection | None:
    """The map shipped beside the weights, read without the test images: a server that has none
    draws it without pictures (read-only). None where no map ships for these weights."""
    model, spec = cached_model(model_name)
    return projection.read_stored(projection.projection_path(spec.path), model) if spec.path else None


COMPUTED_IMAGES = 2000  # a map made here, for a model that ships none: test images at even strides, PCA alone


@st.cache_resource(max_entries=2, show_spinner=False)
def cached_projection(model_name: str, location: str) -> tuple[projection.Projection, ImageSet]:
    """The map of the test set and the images it shows: shipped beside the weights (every test
    image, PCA and UMAP), else made once for the server with a progress bar, by PCA on
    COMPUTED_IMAGES test images (seconds, where UMAP over the whole split takes minutes) (read-only)."""
    model, spec = cached_model(model_name)
    data = cached_test_set(location)
    found = projection.read_stored(projection.projection_path(spec.path), model, data) if spec.path else None
    if found is not None:
        return found, data
    subset = spread_subset(data, COMPUTED_IMAGES)
    turns.step_aside()  # the model over a thousand images: the class goes on beside it
    holder = st.empty()
    try:
        made = projection.compute(
            model,
            subset,
            methods=("pca",),
            progress=lambda done, total: holder.progress(
                done / max(total, 1), text=tr("map.computing", done=done, total=total)
            ),
        )
    finally:
        holder.empty()
    return made, subset
