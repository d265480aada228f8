"""Step 4: the [CLS] token is prepended and position embeddings are added: (B, N, D) -> (B, N+1, D)."""

import numpy as np
import streamlit as st

from vitviz import analysis, patches, plots
from vitviz.app import current, furniture, navigation
from vitviz.app.text import tr

cur = current.current()
config = cur.model.config
trace = cur.trace
prefix = trace.num_prefix_tokens
grid_h, grid_w = trace.grid_size
count = grid_h * grid_w
dim = config.embed_dim
furniture.header(
    "page.tokens", "tokens.intro", shape=f"{tuple(trace.patch_tokens.shape)} → {tuple(trace.tokens.shape)}"
)

st.subheader(tr("tokens.sequence"))
cls_row = {0: "[CLS]"} if prefix else None
if not prefix:
    st.info(tr("tokens.no_cls"))
# Rows are named by what they are, so one patch has one name (and one height) in both maps.
patch_rows = [tr("tokens.row_patch", n=n) for n in range(1, count + 1)]
token_rows = ["[CLS]"] * prefix + patch_rows
ticks = patch_rows[:: grid_w * -(-grid_h // 16)]  # each image row's first patch (16 at most); [CLS] has its arrow
axes = dict(
    y_title=tr("tokens.axis_token"),
    x_title=tr("tokens.axis_channel"),
    channel_word=tr("hover.channel"),
    rows=token_rows,
    ticks=ticks,
)
left, right = st.columns(2)
before = plots.token_matrix(  # [CLS]'s slot left empty
    trace.patch_tokens[0].numpy(),
    patch_rows,
    title=tr("tokens.before", n=count, d=dim),
    **axes,
)
after = plots.token_matrix(
    trace.tokens[0].numpy(),
    token_rows,
    title=tr("tokens.after", t=trace.tokens.shape[1], d=dim),
    marked=cls_row,
    **axes,
)
left.plotly_chart(before, width="stretch", key="tokens_before")
right.plotly_chart(after, width="stretch", key="tokens_after")
cls_tex = r"x_\mathrm{class};\; " if prefix else ""
patches_tex = rf"x_p^1 W;\; x_p^2 W;\; \dots;\; x_p^{{{count}}} W"
st.latex(r"z_0 = [\," + cls_tex + patches_tex + r"\,] + E_\mathrm{pos}")  # the paper's eq. 1, with our W
if prefix:
    st.caption(tr("tokens.formula_note", n=count))

st.subheader(tr("tokens.pos"))
if config.pos_embed == "sincos2d":
    st.markdown(tr("tokens.pos_fixed"))
else:
    st.markdown(
        tr(
            "tokens.pos_learned",
            first=patches.patch_number(0, 0, trace.grid_size),
            below=patches.patch_number(1, 0, trace.grid_size),
        )
    )
    if not cur.spec.trained:
        st.info(tr("tokens.pos_untrained"))
pos_embed = cur.model.pos_embed.detach()[0].cpu()  # (T, D)
st.plotly_chart(
    plots.token_matrix(
        pos_embed.numpy(),
        token_rows,
        title=tr("tokens.pos_title", t=pos_embed.shape[0], d=dim),
        marked=cls_row,
        **axes,
    ),
    width="stretch",
    key="tokens_pos_embed",
)

st.subheader(tr("tokens.similarity"))
st.markdown(tr("tokens.similarity_intro"))
similarities = {k: v.numpy() for k, v in analysis.position_similarities(pos_embed, trace.grid_size, prefix).items()}


left, right = st.columns([3, 2])
pos = furniture.patch_picker(right, "tokens.choose_pos", "pos", (grid_h, grid_w))
row, col = divmod(pos, grid_w)
left.plotly_chart(
    plots.similarity_grid(similarities["model"], title=tr("tokens.mosaic_title", h=grid_h, w=grid_w), selected=pos),
    width="stretch",
    key="tokens_mosaic",
    on_select=furniture.choose_clicked_patch("tokens_mosaic", "pos", count),
    selection_mode="points",
)
large_title = tr("tokens.large_title", index=pos + 1, row=row + 1, col=col + 1)
right.plotly_chart(
    plots.similarity_maps(
        similarities["model"][row, col][None], [large_title], marked=(row, col), height=460, hover=current.grid_hover()
    ),
    width="stretch",
    key="tokens_large",
)
right.caption(tr("tokens.large_note"))

st.subheader(tr("tokens.compare"))
st.markdown(tr("tokens.compare_intro"))
own = "tokens.kind.fixed" if config.pos_embed == "sincos2d" else "tokens.kind.learned"
kinds = {"model": own, "sincos_1d": "tokens.kind.sincos_1d", "sincos_2d": "tokens.kind.sincos_2d"}
st.plotly_chart(
    plots.similarity_maps(
        np.stack([similarities[k][row, col] for k in kinds]),
        [tr(v) for v in kinds.values()],
        marked=(row, col),
        own_range=True,
        hover=current.grid_hover(),
        height=360,
    ),
    width="stretch",
    key="tokens_compare",
)
st.caption(tr("tokens.own_range_note"))
furniture.download_npz(
    "tokens.download",
    "pos_embed_similarity.npz",
    "tokens_npz",
    pos_embed=pos_embed.numpy(),
    similarity=similarities["model"],
    similarity_sincos_1d=similarities["sincos_1d"],
    similarity_sincos_2d=similarities["sincos_2d"],
)
navigation.nav("app_pages/4_tokens.py")
