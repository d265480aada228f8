"""Overview: the whole forward pass of the chosen image, with its shapes."""

import streamlit as st

from vitviz import plots
from vitviz.app import current, furniture, navigation
from vitviz.app.presenter import presenting
from vitviz.app.text import tr
from vitviz.data import denormalize
from vitviz.prediction import top_k
from vitviz.trace import forward_steps

cur = current.current()
config = cur.model.config
go_on = "home.go_on_present" if presenting() else "home.go_on"  # presenter mode hides the menu
furniture.header("page.home", "home.intro", shape=tuple(cur.trace.pixels.shape), then_key=go_on)

left, right = st.columns([1, 1])
model_input = denormalize(cur.trace.pixels[0], config.preprocess)
left.plotly_chart(plots.patch_grid(model_input, config.token_size, height=360), width="stretch", key="home_grid")
ranked = top_k(config.class_names, cur.trace.logits, 5)
labels = [name for name, _ in ranked]
right.plotly_chart(
    current.class_bars(labels, [p for _, p in ranked], tr("home.prediction"), cur.verdict, height=360),
    width="stretch",
    key="home_topk",
)
current.show_verdict(cur.verdict, right)
current.show_known_classes(config, cur.verdict, right)

st.subheader(tr("home.pipeline"))
rows = [
    {
        tr("home.col.step"): code,
        tr("home.col.shape"): "(" + ", ".join(map(str, shape)) + ")",
        tr("home.col.meaning"): tr(f"home.step.{step}"),
    }
    for step, code, shape in forward_steps(config, cur.trace)
]
st.dataframe(rows, hide_index=True, width="stretch")
navigation.nav("app_pages/0_home.py")
