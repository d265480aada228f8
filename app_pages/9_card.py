"""Step 9: the model card: architecture, parameter counts, training and where it came from."""

import streamlit as st

from vitviz import plots, tables, zoo
from vitviz.app import current, furniture, models, navigation, state, text
from vitviz.app.text import label, lang, tr
from vitviz.cnn import feature_shape
from vitviz.config import CNNConfig
from vitviz.model import flops_per_image

cur = current.current_model()  # the card needs no image
furniture.header("page.card", "card.intro")
owners = [cur.name, *(name for name in models.cnn_models() if name != cur.name)]  # the sidebar's ViT, the CNNs
if len(owners) > 1:
    if state.get("card_model") not in owners:
        state.set(card_model=cur.name)
    owner = state.widget(
        st.selectbox,
        "card_model",
        tr("card.which"),
        owners,
        format_func=text.model_title,
        help=tr("card.which_help"),
        mirror=False,
    )
else:
    owner = cur.name
state.set_param("card_model", owner if owner != cur.name else None)  # a shared link opens the same card
model, spec = (cur.model, cur.spec) if owner == cur.name else models.cached_model(owner)
config = model.config

st.subheader(spec.title_in(lang()))
st.markdown(spec.description_in(lang()))
if not spec.trained:
    st.warning(tr("sidebar.untrained"))

total = model.num_params()
m = st.columns(4)
m[0].metric(tr("card.params"), f"{total:,}")
m[1].metric(tr("card.flops"), f"{flops_per_image(config) / 1e9:.2f} GFLOP")
if isinstance(config, CNNConfig):
    m[2].metric(tr("card.feature_map"), " x ".join(map(str, feature_shape(config))))
else:
    m[2].metric(tr("card.tokens"), f"{config.num_tokens} x {config.embed_dim}")
# one view: the protocol every card is compared by (page 8 too); a two-view CNN's own number below
one_view = spec.card.one_view_accuracy
if one_view is not None:
    m[3].metric(tr("card.accuracy_one_view"), f"{one_view:.2%}")
else:
    accuracy = spec.card.test_accuracy
    m[3].metric(tr("card.accuracy"), f"{accuracy:.2%}" if accuracy is not None else "-")
if spec.card.views != "image" and spec.card.test_accuracy is not None:
    st.caption(tr("card.accuracy_mirror", accuracy=f"{spec.card.test_accuracy:.2%}"))

left, right = st.columns([3, 2])
with left:
    st.markdown(f"**{tr('card.by_module')}**")
    rows = tables.parameter_rows(model.params_by_module(), total)
    st.dataframe(
        [
            {
                tr("card.col.module"): name,
                tr("card.col.params"): f"{count:,}",
                tr("card.col.share"): f"{share:.1%}",
            }
            for name, count, share in rows
        ],
        hide_index=True,
        width="stretch",
        height=furniture.table_height(len(rows)),
    )
with right:
    st.markdown(f"**{tr('card.config')}**")
    shown = {k: v for k, v in config.to_dict().items() if k not in ("class_names", "preprocess")}
    st.dataframe(
        [{tr("card.col.setting"): k, tr("card.col.value"): tables.setting_text(v)} for k, v in shown.items()],
        hide_index=True,
        width="stretch",
        height=furniture.table_height(len(shown)),
    )


def split_text(facts: dict) -> str:
    """A dataset split as the card records it: "CIFAR-10 (JPEG copy), 10,000 images"."""
    if facts.get("dataset"):
        return tr("card.split", dataset=text.dataset_text(facts["dataset"]), n=f"{facts.get('images', 0):,}")
    return str(facts.get("source") or "-")


def stage_list(numbers: list[int]) -> str:
    """Stage numbers as a reader writes them: "7", "8-9", "2, 5"."""
    if len(numbers) > 1 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(map(str, numbers))


card = spec.card
history = card.history
if history:
    st.subheader(tr("card.training"))
    planned = card.planned_epochs or card.recipe.get("epochs")
    stages = card.stages
    if card.interim and card.schedule_end:  # the schedule ended below this checkpoint, which stayed
        end = card.schedule_end
        st.info(
            tr(
                "card.interim_ended",
                epochs=card.epochs,
                total=planned or "?",
                end=end["epoch"],
                end_accuracy=f"{end['test_accuracy']:.2%}",
                accuracy=f"{card.test_accuracy:.2%}",
            )
        )
    elif card.interim:
        st.info(tr("card.interim", epochs=card.epochs, total=planned or "?"))
    starts = card.stage_starts()  # each stage's first epoch
    parts = []  # "stage 2, cifar10-vit-s2 (epochs 11-23)": the caption, and each stage label's hover text
    if len(stages) > 1:
        parts = [
            tr("card.stage", n=n, name=stage["name"], first=first, last=first + stage["epochs"] - 1)
            for n, (stage, first) in enumerate(zip(stages, starts, strict=True), start=1)
        ]
        st.caption(tr("card.stages", count=len(stages), stages=" → ".join(parts)))
    labels = {key: tr(f"card.curve.{key}") for key in plots.CURVE_KEYS}
    curves = plots.training_curves(history, labels, planned, starts[1:], stage_names=parts[1:])
    st.plotly_chart(curves, width="stretch", key="card_curves")
    facts = {
        tr("card.trained_on"): split_text(card.trained_on),
        tr("card.tested_on"): split_text(card.tested_on),
        tr("card.epochs"): card.epochs or "-",
        tr("card.wall_time"): f"{card.wall_time_s / 3600:.1f} h",
    }
    for ran, where in card.hardware_rows():  # which stages ran where, and no more than is known
        if ran is None:
            heading = tr("card.hardware")
        else:
            heading = tr("card.hardware_stage" if len(ran) == 1 else "card.hardware_stages", stages=stage_list(ran))
        facts[heading] = text.hardware_text(where)
    facts |= {
        tr("card.weights_dtype"): tr("card.weights_dtype_value", dtype=card.weights_dtype)
        if card.weights_dtype != "float32"
        else card.weights_dtype,
    }
    for teacher, taught in card.teachers():  # a distilled model: who taught which stages
        accuracy = teacher.get("test_accuracy")
        sha = teacher.get("weights_sha256")
        fact = (
            tr("card.teacher")
            if len(stages) < 2
            else tr("card.teacher_stage" if len(taught) == 1 else "card.teacher_stages", stages=stage_list(taught))
        )
        one_view = zoo.one_view_accuracy_of(teacher)  # as the card's own accuracy is measured
        if one_view is not None:
            facts[fact] = tr(
                "card.teacher_value_one_view", name=teacher["name"], accuracy=f"{one_view:.2%}", sha=sha[:12]
            )
        else:
            facts[fact] = (
                tr("card.teacher_value", name=teacher["name"], accuracy=f"{accuracy:.2%}", sha=sha[:12])
                if accuracy is not None and sha
                else teacher["name"]  # a stage written before stages kept their teacher's record
            )
    left, right = st.columns([1, 1])
    # st.table, not the data grid: a long value (a teacher's name and weights) wraps instead of
    # being cut, and the text grows with the page's in presenter mode
    left.table([{tr("card.col.fact"): k, tr("card.col.value"): str(v)} for k, v in facts.items()], hide_index=True)
    per_class = card.per_class_accuracy
    if per_class:
        right.plotly_chart(
            plots.bars(
                [label(c) for c in per_class],
                list(per_class.values()),
                title=tr("card.per_class"),
                height=120 + 30 * len(per_class),
            ),
            width="stretch",
            key="card_per_class",
        )
    # The recipe across the page's width: one column per stage, and the epochs each stage ran.
    st.markdown(f"**{tr('card.recipe')}**")
    runs = card.runs  # the stages, or the one run
    recipes = [run["recipe"] for run in runs] or [card.recipe]
    run_epochs = [run["epochs"] for run in runs] or None
    rows = tables.recipe_rows(recipes, run_epochs, cut_short=tr("card.cut_short"))
    columns = (
        [tr("card.col.stage", n=n) for n in range(1, len(stages) + 1)] if len(stages) > 1 else [tr("card.col.value")]
    )
    # every row at once (the data grid scrolled inside itself), every cell whole (it cut "trivialaugment")
    st.table(  # st.table reads "-" as Markdown's list bullet: a stage without the setting shows "–"
        [
            {
                tr("card.col.setting"): setting,
                **{c: "–" if v == "-" else v for c, v in zip(columns, values, strict=True)},
            }
            for setting, values in rows
        ],
        hide_index=True,
    )
    furniture.download_csv("download.csv", "training_history.csv", "card_csv", lambda: tables.history_csv(history))
else:
    st.info(tr("card.no_history"))
navigation.nav("app_pages/9_card.py")
