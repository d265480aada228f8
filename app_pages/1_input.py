"""Step 1: from the photo to the model's input tensor, using the model's own preprocessing."""

import streamlit as st

from vitviz import claims, plots
from vitviz.app import caches, current, furniture, navigation
from vitviz.app.text import lang, tr
from vitviz.data import denormalize, input_pixels, inverts, original_size

cur = current.current()
config = cur.model.config
pre = config.preprocess
furniture.header("page.input", "input.intro", shape=tuple(cur.trace.pixels.shape))

original = cur.image  # the picture as load_image kept it (a large photo scaled down as it was opened)
picture = caches.decoded_image(cur.image_bytes)
width, height = original_size(picture)
resized = input_pixels(picture, pre, config.in_chans).permute(1, 2, 0).numpy()  # (H, W, C) uint8, as the model gets it
gray = config.in_chans == 1
inverted = inverts(picture, pre, config.in_chans)
normalised = cur.trace.pixels[0].numpy()  # (C, H, W)
if gray:
    st.info(tr("input.gray_note"))

a, b = st.columns(2)
kept_height, kept_width = original.shape[:2]
if (width, height) == (kept_width, kept_height):
    original_title = tr("input.original", width=width, height=height)
else:
    original_title = tr(
        "input.original_scaled", width=width, height=height, kept_width=kept_width, kept_height=kept_height
    )
a.plotly_chart(
    plots.image(original, original_title),
    width="stretch",
    key="input_original",
)
title = "input.resized_gray_inverted" if inverted else "input.resized_gray" if gray else "input.resized"
b.plotly_chart(
    plots.image(resized, tr(title, width=resized.shape[1], height=resized.shape[0])),
    width="stretch",
    key="input_resized",
)

st.subheader(tr("input.recipe"))
resize = (
    tr("input.shorter_side", size=pre.resize) if isinstance(pre.resize, int) else f"{pre.resize[0]} x {pre.resize[1]}"
)
means, stds = ", ".join(f"{m:.4g}" for m in pre.mean), ", ".join(f"{s:.4g}" for s in pre.std)
steps = [
    (tr("input.step.resize"), f"{resize}, {pre.interpolation}"),
    (tr("input.step.crop"), "-" if pre.crop is None else f"{pre.crop[0]} x {pre.crop[1]}"),
]
if gray:
    steps.append((tr("input.step.gray"), tr("input.step.gray_value")))
if pre.dark_background:
    steps.append((tr("input.step.invert"), tr("input.step.invert_yes" if inverted else "input.step.invert_no")))
steps += [
    (tr("input.step.scale"), tr("input.step.scale_value")),
    (tr("input.step.normalise"), f"(x - mean) / std, mean=({means}), std=({stds})"),
]
st.dataframe(
    [{tr("input.col.step"): step, tr("input.col.value"): value} for step, value in steps],
    hide_index=True,
    width="stretch",
)

st.subheader(tr("input.channels"))
names = ["R", "G", "B"] if len(normalised) == 3 else ["L"]
st.plotly_chart(
    plots.channel_maps(
        normalised, [f"{n}: (x - {m:.3f}) / {s:.3f}" for n, m, s in zip(names, pre.mean, pre.std, strict=True)]
    ),
    width="stretch",
    key="input_channels",
)
before = {f"{n} / 255": resized[..., i] / 255.0 for i, n in enumerate(names)}
after = {tr("input.normalised_channel", channel=n): normalised[i] for i, n in enumerate(names)}
c, d = st.columns(2)
count = tr("input.hist_y")
c.plotly_chart(
    plots.histogram(before, tr("input.hist_before"), x_title=tr("input.hist_x_before"), y_title=count),
    width="stretch",
    key="input_hist_before",
)
d.plotly_chart(
    plots.histogram(
        after,
        claims.text(claims.normalised_input(normalised), lang()),
        x_title=tr("input.hist_x_after"),
        y_title=count,
    ),
    width="stretch",
    key="input_hist_after",
)
furniture.download_npz(
    "download.npz",
    "model_input.npz",
    "input_npz",
    pixels=normalised,
    resized=resized,
    model_input=denormalize(cur.trace.pixels[0], pre),
)
navigation.nav("app_pages/1_input.py")
