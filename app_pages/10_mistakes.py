"""Lab: misclassification. Browse the test images the model gets wrong (CIFAR-10, Fashion-MNIST, ...).

The test set and the evaluation sit in ``testset.cached_test_set`` / ``testset.cached_evaluation``
(st.cache_resource keyed by folder and by (model name, folder)), so changing a filter never runs
the model over the test set again. Filtering, paging and thumbnails are ``vitviz.analyses.lab`` functions;
one image up close is ``lab.inspect_mistake`` (cached per image by ``testset.cached_mistake``).
"""

import streamlit as st

from vitviz.analyses import lab
from vitviz.app import (
    current,
    furniture,
    gallery,
    models,
    navigation,
    presenter,
    render,
    session,
    state,
    tabular,
    testset,
    turns,
)
from vitviz.app.charts import draw
from vitviz.app.text import label, lang, tr
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.render import clicks
from vitviz.steps import mistakes

PAGE = "app_pages/10_mistakes.py"
CONFUSION = "mistakes_confusion"
ANY = -1  # the class filters' "(any)" option (None would show as an empty selectbox)

chosen = current.current_model()
model = chosen.model
subject = current.model_subject()  # what the lab's figures read (vitviz.steps.mistakes)
if presenter.presenting():  # the lab's slides: its figures a row at a time, the filters as they are
    render.slides(mistakes.describe(subject, render.SessionChoices()), PAGE)
    st.stop()
head = st.container()  # the title goes here once the result's shape is known


def stop_with(message: str) -> None:
    """Title, introduction and one sentence, then nothing else."""
    with head:
        furniture.header("page.mistakes", "mistakes.intro")
    st.info(message)
    st.stop()


# ---- the test images and the evaluation -------------------------------------------------------
# The model's own dataset (Fashion-MNIST's test split for a Fashion-MNIST model), else the server's
# folder (streamlit run app.py -- --data FOLDER, or VITVIZ_DATA): a visitor can neither see nor
# change where it is.
split = testset.test_split(chosen.name)
if split is None:
    with head:
        furniture.header("page.mistakes", "mistakes.intro")
    named = vdata.named_dataset(model.config.class_names)  # "fashion-mnist", "mnist" or None (CIFAR-10)
    shown = vdata.named_label(named) if named else ""
    st.info(tr("mistakes.no_data_named", dataset=shown) if named else tr("mistakes.no_data"))
    download = tr("mistakes.download_named", dataset=shown) if named else tr("mistakes.download")
    if st.button(download, key="mistakes_download"):
        turns.step_aside()  # a download: the class goes on beside it
        with st.spinner(tr("mistakes.downloading")):
            try:  # torchvision's download: MNIST or Fashion-MNIST into the cache folder, else CIFAR-10
                vdata.load_split(named or lab.default_test_root(), "test")
            except FileNotFoundError as err:
                failed = "mistakes.download_failed_named" if named else "mistakes.download_failed"
                st.info(tr(failed, message=str(err), dataset=shown))
            else:
                st.rerun()
    st.stop()
location = split.location
try:
    with st.spinner(tr("mistakes.loading")):
        data = testset.cached_test_set(location)
except (FileNotFoundError, ValueError) as err:  # no images after all, or a damaged one
    stop_with(tr("mistakes.bad_data", message=str(err)))
with head:  # the shape of EvalResult.probs: one probability per image and class
    furniture.header("page.mistakes", "mistakes.intro", shape=(len(data), model.config.num_classes))
try:
    result = testset.cached_evaluation(chosen.name, location)  # a progress bar the first time
except ValueError as err:  # the model's classes differ from the dataset's
    st.info(tr("mistakes.mismatch", message=str(err)))
    st.stop()
classes = result.classes  # as the model and the folders spell them
num_classes = len(classes)
m1, m2, m3 = st.columns(3)
m1.metric(tr("mistakes.accuracy"), f"{result.accuracy:.1%}")
m2.metric(tr("mistakes.misclassified", n=f"{result.n:,}"), tr("mistakes.of", m=f"{result.misclassified:,}"))
m3.metric(tr("mistakes.speed"), tr("mistakes.speed_value", speed=f"{result.images_per_s:,.0f}"))
st.caption(mistakes.caption_of_data(subject, result, data))

# ---- a click on the confusion matrix sets the two class filters --------------------------------
# The chart's key names the cell the filters show, so a chart drawn for other filters is a new
# chart with nothing selected: a selection is always a click on the chart the page last drew, and
# a click on a cell clicked before (the filters moved away since) counts again.
options = [ANY, *range(num_classes)]
clicked = clicks.cell_from_selection(session.selection(session.recall("mistakes_chart", CONFUSION)), num_classes)
if clicked is not None:
    state.set(mistakes_true=clicked[0], mistakes_predicted=clicked[1])
for key in ("mistakes_true", "mistakes_predicted"):
    if state.get(key) not in options:
        state.set(**{key: ANY})
cell = (state.get("mistakes_true"), state.get("mistakes_predicted"))
cell = cell if ANY not in cell else None

left, right = st.columns([2, 3])
per_class, confusion = mistakes.class_figures(subject, result, cell)
render.draw(per_class, left)
chart = f"{CONFUSION}_{'_'.join(map(str, cell))}" if cell else CONFUSION
session.keep("mistakes_chart", chart)
draw(right, confusion.figure, width="stretch", key=chart, on_select="rerun")
right.caption(confusion.takeaway)


# ---- filters ----------------------------------------------------------------------------------
def any_or_name(option: int) -> str:
    return tr("mistakes.any") if option == ANY else label(classes[option])


st.subheader(tr("mistakes.filters"))
f1, f2, f3 = st.columns([1, 1, 2])
true_filter = state.widget(f1.selectbox, "mistakes_true", tr("mistakes.filter_true"), options, format_func=any_or_name)
predicted_filter = state.widget(
    f2.selectbox, "mistakes_predicted", tr("mistakes.filter_predicted"), options, format_func=any_or_name
)
true_filter = None if true_filter == ANY else true_filter
predicted_filter = None if predicted_filter == ANY else predicted_filter
state.default("mistakes_range", (0.0, 1.0))
low, high = state.widget(  # one confidence filter: "confidently wrong" is its left end raised
    f3.slider, "mistakes_range", tr("mistakes.confidence"), 0.0, 1.0, step=0.01, help=tr("mistakes.confidence_help")
)

# A second model on the same images: which of the two gets an image wrong.
others = [n for n, spec in zoo.REGISTRY.items() if n != chosen.name and list(spec.config.class_names) == list(classes)]
pair = models.lab_pair(chosen.name)
if pair in others:  # the shipped pair, side by side from the start
    state.default("mistakes_other", pair)
o1, o2 = st.columns(2)
picked_other = state.widget(
    o1.selectbox,
    "mistakes_other",
    tr("mistakes.other"),
    ["", *others],
    format_func=lambda n: tr("mistakes.other_none") if not n else zoo.REGISTRY[n].title_in(lang()),
)
typed_other = state.widget(
    o2.text_input, "mistakes_other_path", tr("mistakes.other_path"), on_change=models.forget_tries
)
other_name = typed_other.strip() or picked_other
other, which = None, "first_wrong"
if other_name:
    try:
        if (problem := models.try_model(other_name)) is not None:  # with a spinner; tried once
            raise problem
        other = testset.cached_evaluation(other_name, location)  # a progress bar the first time
    except (zoo.ModelLoadError, ValueError) as err:
        message = err.sentence(lang()) if isinstance(err, zoo.ModelLoadError) else str(err)
        st.info(tr("mistakes.other_failed", message=message))
if other is not None:
    counts = lab.agreement(result, other).tolist()  # rows: this model right / wrong; columns: the second model
    a1, a2 = st.columns([3, 2])
    a1.markdown(
        tabular.markdown_table(
            [
                {"": tr(f"mistakes.agree.first_{row}")}
                | {tr(f"mistakes.agree.second_{column}"): counts[i][j] for j, column in enumerate(("right", "wrong"))}
                for i, row in enumerate(("right", "wrong"))
            ]
        )
    )
    which = state.widget(
        a2.radio, "mistakes_pair", tr("mistakes.pair"), lab.PAIRS, format_func=lambda k: tr(f"mistakes.pair.{k}")
    )
diagonal = true_filter is not None and true_filter == predicted_filter
keep = lab.pair_mask(result, other, which) if other is not None and which != "first_wrong" else None
indices = lab.filter_mistakes(
    result,
    true_filter,
    predicted_filter,
    low,
    high,
    include_correct=diagonal,
    keep=keep,
)  # (m,) most confident first
count = len(indices)
filters = (chosen.name, location, true_filter, predicted_filter, low, high, other_name, which)
if session.recall("mistakes_filters") != filters:  # new filters: back to the first page and image
    session.keep("mistakes_filters", filters)
    state.set(mistakes_page=1, mistake=1)
if diagonal:
    st.caption(tr("mistakes.correct_cell", name=label(classes[true_filter])))
st.markdown(tr("mistakes.count", m=f"{count:,}"))
furniture.download_csv(
    "mistakes.download_csv", "mistakes.csv", "mistakes_csv", lambda: lab.mistakes_csv(result, indices)
)
if count == 0:
    st.info(tr("mistakes.none"))
    st.stop()

# ---- the gallery: a click on a thumbnail opens that image below and scrolls to it ----------------
labels, predictions, confidence = result.labels, result.predictions, result.confidence


def caption(number: int, index: int) -> str:
    return mistakes.caption(subject, result, number, index)


def show(number: int) -> None:
    """A button's callback (before the widgets exist): open image #number and its gallery page."""
    state.set(mistake=number, mistakes_page=(number - 1) // lab.PER_PAGE + 1)


def open_up_close(number: int) -> None:
    """A thumbnail's callback: open image #number and scroll to it, below the gallery."""
    show(number)
    session.keep("mistakes_scroll", True)


def follow() -> None:
    """The number box's callback: the gallery turns to the page of the image typed in."""
    show(state.get("mistake"))


def turn(page: int) -> None:
    """A button's callback: show gallery page ``page``."""
    state.set(mistakes_page=page)


st.subheader(tr("mistakes.gallery"))
number = state.clip("mistake", 1, 1, count)  # the image shown up close, #1 = the most confident
pages = lab.page_bounds(count, 1, lab.PER_PAGE)[2]
page = state.clip("mistakes_page", 1, 1, pages)
start, end, pages = lab.page_bounds(count, page, lab.PER_PAGE)
back, where, forward = st.columns([1, 4, 1], vertical_alignment="center")
furniture.back_and_forward(
    (back, forward), (tr("mistakes.page_back"), tr("mistakes.page_forward")), "mistakes_page", turn, page, pages
)
where.caption(tr("mistakes.page_of", page=page, pages=pages, start=start + 1, stop=end, count=f"{count:,}"))
shown = indices[start:end].tolist()  # never more than lab.PER_PAGE thumbnails, however many mistakes
pictures = lab.thumbnails(data.images[shown])
gallery.gallery(  # one element: a click on a thumbnail opens it (open_up_close)
    "mistakes_gallery",
    [furniture.png_bytes(picture) for picture in pictures],
    [caption(start + j + 1, index) for j, index in enumerate(shown)],
    range(start + 1, start + len(shown) + 1),
    number,
    lab.PER_ROW,
    open_up_close,
)

# ---- one image up close -----------------------------------------------------------------------
st.container(key="mistakes_detail").subheader(tr("mistakes.detail"))  # what a thumbnail's click scrolls to
if session.forget("mistakes_scroll", False):
    navigation.scroll_to("mistakes_detail")
back, choose, forward = st.columns([3, 5, 3], vertical_alignment="bottom")  # wide enough for "◀ Previous image"
furniture.back_and_forward(
    (back, forward),
    (tr("mistakes.image_back"), tr("mistakes.image_forward")),
    "mistakes_image",
    show,
    number,
    count,
)
state.widget(
    choose.number_input, "mistake", tr("mistakes.choose"), min_value=1, max_value=count, step=1, on_change=follow
)
index = int(indices[number - 1])
true_class, predicted_class = int(labels[index]), int(predictions[index])
true_name, predicted_name = classes[true_class], classes[predicted_class]  # as the model and folders spell them
true_label, predicted_label = label(true_name), label(predicted_name)  # as the user reads them
probs = result.probs[index]  # (K,)

left, right = st.columns([1, 2])
with left:
    large = lab.thumbnails(data.images[index : index + 1], 2 * lab.THUMBNAIL)[0]
    st.image(furniture.png_bytes(large), caption=caption(number, index), output_format="PNG")
    st.markdown(
        tr(
            "mistakes.verdict",
            file=result.files[index],
            true=true_label,
            predicted=predicted_label,
            confidence=f"{float(confidence[index]):.1%}",
        )
    )
    if other is not None:  # the second model's answer on the same image
        other_class = int(other.predictions[index])
        st.markdown(
            tr(
                "mistakes.other_answer",
                predicted=label(classes[other_class]),
                confidence=f"{float(other.confidence[index]):.1%}",
                verdict=tr("mistakes.other_right" if other_class == true_class else "mistakes.other_wrong"),
            )
        )

    navigation.open_in_tour_button(st, "mistakes_open_tour", *lab.class_position(data, index))
render.draw(mistakes.top5(subject, result, index), right)  # its caption: where the true class ranks

# Where the model looked for the predicted class and for the true class (for a model that averages
# its mirror image: the maps and the lens follow one pass), and when the true class lost: the logit
# lens of this image (its caption says when).
inspected = testset.cached_mistake(chosen.name, location, index)  # maps and logit lens, once per image
for block in mistakes.where_and_when(subject, result, data, index, inspected):
    render.draw(block)
furniture.download_npz(
    "download.npz",
    "mistake.npz",
    "mistakes_npz",
    probs=probs.numpy(),
    **inspected,
)
navigation.nav(PAGE)
