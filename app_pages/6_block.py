"""Step 6: the encoder block. pre-LN -> MHSA -> residual -> pre-LN -> MLP (GELU) -> residual.

Layers are 0-based in code and session state (layer 0 is blocks[0]) and counted from 1 on screen
and in the URL ("Layer 1 (blocks[0])", layer=1), as on the attention page; the token is the shared
"query" key, a token index ([CLS], when there is one, is token 0, and token k is patch k).
"""

import numpy as np
import streamlit as st

from vitviz import analysis, claims, plots, tables
from vitviz.app import current, furniture, navigation, state
from vitviz.app.text import lang, tr

cur = current.current()
trace, model = cur.trace, cur.model
depth = trace.depth
if depth == 0:
    furniture.header("page.block", "block.intro")
    st.info(tr("block.no_blocks"))
    navigation.nav("app_pages/6_block.py")
    st.stop()
prefix = trace.num_prefix_tokens
num_tokens = trace.hidden_states[0].shape[1]
grid_h, grid_w = trace.grid_size
centre = analysis.patch_index(grid_h // 2, grid_w // 2, trace.grid_size, prefix)
layer = state.clip("layer", 0, 0, depth - 1)  # 0-based
query = state.clip("query", centre, 0, num_tokens - 1)  # token index: [CLS] (if any) is 0
furniture.header("page.block", "block.intro", shape=tuple(trace.hidden_states[layer + 1].shape))


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def token_label(token: int) -> str:
    patch = analysis.token_to_patch(token, trace.grid_size, prefix)
    if patch is None:
        return tr("block.token_cls", token=token)
    return tr("block.token_patch", token=token, patch=token - prefix + 1, row=patch[0] + 1, col=patch[1] + 1)


# ---- the diagram ------------------------------------------------------------------------------
st.subheader(tr("block.diagram"))
steps = analysis.block_shapes(model, trace)
boxes = [(tr(f"block.step.{step}"), shape_text(shape), plots.BLOCK_KINDS[step]) for step, shape in steps]
add1, add2 = analysis.BLOCK_STEPS.index("add1"), analysis.BLOCK_STEPS.index("add2")
left, right = st.columns([1, 1])
left.plotly_chart(
    plots.block_diagram(boxes, residuals=[(0, add1), (add1, add2)], title=tr("block.diagram_title", depth=depth)),
    width="stretch",
    key="block_diagram",
)
right.markdown(
    tr("block.parts", heads=trace.num_heads, hidden=dict(steps)["fc1"][-1], dim=trace.hidden_states[0].shape[-1])
)

# ---- one layer, sub-step by sub-step ----------------------------------------------------------
st.subheader(tr("block.layer_title"))
c1, c2 = st.columns([2, 1])
layer = state.widget(
    c1.select_slider,
    "layer",
    tr("block.layer"),
    options=list(range(depth)),
    format_func=lambda i: tr("block.layer_n", n=i + 1, index=i),
)
query = state.widget(c2.number_input, "query", tr("block.token"), min_value=0, max_value=num_tokens - 1, step=1)
c2.caption(token_label(query))

per_layer = analysis.block_statistics(trace)  # (depth,) each, mean over patch tokens
m1, m2, m3 = st.columns(3)
m1.metric(tr("block.metric_attn"), f"{float(per_layer['attn_ratio'][layer]):.2f}", help=tr("block.metric_attn_help"))
m2.metric(tr("block.metric_mlp"), f"{float(per_layer['mlp_ratio'][layer]):.2f}", help=tr("block.metric_mlp_help"))
m3.metric(tr("block.metric_cosine"), f"{float(per_layer['cosine'][layer]):.3f}", help=tr("block.metric_cosine_help"))

norms = analysis.block_token_norms(model, trace, layer)  # (T,) each
tokens = np.arange(num_tokens)
labels = [token_label(i) for i in tokens]
markers = num_tokens <= 80
token_axis = claims.text(claims.token_axis(prefix), lang())
where = tr("block.layer_n", n=layer + 1, index=layer)
a, b = st.columns(2)
a.plotly_chart(
    plots.multi_line(
        tokens,
        {
            tr("block.series.input"): norms["input"].numpy(),
            tr("block.series.norm1"): norms["norm1"].numpy(),
            tr("block.series.mid"): norms["mid"].numpy(),
            tr("block.series.norm2"): norms["norm2"].numpy(),
        },
        title=tr("block.norms_title", where=where),
        x_title=token_axis,
        y_title=tr("block.y_norm"),
        dashed=(tr("block.series.mid"), tr("block.series.norm2")),
        markers=markers,
        hover_text=labels,
        marked_x=query,
    ),
    width="stretch",
    key="block_token_norms",
)
b.plotly_chart(
    plots.multi_line(
        tokens,
        {
            tr("block.series.attn_ratio"): norms["attn_ratio"].numpy(),
            tr("block.series.mlp_ratio"): norms["mlp_ratio"].numpy(),
        },
        title=tr("block.ratio_title", where=where),
        x_title=token_axis,
        y_title=tr("block.y_ratio"),
        markers=markers,
        hover_text=labels,
        marked_x=query,
    ),
    width="stretch",
    key="block_token_ratios",
)
st.caption(tr("block.norms_caption", dim=trace.hidden_states[0].shape[-1]))
lengths = claims.layer_norm_lengths(norms["input"].numpy(), norms["norm1"].numpy())
st.markdown(claims.text(lengths, lang()))

pre = analysis.mlp_preactivations(model, trace, layer, query)  # (mlp_hidden,)
curves = analysis.activation_curves(min(-4.0, float(pre.min())), max(4.0, float(pre.max())))
st.plotly_chart(
    plots.gelu_histogram(
        curves["x"].numpy(),
        curves["gelu"].numpy(),
        curves["relu"].numpy(),
        pre.numpy(),
        title=tr("block.gelu_title", token=token_label(query), where=where),
        x_title=tr("block.gelu_x"),
        y_title=tr("block.gelu_y"),
        count_title=tr("block.gelu_count"),
        values_name=tr("block.gelu_values"),
    ),
    width="stretch",
    key="block_gelu",
)
st.caption(claims.text(claims.gelu_inputs(pre.numpy()), lang()))

# ---- layer by layer ---------------------------------------------------------------------------
st.subheader(tr("block.depth_title"))
st.markdown(tr("block.depth_intro"))
cls = analysis.block_statistics(trace, token=0) if prefix else None
x = np.arange(1, depth + 1)
names = {key: tr(f"block.series.{key}") for key in ("residual_norm", "attn_norm", "mlp_norm", "cosine")}
colours = {"residual_norm": "#444444", "attn_norm": "#1f77b4", "mlp_norm": "#2ca02c", "cosine": "#9467bd"}
series, dashed, colour_of = {}, [], {}
for key in ("residual_norm", "attn_norm", "mlp_norm"):
    series[names[key]] = per_layer[key].numpy()
    colour_of[names[key]] = colours[key]
    if cls is not None:
        name = f"{names[key]} [CLS]"
        series[name], colour_of[name] = cls[key].numpy(), colours[key]
        dashed.append(name)
cosine = {names["cosine"]: per_layer["cosine"].numpy()}
if cls is not None:
    cosine[f"{names['cosine']} [CLS]"] = cls["cosine"].numpy()
d1, d2 = st.columns(2)
d1.plotly_chart(
    plots.multi_line(
        x,
        series,
        title=tr("block.depth_norms_title"),
        x_title=tr("block.x_layer"),
        y_title=tr("block.y_norm"),
        dashed=dashed,
        colours=colour_of,
        marked_x=layer + 1,
    ),
    width="stretch",
    key="block_depth_norms",
)
d2.plotly_chart(
    plots.multi_line(
        x,
        cosine,
        title=tr("block.depth_cosine_title"),
        x_title=tr("block.x_layer"),
        y_title=tr("block.y_cosine"),
        dashed=[f"{names['cosine']} [CLS]"],
        colours={names["cosine"]: colours["cosine"], f"{names['cosine']} [CLS]": colours["cosine"]},
        marked_x=layer + 1,
    ),
    width="stretch",
    key="block_depth_cosine",
)
trend = claims.depth_trend(*(per_layer[k].numpy() for k in ("residual_norm", "attn_ratio", "mlp_ratio", "cosine")))
st.markdown(claims.text(trend, lang()))
st.caption(tr("block.depth_caption") if prefix else tr("block.no_cls"))

# ---- downloads --------------------------------------------------------------------------------
depth_columns = {"layer": x, **{f"patches_{k}": v.numpy() for k, v in per_layer.items()}}
if cls is not None:
    depth_columns.update({f"cls_{k}": v.numpy() for k, v in cls.items()})
e1, e2 = st.columns(2)
with e1:
    furniture.download_csv(
        "download.csv", "block_by_layer.csv", "block_depth_csv", lambda: tables.columns_csv(depth_columns)
    )
with e2:
    furniture.download_npz(
        "download.npz",
        f"block_layer{layer + 1}.npz",
        "block_layer_npz",
        **{f"token_{k}": v.numpy() for k, v in norms.items()},
        fc1_preactivations=pre.numpy(),
        token=np.array(query),
        **{f"by_layer_{k}": v for k, v in depth_columns.items()},
    )
navigation.nav("app_pages/6_block.py")
