"""Step 5: self-attention. Where [CLS] and any patch look, every head, rollout, distance, one worked query.

Layers and heads are 0-based in code and session state (layer 0 is blocks[0]) and counted from 1
on screen and in the URL ("Layer 1", "Head 1", layer=1), as on every page; so are patches, rows and
columns. A token keeps its index in the sequence, where [CLS] is token 0, so with a [CLS] token,
token k is patch k. HEAD_MEAN (-1) in the "head" key means the mean of the heads; it is never
passed to vitviz as a head index.
"""

import numpy as np
import streamlit as st

from vitviz import analysis, claims, plots, tables
from vitviz.app import current, furniture, navigation, state
from vitviz.app.text import lang, tr
from vitviz.data import denormalize

HEAD_MEAN = -1
TOP_KEYS = 8
SHOW_DIMS = 8

cur = current.current()
trace = cur.trace
config = cur.model.config
depth, heads = trace.depth, trace.num_heads
if depth == 0:
    furniture.header("page.attention", "attention.intro")
    st.info(tr("attention.no_blocks"))
    st.stop()
prefix = trace.num_prefix_tokens
grid_h, grid_w = trace.grid_size
num_patches = grid_h * grid_w
num_tokens = prefix + num_patches
patch_size = config.token_size  # pixels per token

centre = analysis.patch_index(grid_h // 2, grid_w // 2, trace.grid_size, prefix)
layer = state.clip("layer", 0, 0, depth - 1)  # 0-based
head = state.clip("head", 0, HEAD_MEAN, heads - 1)  # 0-based, or HEAD_MEAN
query = state.clip("query", centre, 0, num_tokens - 1)  # token index: [CLS] (if any) is 0
attention = trace.attentions[layer]  # (B, heads, T, T)
furniture.header("page.attention", "attention.intro", shape=tuple(attention.shape))


def layer_label(index: int) -> str:
    return tr("attention.layer_n", n=index + 1)


def head_label(index: int) -> str:
    return tr("attention.mean_heads") if index == HEAD_MEAN else tr("attention.head_n", n=index + 1)


def token_label(token: int) -> str:
    patch = analysis.token_to_patch(token, trace.grid_size, prefix)
    if patch is None:
        return tr("attention.token_cls", token=token)
    return tr("attention.token_patch", token=token, patch=token - prefix + 1, row=patch[0] + 1, col=patch[1] + 1)


c1, c2, c3 = st.columns([2, 1, 1])
layer = state.widget(
    c1.select_slider, "layer", tr("attention.layer"), options=list(range(depth)), format_func=layer_label
)
head = state.widget(c2.selectbox, "head", tr("attention.head"), [*range(heads), HEAD_MEAN], format_func=head_label)
query = state.widget(
    c3.number_input,
    "query",
    tr("attention.query"),
    min_value=0,
    max_value=num_tokens - 1,
    step=1,
    help=tr("attention.query_help_cls" if prefix else "attention.query_help_no_cls", last=num_tokens - 1),
)
head_index = None if head == HEAD_MEAN else head
query_patch = query - prefix if query >= prefix else None
where = f"{layer_label(layer)}, {head_label(head)}"
c3.caption(token_label(query))

# ---- where [CLS] (or the mean patch query) and the chosen query look -------------------------
st.subheader(tr("attention.maps"))
if not prefix:
    st.info(tr("attention.no_cls"))
model_input = denormalize(trace.pixels[0], config.preprocess)  # (H, W, 3) in [0, 1]
readout_maps = analysis.readout_attention(trace, layer)[0]  # (heads, grid_h, grid_w)
query_maps = analysis.query_attention(trace, layer, query)[0]  # (heads, grid_h, grid_w)
readout_map = analysis.select_head(readout_maps, head_index).numpy()  # (grid_h, grid_w)
query_map = analysis.select_head(query_maps, head_index).numpy()
readout_title = tr("attention.cls_title" if prefix else "attention.mean_title", where=where)
query_title = tr("attention.query_title", token=query, where=where)
left, right = st.columns(2)
for column, key, values, outline, title in (
    (left, "attention_readout", readout_map, None, readout_title),
    (right, "attention_query", query_map, query_patch, query_title),
):
    column.plotly_chart(
        plots.attention_picker(model_input, values, patch_size, outline, title=title),
        width="stretch",
        key=key,
        on_select=furniture.choose_clicked_patch(key, "query", num_patches, offset=prefix),
        selection_mode="points",
    )
st.caption(f"{tr('attention.click_hint')} {tr('attention.maps_caption', tokens=num_tokens)}")

# ---- every head of this layer -----------------------------------------------------------------
st.subheader(tr("attention.heads"))
readout_word = "attention.heads_of.readout" if prefix else "attention.heads_of.readout_mean"
view = st.radio(
    tr("attention.heads_of"),
    ["readout", "query"],
    horizontal=True,
    key="attention_heads_of",
    format_func=lambda v: tr(readout_word) if v == "readout" else f"{tr('attention.heads_of.query')} ({query})",
)
multiples = (readout_maps if view == "readout" else query_maps).numpy()  # (heads, grid_h, grid_w)
titles = [head_label(h) for h in range(heads)]
heads_figure = plots.small_multiples(
    multiples, titles, columns=min(heads, 6), height_per_row=200, hover=current.grid_hover()
)
st.plotly_chart(heads_figure, width="stretch", key="attention_heads")
st.caption(tr("attention.heads_caption", heads=heads, layer=layer_label(layer)))

# ---- attention rollout ------------------------------------------------------------------------
st.subheader(tr("attention.rollout"))
rollout_readout = tr("attention.rollout_readout.cls" if prefix else "attention.rollout_readout.mean")
st.markdown(tr("attention.rollout_intro", readout=rollout_readout))
fusion = st.radio(
    tr("attention.fusion"),
    list(analysis.HEAD_FUSIONS),
    horizontal=True,
    key="attention_fusion",
    format_func=lambda f: tr(f"attention.fusion.{f}"),
    help=tr("attention.fusion_help"),
)
rollout = analysis.rollout_map(trace, head_fusion=fusion)[0].numpy()  # (grid_h, grid_w)
rollout_title = tr("attention.rollout_title", depth=depth, fusion=tr(f"attention.fusion.{fusion}"))
# beside it, the last layer alone (heads averaged): where the two differ, earlier layers have mixed the tokens
last_layer = analysis.select_head(analysis.readout_attention(trace, depth - 1)[0], None).numpy()
last_where = f"{layer_label(depth - 1)}, {head_label(HEAD_MEAN)}"
last_title = tr("attention.cls_title" if prefix else "attention.mean_title", where=last_where)
left, right = st.columns(2)
for column, key, values, title in (
    (left, "attention_rollout", rollout, rollout_title),
    (right, "attention_last_layer", last_layer, last_title),
):
    column.plotly_chart(
        plots.heatmap_overlay(model_input, values, title=title, height=420, hover=current.grid_hover()),
        width="stretch",
        key=key,
    )
st.caption(tr("attention.rollout_caption"))

# ---- mean attention distance (ViT paper, Fig. 7 right) ----------------------------------------
st.subheader(tr("attention.distance"))
st.markdown(tr("attention.distance_intro"))
distances = analysis.mean_attention_distance(trace, patch_size).numpy()  # (depth, heads)
uniform = analysis.uniform_attention_distance(trace.grid_size, patch_size)
st.plotly_chart(
    plots.attention_distance(
        distances,
        title=tr("attention.distance_title"),
        x_title=tr("attention.distance_x"),
        y_title=tr("attention.distance_y"),
        head_word=tr("attention.distance_head"),
        uniform=uniform,
        uniform_label=tr("attention.distance_uniform"),
    ),
    width="stretch",
    key="attention_distance",
)
st.markdown(claims.text(claims.attention_distance(distances, uniform, max(trace.pixels.shape[-2:])), lang()))
st.caption(tr("attention.distance_single", patches=num_patches))

# ---- softmax(Q K^T / sqrt(d)) V for one query, with real numbers -------------------------------
st.subheader(tr("attention.worked"))
worked_head = 0 if head_index is None else head_index
worked = analysis.worked_attention(cur.model, trace, layer, worked_head, query)
head_dim = worked["q"].numel()
formula = r"\mathrm{Attention}(q, K, V) = \mathrm{softmax}\!\left(\frac{q K^\top}{\sqrt{d}}\right) V"
st.latex(formula + r", \qquad d = " + str(head_dim))
st.markdown(
    tr(
        "attention.worked_intro",
        token=token_label(query),
        where=f"{layer_label(layer)}, {head_label(worked_head)}",
        tokens=num_tokens,
        d=head_dim,
        sqrt_d=head_dim**0.5,
    )
)
if trace.computed_in == "bfloat16":
    st.caption(tr("attention.worked_bf16"))
if head_index is None:
    st.caption(tr("attention.worked_mean_note"))
shown_dims = min(SHOW_DIMS, head_dim)
st.markdown(f"**{tr('attention.worked_q', n=shown_dims, d=head_dim)}**")
q_row = {f"q[{i}]": round(float(v), 4) for i, v in enumerate(worked["q"][:shown_dims])}
st.dataframe([q_row], hide_index=True, width="stretch")
rows, other_weight = analysis.top_keys(worked, trace.grid_size, prefix, TOP_KEYS)
labels = ["[CLS]" if r["row"] is None else tr("attention.position", row=r["row"] + 1, col=r["col"] + 1) for r in rows]
keys_left, keys_right = st.columns([3, 2])
keys_left.markdown(f"**{tr('attention.worked_keys', k=len(rows))}**")
keys_left.dataframe(
    [
        {
            tr("attention.col.token"): r["token"],
            tr("attention.col.position"): label,
            tr("attention.col.score"): round(float(r["score"]), 4),
            tr("attention.col.weight"): round(float(r["weight"]), 4),
        }
        for r, label in zip(rows, labels, strict=True)
    ],
    hide_index=True,
    width="stretch",
)
shown_weight = sum(float(r["weight"]) for r in rows)
keys_left.markdown(
    tr(
        "attention.worked_sum",
        k=len(rows),
        shown=shown_weight,
        others=num_tokens - len(rows),
        rest=other_weight,
        total=float(worked["weights"].sum()),
    )
)
keys_right.plotly_chart(
    plots.key_weights(
        [f"{r['token']}: {label}" for r, label in zip(rows, labels, strict=True)],
        [float(r["weight"]) for r in rows],
        title=tr("attention.worked_bars"),
    ),
    width="stretch",
    key="attention_worked_bars",
)
st.latex(r"\text{output} = \sum_{j=0}^{" + str(num_tokens - 1) + r"} w_j \, v_j")
st.markdown(f"**{tr('attention.worked_output', n=shown_dims, d=head_dim)}**")
output_row = {f"out[{i}]": round(float(v), 4) for i, v in enumerate(worked["output"][:shown_dims])}
st.dataframe([output_row], hide_index=True, width="stretch")
st.caption(tr("attention.worked_output_note", heads=heads))

# ---- downloads --------------------------------------------------------------------------------
d1, d2 = st.columns(2)
with d1:
    readout_name = "cls" if prefix else "mean_patch_queries"
    head_name = "mean" if head_index is None else head + 1
    furniture.download_csv(
        "attention.download_maps",
        f"attention_layer{layer + 1}_head{head_name}.csv",
        "attention_csv",
        lambda: tables.maps_csv({readout_name: readout_map, f"query_{query}": query_map, f"rollout_{fusion}": rollout}),
    )
with d2:
    furniture.download_npz(
        "attention.download_tensor",
        f"attention_layer{layer}.npz",
        "attention_npz",
        attention=attention.numpy(),
        layer=np.array(layer),
        mean_attention_distance=distances,
    )
navigation.nav("app_pages/5_attention.py")
