"""Step 2: the image cut into a P x P patch grid: N = H W / P^2 patches."""

import numpy as np
import streamlit as st
from PIL import Image

from vitviz import plots
from vitviz.app import current, furniture, navigation, state
from vitviz.app.text import tr
from vitviz.config import Preprocess
from vitviz.data import denormalize, resize_and_crop
from vitviz.patches import patch_arithmetic, patch_tiles, patchify
from vitviz.trace import resnet_name

cur = current.current()
config = cur.model.config
pre = config.preprocess
p, square = config.patch_size, config.token_size  # pixels per token: P, or P x the ResNet's stride
height, width = config.image_size
grid_h, grid_w = cur.trace.grid_size
furniture.header("page.patches", "patches.intro", shape=tuple(cur.trace.patches.shape))
if config.is_hybrid:
    st.info(
        tr(
            "patches.hybrid",
            resnet=resnet_name(config),
            height=height,
            width=width,
            p=p,
            s=square,
            features=tuple(cur.trace.features.shape[1:]),
            dim=config.patch_dim,
        )
    )

m = st.columns(4)
m[0].metric(tr("patches.image_size"), f"{height} x {width}")
m[1].metric(tr("patches.patch_size"), f"{p} x {p}")
m[2].metric(tr("patches.count"), f"{grid_h} x {grid_w} = {grid_h * grid_w}")
if config.is_hybrid:  # the sum does not fit a column; the feature map's row below spells it out
    m[3].metric(tr("patches.vector"), f"{config.patch_dim}")
    h = st.columns(4)
    h[0].metric(tr("patches.feature_map"), " x ".join(map(str, cur.trace.features.shape[1:])))
    h[1].metric(tr("patches.token_pixels"), f"{square} x {square}")
else:
    m[3].metric(tr("patches.vector"), f"{p} x {p} x {config.in_chans} = {config.patch_dim}")

left, right = st.columns(2)
model_input = denormalize(cur.trace.pixels[0], pre)
left.plotly_chart(
    plots.patch_grid(model_input, square, title=tr("patches.grid"), numbers=grid_h * grid_w <= 64),
    width="stretch",
    key="patches_grid",
)
squares = patchify(cur.trace.pixels, square)[0]  # (N, C*s*s): of a hybrid, the squares its tokens stand for
tiles = patch_tiles(squares, square, config.in_chans, pre.mean, pre.std).numpy()  # (N, s, s, C)
right.plotly_chart(
    plots.patch_gallery(
        tiles, (grid_h, grid_w), title=tr("patches.hybrid_gallery" if config.is_hybrid else "patches.gallery")
    ),
    width="stretch",
    key="patches_gallery",
)

st.subheader(tr("patches.concept"))
st.markdown(tr("patches.concept_intro"))
c1, c2 = st.columns(2)
size = c1.select_slider(tr("patches.concept_size"), options=[32, 64, 224, 384, 512], value=512, key="concept_size")
choices = [q for q in (2, 4, 8, 14, 16, 32, 64) if size % q == 0]
if state.get("concept_p") not in choices:
    state.set(concept_p=16 if 16 in choices else choices[-1])
concept_p = state.widget(c2.select_slider, "concept_p", tr("patches.concept_p"), options=choices)
facts = patch_arithmetic((size, size), concept_p, config.in_chans)
n1, n2, n3 = st.columns(3)
n1.metric(tr("patches.count"), f"{facts['grid_h']} x {facts['grid_w']} = {facts['num_patches']}")
n2.metric(tr("patches.vector"), f"{concept_p} x {concept_p} x {config.in_chans} = {facts['patch_dim']}")
n3.metric(tr("patches.tokens"), f"{facts['num_patches']} + 1 = {facts['num_patches'] + 1}")
st.caption(tr("patches.attention_cost", tokens=facts["num_patches"] + 1, pairs=f"{(facts['num_patches'] + 1) ** 2:,}"))
if facts["num_patches"] <= 4096:
    resized = np.asarray(resize_and_crop(Image.fromarray(cur.image), Preprocess(resize=size, crop=(size, size))))
    st.plotly_chart(plots.patch_grid(resized, concept_p, height=420), width="stretch", key="patches_concept")
furniture.download_npz("download.npz", "patches.npz", "patches_npz", patches=cur.trace.patches[0].numpy(), tiles=tiles)
navigation.nav("app_pages/2_patches.py")
