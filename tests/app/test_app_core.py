"""AppTests of the shared sidebar and the first tour pages (overview, input, patches, model card)."""

import copy
import dataclasses
import io
import json
import shutil
import time

import numpy as np
import pytest
import torch

from tests.apptest import errors, open_page, open_page_in_one_run, plotly_figures, tables
from vitviz.analyses import analysis, compare
from vitviz.app import ahead, caches, furniture, internals, models, navigation, state, text, tour, turns
from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render.i18n import plain


def metric_values(at) -> list[str]:
    return [m.value for m in at.metric]


def test_home_shows_the_pipeline_and_a_next_button():
    at = open_page()
    assert errors(at) == []
    table = tables(at)[0]
    shapes = list(table.iloc[:, 1])
    assert shapes[0] == "(1, 3, 32, 32)" and shapes[2] == "(1, 64, 48)" and shapes[4] == "(1, 65, 192)"
    assert shapes[-1] == "(1, 10)"
    assert at.button(key="nav_next") is not None
    at.button(key="nav_next").click().run()
    assert errors(at) == []
    assert any("Image to input" in t.value for t in at.title)


def test_next_and_previous_open_the_step_without_drawing_the_page_clicked_on_again(monkeypatch):
    drawn = []
    nav = navigation.nav
    monkeypatch.setattr(
        navigation, "nav", lambda script: (drawn.append(script), nav(script))
    )  # every page ends with it
    at = open_page("app_pages/2_patches.py")
    drawn.clear()
    runs, init = [], state.init
    monkeypatch.setattr(state, "init", lambda: (runs.append(1), init())[1])  # app.py calls it once a run
    at.button(key="nav_next").click().run()
    assert errors(at) == [] and any("Patch vectors" in t.value for t in at.title)
    assert drawn == ["app_pages/3_vectors.py"]  # the patches page's figures were not made again first
    assert len(runs) == 1  # the click's own run drew the step: no second run of app.py to switch pages
    assert at.session_state["step"] == 3 and at.query_params["step"] == "3"
    drawn.clear()
    at.button(key="nav_prev").click().run()
    assert errors(at) == [] and any("Patches" in t.value for t in at.title)
    assert drawn == ["app_pages/2_patches.py"]


def click_in_a_new_session(at, key: str) -> None:
    """Click button ``key`` on ``at``'s page, and run the click in a new session (the same URL, the
    same widgets sent): what another app server sees of a browser whose own server stopped.
    Streamlit's frontend reconnects, keeps its page and sends its next click to a session that
    never drew it. (AppTest's private parts: a new Streamlit that renames them fails here.)"""
    from streamlit.runtime.state.safe_session_state import SafeSessionState
    from streamlit.runtime.state.session_state import SessionState
    from streamlit.testing.v1.app_test import TESTING_KEY, _AppTestSessionState

    at.button(key=key).click()
    sent = at._tree.get_widget_states()  # what the browser sends: its page's widgets and the click
    assert isinstance(at._session_state, SafeSessionState)  # where AppTest keeps the session
    fresh = SessionState()
    fresh[TESTING_KEY] = {}
    at._session_state = SafeSessionState(fresh, lambda: None)
    at.session_state = _AppTestSessionState(at._session_state)
    at._run(sent)


@pytest.mark.parametrize(
    ("button", "title", "step"), [("nav_next", "Patch vectors", 3), ("nav_prev", "Image to input", 1)]
)
def test_next_and_previous_clicked_in_a_session_that_never_drew_them_still_open_the_step(button, title, step):
    """The first click after a browser moved to another app server (deploy/serve-class.sh, its own
    server killed) reaches a session where Streamlit knows no callback for the button: the click
    still opens the step, on the image of the URL."""
    at = open_page("app_pages/2_patches.py", query={"sample": "coffee.jpg"})
    assert any("Patches" in t.value for t in at.title) and at.query_params["sample"] == "coffee.jpg"
    click_in_a_new_session(at, button)
    assert errors(at) == [] and any(title in t.value for t in at.title), [t.value for t in at.title]
    assert at.session_state["step"] == step and at.query_params["step"] == str(step)
    assert at.session_state["sample"] == "coffee.jpg"


def test_next_on_a_streamlit_without_the_page_hook_switches_pages_in_two_runs(monkeypatch):
    """Where Streamlit's page manager has no hook to say which page a run is on, Next falls back
    to st.switch_page: one more run of app.py, the same step."""
    monkeypatch.setattr(internals, "open_page_now", lambda page: False)
    at = open_page("app_pages/2_patches.py")
    runs, init = [], state.init
    monkeypatch.setattr(state, "init", lambda: (runs.append(1), init())[1])
    at.button(key="nav_next").click().run()
    assert errors(at) == [] and any("Patch vectors" in t.value for t in at.title)
    assert len(runs) == 2 and at.session_state["step"] == 3 and at.query_params["step"] == "3"


def test_every_page_is_drawn_in_a_turn_and_gives_it_back(monkeypatch):
    """A class's runs compute in turns (vitviz.app.turns): the page itself runs inside one, the
    Next click's run takes one once, and none is kept."""
    gate = turns.Turns(slots=1, cores=2, set_threads=lambda n: None)
    monkeypatch.setattr(turns, "_server", gate)
    drawn_in_turn, nav = [], navigation.nav
    monkeypatch.setattr(navigation, "nav", lambda script: (drawn_in_turn.append(gate.running), nav(script)))
    taken, turn = [], gate.turn
    monkeypatch.setattr(gate, "turn", lambda session=None: (taken.append(session), turn(session))[1])
    at = open_page("app_pages/2_patches.py")
    at.button(key="nav_next").click().run()
    assert errors(at) == [] and any("Patch vectors" in t.value for t in at.title)
    assert drawn_in_turn == [1, 1, 1]  # overview, patches, vectors: each drawn holding the turn
    assert len(taken) == 3  # one turn a run: the Next click's run is the one that draws the step
    assert len(set(taken)) == 1 and taken[0] is not None  # one session, named
    assert gate.running == 0 and gate.waiting == 0


def test_steps_before_the_prediction_compute_its_heavy_work_ahead(monkeypatch):
    """On the steps before pages 7 and 8, the server computes page 7's occlusion curves and page
    8's first view for the session's image in a worker thread (vitviz.app.ahead); the pages then
    find them in their caches and run neither."""
    monkeypatch.setenv("VITVIZ_READ_AHEAD", "1")
    worker = ahead.Ahead(set_threads=lambda n: None)
    monkeypatch.setattr(ahead, "_server", worker)
    for cached in (caches.cached_occlusion, caches.cached_comparison, caches.cached_experiment):
        cached.clear()
    calls = {"occlusion": 0, "gradcam": 0, "experiment": 0}

    def counted(module, attribute: str, kind: str) -> None:
        real = getattr(module, attribute)

        def wrapper(*args, **kwargs):
            calls[kind] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, attribute, wrapper)

    counted(analysis, "occlusion_curve", "occlusion")
    counted(compare, "gradcam_and_logits", "gradcam")
    counted(compare, "run_experiment", "experiment")
    queued = []  # the kinds of work asked for and queued (the next step's description among them)
    asking = worker.ask

    def ask(key, job, rank=0):
        asked = asking(key, job, rank)
        if asked:
            queued.append(key[0])
        return asked

    monkeypatch.setattr(worker, "ask", ask)
    at = open_page("app_pages/6_block.py", query={"sample": "rocket.jpg"})
    assert errors(at) == []
    deadline = time.monotonic() + 60
    while (worker.queued or worker.done < len(queued)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.done == len(queued)
    # asked once each (the overview, then page 6 asked again for nothing)
    assert queued.count("occlusion") == 1 and queued.count("comparison") == 1
    assert calls == {"occlusion": 2, "gradcam": 1, "experiment": 1}  # both orders; one CNN map, one experiment
    at.button(key="nav_next").click().run()
    assert errors(at) == [] and any("Prediction" in t.value for t in at.title)
    at.button(key="nav_next").click().run()
    assert errors(at) == [] and any("ViT vs CNN" in t.value for t in at.title)
    assert calls == {"occlusion": 2, "gradcam": 1, "experiment": 1}  # pages 7 and 8 read them from the caches
    assert queued.count("occlusion") == 1 and queued.count("comparison") == 1
    monkeypatch.setenv("VITVIZ_READ_AHEAD", "0")  # off: the next image is not read ahead
    before = len(queued)
    open_page("app_pages/6_block.py", query={"sample": "coffee.jpg"})
    time.sleep(0.2)
    assert len(queued) == before and worker.queued == 0


def test_input_page_shows_original_resized_and_channels():
    at = open_page("app_pages/1_input.py", sample="coffee.jpg")
    assert errors(at) == []
    figures = plotly_figures(at)
    assert len(figures) == 5
    assert "600 x 400" in figures[0]["layout"]["title"]["text"]
    assert "32 x 32" in figures[1]["layout"]["title"]["text"]


def test_patch_page_counts_and_concept_slider():
    at = open_page("app_pages/2_patches.py")
    assert errors(at) == []
    values = metric_values(at)
    assert "8 x 8 = 64" in values and "4 x 4 x 3 = 48" in values
    # the concept slider's default: a 512x512 image with P = 16 gives 1024 patches of 768 numbers
    assert "32 x 32 = 1024" in values and "16 x 16 x 3 = 768" in values
    at.select_slider(key="concept_p").set_value(32).run()
    assert "16 x 16 = 256" in metric_values(at)


def test_vit_b16_shapes_on_the_overview():
    at = open_page(model="untrained-vit-b16")
    assert errors(at) == []
    shapes = list(tables(at)[0].iloc[:, 1])
    assert shapes[:5] == ["(1, 3, 224, 224)", "(1, 768, 14, 14)", "(1, 196, 768)", "(1, 196, 768)", "(1, 197, 768)"]
    assert shapes[-1] == "(1, 1000)"
    assert any("random weights" in w.value for w in at.sidebar.warning)


def test_korean_and_url_parameters():
    at = open_page(query={"lang": "ko", "sample": "rocket.jpg"})
    assert errors(at) == []
    assert at.session_state["sample"] == "rocket.jpg"
    assert any("전체 흐름" in t.value for t in at.title)
    assert at.query_params["lang"] in ("ko", ["ko"])
    assert at.query_params["step"] in ("0", ["0"])
    model_box = at.sidebar.selectbox(key="model")
    assert model_box.options == [zoo.REGISTRY[n].title_in("ko") for n in models.tour_models()]  # the ViTs
    assert "학습 전" in model_box.options[models.tour_models().index(zoo.UNTRAINED)]


def _truncated_jpeg() -> bytes:

    data = (zoo.ASSETS / "samples" / "coffee.jpg").read_bytes()
    return data[: len(data) // 3]


@pytest.mark.parametrize(
    "data, words", [(b"", "empty"), (b"just some text", "not an image"), (_truncated_jpeg(), "damaged")]
)
def test_bad_upload_gets_a_sentence_not_a_traceback(data, words):
    at = open_page(source="upload", upload_bytes=data)
    assert [e.value for e in at.exception] == []
    assert any(words in e.value for e in at.error)


def test_page_switch_does_not_rerun_the_model(monkeypatch):
    calls = []
    original = VisionTransformer.explain

    def counting(self, pixels):
        calls.append(1)
        return original(self, pixels)

    monkeypatch.setattr(VisionTransformer, "explain", counting)
    at = open_page(sample="astronaut.jpg")
    first = len(calls)
    for page in ("app_pages/1_input.py", "app_pages/2_patches.py", "app_pages/0_home.py"):
        at.switch_page(page).run()
        assert errors(at) == []
    assert len(calls) == first <= 1


def test_no_page_writes_into_the_shared_trace(monkeypatch):
    """The cached Trace is one object for every rerun and every visitor: walking the whole tour
    leaves its tensors exactly as the model made them."""
    made = []
    original = VisionTransformer.explain

    def keep(self, pixels):
        made.append(original(self, pixels))
        return made[-1]

    monkeypatch.setattr(VisionTransformer, "explain", keep)
    caches.cached_trace.clear()
    at = open_page(sample="astronaut.jpg")
    shared = made[0]  # the cached trace's tensors are views of this one's
    before = {f.name: copy.deepcopy(getattr(shared, f.name)) for f in dataclasses.fields(shared)}
    for page in tour.scripts():
        at.switch_page(page).run()
        assert errors(at) == [], page
    for name, value in before.items():
        after = getattr(shared, name)
        if isinstance(value, list):
            assert all(torch.equal(a, b) for a, b in zip(value, after, strict=True)), name
        elif isinstance(value, torch.Tensor):
            assert torch.equal(value, after), name


def test_an_upload_is_decoded_once(monkeypatch):
    import io

    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(7).integers(0, 256, (48, 64, 3), dtype=np.uint8)  # new bytes: no cache hit
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    calls = []
    original = caches.load_image

    def counting(data):
        calls.append(1)
        return original(data)

    monkeypatch.setattr(caches, "load_image", counting)
    at = open_page(source="upload", upload_bytes=buffer.getvalue())
    for page in ("app_pages/1_input.py", "app_pages/2_patches.py", "app_pages/0_home.py"):
        at.switch_page(page).run()
        assert errors(at) == []
    assert len(calls) == 1


def test_model_card_with_training_history(tmp_path, tiny_config):
    history = [
        {
            "epoch": e,
            "train_loss": 2.0 / e,
            "train_accuracy": 0.3 * e,
            "lr": 1e-3,
            "seconds": 1.0,
            "test_loss": 2.1 / e,
            "test_accuracy": 0.25 * e,
        }
        for e in (1, 2, 3)
    ]
    torch.manual_seed(0)
    path = tmp_path / "mine.safetensors"
    card = ModelCard(history=history, test_accuracy=0.75, epochs=3, evaluated={"weights_dtype": "float16"})
    zoo.save(VisionTransformer(tiny_config), path, card=card, dtype=torch.float16)
    at = open_page("app_pages/9_card.py", custom_model=str(path))
    assert errors(at) == []
    assert "75.00%" in metric_values(at)
    facts = next(frame for frame in tables(at) if frame.columns[0] == "Fact")
    stored = dict(zip(facts.iloc[:, 0], facts.iloc[:, 1], strict=True))["Weights on disk"]
    assert stored == "float16 (loaded as float32)"
    curves = plotly_figures(at)[0]
    test_acc = [trace for trace in curves["data"] if trace["name"] == "test accuracy"][0]
    assert test_acc["y"] == [0.25, 0.5, 0.75]
    total = VisionTransformer(tiny_config).num_params()
    assert f"{total:,}" in metric_values(at)


def test_model_card_of_an_interim_checkpoint_in_korean(tmp_path, tiny_config):
    history = [
        {
            "epoch": e,
            "train_loss": 2.0 / e,
            "train_accuracy": 0.2 * e,
            "lr": 1e-3,
            "test_loss": 2.1 / e,
            "test_accuracy": 0.3 * e,
        }
        for e in (1, 2)
    ]
    card = {
        "history": history,
        "test_accuracy": 0.6,
        "epochs": 2,
        "interim": "checkpoint after epoch 2 of 40",
        "recipe": {"epochs": 40, "lr": 0.001, "data": "/somewhere/on/my/disk", "threads": None},
        "trained_on": {"dataset": "CIFAR-10 (JPEG copy)", "source": "/somewhere/on/my/disk/train", "images": 50000},
        "evaluated": {"per_class_accuracy": {"cat": 0.25, "dog": 0.5, "bird": 0.75}},
    }
    torch.manual_seed(0)
    path = tmp_path / "mine.safetensors"
    zoo.save(VisionTransformer(tiny_config), path, card=ModelCard.from_dict(card))
    at = open_page_in_one_run("app_pages/9_card.py", custom_model=str(path), lang="ko")
    assert errors(at) == []
    assert any("40에폭 중 2에폭" in i.value for i in at.info)  # an interim model says so
    curves, per_class = plotly_figures(at)[:2]
    names = {trace["name"] for trace in curves["data"]}
    assert {"테스트 정확도", "학습 손실"} <= names
    assert curves["layout"]["xaxis"]["range"] == [0.5, 40.5]  # the axes span the planned run
    assert per_class["data"][0]["y"] == ["고양이 (cat)", "개 (dog)", "새 (bird)"] and per_class["data"][0]["x"] == [
        0.25,
        0.5,
        0.75,
    ]
    facts = dict(zip(tables(at)[-2]["항목"], tables(at)[-2]["값"], strict=True))
    assert facts["학습 데이터"] == "CIFAR-10 (JPEG 사본), 이미지 50,000장"
    recipe = list(tables(at)[-1]["설정 이름"])
    assert recipe == ["epochs", "lr"]  # where it ran (data, threads) is not part of the recipe shown


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_model_card_of_a_checkpoint_whose_schedule_ended_below_it(tmp_path, tiny_config, lang):
    history = [{"epoch": e, "train_loss": 1.0, "train_accuracy": 0.5, "lr": 1e-3, "test_accuracy": 0.6} for e in (1, 2)]
    card = {
        "history": history,
        "test_accuracy": 0.6,
        "epochs": 2,
        "planned_epochs": 40,
        "interim": "checkpoint after epoch 2 of 40",
        "schedule_end": {"epoch": 40, "test_accuracy": 0.5875},
        "recipe": {"epochs": 40, "lr": 0.001},
    }
    path = tmp_path / "mine.safetensors"
    zoo.save(VisionTransformer(tiny_config), path, card=ModelCard.from_dict(card))
    at = open_page_in_one_run("app_pages/9_card.py", custom_model=str(path), lang=lang)
    assert errors(at) == []
    boxes = [i.value for i in at.info]
    said = {
        "en": ("epoch 2 of 40", "ended at epoch 40 with 58.75%", "checkpoint's 60.00%"),
        "ko": ("40에폭 중 2에폭", "40에폭에서 테스트 정확도 58.75%로", "체크포인트의 60.00%"),
    }[lang]
    assert any(all(words in box for words in said) for box in boxes), boxes
    assert not any("Training goes on" in box or "학습은 계속되며" in box for box in boxes)  # it does not


def test_model_card_of_a_run_trained_in_two_stages(tmp_path):
    from tests.helpers import make_image_folder, tiny_recipe
    from vitviz.training.train import train

    data = make_image_folder(tmp_path / "data", per_class=40)
    train(tiny_recipe(data, name="first", epochs=2), out=tmp_path / "first")
    second = tiny_recipe(data, name="second", epochs=3, lr=5e-4, init_from=str(tmp_path / "first"))
    train(second, out=tmp_path / "second")
    at = open_page_in_one_run("app_pages/9_card.py", custom_model=str(tmp_path / "second" / "second.safetensors"))
    assert errors(at) == []
    assert any(
        "2 stages" in c.value and "stage 1, first (epochs 1-2) → stage 2, second (epochs 3-5)" in c.value
        for c in at.caption
    )
    curves = plotly_figures(at)[0]
    lr = [trace for trace in curves["data"] if trace["name"] == "learning rate"][0]
    assert lr["x"] == [1, 2, 3, 4, 5]
    assert lr["y"][0] > lr["y"][1] < lr["y"][2] <= 5e-4  # decays, then the second stage starts its own schedule
    bands = sorted((shape["x0"], shape["x1"]) for shape in curves["layout"]["shapes"])
    assert bands == [(2.5, 5.5)] * 3  # stage 2 shaded in each panel
    labels = [a for a in curves["layout"]["annotations"] if a.get("xref") == "x2"]
    assert [a["text"] for a in labels] == ["1", "2"]  # each stage's number over its band
    assert labels[1]["hovertext"] == "stage 2, second (epochs 3-5)"  # the pointer on it: which run, which epochs
    table = tables(at)[-1]
    assert list(table.columns) == ["Setting", "stage 1", "stage 2"]  # every stage fits across the page
    rows = dict(zip(table["Setting"], zip(table["stage 1"], table["stage 2"], strict=True), strict=True))
    assert rows["lr"] == ("0.003", "0.0005") and rows["epochs"] == ("2", "3")
    assert "init_from" not in rows and "data" not in rows
    facts = dict(zip(tables(at)[-2]["Fact"], tables(at)[-2]["Value"], strict=True))
    assert facts["Epochs"] == "5"
    here = ModelCard.read(tmp_path / "second" / "second.json").hardware
    assert facts["Hardware"] == text.hardware_text(here) and "Hardware (stage 1)" not in facts  # one machine

    # the first stage trained on a GPU elsewhere (not this machine's, which a lent GPU may be):
    # each machine is named with its stages
    card = ModelCard.read(tmp_path / "second" / "second.json")
    elsewhere = "NVIDIA H100 80GB HBM3" if "H200" in here else "NVIDIA H200"
    card.stages[0]["hardware"] = elsewhere
    card.write(tmp_path / "second" / "moved.json")
    shutil.copy(tmp_path / "second" / "second.safetensors", tmp_path / "second" / "moved.safetensors")
    at = open_page_in_one_run("app_pages/9_card.py", custom_model=str(tmp_path / "second" / "moved.safetensors"))
    facts = dict(zip(tables(at)[-2]["Fact"], tables(at)[-2]["Value"], strict=True))
    assert facts["Hardware (stage 1)"] == elsewhere and facts["Hardware (stage 2)"] == text.hardware_text(here)
    assert "Hardware" not in facts

    # the first stage was written before stages kept their machine: the card claims only what it knows
    del card.stages[0]["hardware"]
    card.write(tmp_path / "second" / "older.json")
    shutil.copy(tmp_path / "second" / "second.safetensors", tmp_path / "second" / "older.safetensors")
    at = open_page_in_one_run("app_pages/9_card.py", custom_model=str(tmp_path / "second" / "older.safetensors"))
    facts = dict(zip(tables(at)[-2]["Fact"], tables(at)[-2]["Value"], strict=True))
    assert [fact for fact in facts if fact.startswith("Hardware")] == ["Hardware (stage 2)"]


def test_unknown_custom_model_says_so():
    """One sentence on the page, and the tour goes on with the list's model (issue 40)."""
    at = open_page(custom_model="timm:no_such_model_at_all")
    assert errors(at) == []
    said = [plain(w.value) for w in at.warning]  # as read: the name is escaped for Markdown
    assert any("timm:no_such_model_at_all" in w and "The tour goes on with" in w for w in said)
    assert not any("in use instead of the list above" in c.value for c in at.sidebar.caption)
    at = open_page(custom_model="no-such-model")
    assert any("There is no model called 'no-such-model'" in w.value for w in at.warning)


def test_shapes_json_roundtrip_of_config_on_card():
    at = open_page("app_pages/9_card.py")
    assert errors(at) == []
    keys = list(tables(at)[1]["Setting"])
    assert "embed_dim" in keys and "patch_size" in keys
    assert json.dumps(keys)


def test_upload_chosen_but_no_file_yet_says_what_to_do():
    at = open_page(source="upload")
    assert [e.value for e in at.exception] == []
    assert any("Choose an image in the sidebar" in i.value for i in at.info)


def test_a_photo_under_a_ten_class_model_says_what_the_model_knows():
    at = open_page(sample="coffee.jpg")  # the default model: CIFAR-10's classes
    assert errors(at) == []
    (note,) = [c.value for c in at.caption if "knows only" in c.value]
    assert "10 classes" in note and "airplane" in note and "truck" in note
    at = open_page("app_pages/7_prediction.py", sample="coffee.jpg", model="untrained-vit-b16")  # 1000 classes: no list
    assert errors(at) == [] and not [c.value for c in at.caption if "knows only" in c.value]


def test_a_sidebar_choice_reruns_through_app_py():
    """After the first run every run goes through app.py (tests/apptest.py): the sidebar is drawn
    again and mirrors the new choice in the URL."""
    at = open_page("app_pages/2_patches.py", sample="astronaut.jpg")
    at.sidebar.selectbox(key="sample").set_value("rocket.jpg").run()
    assert errors(at) == []
    assert at.sidebar.selectbox(key="model").value == zoo.default_name()
    assert at.query_params["sample"] in ("rocket.jpg", ["rocket.jpg"])
    assert at.title[0].value.startswith("2.")


def test_choices_refuse_a_translated_label_in_place_of_an_option():
    """After a language switch, a selectbox or radio with translated labels sends the label it
    showed (the model's English title, "업로드") instead of its option; Choices refuses such a
    value and keeps the last valid one (the browser journey test_c walks the real thing)."""

    name = zoo.default_name()
    assert state.is_valid("model", name) and not state.is_valid("model", zoo.REGISTRY[name].title_in("en"))
    assert state.is_valid("source", "upload") and not state.is_valid("source", "업로드")
    assert state.is_valid("lang", "ko") and not state.is_valid("lang", "한국어")
    assert state.is_valid("layer", 2) and not state.is_valid("layer", "3층") and not state.is_valid("layer", True)
    assert state.is_valid("sample", "coffee.jpg") and not state.is_valid("sample", "../app.py")
    # the lab's confidence range: low <= high within [0, 1]; a reversed, NaN or wider pair (a forged
    # slider value) crashed the lab on every run until the visitor moved the slider
    assert state.is_valid("mistakes_range", (0.1, 0.9)) and state.is_valid("mistakes_range", [0.0, 1.0])
    for pair in ((0.9, 0.1), (float("nan"), float("nan")), (-5.0, 7.0), (0.5, 1.5)):
        assert not state.is_valid("mistakes_range", pair), pair
    assert state.is_valid("present", True) and not state.is_valid("present", "1")


def test_the_tour_lists_vits_only(monkeypatch):
    from vitviz.models.config import cifar10_cnn_config

    cnn = zoo.ModelSpec("some-cnn", "A CNN", "shipped", cifar10_cnn_config(), True, True, "a CNN")
    monkeypatch.setitem(zoo.REGISTRY, "some-cnn", cnn)
    assert "some-cnn" not in models.tour_models() and zoo.default_name() in models.tour_models()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_sidebar_shows_the_whole_model_name(lang):
    """The picker cuts a long name ("CIFAR-10 ViT (shipped, 80.4% tes"): the caption under it wraps the whole of it."""
    at = open_page_in_one_run("app_pages/0_home.py", lang=lang)
    spec = zoo.REGISTRY[zoo.default_name()]
    captions = [c.value for c in at.sidebar.caption]
    assert f"**{spec.title_in(lang)}**: {spec.description_in(lang)}" in captions


@pytest.mark.parametrize(("lang", "shown"), [("en", "bfloat16 (set by the server)"), ("ko", "bfloat16 (서버 설정)")])
def test_the_sidebar_says_when_the_server_sets_bfloat16(monkeypatch, lang, shown):
    from vitviz.models import precision

    monkeypatch.setenv("VITVIZ_PRECISION", "bfloat16")
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)
    caches.cached_precision.clear(), caches.cached_trace.clear()
    try:
        at = open_page_in_one_run("app_pages/5_attention.py", lang=lang)
        assert errors(at) == []
        label = "Precision" if lang == "en" else "연산 정밀도"
        assert f"{label}: {shown}" in [c.value for c in at.sidebar.caption]
    finally:
        caches.cached_precision.clear(), caches.cached_trace.clear()


def test_float32_is_said_where_the_server_fixes_it():
    at = open_page()
    assert "Precision: float32" in [c.value for c in at.sidebar.caption]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_card_page_shows_the_shipped_cnns_card_too(lang):
    """The CNN set beside the ViT (and teaching it) has a card of its own: the card page picks it."""
    cnn = zoo.load(zoo.SHIPPED_CNN)
    at = open_page_in_one_run("app_pages/9_card.py", lang=lang, card_model=zoo.SHIPPED_CNN)
    assert errors(at) == []
    assert at.selectbox(key="card_model").value == zoo.SHIPPED_CNN
    assert at.subheader[0].value == cnn.spec.title_in(lang)
    values = metric_values(at)
    assert f"{cnn.model.num_params():,}" in values and f"{cnn.model.config.widths[-1]} x 3 x 3" in values
    # one view, the protocol every card is compared by; the CNN's own image-and-mirror figure below it
    assert f"{cnn.spec.card.one_view_accuracy:.2%}" in values
    assert f"{cnn.spec.card.test_accuracy:.2%}" in " ".join(plain(c.value) for c in at.caption)
    assert "0.111111" in list(tables(at)[1].iloc[:, 1])  # logit_scale 1/9, not 0.1111111111111111
    curves = plotly_figures(at)[0]
    test_acc = [t for t in curves["data"] if t["name"] == ("test accuracy" if lang == "en" else "테스트 정확도")]
    history = [row["test_accuracy"] for row in cnn.spec.card.history if "test_accuracy" in row]
    assert len(test_acc) == 1 and [y for y in test_acc[0]["y"] if y is not None] == pytest.approx(history)
    if lang == "en":  # (AppTest cannot rerun a Korean select box: tests/apptest.py)
        at.button(key="nav_prev").click().run()  # Previous, then back: the CNN's card is still the one shown
        at.switch_page("app_pages/9_card.py").run()
        assert at.selectbox(key="card_model").value == zoo.SHIPPED_CNN


def test_a_link_opens_the_card_it_was_copied_from():
    at = open_page("app_pages/9_card.py")
    assert "card_model" not in at.query_params  # the sidebar's model: nothing to say
    at.selectbox(key="card_model").set_value(zoo.SHIPPED_CNN).run()
    assert errors(at) == [] and at.query_params["card_model"] == zoo.SHIPPED_CNN
    shared = open_page("app_pages/9_card.py", query={"card_model": zoo.SHIPPED_CNN})  # someone opens the link
    assert errors(shared) == [] and shared.selectbox(key="card_model").value == zoo.SHIPPED_CNN
    assert shared.subheader[0].value == zoo.load(zoo.SHIPPED_CNN).spec.title_in("en")
    at.selectbox(key="card_model").set_value(zoo.default_name()).run()
    assert "card_model" not in at.query_params
    odd = open_page("app_pages/9_card.py", query={"card_model": "../etc/passwd"})  # not a card here: the sidebar's
    assert errors(odd) == [] and odd.selectbox(key="card_model").value == zoo.default_name()


def _card_facts(at) -> dict[str, str]:
    """The card page's table of facts (trained on, tested on, hardware, weights, teachers)."""
    (table,) = [frame for frame in tables(at) if "Weights on disk" in list(frame.iloc[:, 0])]
    return dict(zip(table.iloc[:, 0], table.iloc[:, 1], strict=True))


def test_the_card_page_starts_on_the_sidebars_model_and_names_its_teachers():
    at = open_page("app_pages/9_card.py")
    assert errors(at) == []
    assert at.selectbox(key="card_model").value == zoo.default_name()
    config = zoo.REGISTRY[zoo.default_name()].config  # the shipped ViT, whatever its shape
    assert f"{config.num_tokens} x {config.embed_dim}" in metric_values(at)
    card = zoo.load(zoo.default_name()).spec.card
    facts = _card_facts(at)
    assert facts["Weights on disk"] == "float32"
    taught = [value for fact, value in facts.items() if fact.startswith("Taught by")]
    assert len(taught) == len(card.teachers())  # a row a teacher; none for a model that learnt alone
    for teacher, _ in card.teachers():
        if teacher.get("weights_sha256"):
            one_view = zoo.one_view_accuracy_of(teacher)  # the teacher's card's one-view figure, where it has one
            expected = (
                f"{teacher['name']}, {one_view:.2%} test, one view (weights {teacher['weights_sha256'][:12]})"
                if one_view is not None
                else f"{teacher['name']}, {teacher['test_accuracy']:.2%} test (weights {teacher['weights_sha256'][:12]})"
            )
            assert expected in taught


def test_the_card_page_names_the_teacher_of_each_stage(tmp_path):
    first = {"name": "cifar10-cnn", "weights_sha256": "a" * 64, "test_accuracy": 0.9034}
    second = {"name": "cifar10-cnn", "weights_sha256": "b" * 64, "test_accuracy": 0.9261}
    card = ModelCard(
        name="kd3",
        epochs=10,
        recipe={"teacher": "cifar10-cnn"},
        teacher=second,  # the last stage's
        history=[
            {"epoch": epoch, "train_loss": 2 / epoch, "train_accuracy": 0.08 * epoch, "lr": 1e-3, "seconds": 60.0}
            for epoch in range(1, 11)
        ],
        stages=[
            {"name": "s1", "epochs": 4, "recipe": {}},  # learnt alone
            {"name": "kd", "epochs": 2, "recipe": {"teacher": "cifar10-cnn"}, "teacher": first},
            {"name": "kd2", "epochs": 2, "recipe": {"teacher": "cifar10-cnn"}},  # written before stages kept teachers
            {"name": "kd3", "epochs": 2, "recipe": {"teacher": "cifar10-cnn"}},
        ],
    )
    path = tmp_path / "taught.safetensors"
    config = ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=2)
    zoo.save(VisionTransformer(config), path, card)
    at = open_page("app_pages/9_card.py", custom_model=str(path))
    assert errors(at) == []
    taught = {fact: value for fact, value in _card_facts(at).items() if fact.startswith("Taught by")}
    assert taught == {
        "Taught by (stage 2)": "cifar10-cnn, 90.34% test (weights aaaaaaaaaaaa)",
        "Taught by (stage 3)": "cifar10-cnn",  # only its recipe's name is known
        "Taught by (stage 4)": "cifar10-cnn, 92.61% test (weights bbbbbbbbbbbb)",
    }


def test_an_npz_download_is_made_when_clicked_and_holds_the_arrays(monkeypatch):
    offered = {}
    monkeypatch.setattr(furniture.st, "download_button", lambda label, data, **kw: offered.update(data=data, **kw))
    vector = torch.arange(6, dtype=torch.float32).numpy()
    furniture.download_npz("vectors.download_vector", "v.npz", "v_npz", vector=vector, patch=3)
    assert callable(offered["data"]) and offered["file_name"] == "v.npz"  # nothing compressed until asked
    with np.load(io.BytesIO(offered["data"]())) as npz:
        assert npz["vector"].tolist() == vector.tolist() and int(npz["patch"]) == 3
