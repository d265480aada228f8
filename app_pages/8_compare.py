"""Step 8: the ViT beside a CNN on the same image: both answers, where each looked, how
far each looks layer by layer, and experiments that show what each needs.

The ViT is the sidebar's model; the CNN is chosen here (a registry CNN, or a CNN file). The maps
for one class (the test image's true class, else the ViT's answer) are each divided by their own
maximum, so all read on one 0..1 scale. Everything the page computes lives in vitviz.compare,
vitviz.analysis and caches.cached_comparison.
"""

import numpy as np
import streamlit as st
import torch

from vitviz import analysis, claims, clicks, compare, plots, zoo
from vitviz.app import caches, current, furniture, models, navigation, session, state, text
from vitviz.app.text import label, lang, model_title, tr
from vitviz.cnn import receptive_fields
from vitviz.data import denormalize, to_tensor
from vitviz.prediction import top_k, verdict

PAGE = "app_pages/8_compare.py"

cur = current.current()
vit, trace = cur.model, cur.trace
names = list(vit.config.class_names)
head = st.container()  # the title goes here once both models are known


def stop_with(message: str) -> None:
    """Title, introduction, one sentence, the tour's buttons, and nothing else."""
    with head:
        furniture.header("page.compare", "compare.intro")
    st.info(message)
    navigation.nav(PAGE)
    st.stop()


# ---- the CNN ----------------------------------------------------------------------------------
cnns = models.cnn_models()
c1, c2 = st.columns(2)
if cnns:
    state.default("compare_cnn", cnns[0])
    state.widget(
        c1.selectbox, "compare_cnn", tr("compare.cnn"), cnns, format_func=lambda n: zoo.REGISTRY[n].title_in(lang())
    )
path = state.widget(
    c2.text_input,
    "compare_cnn_path",
    tr("compare.cnn_path"),
    placeholder="cnn.safetensors",
    on_change=models.forget_tries,
).strip()
cnn_name = state.get("compare_cnn") if cnns else None
if path:  # a typed name that does not load, or is no CNN: one sentence, and the list's CNN
    problem = models.try_model(path)
    if problem is None and not models.model_spec(path).is_cnn:
        message = tr("compare.not_cnn", name=model_title(path))
    else:
        message = None if problem is None else tr("error.model", message=problem.sentence(lang()))
    if message is None:
        cnn_name = path
    elif cnn_name is None:
        stop_with(message)
    else:
        st.info(tr("compare.cnn_not_used", message=message, cnn=text.model_title(cnn_name)))
if not cnn_name:
    stop_with(tr("compare.no_cnn"))
try:
    cnn, cnn_spec = models.cached_model(cnn_name)
except zoo.ModelLoadError as err:
    stop_with(tr("error.model", message=err.sentence(lang())))
if list(cnn.config.class_names) != names or cnn.config.num_classes != vit.config.num_classes:
    stop_with(tr("compare.classes_differ"))

true_name = current.true_class()
class_index = state.clip("compare_class", compare.explained_class(names, trace.logits[0], true_name), 0, len(names) - 1)
with_ig = bool(state.get("compare_ig", False))
arrays = caches.cached_comparison(cur.name, cnn_name, cur.image_bytes, class_index, with_ig)
cnn_logits = torch.from_numpy(arrays["cnn_logits"])[None]  # (1, K)
with head:
    furniture.header(
        "page.compare", "compare.intro", shape=f"ViT {tuple(trace.logits.shape)}, CNN {tuple(cnn_logits.shape)}"
    )

# ---- both answers -----------------------------------------------------------------------------
st.subheader(tr("compare.answers"))
accuracies = zoo.compared_accuracies(cur.spec.card, cnn_spec.card)  # one protocol for both: one view
if accuracies is not None:
    said = tr(
        "compare.accuracies",
        dataset=text.dataset_text(cur.spec.card.tested_on.get("dataset", "")),
        vit=f"{accuracies[0]:.2%}",
        cnn=f"{accuracies[1]:.2%}",
    )
    if cnn_spec.card.views != "image" and cnn_spec.card.test_accuracy is not None:
        said += " " + tr("compare.accuracies_mirror", accuracy=f"{cnn_spec.card.test_accuracy:.2%}")
    st.caption(said)
answers = {}
sides = (("vit", vit, trace.logits), ("cnn", cnn, cnn_logits))
verdicts = {which: verdict(logits[0].float().softmax(dim=-1), names, true_name) for which, _, logits in sides}
for column, (which, model, logits) in zip(st.columns(2), sides, strict=True):
    ranked = top_k(model.config.class_names, logits, 5)
    found = verdicts[which]
    answers[which] = ranked[0]
    column.plotly_chart(
        current.class_bars(
            [n for n, _ in ranked],
            [p for _, p in ranked],
            tr(f"compare.{which}_top"),
            found,
            height=90 + 36 * len(ranked),
            beside=[v for w, v in verdicts.items() if w != which],  # one legend for both: the bars start level
        ),
        width="stretch",
        key=f"compare_{which}_top",
    )
    current.show_verdict(found, column)

# ---- where each looked ------------------------------------------------------------------------
st.subheader(tr("compare.maps_title"))
st.markdown(tr("compare.maps_intro"))
if cnn.config.test_flip:
    st.caption(tr("compare.gradcam_mirror"))
k1, k2 = st.columns([2, 3])
state.widget(
    k1.selectbox, "compare_class", tr("compare.class"), list(range(len(names))), format_func=lambda i: label(names[i])
)
state.widget(k2.toggle, "compare_ig", tr("compare.ig_toggle"))
shown_class = label(names[class_index])
vit_input = denormalize(trace.pixels[0], vit.config.preprocess)  # (H, W, 3) in [0, 1]
image = caches.decoded_image(cur.image_bytes)
cnn_pixels = to_tensor(image, cnn.config.preprocess, cnn.config.in_chans)
cnn_input = denormalize(cnn_pixels[0], cnn.config.preprocess)
panels = [
    ("rollout", vit_input, tr("compare.map.rollout")),
    ("grad_rollout", vit_input, tr("compare.map.grad_rollout", name=shown_class)),
    ("gradcam", cnn_input, tr("compare.map.gradcam", name=shown_class)),
]
if with_ig:
    panels += [("ig_vit", vit_input, tr("compare.map.ig_vit")), ("ig_cnn", cnn_input, tr("compare.map.ig_cnn"))]
# three maps a row, each with its colour bar: five in one row cut their titles, and the one with the
# bar came out smaller than the others
columns = [column for _ in range(0, len(panels), 3) for column in st.columns(3)]
for column, (key, picture, title) in zip(columns, panels, strict=False):
    values = arrays[key] / max(float(arrays[key].max()), 1e-12)  # its own maximum: one 0..1 scale for all
    column.plotly_chart(
        plots.heatmap_overlay(
            picture,
            values,
            title=plots.wrap(title, 14),  # a third of the page: 14 ems a line
            height=300,
            zmin=0.0,
            zmax=1.0,
            hover=current.grid_hover(),
        ),
        width="stretch",
        key=f"compare_map_{key}",
    )
if with_ig:
    st.caption(tr("compare.ig_note"))

# ---- how far each looks, layer by layer -------------------------------------------------------
st.subheader(tr("compare.reach_title"))
st.markdown(tr("compare.reach_intro"))
fields = [(field.name, field.size) for field in receptive_fields(cnn)]
side = max(cnn.config.image_size)
# (depth, heads), in pixels of the CNN's input: scaled when the ViT reads another size (224 against 32)
distances = analysis.mean_attention_distance(trace, vit.config.token_size).numpy() * side / max(vit.config.image_size)
st.plotly_chart(
    plots.reach(
        fields,
        distances,
        side,
        cnn_title=tr("compare.reach.cnn"),
        vit_title=tr("compare.reach.vit"),
        y_title=tr("compare.reach.y"),
        cnn_x_title=tr("compare.reach.x_cnn"),
        vit_x_title=tr("compare.reach.x_vit"),
        head_word=tr("attention.distance_head"),
        image_label=tr("compare.reach.image"),
    ),
    width="stretch",
    key="compare_reach",
)
st.markdown(claims.text(claims.reach(fields, distances, side), lang()))

# ---- experiments ------------------------------------------------------------------------------
st.subheader(tr("compare.experiments"))
st.markdown(tr("compare.experiments_intro"))
e1, e2 = st.columns([2, 3])
kind = state.widget(
    e1.radio,
    "compare_experiment",
    tr("compare.experiment"),
    compare.EXPERIMENTS,
    format_func=lambda k: tr(f"compare.exp.{k}"),
)
shift = e2.slider(tr("compare.shift_px"), 1, 4, compare.DEFAULT_SHIFT, key="compare_shift", disabled=kind != "shift")
seed = e2.number_input(tr("compare.seed"), 0, 999, compare.DEFAULT_SEED, key="compare_seed", disabled=kind != "shuffle")
num_patches = trace.grid_size[0] * trace.grid_size[1]
hidden = [i for i in state.get("compare_hidden", []) if 0 <= i < num_patches]  # patches on the ViT's grid
state.set(compare_hidden=hidden)
outcome = caches.cached_experiment(  # only the setting of the chosen experiment is part of its key
    cur.name,
    cnn_name,
    cur.image_bytes,
    kind,
    shift=int(shift) if kind == "shift" else 0,
    seed=int(seed) if kind == "shuffle" else 0,
    hidden=tuple(hidden) if kind == "hide" else (),
)


def toggle_patch() -> None:
    """on_select callback: a clicked patch is hidden, or shown again (runs before the script)."""
    picked = clicks.patch_from_selection(session.selection("compare_hide_grid"), num_patches)
    if picked is not None:
        chosen = list(state.get("compare_hidden", []))
        chosen.remove(picked) if picked in chosen else chosen.append(picked)
        state.set(compare_hidden=chosen)


def show_all() -> None:
    state.set(compare_hidden=[])


def answer(model, logits: torch.Tensor | None) -> str:
    if logits is None:
        return tr("compare.na")
    name, probability = top_k(model.config.class_names, logits, 1)[0]
    return tr("compare.answer", name=label(name), p=probability)


rows = [
    {
        tr("compare.col.model"): "ViT",
        tr("compare.col.before"): answer(vit, trace.logits),
        tr("compare.col.after"): answer(vit, outcome.vit_logits),
    },
    {
        tr("compare.col.model"): "CNN",
        tr("compare.col.before"): answer(cnn, cnn_logits),
        tr("compare.col.after"): answer(cnn, outcome.cnn_logits),
    },
]
t1, t2 = st.columns([3, 2])
t1.dataframe(rows, hide_index=True, width="stretch")
seen = denormalize(outcome.vit_input[0], vit.config.preprocess)
if kind == "hide":  # the image is the control: a click hides a patch, a second click shows it again
    t2.plotly_chart(
        plots.patch_grid(seen, vit.config.token_size, title=tr("compare.input_title"), height=300),
        width="stretch",
        key="compare_hide_grid",
        on_select=toggle_patch,
        selection_mode="points",
    )
    t2.caption(tr("compare.hide_hint", n=len(hidden)))
    t2.button(tr("compare.hide_clear"), key="compare_show_all", on_click=show_all, disabled=not hidden)
else:
    t2.plotly_chart(plots.image(seen, tr("compare.input_title"), height=260), width="stretch", key="compare_input")
furniture.download_npz(
    "compare.download",
    "vit_vs_cnn.npz",
    "compare_npz",
    class_index=np.array(class_index),
    vit_logits=trace.logits[0].numpy(),
    **arrays,
    receptive_field=np.array([size for _, size in fields]),
    mean_attention_distance=distances,
)
navigation.nav(PAGE)
