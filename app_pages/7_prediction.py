"""Step 7: the prediction. The head, the top-k classes, the logit lens, and an occlusion test.

The logit lens is indexed by block: 0 is the embedded tokens before any block, l the output of
layer l (1-based, as on the attention page). Occlusion curves are cached per (model, image, order
kind, steps) by caches.cached_occlusion.
"""

import numpy as np
import streamlit as st
import torch

from vitviz import analysis, claims, faithfulness, plots, tables
from vitviz.app import caches, current, furniture, navigation
from vitviz.app.text import label, lang, tr
from vitviz.app.tour import LAB
from vitviz.data import denormalize
from vitviz.prediction import top_k

TRUST_PAGE, _, TRUST_ICON = next(page for page in LAB if page[0] == "app_pages/11_trust.py")

cur = current.current()
trace, model = cur.trace, cur.model
config = model.config
if config.num_classes == 0:
    furniture.header("page.prediction", "prediction.intro", shape=tuple(trace.logits.shape))
    st.info(tr("prediction.no_head"))
    navigation.nav("app_pages/7_prediction.py")
    st.stop()
furniture.header("page.prediction", "prediction.intro", shape=tuple(trace.logits.shape))
prefix = trace.num_prefix_tokens
num_classes = config.num_classes
names = config.class_names


def class_name(index: int) -> str:
    return label(names[index]) if names else tr("prediction.class_n", n=index)


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


# ---- the head and the top-k classes -----------------------------------------------------------
st.subheader(tr("prediction.topk_title"))
sentence = "prediction.head_cls" if config.global_pool == "token" else "prediction.head_avg"
st.markdown(
    tr(
        sentence,
        tokens=shape_text(tuple(trace.hidden_states[-1].shape)),
        pre=shape_text(tuple(trace.pre_logits.shape)),
        weight=shape_text(tuple(model.head.weight.shape)),
        logits=shape_text(tuple(trace.logits.shape)),
        n=num_classes,
    )
)
max_k = min(20, num_classes)
k = st.slider(tr("prediction.k"), min_value=1, max_value=max_k, value=min(5, max_k), key="topk")
ranked = top_k(model.config.class_names, trace.logits, k)
labels = [name for name, _ in ranked]
st.plotly_chart(
    current.class_bars(
        labels, [p for _, p in ranked], tr("prediction.topk_chart", k=k), cur.verdict, height=90 + 36 * k
    ),
    width="stretch",
    key="prediction_topk",
)
current.show_verdict(cur.verdict)
current.show_known_classes(config, cur.verdict)

# ---- the logit lens ---------------------------------------------------------------------------
st.subheader(tr("prediction.lens_title"))
st.markdown(tr("prediction.lens_intro_cls" if config.global_pool == "token" else "prediction.lens_intro_avg"))
lens = analysis.logit_lens(model, trace).float().cpu()  # (depth + 1, B, K) probabilities
depth = trace.depth
blocks = np.arange(depth + 1)
after = [tr("prediction.after_embed") if i == 0 else tr("prediction.after_layer", n=i, index=i - 1) for i in blocks]
tracked, scores = analysis.logit_lens_tracks(lens, k=min(5, num_classes))  # (m,), (depth + 1, m): every top-1 too
st.plotly_chart(
    plots.multi_line(
        blocks,
        {class_name(int(c)): scores[:, j].numpy() for j, c in enumerate(tracked)},
        title=tr("prediction.lens_chart"),
        x_title=tr("prediction.x_block"),
        y_title=tr("prediction.y_prob"),
        percent=True,
        hover_text=after,
    ),
    width="stretch",
    key="prediction_lens",
)
top1, top1_prob = analysis.logit_lens_top1(lens)  # (depth + 1,) each
final_class = int(trace.logits[0].argmax())
st.markdown(claims.text(claims.logit_lens(top1.tolist(), final_class, names), lang()))
final_rank = analysis.class_rank_by_layer(lens, final_class)[:, 0]  # (depth + 1,)
st.dataframe(
    [
        {
            tr("prediction.col.after"): after[i],
            tr("prediction.col.top1"): class_name(int(top1[i])),
            tr("prediction.col.prob"): f"{float(top1_prob[i]):.1%}",
            tr("prediction.col.rank", name=class_name(final_class)): int(final_rank[i]) + 1,
        }
        for i in blocks
    ],
    hide_index=True,
    width="stretch",
    key="prediction_lens_table",
)

# ---- occlusion --------------------------------------------------------------------------------
st.subheader(tr("prediction.occlusion_title"))
st.markdown(tr("prediction.occlusion_intro"))
num_patches = config.num_patches
steps = analysis.occlusion_steps(model)
with st.spinner(tr("prediction.occlusion_running")):
    occlusion = {
        kind: caches.cached_occlusion(cur.name, cur.image_bytes, kind, steps) for kind in analysis.OCCLUSION_ORDERS
    }
counts = analysis.occlusion_counts(num_patches, steps).numpy()  # (steps + 1,)
fractions = counts / num_patches
curve_names = {kind: tr(f"prediction.order.{kind}") for kind in analysis.OCCLUSION_ORDERS}
left, right = st.columns([3, 2])
left.plotly_chart(
    plots.multi_line(
        fractions,
        {curve_names[kind]: curve for kind, (_, curve) in occlusion.items()},
        title=tr("prediction.occlusion_chart", name=class_name(final_class)),
        x_title=tr("prediction.x_hidden"),
        y_title=tr("prediction.y_prob"),
        percent=True,
        x_percent=True,
        colours={curve_names["rollout"]: "#d62728", curve_names["random"]: "#7f7f7f"},
        hover_text=[tr("prediction.hidden_n", n=int(c), total=num_patches) for c in counts],
    ),
    width="stretch",
    key="prediction_occlusion",
)
model_input = denormalize(trace.pixels[0], config.preprocess)
rollout = analysis.rollout_map(trace)[0].numpy()  # (grid_h, grid_w)
right.plotly_chart(
    plots.heatmap_overlay(
        model_input, rollout, title=tr("prediction.rollout_title"), height=360, hover=current.grid_hover()
    ),
    width="stretch",
    key="prediction_rollout",
)
reading = claims.occlusion(fractions, occlusion["rollout"][1], occlusion["random"][1])
st.markdown(claims.text(reading, lang()))
# what the curves show, and no verdict: the trust page decides against many random orders
st.markdown(tr("prediction.occlusion_verdict", page=tr("page.trust"), orders=faithfulness.RANDOM_ORDERS))
st.page_link(TRUST_PAGE, label=tr("page.trust"), icon=TRUST_ICON)
st.caption(tr("prediction.occlusion_caption", steps=steps, images=steps, patches=num_patches))

rollout_order = torch.as_tensor(occlusion["rollout"][0])
shown = sorted({round(steps * f) for f in (0.0, 0.25, 0.5, 0.75)})
masks = analysis.occlusion_masks(rollout_order, steps)[shown]  # (len(shown), N)
occluded = analysis.occlude(trace.pixels, masks, config.token_size)  # (len(shown), C, H, W)
curve = occlusion["rollout"][1]
st.plotly_chart(
    plots.image_row(
        [denormalize(image, config.preprocess) for image in occluded],
        [tr("prediction.occluded_n", n=int(counts[s]), p=f"{float(curve[s]):.1%}") for s in shown],
    ),
    width="stretch",
    key="prediction_occluded",
)

# ---- downloads --------------------------------------------------------------------------------
lens_columns = {
    "block": blocks,
    "after": after,
    **{f"{c} {names[c]}" if names else f"class {c}": lens[:, 0, c].numpy() for c in range(num_classes)},
}
occlusion_columns = {
    "hidden_patches": counts,
    "hidden_fraction": fractions,
    **{f"probability_{kind}": curve for kind, (_, curve) in occlusion.items()},
}
d1, d2, d3 = st.columns(3)
with d1:
    furniture.download_csv(
        "prediction.download_lens", "logit_lens.csv", "prediction_lens_csv", lambda: tables.columns_csv(lens_columns)
    )
with d2:
    furniture.download_csv(
        "prediction.download_occlusion",
        "occlusion.csv",
        "prediction_occlusion_csv",
        lambda: tables.columns_csv(occlusion_columns),
    )
with d3:
    furniture.download_npz(
        "download.npz",
        "prediction.npz",
        "prediction_npz",
        logits=trace.logits[0].numpy(),
        logit_lens=lens[:, 0].numpy(),
        occlusion_counts=counts,
        **{f"occlusion_{kind}": curve for kind, (_, curve) in occlusion.items()},
        **{f"order_{kind}": order for kind, (order, _) in occlusion.items()},
    )
navigation.nav("app_pages/7_prediction.py")
