"""Lab: the map of the test set. Every test image's [CLS] token (or mean patch token) after a
chosen layer, projected to 2D (vitviz.projection; shipped for the shipped model, computed once
with a progress bar otherwise); a click on a point shows the image and opens it in the tour. A
server without the test images draws the shipped map without its pictures."""

import streamlit as st

from vitviz import claims, lab, plots, projection
from vitviz.app import analyses, caches, current, furniture, navigation, session, state
from vitviz.app.text import label, lang, tr
from vitviz.i18n import plain

PAGE = "app_pages/11_map.py"
CHART = "map_points"

chosen = current.current_model()
furniture.header("page.map", "map.intro")
split = None if chosen.spec.is_cnn else caches.test_split(chosen.name)
if split is not None:
    found, data = analyses.cached_projection(chosen.name, split.location)
else:  # no test images here: the map that ships with the weights, without its pictures
    found, data = None if chosen.spec.is_cnn else analyses.shipped_projection(chosen.name), None
    if found is None:
        st.info(tr("map.missing"))
        navigation.nav(PAGE)
        st.stop()
    st.info(tr("map.no_images"))
classes = found.classes or list(chosen.model.config.class_names)
methods = sorted({m for m, _, _ in found.points}, key=projection.METHODS.index)
tokens = [t for t in projection.TOKENS if any(k == t for _, k, _ in found.points)]

c1, c2, c3, c4 = st.columns(4)
method = state.widget(c1.radio, "map_method", tr("map.method"), methods, format_func=lambda m: tr(f"map.method.{m}"))
token = state.widget(c2.radio, "map_token", tr("map.token"), tokens, format_func=lambda t: tr(f"map.token.{t}"))
layers = found.layers
state.default("map_layer", layers[-1])
layer = state.widget(
    c3.selectbox,
    "map_layer",
    tr("map.layer"),
    layers,
    format_func=lambda n: tr("map.layer_option", n=n) if n else tr("map.layer_embed"),
)
colour = state.widget(
    c4.radio, "map_colour", tr("map.colour"), ["class", "right"], format_func=lambda c: tr(f"map.colour.{c}")
)

points = found.points[(method, token, layer)].numpy()
labels, predictions = found.labels.numpy(), found.predictions.numpy()
files = found.files or [tr("map.image_n", n=i + 1) for i in range(len(labels))]
if colour == "class":
    groups, group_names = labels, [label(c) for c in classes]
else:
    groups, group_names = (labels != predictions).astype(int), [tr("map.right"), tr("map.wrong")]
hover = [  # figure text: plain, not Markdown
    plain(tr("map.hover", file=files[i], true=label(classes[labels[i]]), predicted=label(classes[predictions[i]])))
    for i in range(len(labels))
]
layer_text = tr("map.layer_option", n=layer) if layer else tr("map.layer_embed")
st.markdown(claims.text(claims.test_set_map(points, labels, predictions), lang()))
st.plotly_chart(
    plots.test_set_map(
        points,
        groups,
        group_names,
        hover,
        title=tr("map.title", count=f"{len(labels):,}", token=tr(f"map.token.{token}"), layer=layer_text),
    ),
    width="stretch",
    key=CHART,
    on_select="rerun",
    selection_mode="points",
)
seconds = ", ".join(f"{tr(f'map.method.{m}')}: {s:.0f} s" for m, s in found.seconds.items())
st.caption(tr("map.note", seconds=seconds or "-"))
if split is not None and len(labels) < len(caches.cached_test_set(split.location)):
    st.caption(tr("map.subset", count=f"{len(labels):,}"))
if data is None:  # no pictures to show for a click
    navigation.nav(PAGE)
    st.stop()

# ---- the image of a clicked point -------------------------------------------------------------
picked = (session.selection(CHART) or {}).get("selection", {}).get("points", [])
index = int(picked[0]["customdata"]) if picked and "customdata" in picked[0] else None
if index is None:
    st.caption(tr("map.pick"))
else:
    left, right = st.columns([1, 3])
    left.image(
        furniture.png_bytes(lab.thumbnails(data.images[index : index + 1], 2 * lab.THUMBNAIL)[0]), output_format="PNG"
    )
    right.markdown(
        tr(
            "map.picked",
            file=files[index],
            true=label(classes[labels[index]]),
            predicted=label(classes[predictions[index]]),
        )
    )

    navigation.open_in_tour_button(right, "map_open_tour", *lab.class_position(data, index))

navigation.nav(PAGE)
