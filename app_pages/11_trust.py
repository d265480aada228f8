"""Lab: which explanation can you trust? Deletion and insertion curves of every map the app draws,
against random orders, for the tour's image and over the test set; heads and layers switched off.

Every sentence here is read from the numbers it describes (vitviz.faithfulness.sentences,
vitviz.claims); the curves and the ablated pass are cached per image (vitviz.app.analyses).
"""

import numpy as np
import streamlit as st

from vitviz import ablation, claims, faithfulness, plots, tables
from vitviz.app import analyses, current, furniture, navigation, state, testset
from vitviz.app.text import dataset_text, label, lang, model_title, tr

PAGE = "app_pages/11_trust.py"

cur = current.current()
model, config = cur.model, cur.model.config
names = list(config.class_names) or [str(i) for i in range(config.num_classes)]
furniture.header("page.trust", "trust.intro")

# ---- this image: remove, or reveal, the patches in each map's order ---------------------------
st.subheader(tr("trust.image_title"))
with st.spinner(tr("trust.computing")):
    result = analyses.cached_faithfulness(cur.name, cur.image_bytes)
reading = faithfulness.read(result)
answer = label(names[result.target])
st.markdown(claims.text(faithfulness.sentences(reading), lang()))
st.caption(tr("trust.removed", p=f"{result.probability:.1%}", blank=f"{result.blank_probability:.1%}", answer=answer))

x = result.fractions.numpy()
chance = result.methods[faithfulness.RANDOM]
band_name = tr("trust.band", orders=len(chance.orders))
shown = {tr(f"trust.method.{m}"): c for m, c in result.methods.items() if m != faithfulness.RANDOM}
left, right = st.columns(2)
for column, kind in ((left, "deletion"), (right, "insertion")):
    runs = getattr(chance, kind).numpy()  # (orders, steps + 1)
    column.plotly_chart(
        plots.curves_with_band(
            x,
            {name: getattr(curves, f"{kind}_curve").numpy() for name, curves in shown.items()},
            (runs.min(axis=0), runs.max(axis=0)),
            band_name,
            title=tr(f"trust.{kind}_title"),
            x_title=tr(f"trust.x_{kind}"),
            y_title=tr("trust.y", answer=answer),
        ),
        width="stretch",
        key=f"trust_{kind}",
    )
rows = tables.trust_rows(reading, [m for m in result.methods if m != faithfulness.RANDOM])
st.table(
    [
        {
            tr("trust.col.method"): tr(f"trust.method.{method}"),
            tr("trust.col.deletion"): f"{deletion:.3f}",
            tr("trust.col.insertion"): f"{insertion:.3f}",
            tr("trust.col.margin"): f"{margin:+.3f}",
            tr("trust.col.verdict"): tr(f"trust.verdict.{verdict}"),
        }
        for method, deletion, insertion, margin, verdict in rows
    ],
)
st.caption(tr("trust.table_note", low=f"{reading.chance_low:+.3f}", high=f"{reading.chance_high:+.3f}"))

# ---- over the test set: what ships beside the weights -----------------------------------------
st.subheader(tr("trust.set_title"))
summary = analyses.stored(cur.name, "faithfulness")
if summary is None:
    st.info(tr("trust.set_missing", name=model_title(cur.name)))
else:
    methods = [m for m in summary["methods"] if m != faithfulness.RANDOM]
    st.markdown(claims.text(claims.trust_over_images(summary), lang()))
    st.table(
        [
            {
                tr("trust.col.method"): tr(f"trust.method.{method}"),
                tr("trust.col.deletion"): f"{row['deletion_auc']:.3f} ± {row['deletion_auc_std']:.3f}",
                tr("trust.col.insertion"): f"{row['insertion_auc']:.3f} ± {row['insertion_auc_std']:.3f}",
                tr("trust.col.beats"): f"{row['beats_random']:.0%}" if "beats_random" in row else "—",
            }
            for method in [faithfulness.RANDOM, *methods]
            for row in [summary["methods"][method]]
        ],
    )
    st.caption(tr("trust.set_note", images=summary["images"], dataset=dataset_text(summary.get("dataset", ""))))

# ---- switch heads and layers off --------------------------------------------------------------
st.subheader(tr("trust.ablation_title"))
st.markdown(tr("trust.ablation_intro"))
depth, heads = config.depth, config.num_heads
a1, a2, a3 = st.columns([3, 2, 2])
picked = state.widget(
    a1.multiselect,
    "trust_heads",
    tr("trust.heads"),
    list(range(depth * heads)),
    format_func=lambda i: tr("trust.head_option", layer=i // heads + 1, head=i % heads + 1),
    placeholder=tr("trust.none_chosen"),
)
skipped = state.widget(
    a2.multiselect,
    "trust_layers",
    tr("trust.layers"),
    list(range(depth)),
    format_func=lambda i: tr("attention.layer_n", n=i + 1),
    placeholder=tr("trust.none_chosen"),
)
mode = state.widget(
    a3.radio, "trust_mode", tr("trust.mode"), list(ablation.MODES), format_func=lambda m: tr(f"trust.mode.{m}")
)
switched_heads = tuple(sorted((i // heads, i % heads) for i in picked))
split = testset.test_split(cur.name)
if mode == "mean" and switched_heads and split is None:
    st.info(tr("trust.mean_needs_data"))
    mode = "zero"
after = analyses.cached_ablated(
    cur.name, cur.image_bytes, switched_heads, tuple(sorted(skipped)), mode, split.location if split else None
)
before = analyses.cached_ablated(cur.name, cur.image_bytes, (), (), "zero", None)
st.markdown(
    claims.text(
        claims.ablation_answer(before["probs"], after["probs"], names, len(switched_heads), len(skipped)), lang()
    )
)
b1, b2 = st.columns(2)
for column, arrays, key in ((b1, before, "before"), (b2, after, "after")):
    top = np.argsort(-arrays["probs"])[:5]
    column.plotly_chart(
        current.class_bars([names[i] for i in top], arrays["probs"][top].tolist(), tr(f"trust.bars_{key}"), None, 300),
        width="stretch",
        key=f"trust_bars_{key}",
    )
    column.plotly_chart(
        plots.heatmap_overlay(cur.image, arrays["rollout"], title=tr(f"trust.rollout_{key}")),
        width="stretch",
        key=f"trust_rollout_{key}",
    )

grid = analyses.stored(cur.name, "ablation")
if grid is None:
    st.info(tr("trust.grid_missing", name=model_title(cur.name)))
else:
    drops = np.asarray(grid["head_drop"].get(mode, grid["head_drop"]["zero"]))
    st.markdown(claims.text(claims.costliest_head(drops, grid["accuracy"], grid["images"], mode), lang()))
    st.plotly_chart(
        plots.head_grid(
            drops,
            title=tr("trust.grid_title", mode=tr(f"trust.mode.{mode}")),
            x_title=tr("trust.grid_x"),
            y_title=tr("trust.grid_y"),
            value_title=tr("trust.grid_value"),
            marked=switched_heads,
        ),
        width="stretch",
        key="trust_grid",
    )
    st.caption(tr("trust.grid_note", images=grid["images"], accuracy=f"{grid['accuracy']:.1%}"))

navigation.nav(PAGE)
