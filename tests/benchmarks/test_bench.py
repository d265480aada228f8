"""The benchmark: its helpers on tiny models, and one --quick run end to end (no timed assertions)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from benchmarks import bench
from benchmarks.light_client import Expected, LightStudent, Run, button_key
from tests.helpers import LEFT_DARK, MIRROR_CLASSES, left_right_vit
from vitviz.app import tour
from vitviz.models import precision, zoo
from vitviz.models.config import ViTConfig
from vitviz.models.convert import from_hf, from_timm
from vitviz.models.data import find_cifar_test_folder
from vitviz.models.model import flops_per_image

REPO = Path(__file__).resolve().parents[2]
RATIOS = (
    "explain_over_forward",
    "explain_over_forward_cifar_b256",
    "ours_over_timm",
    "ours_over_hf",
    "fraction_of_matmul_peak",
    "eval_fraction_of_matmul_peak",
    "lab_eval_fraction_of_forward",
    "train_step_explicit_over_fused",
    "train_step_explicit_over_fused_d9",
)


@pytest.fixture
def tiny() -> ViTConfig:
    return ViTConfig(image_size=32, patch_size=8, num_classes=10, embed_dim=32, depth=2, num_heads=4)


def test_alternate_takes_turns_and_times_every_run() -> None:
    calls: list[str] = []
    ticks = iter(range(1000))
    contenders = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    seconds = bench.alternate(contenders, runs=5, warmup=2, clock=lambda: float(next(ticks)))
    assert calls == ["a", "b"] * 7
    assert {name: len(runs) for name, runs in seconds.items()} == {"a": 5, "b": 5}
    assert all(s == 1.0 for runs in seconds.values() for s in runs)  # one tick per timed call


def test_medians() -> None:
    assert bench.medians({"a": [3.0, 1.0, 2.0], "b": [4.0, 9.0, 5.0, 6.0]}) == {"a": 2.0, "b": 5.5}


@pytest.mark.parametrize("use_timm_extract", [True, False])
def test_timm_attention_equals_explain(tiny: ViTConfig, use_timm_extract: bool) -> None:
    timm_model = bench.timm_peer(tiny)
    ours = from_timm(timm_model)
    pixels = bench.random_pixels(tiny, 2)
    extract = bench.TimmAttention(timm_model, use_timm_extract=use_timm_extract)
    with torch.inference_mode():
        theirs = extract(pixels)
        mine = ours.explain(pixels).attentions
    extract.close()
    assert len(theirs) == tiny.depth
    assert theirs[0].shape == (2, tiny.num_heads, tiny.num_tokens, tiny.num_tokens)
    assert bench.max_attention_difference(mine, theirs) < 1e-5
    assert all(not block.attn.attn_drop._forward_hooks for block in timm_model.blocks)  # hooks removed
    assert [block.attn.fused_attn for block in timm_model.blocks] == extract._fused  # fast path restored


def test_hf_attention_equals_explain(tiny: ViTConfig) -> None:
    hf_model = bench.hf_peer(tiny)
    ours = from_hf(hf_model)
    pixels = bench.random_pixels(tiny, 2)
    with torch.inference_mode():
        theirs = bench.hf_attention(hf_model, pixels)
        mine = ours.explain(pixels).attentions
    assert len(theirs) == tiny.depth
    assert bench.max_attention_difference(mine, theirs) < 1e-5


def test_attention_check_refuses_different_maps(tiny: ViTConfig) -> None:
    maps = [torch.rand(1, 4, 17, 17) for _ in range(2)]
    report = bench.Report()
    bench.check_same_attention(report, "same", maps, [m.clone() for m in maps])
    assert report.figures["same_attention_max_abs_diff"] == 0.0
    with pytest.raises(RuntimeError, match="differ"):
        bench.check_same_attention(report, "other", maps, [m + 1e-3 for m in maps])
    with pytest.raises(ValueError, match="number or shape"):
        bench.max_attention_difference(maps, maps[:1])


def test_bf16_explain_is_timed_against_the_bf16_forward_on_both_vits(monkeypatch, tiny: ViTConfig) -> None:
    monkeypatch.setattr(precision, "native_bf16", lambda device: True)  # emulated elsewhere: slower, same path
    explained = []
    real_explain = precision.explain
    monkeypatch.setattr(
        precision, "explain", lambda model, pixels, dtype: explained.append(dtype) or real_explain(model, pixels, dtype)
    )
    plan = dataclasses.replace(bench.QUICK, vit=tiny, runs=2, warmup=1)
    report = bench.Report()
    bench.bf16_explain_vs_forward(report, plan)
    for figure in ("explain_bf16_over_forward_bf16", "explain_bf16_over_forward_bf16_cifar"):
        assert 0 < report.figures[figure] < 100, figure
    assert set(explained) == {torch.bfloat16} and len(explained) == (2 + 1) + (10 + 1)  # the CIFAR ViT: 5x the runs
    assert {"bf16_b1.forward", "bf16_b1.explain", "bf16_cifar_b1.explain"} <= report.medians_ms.keys()
    assert {name for name, _, _ in bench.TARGETS} >= {"explain_bf16_over_forward_bf16"}


def test_the_forward_pass_explain_is_timed_against_is_the_one_it_explains() -> None:
    """A ViT whose mean with the mirror image answers blue where its one pass answers red: the
    forward pass the bench sets against ``explain`` (in float32 and in bf16) answers red, as the
    trace does, and costs one pass; the evaluation's FLOPs count both views."""
    model = left_right_vit(test_flip=True)
    red = MIRROR_CLASSES.index("red")
    with torch.inference_mode():
        assert model(LEFT_DARK).argmax().item() != red  # the mean: not the pass explain keeps
        explained = model.explain(LEFT_DARK).logits
        assert explained.argmax().item() == red
        torch.testing.assert_close(bench.explained_forward(model, LEFT_DARK), explained)
        assert bench.bf16_forward(model, LEFT_DARK).argmax().item() == red
    one_view = left_right_vit(test_flip=False).config
    assert bench.flops_per_answer(one_view) == flops_per_image(one_view)
    assert bench.flops_per_answer(model.config) == 2 * flops_per_image(model.config)


def test_square_matmul_has_about_the_flops_asked_for() -> None:
    run, flops = bench.square_matmul(35.1e9)
    n = round((flops / 2) ** (1 / 3))
    assert flops == 2 * n**3 and abs(flops / 35.1e9 - 1) < 0.01
    small, small_flops = bench.square_matmul(2 * 8**3)
    assert small_flops == 2 * 8**3 and small().shape == (8, 8)


def test_targets_met_or_missed() -> None:
    assert bench.met(1.05, "<=", 1.10) == "met"
    assert bench.met(1.2, "<=", 1.10) == "missed"
    assert bench.met(0.9, ">=", 0.85) == "met"
    assert bench.met(None, ">=", 0.85) == "n/a"
    report = bench.Report(figures={"explain_over_forward": 1.0, "ours_over_timm": 2.0}, notes=["busy"])
    text = bench.table(report)
    assert "explain_over_forward" in text and "missed" in text and "busy" in text


def test_url_paths_and_pages() -> None:
    assert bench.url_path("app_pages/0_home.py") == ""
    assert bench.url_path("app_pages/5_attention.py") == "attention"
    assert "app_pages/0_home.py" in bench.app_pages()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's /proc")
def test_peak_rss_of_this_process() -> None:
    assert bench.peak_rss_mb(os.getpid()) > 10
    assert bench.peak_rss_mb(2**22 + 12345) is None  # no such process


def test_small_test_folder(tmp_path: Path) -> None:
    source = tmp_path / "source"
    for name in ("cat", "dog"):
        (source / name).mkdir(parents=True)
        for i in range(10):
            (source / name / f"{i:04d}.jpg").write_bytes(b"x")
    small = bench.small_test_folder(source, 3, tmp_path / "small")
    assert sorted(p.name for p in (small / "test" / "cat").iterdir()) == ["0000.jpg", "0003.jpg", "0006.jpg"]
    assert len(list((small / "test" / "dog").iterdir())) == 3


def _finite_positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


@pytest.mark.slow
@pytest.mark.cifar10
def test_quick_bench_reports_every_figure() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench", "--quick", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    missing_chromium = bench.chromium_missing()
    for key in bench.REQUIRED_KEYS:
        assert key in report, key
        if key == "app_peak_rss_mb" and missing_chromium:
            assert report[key] is None
            assert any("app_peak_rss_mb" in note for note in report["notes"])
        elif key in bench.BROWSER_KEYS and missing_chromium:
            assert report[key] is None
            assert any("no browser figures" in note for note in report["notes"])
        else:
            assert _finite_positive(report[key]), (key, report[key])
    for key in RATIOS:
        assert 0 < report[key] < 100, (key, report[key])
    assert report["quick"] is True
    assert isinstance(report["threads"], int) and report["threads"] >= 1
    assert report["timm_attention_max_abs_diff"] <= 1e-4 and report["hf_attention_max_abs_diff"] <= 1e-4
    assert report["eval_data"]
    assert all(_finite_positive(v) for v in report["medians_ms"].values())
    assert not [note for note in report["notes"] if " failed after " in note]
    if precision.native_bf16(torch.device("cpu")):
        assert (
            0 < report["explain_bf16_over_forward_bf16"] < 100
            and 0 < report["explain_bf16_over_forward_bf16_cifar"] < 100
        )
    if not missing_chromium:  # 1 Chromium + 2 light clients, then 100 light clients over 60 s
        for key in ("class_3", "class_3_one_image", "class_100"):
            assert report[f"{key}_server_cpu_per_step_s"] > 0 and report[f"{key}_step_p95_s"] > 0, key
            assert report[f"{key}_errors"] == 0 and report[f"{key}_wrong_image"] == 0, key
        assert report["class_3_steps_timed"] == 3 * (len(tour.TOUR) - 1)
        assert report["class_100_steps_timed"] == 100 * len(tour.TOUR)  # opening the session, then every Next
        # a teacher's Next followed by 1 Chromium + 2 light clients through 2 steps, on one server
        # and on two replicas sharing the class through redis-server
        for suffix in ("", "_replicas") if bench.redis_missing() is None else ("",):
            assert report[f"class_follow_p95_s{suffix}"] > 0, suffix
            assert report[f"class_follow_timed{suffix}"] == 3 * 2, suffix
            assert report[f"class_follow_errors{suffix}"] == 0 and report[f"class_follow_wrong_image{suffix}"] == 0
        assert report["class_follow_idle_cores"] >= 0  # measured on the one server while the class read
    if find_cifar_test_folder() is not None:  # a teacher and 3 students through 2 steps, each catch-up run alone
        by_step = report["class_catch_up_cpu_ms_by_step"]
        assert set(by_step) == {"1", "2"} and all(ms > 0 for ms in by_step.values())
        assert report["class_catch_up_cpu_ms_max"] == max(by_step.values()) >= report["class_catch_up_cpu_ms"] > 0
        assert all(count > 10 for count in report["class_catch_up_messages_by_step"].values())  # a page, not an error


def test_cpu_seconds_counts_this_process_working():
    before = bench.cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert bench.cpu_seconds(os.getpid()) - before >= 0.2


def test_percentile_is_nearest_rank():
    steps = [0.5, 0.1, 0.3, 0.2, 0.4, 0.9, 0.6, 0.7, 0.8, 1.0]
    assert bench.percentile(steps, 50) == 0.5
    assert bench.percentile(steps, 95) == 1.0
    assert bench.percentile([0.25], 95) == 0.25


class FakePage:
    """A page whose looks (``bench.LOOK``) follow a script of polls: (title, content, undrawn,
    running), or (title, content, undrawn, running, undrawn in the window); without the fifth, every
    chart not drawn is in the window."""

    def __init__(self, polls):
        self.polls, self.index, self.waited = polls, 0, 0

    def evaluate(self, script, arg):
        assert script == bench.LOOK and arg == bench.PAGE_CONTENT
        title, content, undrawn, running, *in_view = self.polls[min(self.index, len(self.polls) - 1)]
        look = {"title": title, "content": content, "undrawn": undrawn, "running": running}
        return {**look, "undrawn_in_view": in_view[0] if in_view else undrawn}

    def wait_for_timeout(self, ms):
        self.index += 1
        self.waited += ms


def test_a_page_is_ready_at_the_first_of_two_quiet_polls_with_its_new_title(monkeypatch):
    polls = [
        ("1. Image", 3, 0, 0),  # the old page, quiet: not the new one yet
        ("2. Patches", 0, 0, 1),  # new title, nothing shown, running
        ("2. Patches", 1, 1, 1),  # still running, a chart not drawn yet
        ("2. Patches", 1, 1, 0),  # the run is over, a chart still drawing
        ("2. Patches", 2, 0, 0),  # quiet: ready from here ...
        ("2. Patches", 2, 0, 0),  # ... once a second poll agrees
    ]
    page = FakePage(polls)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: float(page.index))  # the clock counts polls
    ready = bench.wait_ready(page, old_title="1. Image")
    assert page.index == 5  # it returned on the sixth poll ...
    assert ready == 4  # ... with the time of the fifth, the first quiet one
    stuck = FakePage([("1. Image", 3, 0, 0)])
    monkeypatch.setattr(bench.time, "perf_counter", lambda: float(stuck.index))
    with pytest.raises(TimeoutError):
        bench.wait_ready(stuck, old_title="1. Image", timeout_ms=20_000)


class AsyncFakePage(FakePage):
    async def evaluate(self, script, arg):
        return FakePage.evaluate(self, script, arg)

    async def wait_for_timeout(self, ms):
        FakePage.wait_for_timeout(self, ms)


def test_the_first_screen_is_ready_before_the_charts_below_it_are_drawn(monkeypatch):
    polls = [
        ("1. Image", 3, 0, 0, 0),
        ("2. Patches", 2, 3, 1, 1),  # running, a chart in the window and two below it not drawn
        ("2. Patches", 2, 2, 0, 0),  # the window drawn, two below still waiting ...
        ("2. Patches", 2, 2, 0, 0),  # ... the first screen is ready from the first of these
        ("2. Patches", 2, 1, 0, 0),
        ("2. Patches", 2, 0, 0, 0),  # every chart drawn: the whole page ready from here
        ("2. Patches", 2, 0, 0, 0),
    ]
    page = FakePage(polls)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: float(page.index))
    assert bench.wait_ready(page, old_title="1. Image", in_view=True) == 2 and page.index == 3
    assert bench.wait_ready(page, old_title="1. Image") == 5 and page.index == 6
    assert not bench.is_quiet(
        {"title": "2. Patches", "content": 1, "undrawn": 1, "undrawn_in_view": 0, "running": 0}, None
    )


def test_a_following_chromium_is_timed_at_its_first_screen_and_its_whole_page_from_the_same_polls(monkeypatch):
    import asyncio

    polls = [
        ("2. Patches", 2, 3, 1, 1),  # the step's run still going
        ("2. Patches", 2, 2, 0, 0),  # the first screen ready from here ...
        ("2. Patches", 2, 2, 0, 0),
        ("2. Patches", 2, 0, 0, 0),  # ... the whole page from here
        ("2. Patches", 2, 0, 0, 0),
    ]

    class Following(AsyncFakePage):
        async def evaluate(self, script, arg=None):  # the URL names the step at once
            return ["2", "2. Patches"] if script == bench.SHOWN_STEP else FakePage.evaluate(self, script, arg)

    page = Following(polls)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: float(page.index))
    assert asyncio.run(bench.chromium_on_step(page, 2, "1. Image", 60)) == (1, 3) and page.index == 4
    lesson = {
        "light": [0.5, 0.6],
        "chromium": [2.0],
        "chromium_first_screen": [0.7],
        "errors": 0,
        "wrong_image": 0,
        "problems": [],
        "chromium_errors": 0,
    }
    report = bench.Report()
    bench.follow_figures(report, "", lesson)
    assert report.figures["class_follow_p95_s"] == 2.0 and report.figures["class_follow_chromium_p95_s"] == 2.0
    assert report.figures["class_follow_first_screen_p95_s"] == 0.7
    assert report.figures["class_follow_chromium_first_screen_p95_s"] == 0.7


def test_more_quiet_polls_wait_longer_and_the_async_twin_agrees(monkeypatch):
    import asyncio

    polls = [
        ("1. Image", 3, 0, 0),
        ("2. Patches", 2, 0, 0),  # quiet from here ...
        ("2. Patches", 2, 1, 0),  # ... but a chart redraws: count again
        ("2. Patches", 2, 0, 0),
        ("2. Patches", 2, 0, 0),
        ("2. Patches", 2, 0, 0),
    ]
    page = FakePage(polls)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: float(page.index))
    assert bench.wait_ready(page, old_title="1. Image", quiet_polls=3) == 3 and page.index == 5
    page = AsyncFakePage(polls)
    assert asyncio.run(bench.wait_ready_async(page, old_title="1. Image")) == 3 and page.index == 4
    page = AsyncFakePage([("1. Image", 3, 0, 0)])
    with pytest.raises(TimeoutError):
        asyncio.run(bench.wait_ready_async(page, old_title="1. Image", timeout_ms=20_000))


def test_the_bench_says_it_runs_from_the_benchmarks_folder(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    assert "usage: python -m benchmarks.bench" in capsys.readouterr().out


def test_a_page_that_only_says_something_is_ready_and_one_still_drawing_is_not():
    # the ViT-vs-CNN page with ViT-B/16 shows one message and no figure: ready once its run ends
    assert bench.is_quiet({"title": "8. ViT vs CNN", "content": 1, "undrawn": 0, "running": 0}, "7. Prediction")
    assert not bench.is_quiet({"title": "8. ViT vs CNN", "content": 1, "undrawn": 1, "running": 0}, "7. Prediction")
    assert not bench.is_quiet({"title": "8. ViT vs CNN", "content": 0, "undrawn": 0, "running": 0}, "7. Prediction")


def test_a_page_without_a_title_is_ready_only_when_titles_are_not_asked_for():
    # a tour page in upload mode before the upload: one sentence asking for an image, no title
    asking = {"title": None, "content": 1, "undrawn": 0, "running": 0}
    assert not bench.is_quiet(asking, None)
    assert bench.is_quiet(asking, None, titled=False)
    assert not bench.is_quiet({**asking, "running": 1}, None, titled=False)
    assert not bench.is_quiet(
        {"title": "2. Patches", "content": 1, "undrawn": 0, "running": 0}, "2. Patches", titled=False
    )


def test_a_failing_measurement_is_noted_and_the_others_still_run(monkeypatch):
    ran = []

    def broken(report, plan):
        raise TimeoutError("the page was not ready within 300 s")

    def working(report, plan):
        ran.append(plan)
        report.figures["after"] = 1.0

    monkeypatch.setattr(bench, "STEPS", [("broken", broken), ("working", working)])
    monkeypatch.setattr(bench, "environment", lambda plan: {"machine": "test"})
    report = bench.run(bench.QUICK)
    assert ran == [bench.QUICK] and report.figures["after"] == 1.0
    assert any(note.startswith("broken failed") and "TimeoutError" in note for note in report.notes)


def test_a_button_key_is_read_from_its_widget_id():
    assert button_key("$$ID-99068b8cb33f522422396445dcebc2d7-nav_next") == "nav_next"
    assert button_key("$$ID-8350a887e0cdfd0cdc0cd99ef5c7ae09-test_random") == "test_random"
    assert button_key("$$ID-8350a887e0cdfd0cdc0cd99ef5c7ae09-None") is None  # a button without a key


@pytest.mark.cifar10
def test_a_light_client_walks_the_tour_on_its_own_image_and_sees_a_wrong_one():
    import asyncio

    from vitviz.models.data import find_cifar_test_folder

    mine, other = bench.class_images(12)[1], bench.class_images(12)[11]  # automobile/0, automobile/1
    expected = bench.expected_answers([mine, other], find_cifar_test_folder())

    async def walk(url: str, image: str, answer: Expected) -> tuple[LightStudent, list[Run]]:
        student = LightStudent(url, image, answer)
        runs = [await student.open()]
        while "nav_next" in student.last.buttons:
            runs.append(await student.press("nav_next"))
        await student.close()
        return student, runs

    with bench.app_server() as server:
        student, runs = asyncio.run(walk(server.url, mine, expected[mine]))
        assert student.errors == 0 and student.wrong_image == 0
        # the sidebar names where the server computes: the GPU where there is one (a lent GPU
        # runs this test to measure the app there), this machine's CPU otherwise
        device, first = zoo.pick_device(), runs[0].texts
        where = zoo.device_label(device) if device.type != "cpu" else "CPU ("
        assert any(where in text for text in first), first[:12]
        assert device.type == "cpu" or not any("CPU (" in text for text in first)
        titles = [run.title for run in runs]
        assert len(titles) == len(tour.TOUR) and len(set(titles)) == len(titles)  # every page, each once
        assert student.query_string.count(f"test={mine.replace('/', '%2F')}") == 1
        # told to expect another image of its class: the verdicts (overview, prediction, comparison) differ
        assert expected[other] != expected[mine]
        fooled, _ = asyncio.run(walk(server.url, mine, expected[other]))
        assert fooled.errors == 0 and fooled.wrong_image == 3


def test_the_faithfulness_figures_time_one_image_and_one_ablated_pass():
    plan = dataclasses.replace(bench.QUICK, runs=1)
    report = bench.Report()
    bench.faithfulness_figures(report, plan)
    assert _finite_positive(report.figures["faithfulness_image_s"])
    assert _finite_positive(report.figures["ablation_explain_s"])
    assert {"issue43.faithfulness", "issue43.ablation"} <= report.medians_ms.keys()
    assert ("faithfulness_image_s", "<=", 2.0) in bench.TARGETS and "faithfulness_image_s" in bench.REQUIRED_KEYS


def test_the_big_picture_is_small_on_disk_and_large_once_decoded(tmp_path: Path) -> None:
    from PIL import Image

    path = bench.big_picture(6900, tmp_path)
    assert path.stat().st_size < 100_000 and Image.open(path).size == (6900, 6900)
    assert ("big_image_step1_s", "<=", 5.0) in bench.TARGETS and "big_image_step1_s" in bench.BROWSER_KEYS


def test_a_class_with_errors_notes_the_server_s_last_traceback(tmp_path: Path) -> None:
    """A page's error is redacted for the student; the bench's note carries the server's own."""
    with open(tmp_path / "log", "w+b") as output:
        output.write(b"started\nTraceback (most recent call last):\n  File 'a.py'\nKeyError: 'old'\n")
        output.write(b"ok\nTraceback (most recent call last):\n  File 'b.py', line 3\nValueError: step 9\n")
        server = bench.Server(None, "http://127.0.0.1:1", 0.0, output, 0.0)
        clean, failed = bench.Walk(), bench.Walk()
        failed.errors = 1
        report = bench.Report()
        bench.class_figures(report, "class_2", [clean], 0.0, server)
        assert report.notes == []  # no error, no traceback
        bench.class_figures(report, "class_2", [clean, failed], 0.0, server)
        assert report.notes[-1].startswith("class_2: the server's last traceback: Traceback")
        assert "ValueError: step 9" in report.notes[-1] and "KeyError" not in report.notes[-1]


def test_thirty_votes_through_the_store_are_thirty_counted() -> None:
    report = bench.Report()
    bench.poll_30(report, bench.QUICK)
    assert report.figures["poll_30_exact"] == 1.0
    assert ("poll_30_exact", ">=", 1.0) in bench.TARGETS and "poll_30_exact" in bench.REQUIRED_KEYS


@pytest.mark.cifar10
def test_a_light_student_follows_a_light_teacher_through_the_class_route():
    """The class_follow bench's clients: a teacher in presenter mode starts a class and moves on a
    step; a student that joined it reaches that step only as its page's script would
    (``follow``: ask the class's route, which holds the ask until the class moves, and press
    catch-up when it has), in one run of the app, and nothing it was sent asks for a run on a timer."""
    import asyncio

    async def lesson(url: str) -> tuple[int, list[int | None], list[Run | None], int]:
        teacher = LightStudent(url, "cat/0", query="present=1")
        code = await bench.start_class(teacher)
        student = LightStudent(url, "dog/0", query=f"class={code}")
        opened = await student.open()
        idle = await student.follow(hold=False)  # the class has not moved: nothing to do
        seen, runs = [student.step], [idle]
        held = asyncio.create_task(student.follow())  # asked with the page's mark: held until the class moves
        await asyncio.sleep(0.5)
        assert not held.done()
        while teacher.step == 0:
            await teacher.press("nav_next")
        runs.append(await asyncio.wait_for(held, 30))  # the catch-up reaches the class's step
        seen.append(student.step)
        runs.append(await student.follow(hold=False))  # and then finds nothing to do
        seen.append(student.step)
        await asyncio.gather(teacher.close(), student.close())
        assert student.errors == 0 and student.wrong_image == 0, student.problems
        return teacher.step, seen, runs, opened.timers + sum(run.timers for run in runs if run)

    with bench.app_server() as server:
        step, seen, runs, timers = asyncio.run(lesson(server.url))
    assert step == 1 and seen == [0, 1, 1], seen  # on the overview, then the teacher's step
    assert runs[0] is None and runs[1] is not None and runs[2] is None
    assert runs[1].restarts == 0  # the press's own run drew the class's step: one run of the app, not two
    assert timers == 0  # a following student's page runs no fragment on a timer


def test_many_uploads_are_all_different_photos(tmp_path):
    # 80 is past where the crops once left nothing of the 4 samples (the 77th photo failed to save)
    import hashlib

    photos = bench.distinct_photos(80, tmp_path)
    assert len({hashlib.blake2b(photo.read_bytes()).digest() for photo in photos}) == 80
