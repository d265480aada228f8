"""Step 3: one patch as a vector of P*P*C numbers, and its linear projection to a D-dim token."""

import streamlit as st

from vitviz import claims, plots
from vitviz.app import caches, current, furniture, navigation
from vitviz.app.text import lang, tr
from vitviz.data import denormalize
from vitviz.patches import ROUTE_TOLERANCE

cur = current.current()
config = cur.model.config
trace = cur.trace
p, chans, dim = config.patch_size, config.feature_dim, config.embed_dim  # chans: a hybrid's ResNet channels
length = chans * p * p
grid_h, grid_w = trace.grid_size
count = grid_h * grid_w
names = ["R", "G", "B"] if chans == 3 else ["L"] if chans == 1 else [f"c{c}" for c in range(1, chans + 1)]
furniture.header(
    "page.vectors",
    "vectors.intro_gray" if chans == 1 else "vectors.intro",
    shape=f"patch_tokens {tuple(trace.patch_tokens.shape)}  ·  x_p: {chans} x {p} x {p} = {length}",
)
if config.is_hybrid:
    st.info(tr("vectors.hybrid", p=p, chans=chans, length=length))


left, right = st.columns([2, 3])
index = furniture.patch_picker(right, "vectors.choose", "patch", (grid_h, grid_w))
model_input = denormalize(trace.pixels[0], config.preprocess)
left.plotly_chart(
    plots.patch_grid(
        model_input, config.token_size, highlight=index, title=tr("vectors.grid"), numbers=count <= 64, height=400
    ),
    width="stretch",
    key="vectors_grid",
    on_select=furniture.choose_clicked_patch("vectors_grid", "patch", count),
    selection_mode="points",
)

vector = trace.patches[0, index].numpy()  # (C*P*P,) in (c p1 p2) order
if config.is_hybrid:  # thousands of channels: one bar each, no picture
    right.plotly_chart(
        plots.vector_bars(
            vector,
            index_word=tr("hover.index"),
            title=tr("vectors.hybrid_flat", index=index + 1, length=length),
            x_title=tr("vectors.hybrid_axis"),
        ),
        width="stretch",
        key="vectors_flat",
    )
else:
    right.plotly_chart(
        plots.patch_planes(
            vector,
            p,
            chans,
            plots.plane_titles(names, p),
            title=tr("vectors.planes", index=index + 1, p=p),
            index_word=tr("hover.index"),
        ),
        width="stretch",
        key="vectors_planes",
    )
    right.caption(tr("vectors.planes_note"))
    st.plotly_chart(
        plots.vector_bars(
            vector,
            index_word=tr("hover.index"),
            segment=p * p,
            names=names,
            title=tr("vectors.flat", length=length, pp=p * p, p=p),
            x_title=tr("vectors.index_axis"),
        ),
        width="stretch",
        key="vectors_flat",
    )

token = trace.patch_tokens[0, index].numpy()  # (D,)
st.latex(
    rf"\underbrace{{z_p}}_{{{dim}}} = \underbrace{{W}}_{{{dim} \times {length}}}\;"
    rf"\underbrace{{x_p}}_{{{length}}} + \underbrace{{b}}_{{{dim}}}"
)
st.caption(
    tr("vectors.formula_note_hybrid" if config.is_hybrid else "vectors.formula_note", dim=dim, length=length, p=p)
)
st.plotly_chart(
    plots.vector_bars(
        token,
        index_word=tr("hover.channel"),
        title=tr("vectors.token", dim=dim),
        x_title=tr("vectors.token_axis"),
    ),
    width="stretch",
    key="vectors_token",
)
furniture.download_npz(
    "vectors.download_vector",
    f"patch_{index + 1}_vector_token.npz",
    "vectors_npz",
    patch=index,
    row=index // grid_w,
    col=index % grid_w,
    vector=vector,
    token=token,
)

st.subheader(tr("vectors.check"))
st.markdown(tr("vectors.check_intro"))
differences = caches.cached_routes(cur.name, cur.image_bytes)
st.dataframe(
    [
        {
            tr("vectors.col.route"): name,
            tr("vectors.col.how"): tr(f"vectors.route.{name}"),
            tr("vectors.col.diff"): f"{diff:.2e}",
        }
        for name, diff in differences.items()
    ],
    hide_index=True,
    width="stretch",
)
agree = claims.routes(differences, ROUTE_TOLERANCE)
(st.success if agree.key == "vectors.check_ok" else st.error)(claims.text(agree, lang()))

if config.is_hybrid:
    st.caption(tr("vectors.filters_hybrid", chans=chans))
else:
    components, ratios = caches.cached_filter_components(cur.name)  # all of them: the shares decide how many to show
    reading = claims.filter_components(ratios, p)
    st.subheader(claims.text(reading["title"], lang()))
    st.markdown(tr("vectors.filters_intro", dim=dim))
    st.markdown(claims.text([reading["spread"], reading["size"]], lang()))
    if not cur.spec.trained:
        st.info(tr("vectors.filters_untrained"))
    shown = claims.components_to_show(ratios)
    st.plotly_chart(caches.cached_component_tiles(cur.name, shown), width="stretch", key="vectors_components")
    furniture.download_npz(
        "vectors.download_components",
        "patch_embed_components.npz",
        "vectors_components_npz",
        components=components,
        explained_variance_ratio=ratios,
    )
navigation.nav("app_pages/3_vectors.py")
