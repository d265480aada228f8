"""Step 8: the model card: architecture, parameter counts, training and where it came from."""

import streamlit as st

from vitviz import plots, ui
from vitviz.model import flops_per_image

cur = ui.current_model()  # the card needs no image
model, spec = cur.model, cur.spec
config = model.config
ui.header("page.card", "card.intro")

st.subheader(spec.title_in(ui.lang()))
st.markdown(spec.description_in(ui.lang()))
if not spec.trained:
    st.warning(ui.tr("sidebar.untrained"))

total = model.num_params()
m = st.columns(4)
m[0].metric(ui.tr("card.params"), f"{total:,}")
m[1].metric(ui.tr("card.flops"), f"{flops_per_image(config) / 1e9:.2f} GFLOP")
m[2].metric(ui.tr("card.tokens"), f"{config.num_tokens} x {config.embed_dim}")
accuracy = spec.card.get("test_accuracy")
m[3].metric(ui.tr("card.accuracy"), f"{accuracy:.2%}" if accuracy is not None else "-")

left, right = st.columns([3, 2])
with left:
    st.markdown(f"**{ui.tr('card.by_module')}**")
    rows = plots.parameter_rows(model.params_by_module(), total)
    st.dataframe(
        [{ui.tr("card.col.module"): name, ui.tr("card.col.params"): f"{count:,}", ui.tr("card.col.share"): f"{share:.1%}"} for name, count, share in rows],
        hide_index=True, width="stretch", height=ui.table_height(len(rows)),
    )  # fmt: skip
with right:
    st.markdown(f"**{ui.tr('card.config')}**")
    shown = {k: v for k, v in config.to_dict().items() if k not in ("class_names", "preprocess")}
    st.dataframe([{"key": k, "value": str(v)} for k, v in shown.items()], hide_index=True, width="stretch", height=ui.table_height(len(shown)))

history = spec.card.get("history") or []
if history:
    st.subheader(ui.tr("card.training"))
    st.plotly_chart(plots.training_curves(history, ui.tr("card.epoch")), width="stretch", key="card_curves")
    recipe = spec.card.get("recipe", {})
    facts = {
        ui.tr("card.trained_on"): spec.card.get("trained_on", {}).get("source", "-"),
        ui.tr("card.tested_on"): spec.card.get("tested_on", {}).get("source", "-"),
        ui.tr("card.epochs"): spec.card.get("epochs", "-"),
        ui.tr("card.wall_time"): f"{spec.card.get('wall_time_s', 0) / 3600:.1f} h",
        ui.tr("card.hardware"): spec.card.get("hardware", "-"),
        ui.tr("card.recipe"): ", ".join(f"{k}={v}" for k, v in recipe.items() if k in ("batch_size", "lr", "weight_decay", "warmup_epochs", "label_smoothing", "augment", "mixup_alpha", "cutmix_alpha", "random_erasing")),
    }
    st.dataframe([{"": k, " ": str(v)} for k, v in facts.items()], hide_index=True, width="stretch")
    ui.download_csv("download.csv", "training_history.csv", "card_csv", plots.history_csv(history))
else:
    st.info(ui.tr("card.no_history"))
ui.nav("pages/8_card.py")
