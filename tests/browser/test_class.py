"""A class in a real browser (issue 56): a teacher in presenter mode and two students, three
contexts of one Chromium on one server. The teacher starts a class; the students open its join
address and follow Next and Previous (each page then shows the step's title, address and marked
link in the sidebar: a catch-up reruns the class's fragment alone); one explores alone and comes
back, and explores from a step its page reached by a catch-up (it stays on that step). The teacher leaves
presenter mode for the sidebar's prediction step and presents again (the class follows); asks the class what the model will answer, the students vote, the teacher sees the
count and reveals; then the teacher asks which patch matters most, the students click patches
on their pictures, the teacher sees them counted on the heat map and reveals. Prints the seconds
from the teacher's click to each student's page showing the same step, and from a student's click
on a patch to their vote being shown."""

from __future__ import annotations

import re
import time
from unittest import mock

import pytest

from benchmarks import bench
from tests.browser.chromium import launched

PORT = 8671  # this branch's ports: 8670-8689
FOLLOW_S = 20.0  # a student's page shows the teacher's step within this (the 1 s is for a quiet server)


@pytest.fixture(scope="module")
def url():
    with mock.patch.object(bench, "free_port", lambda: PORT), bench.app_server(timeout=120) as running:
        yield running.url


@pytest.fixture
def chromium():
    """A headless Chromium of the test's own: its pages (and their timers) close with the test."""
    with launched() as browser:
        yield browser


def _open(browser, address: str, socket: bool = False):
    """A page of a new context (a person of their own) at 1280x720 opening ``address``; with
    ``socket``, (page, its HeldSocket), the socket routed before the page connects."""
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    held = HeldSocket(page) if socket else None
    page.goto(address, wait_until="domcontentloaded")
    return (page, held) if socket else page


@pytest.fixture(scope="module", params=["internals", "public"])
def either_url(request, url):
    """The server above, and one that takes Streamlit's public API only (``VITVIZ_INTERNALS=0``)."""
    if request.param == "internals":
        yield url
        return
    with (
        mock.patch.object(bench, "free_port", lambda: PORT + 1),
        bench.app_server(timeout=120, env={"VITVIZ_INTERNALS": "0"}) as running,
    ):
        yield running.url


def _path(page) -> str:
    return page.url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]


def _wait_path(page, path: str, timeout_s: float = FOLLOW_S) -> float:
    started = time.perf_counter()
    while _path(page) != path:
        if time.perf_counter() - started > timeout_s:
            raise AssertionError(f"still on {_path(page)!r}, not {path!r}, after {timeout_s} s")
        page.wait_for_timeout(20)
    return time.perf_counter() - started


# the page the sidebar marks as the one shown: its address's last part
MARKED = "() => { const a = document.querySelector(\"[data-testid='stSidebarNav'] a[aria-current='page']\"); return a && new URL(a.href).pathname.replace(/^.*\\//, ''); }"
TITLE = "() => document.querySelector('h1')?.innerText ?? null"


def _shows(page, path: str, title: str) -> None:
    """The page is on ``path`` as its address says, with its link marked in the sidebar and the
    step's title (the teacher's) at its top: a catch-up that ran the class's fragment alone
    leaves the browser naming the page it opened last (students.follow_page)."""
    _wait_path(page, path)
    page.wait_for_function(f"(t) => ({TITLE})() === t", arg=title, timeout=int(FOLLOW_S * 1000))
    assert page.evaluate(MARKED) == path


SLIDE_AT = "() => { const c = document.querySelector('.vitviz-slide-counter'); return c && c.dataset.step + ':' + c.dataset.slide; }"


def _press_into_the_next_step(teacher, press: str) -> float:
    """Press → (or ←) in the teacher's presenter mode until the step changes (a step's slides come
    first); returns when the press that changed the step was made."""
    while True:
        teacher.wait_for_function(f"() => ({SLIDE_AT})() !== null", timeout=60_000)  # a run may be drawing it
        before = teacher.evaluate(SLIDE_AT)
        started = time.perf_counter()
        teacher.locator(f".st-key-{press} button").first.click()
        # the new place, read once: a later read may find the counter gone with the next run
        moved = f"(b) => {{ const s = ({SLIDE_AT})(); return s !== null && s !== b ? s : null; }}"
        after = teacher.wait_for_function(moved, arg=before, timeout=60_000).json_value()
        if after.split(":")[0] != before.split(":")[0]:
            return started


def _start_a_class(teacher) -> str:
    """The teacher presses "Start a class" in the class pop-over; the join code it shows."""
    teacher.wait_for_selector(".st-key-vitviz-class button", timeout=120_000).click()
    teacher.wait_for_selector(".st-key-class_start button", timeout=60_000).click()
    for _ in range(100):
        found = re.search(r"\?class=([A-Z0-9]{8})", teacher.content())
        if found:
            teacher.mouse.click(300, 400)  # close the pop-over
            return found.group(1)
        if not teacher.query_selector(".st-key-class_end"):
            teacher.click(".st-key-vitviz-class button")  # the pop-over closed with the run: open it
        teacher.wait_for_timeout(300)
    raise AssertionError("no join address on the teacher's pop-over")


def test_a_teacher_and_two_students(url, chromium):
    teacher = _open(chromium, f"{url}/input?present=1")
    code = _start_a_class(teacher)

    students = [_open(chromium, f"{url}/?class={code}") for _ in range(2)]
    for student in students:
        student.wait_for_selector(".st-key-class_explore", timeout=120_000)
        _wait_path(student, "input", 60)  # the teacher's step, not the overview

    seconds = []
    for _ in range(2):
        for press, target in (("nav_next", "patches"), ("nav_prev", "input")):
            teacher.wait_for_selector(f".st-key-{press} button", timeout=60_000)
            started = _press_into_the_next_step(teacher, press)  # through the step's slides first
            for student in students:
                _wait_path(student, target)
                seconds.append(time.perf_counter() - started)
            _wait_path(teacher, target)
            for student in students:
                _shows(student, target, teacher.evaluate(TITLE))
    print(f"teacher's click -> student's page on the same step: {[round(s, 2) for s in sorted(seconds)]}")

    one, two = students
    two.click(".st-key-class_explore button")
    two.wait_for_selector(".st-key-class_back", timeout=30_000)
    _press_into_the_next_step(teacher, "nav_next")
    _wait_path(one, "patches")
    two.wait_for_timeout(2000)
    assert _path(two) == "input"  # exploring: the teacher's Next left it alone
    two.click(".st-key-class_back button")
    _wait_path(two, "patches")  # back with the class

    # a step the students' pages reached by a catch-up alone: exploring from it stays on it
    _press_into_the_next_step(teacher, "nav_next")
    _wait_path(teacher, "vectors")
    for student in students:
        _shows(student, "vectors", teacher.evaluate(TITLE))
    two.click(".st-key-class_explore button")
    two.wait_for_selector(".st-key-class_back", timeout=30_000)
    _shows(two, "vectors", teacher.evaluate(TITLE))
    two.click(".st-key-class_back button")
    two.wait_for_selector(".st-key-class_explore", timeout=30_000)
    _shows(two, "vectors", teacher.evaluate(TITLE))

    # to the prediction step by the sidebar, which presenter mode hides: leave it and come back
    teacher.locator(".st-key-present_leave button").first.click()
    teacher.locator("[data-testid='stSidebarNav'] a[href$='/prediction']").first.click()
    _wait_path(teacher, "prediction", 60)
    teacher.locator(".st-key-present label").first.click()  # the sidebar's presenter-mode toggle
    teacher.wait_for_selector(".st-key-present_leave button", timeout=60_000)
    for student in students:
        _wait_path(student, "prediction", 60)

    _vote_poll(teacher, students)
    clicked = _patch_poll(teacher, students)
    print(f"a click on a patch -> the student's vote shown: {[round(s, 2) for s in sorted(clicked)]} s")
    assert max(seconds) < FOLLOW_S


FIGURE_HEIGHT = (
    "() => { const c = document.querySelector('.st-key-vitviz-figures .vitviz-chart');"
    " const h = c && c.getBoundingClientRect().height; return h > 0 ? h : null; }"
)


def _a_student_caught_up(chromium, url: str, query: str = "") -> tuple:
    """A teacher in presenter mode starts a class on step 1, one student joins (``query``: more of
    its join address) and follows, and the teacher moves on to step 2: (teacher, student, code),
    the student's page catching up."""
    teacher = _open(chromium, f"{url}/input?present=1")
    code = _start_a_class(teacher)
    student = _open(chromium, f"{url}/?class={code}{query}")
    student.wait_for_selector(".st-key-class_explore", timeout=120_000)
    _wait_path(student, "input", 60)
    _press_into_the_next_step(teacher, "nav_next")
    _wait_path(teacher, "patches", 60)
    return teacher, student, code


def test_a_student_in_presenter_mode_follows_with_the_slides_figures(url, chromium):
    """A student in presenter mode sees the teacher's slide after a catch-up that ran the class's
    fragment alone: its title, its address, and its figure as tall as the window leaves it (the
    fragment's box is one more between the window and the figure: presenter.css)."""
    teacher, student, _ = _a_student_caught_up(chromium, url, "&present=1")
    _shows(student, "patches", teacher.evaluate(TITLE))
    shown = student.wait_for_function(FIGURE_HEIGHT, timeout=int(FOLLOW_S * 1000)).json_value()
    assert shown >= 0.5 * 720, shown  # the slide's free height at 1280 x 720, not a sliver


def test_a_student_goes_on_alone_on_the_step_shown_when_the_class_ends(url, chromium):
    """The teacher ends the class while a student's page shows a step that came by a catch-up
    alone (its last whole run of the app opened the step before): the student stays on the step it
    shows, told that the class is over, with the step's title, address and marked link."""
    teacher, student, code = _a_student_caught_up(chromium, url)
    title = teacher.evaluate(TITLE)
    _shows(student, "patches", title)
    teacher.click(".st-key-vitviz-class button")
    teacher.wait_for_selector(".st-key-class_end button", timeout=30_000).click()
    student.wait_for_selector(".st-key-vitviz-follow", state="detached", timeout=int(FOLLOW_S * 1000))
    _wait_text(student, "[data-testid='stAlert']", code[:4], FOLLOW_S)  # the sentence names the ended class
    _shows(student, "patches", title)


def _ask(teacher, key: str) -> None:
    """Press ``key`` (a poll's ask button) in the teacher's class pop-over, opening it first."""
    for _ in range(100):
        if teacher.query_selector(f".st-key-{key} button"):
            teacher.locator(f".st-key-{key} button").first.click()
            return
        if not teacher.query_selector(".st-key-class_end"):
            teacher.click(".st-key-vitviz-class button")  # the pop-over closed with the run: open it
        teacher.wait_for_timeout(300)
    raise AssertionError(f"no {key} in the teacher's pop-over")


def _wait_text(page, selector: str, text: str, timeout_s: float = 60) -> None:
    """Wait until an element matching ``selector`` shows ``text``."""
    page.wait_for_function(
        "([s, t]) => [...document.querySelectorAll(s)].some(e => e.innerText.includes(t))",
        arg=[selector, text],
        timeout=timeout_s * 1000,
    )


def _vote_poll(teacher, students) -> None:
    """ "Ask the class": each student presses a class; the teacher's chart counts 2; Reveal."""
    _ask(teacher, "class_ask")
    teacher.mouse.click(400, 15)
    for n, student in enumerate(students):
        # as a person waits for the question to settle: the run that drew it ended (a press while a
        # later run replaces the button lands on no button)
        student.wait_for_selector(f".st-key-class_vote_1_{n} button", timeout=60_000)
        student.wait_for_function(SETTLED, timeout=60_000)
        student.locator(f".st-key-class_vote_1_{n} button").first.click()
        try:
            _wait_text(student, ".st-key-vitviz-ballot", "Your vote:")
        except Exception as error:  # what the student's ballot and the teacher's count said instead
            shown = student.locator(".st-key-vitviz-ballot").first.inner_text()
            counted = teacher.locator(".st-key-vitviz-poll").first.inner_text()
            raise AssertionError(
                f"student {n} pressed option {n + 1}; the ballot shows {shown!r}; the teacher's poll {counted!r}"
            ) from error
    _wait_text(teacher, ".st-key-vitviz-poll", "The class's votes (2)")  # the live chart's title counts them
    bars = "() => { const c = document.querySelector('.st-key-vitviz-poll .js-plotly-plot'); return c && c.data ? c.data[0].x : null; }"
    teacher.wait_for_function(f"() => (({bars})() || []).reduce((a, b) => a + b, 0) === 2", timeout=30_000)
    counted = teacher.evaluate(bars)
    assert sorted(counted, reverse=True)[:3] == [1, 1, 0]  # two classes with one vote each
    teacher.locator(".st-key-class_reveal button").click()
    _wait_text(teacher, ".st-key-vitviz-poll", "of 2 votes")  # the model's answer beside the class's
    for student in students:
        _wait_text(student, ".st-key-vitviz-ballot", "of 2 votes")
        # closed: the vote buttons go when the run that drew the answer ends
        student.wait_for_selector(".st-key-class_vote_1_0", state="detached", timeout=30_000)


# the numbers the teacher's heat map writes in its cells (null while a run redraws it)
HEAT_TEXT = "() => { const c = document.querySelector('.st-key-vitviz-poll .js-plotly-plot'); return c && c.data ? c.data[1].text : null; }"


SETTLED = (
    "() => document.querySelector(\"[data-testid='stApp']\")?.getAttribute('data-test-script-state') === 'notRunning'"
)
# the patches (counted from 1) of every plotly_click on the ballot's figure, kept on the figure's
# element: a failed vote then says whether the click reached plotly and which patch it named
HEARD = """() => { const g = document.querySelector('.st-key-vitviz-ballot .vitviz-chart');
  if (g && !g.vitvizHeard) { g.vitvizHeard = []; g.on('plotly_click', (e) => g.vitvizHeard.push(e.points.map((p) => p.customdata && p.customdata[3]))); } }"""
HEARD_SO_FAR = "() => document.querySelector('.st-key-vitviz-ballot .vitviz-chart')?.vitvizHeard ?? 'no figure'"


def _point_at(page, markers: str, patch: int) -> tuple[float, float]:
    """As a person clicks: the pointer rests on the patch until its label names it (the page may
    still move under it as a run ends), then it is where to click."""
    label = page.locator(".st-key-vitviz-ballot .hoverlayer .hovertext").first
    for _ in range(20):
        page.wait_for_selector(markers, timeout=60_000)
        box = page.locator(markers).nth(patch).bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x - 3, y - 3)
        page.mouse.move(x, y)
        label.wait_for(state="visible", timeout=30_000)
        if f"patch {patch + 1} (" in label.text_content():
            return x, y
        page.wait_for_timeout(250)
    raise AssertionError(f"the pointer never rested on patch {patch + 1}: {label.text_content()!r}")


def _patch_poll(teacher, students) -> list[float]:
    """ "Which patch matters most?": the students click patches 10 and 10, then the second changes
    to 21; the teacher's heat map counts one each; Reveal shows the claim and the model's map.
    Returns the seconds from each click to the student's vote shown."""
    _ask(teacher, "class_ask_patch")
    teacher.mouse.click(400, 15)
    markers = ".st-key-vitviz-ballot .js-plotly-plot .scatterlayer path.point"
    seconds = []
    for student, patch in ((students[0], 9), (students[1], 9), (students[1], 20)):
        # as a person waits for the picture to settle: the run ended, its figure drawn (the vote
        # before moves its outline)
        student.wait_for_function(SETTLED, timeout=60_000)
        student.wait_for_selector(".st-key-vitviz-ballot .vitviz-chart[data-drawn]", timeout=60_000)
        student.evaluate(HEARD)
        x, y = _point_at(student, markers, patch)
        started = time.perf_counter()
        student.mouse.click(x, y)
        try:
            _wait_text(student, ".st-key-vitviz-ballot", f"Your vote: patch {patch + 1}.", 30)
        except Exception as error:  # what the student's ballot said instead, and what plotly heard
            shown = student.locator(".st-key-vitviz-ballot").first.inner_text()
            heard = student.evaluate(HEARD_SO_FAR)
            raise AssertionError(
                f"patch {patch + 1} clicked; plotly heard {heard}; the ballot shows {shown!r}"
            ) from error
        seconds.append(time.perf_counter() - started)
    _wait_text(teacher, ".st-key-vitviz-poll", "The class's clicks (2)")
    teacher.wait_for_function(
        f"() => (({HEAT_TEXT})() || []).flat().filter(t => t === '1').length === 2", timeout=30_000
    )
    cells = teacher.evaluate(HEAT_TEXT)
    width = len(cells[0])
    assert (
        cells[9 // width][9 % width] == "1" and cells[20 // width][20 % width] == "1"
    )  # one vote each, the changed one moved
    teacher.locator(".st-key-class_reveal button").click()
    _wait_text(teacher, ".st-key-vitviz-poll", "(1 of 2 votes)")  # claims.class_patch: the top patch's votes
    teacher.wait_for_function(  # the model's map beside the class's, both drawn
        "() => document.querySelectorAll('.st-key-vitviz-poll .vitviz-chart[data-drawn]').length === 2", timeout=30_000
    )
    for student in students:
        _wait_text(student, ".st-key-vitviz-ballot", "The model's most important patch")
    return seconds


class HeldSocket:
    """A page's websocket to the app server, whose messages from the server can be held back and
    then passed on in order: what a slow network or a busy browser does to a page."""

    def __init__(self, page) -> None:
        self.holding = False
        self.held: list = []
        self.route = None
        page.route_web_socket(re.compile(r".*/_stcore/stream$"), self._connect)

    def _connect(self, route) -> None:
        self.route = route
        server = route.connect_to_server()
        server.on_message(self._from_server)

    def _from_server(self, message) -> None:
        if self.holding:
            self.held.append(message)
        else:
            self.route.send(message)

    def release(self) -> None:
        self.holding = False
        held, self.held = self.held, []
        for message in held:
            self.route.send(message)


def test_a_student_whose_page_was_slow_to_hear_of_the_step_shows_all_of_it(either_url, chromium):
    """A student's page asks the class's route where the class is and presses its catch-up button
    when the class moved; the press names the page the browser shows. When the page hears late of
    the step its catch-up opened (a slow network, or a server or browser too busy to draw it at
    once), the page still shows the last step's mark and may press again from the last page: the
    run goes on from there to the class's step, and the student sees the step's title, not only
    the class's bar."""
    teacher = _open(chromium, f"{either_url}/input?present=1")
    code = _start_a_class(teacher)
    student, socket = _open(chromium, f"{either_url}/?class={code}", socket=True)
    student.wait_for_selector(".st-key-class_explore", timeout=120_000)
    _wait_path(student, "input", 60)
    student.wait_for_selector("h1", timeout=60_000)
    socket.holding = True  # from here the student's page hears nothing until release()
    _press_into_the_next_step(teacher, "nav_next")
    student.wait_for_timeout(6000)  # the student's run moves it on; its script presses again from the input page
    socket.release()
    _wait_path(student, "patches")
    _title_stays(student)


def test_a_teacher_whose_page_was_slow_to_hear_of_the_step_shows_all_of_it(either_url, chromium):
    """The same for the teacher's poll view, a fragment on a timer too: the teacher's → moves the
    class on while the teacher's own page hears of it late."""
    teacher, socket = _open(chromium, f"{either_url}/input?present=1", socket=True)
    _start_a_class(teacher)
    while _path(teacher) == "input":  # → slide by slide; the press that opens the next step is heard late
        teacher.wait_for_function(f"() => ({SLIDE_AT})() !== null", timeout=60_000)
        socket.holding = True
        teacher.locator(".st-key-nav_next button").first.click()
        teacher.wait_for_timeout(3000)  # the run draws the next slide or step; the poll's timer asks from this one
        socket.release()
        teacher.wait_for_timeout(1000)
    _wait_path(teacher, "patches")
    _title_stays(teacher)


# the step's title, when it is on the page and visible (false while the page is cleared)
TITLE_SHOWN = (
    "() => { const h = document.querySelector('h1'); return h !== null && h.checkVisibility() && h.innerText; }"
)


def _title_stays(page) -> None:
    """The page shows its step's title, and 3 s later (the timers' later runs) the same one."""
    title = page.wait_for_function(TITLE_SHOWN, timeout=int(FOLLOW_S * 1000)).json_value()
    page.wait_for_timeout(3000)
    assert page.evaluate(TITLE_SHOWN) == title
