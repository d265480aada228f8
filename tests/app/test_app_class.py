"""A class that follows its teacher (issue 56), through AppTest: a teacher's session in presenter
mode and students' sessions of the same server (one process: one store in memory)."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.light_client import DRAWN as LIGHT_DRAWN
from tests.apptest import APP, TIMEOUT, charts, click, errors, figure
from vitviz.analyses import claims
from vitviz.app import classroom, patch_poll, web, where
from vitviz.server import classes

PATCHES = "app_pages/2_patches.py"


def _button(at: AppTest, key: str):
    found = [b for b in at.button if b.key == key]
    assert found, f"no button {key!r}: {[b.key for b in at.button]}"
    return found[0]


def _teacher(page: str = PATCHES, **query: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["present"] = "1"
    for key, value in query.items():
        at.query_params[key] = value
    at.switch_page(page)
    at.run()
    _button(at, "class_start").click().run()
    assert errors(at) == []
    return at


def _student(code: str, **query: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["class"] = code
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    return at


def test_students_follow_the_teacher_explore_alone_and_come_back():
    teacher = _teacher()
    code, token = teacher.session_state[classroom.TEACHER]
    shown = " ".join(m.value for m in teacher.markdown)
    assert f"/?class={code}" in shown  # the join address on the teacher's pop-over
    assert classroom.server_store().position(code).step == 2
    assert [i for i in teacher.get("image") if i.proto.imgs and "join" in i.proto.imgs[0].caption.lower()], "no QR code"

    one, two = _student(code), _student(code.lower()[:4] + "-" + code[4:])  # as typed: lower case, a dash
    for student in (one, two):
        assert errors(student) == []
        assert student.session_state["step"] == 2  # opened on the teacher's step, not the overview
        assert any(b.key == "class_explore" for b in student.button)

    _button(teacher, "nav_next").click().run()  # the teacher's next slide
    position = classroom.server_store().position(code)
    assert (position.step, position.slide) == (2, 1)
    one.run()
    assert one.session_state["slide"] == "2:1"

    _button(two, "class_explore").click().run()  # two explores: the teacher's moves leave it alone
    for _ in range(10):
        _button(teacher, "nav_next").click().run()
        if classroom.server_store().position(code).step == 3:
            break
    assert classroom.server_store().position(code).step == 3
    one.run()
    two.run()
    assert one.session_state["step"] == 3
    assert two.session_state["step"] == 2
    _button(two, "class_back").click().run()
    assert two.session_state["step"] == 3  # back with the class at once

    # a student cannot move the teacher: its session holds no token, and the store refuses
    assert classroom.TEACHER not in one.session_state
    one.run()
    _button(two, "class_explore").click().run()
    _button(two, "nav_prev").click().run()  # a student's own Previous moves nobody else
    assert two.session_state["step"] == 2
    assert classroom.server_store().position(code).step == 3
    one.run()
    assert one.session_state["step"] == 3

    _button(teacher, "class_end").click().run()
    one.run()
    assert any(code[:4] in i.value for i in one.info), [i.value for i in one.info]  # one sentence: ended
    assert not any(b.key == "class_explore" for b in one.button)
    assert errors(one) == []


def test_a_wrong_code_gets_a_sentence_and_the_tour_goes_on():
    for code in ("ABCD2345", "not a code"):
        at = _student(code)
        assert errors(at) == []
        assert len(at.info) == 1 and (code[:4] if code == "ABCD2345" else code) in at.info[0].value
        assert at.session_state["step"] in (0, None)
        at.run()  # and only once
        assert not [i for i in at.info if "class" in i.value.lower()]


def test_a_code_in_a_link_is_never_drawn_as_a_link_or_an_image():
    """?class=[Log](//e.c) put a live link into the "no class has the code" sentence, and
    ![](//x.io) an image fetched from an outside host: the sentence repeats only letters and digits."""
    for code in ("[Log](//e.c)", "![](//x.io)", "<b>x</b>", "www.e.co/x"):
        at = _student(code)
        assert errors(at) == []
        (said,) = [i.value for i in at.info]
        assert not any(mark in said for mark in ("[", "](", "//", "<b>", "www.")), said


def test_everyone_on_my_image():
    teacher = _teacher(sample="")
    code, _ = teacher.session_state[classroom.TEACHER]
    student = _student(code)
    teacher_image = teacher.session_state["sample"]
    other = next(s for s in student.selectbox(key="sample").options if s != teacher_image)
    student.selectbox(key="sample").set_value(other).run()  # the student picks another image
    assert student.session_state["sample"] == other
    _button(teacher, "class_share").click().run()
    assert classroom.server_store().position(code).image == f"sample:{teacher_image}"
    student.run()
    assert student.session_state["sample"] == teacher_image


def test_ask_the_class_vote_and_reveal():
    teacher = _teacher("app_pages/7_prediction.py")
    code, _ = teacher.session_state[classroom.TEACHER]
    _button(teacher, "class_ask").click().run()
    poll = classroom.server_store().poll(code)
    assert poll is not None and len(poll.options) >= 2 and poll.total == 0
    students = [_student(code), _student(code)]
    for n, student in enumerate(students):
        assert errors(student) == []
        assert student.session_state["step"] == 7
        ballot = [b for b in student.button if b.key.startswith("class_vote_")]
        assert len(ballot) == len(poll.options)
        ballot[n].click().run()  # the first student votes for the first option, the second for the second
    _button(students[0], "class_vote_1_1").click().run()  # a changed mind: still one vote
    poll = classroom.server_store().poll(code)
    assert poll.total == 2 and poll.counts[poll.options[1]] == 2
    teacher.run()
    bars = figure(teacher, "class_votes")["data"][0]
    assert sorted(bars["x"]) == sorted(poll.counts.values())  # the teacher's chart shows the count
    _button(teacher, "class_reveal").click().run()
    answer = classroom.server_store().poll(code).answer
    shown = " ".join(m.value for m in teacher.markdown)
    assert "2 of 2 votes" in shown and (f"{2 if answer == poll.options[1] else 0} of 2 chose" in shown)
    students[1].run()
    assert not [b for b in students[1].button if b.key.startswith("class_vote_")]  # closed
    assert "2 of 2 votes" in " ".join(m.value for m in students[1].markdown)


def _click_patch(at: AppTest, key: str, index: int) -> AppTest:
    """Click patch ``index`` on the chart ``key`` the way the browser reports it: the clicked
    marker's customdata names the patch (``tests.apptest.click``)."""
    point = {"customdata": [index, 0, 0], "curve_number": 2, "point_index": index, "point_number": index}
    return click(at, key, point)


def _counts_on(spec: dict) -> np.ndarray:
    """The votes a patch-votes figure writes in its cells, (grid_h, grid_w): "" counts 0."""
    heat = next(t for t in spec["data"] if t["type"] == "heatmap")
    return np.array([[float(v) if v else 0.0 for v in row] for row in heat["text"]])


def test_which_patch_matters_most_vote_and_reveal():
    teacher = _teacher("app_pages/7_prediction.py")
    code, _ = teacher.session_state[classroom.TEACHER]
    _button(teacher, "class_ask_patch").click().run()
    poll = classroom.server_store().poll(code)
    asked, number, _, model_map = teacher.session_state[patch_poll.ASKED]
    assert asked == code
    assert poll.kind == classes.PATCH_POLL and len(poll.options) == model_map.size and poll.total == 0
    assert poll.number == number
    assert not [c for c in charts(teacher) if c.proto.id.endswith("-class_patch_model")]  # not before the reveal

    one, two = _student(code), _student(code)
    key = f"class_patch_{number}"
    for student in (one, two):
        assert errors(student) == []
        assert student.session_state["step"] == 7
    _click_patch(one, key, 3)
    _click_patch(two, key, 9)
    assert "patch 4" in " ".join(c.value for c in one.caption)  # "Your vote: patch 4" (counted from 1)
    _click_patch(one, key, 9)  # a changed mind: still one vote
    poll = classroom.server_store().poll(code)
    assert poll.total == 2 and poll.counts["9"] == 2 and poll.counts["3"] == 0
    assert _counts_on(figure(two, key)).sum() == 0  # a student does not see the class's clicks before the reveal

    teacher.run()
    shown = _counts_on(figure(teacher, "class_patch_votes"))
    grid_w = model_map.shape[1]
    assert shown[9 // grid_w, 9 % grid_w] == 2 and shown.sum() == 2  # the heat map counts them
    _button(teacher, "class_reveal").click().run()
    votes = np.zeros(model_map.size)
    votes[9] = 2
    sentence = claims.text(claims.class_patch(votes, model_map), "en")
    assert "(2 of 2 votes)" in sentence
    assert sentence in " ".join(m.value for m in teacher.markdown)  # the claim beside the model's map
    assert figure(teacher, "class_patch_model")["data"][1]["type"] == "heatmap"

    _click_patch(two, key, 5)  # after the reveal: not counted
    assert classroom.server_store().poll(code).total == 2
    two.run()
    assert not [c for c in charts(two) if c.proto.id.endswith(f"-{key}")]  # the ballot is closed
    top = int(np.argmax(model_map)) + 1
    assert f"**{top}**" in " ".join(m.value for m in two.markdown)  # the model's most important patch


def _place(at: AppTest, key: str, block=None) -> int:
    """Where in the main area (or in ``block``) the container ``key`` is."""
    block = at.main if block is None else block
    ids = [getattr(child.proto, "id", "") for child in block.children.values()]
    found = [i for i, name in enumerate(ids) if name.endswith(f"-{key}")]
    assert found, ids
    return found[0]


def _follower_block(at: AppTest):
    """The block a following student's bar and step are drawn in: the fragment that its catch-ups
    run alone (``students.follow_page``), the main area's one child."""
    (block,) = at.main.children.values()
    return block


def _drawn(at: AppTest) -> tuple[str, int, str]:
    """The mark a student's page was drawn with, which of the route's marks it follows, and the
    route's address (what static/follow.js reads)."""
    found = [LIGHT_DRAWN.search(h.proto.body) for h in at.get("html")]
    found = [f for f in found if f]
    assert len(found) == 1, [h.proto.body[:80] for h in at.get("html")]
    return found[0]["mark"], int(found[0]["part"]), found[0]["address"]


async def _streamlit(scope, receive, send):
    raise AssertionError(f"{scope['path']} went on to Streamlit")


def _route(address: str, answers: where.Answers | None = None) -> tuple[int, list[str]]:
    """What the server answers a GET of ``address`` (``where.Answers``, first in app.py's
    ``st.App``), in process: its status and its marks. Anything else would reach Streamlit."""
    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": address, "headers": []}
    asyncio.run((answers or where.Answers(_streamlit))(scope, None, send))
    assert (b"cache-control", b"no-store") in sent[0]["headers"]
    return sent[0]["status"], sent[1]["body"].decode().split(" ")


def test_the_class_route_is_under_the_servers_base_path(monkeypatch):
    """A server under a base path (``--server.baseUrlPath school``) answers the class's marks there,
    where its pages ask (``where.address``), whenever that option was set."""
    teacher = _teacher()
    code, _ = teacher.session_state[classroom.TEACHER]
    answers = where.Answers(_streamlit)  # made when app.py is imported, before the option is settled
    options = {"server.baseUrlPath": "school"}
    monkeypatch.setattr(where.st, "get_option", lambda name: options[name])
    assert where.address(code) == f"/school/api/vitviz/class/{code}"
    assert _route(where.address(code), answers)[1][0] != where.GONE


def test_the_class_route_leaves_every_other_request_to_streamlit():
    passed = []

    async def streamlit(scope, receive, send):
        passed.append(scope["path"])

    for scope in (
        {"type": "http", "method": "GET", "path": "/patches"},
        {"type": "http", "method": "POST", "path": where.address("ABCD2345")},
        {"type": "http", "method": "GET", "path": "/school" + where.address("ABCD2345")},  # another base path
        {"type": "websocket", "path": "/_stcore/stream"},
    ):
        asyncio.run(where.Answers(streamlit)(scope, None, None))
    assert passed == ["/patches", where.address("ABCD2345"), "/school" + where.address("ABCD2345"), "/_stcore/stream"]


def _catch_up(student: AppTest) -> None:
    _button(student, web.KEYS["catch_up"]).click().run()
    assert errors(student) == []


def test_a_student_catches_up_when_the_route_says_the_class_moved():
    """A student's page holds the mark it was drawn with and the class's route; the route's mark
    for a page that shows the whole step changes when the class's step changes or a poll is asked
    or revealed, not when the teacher moves a slide within the step (presenter mode's own mark
    does). The page's hidden catch-up button, pressed, opens the class's step."""
    teacher = _teacher("app_pages/7_prediction.py")  # a step with a poll to ask
    code, _ = teacher.session_state[classroom.TEACHER]
    student = _student(code)
    assert errors(student) == []
    mark, part, address = _drawn(student)
    assert part == 0 and address == where.address(code) and code in address
    assert _route(address)[0] == 200 and _route(address)[1][part] == mark  # nothing moved yet
    block = _follower_block(student)
    assert block.children[_place(student, "vitviz-follow", block) + 1].proto.tag == "h1"

    _button(teacher, "class_ask").click().run()  # a poll: the mark moves on, and the ballot must appear
    asked = _route(address)[1]
    assert asked[part] != mark
    assert _drawn(student)[0] == mark  # the page, not drawn again, still holds the old one
    _catch_up(student)
    assert _drawn(student)[0] == asked[part]
    assert any(b.key.startswith("class_vote_") for b in student.button)

    _button(teacher, "nav_next").click().run()  # the next slide within the step: presenter mode's mark only
    assert classroom.server_store().position(code).step == 7
    slid = _route(address)[1]
    assert slid[0] == asked[0] and slid[1] != asked[1]
    for _ in range(10):  # the teacher goes on to the next step: every page's mark moves
        _button(teacher, "nav_next").click().run()
        if classroom.server_store().position(code).step == 8:
            break
    stepped = _route(address)[1]
    assert stepped[0] != slid[0] and _drawn(student)[0] == asked[0]
    _catch_up(student)
    assert _drawn(student)[0] == stepped[0] and student.session_state["step"] == 8

    presenting = _student(code, present="1")  # a student in presenter mode follows the slides
    assert _drawn(presenting)[1] == 1 and _drawn(presenting)[0] == _route(address)[1][1]

    _button(teacher, "class_end").click().run()
    assert _route(address) == (200, [where.GONE, where.GONE])
    assert _route(where.PATH.format(code="not-a-code")) == (200, [where.GONE, where.GONE])


def test_marks_change_with_what_a_page_shows():
    """where.marks: the step's mark follows the step, the shared image and the poll, not the slide;
    the slide's mark follows every move."""
    at = classes.Position(step=3, slide=0, image=None, moves=4)
    base = where.marks(at, None)
    assert where.marks(classes.Position(3, 2, None, 5), None)[0] == base[0]  # a slide: same step mark
    assert where.marks(classes.Position(3, 2, None, 5), None)[1] != base[1]
    for other in (classes.Position(4, 0, None, 5), classes.Position(3, 0, "sample:cat.jpg", 5)):
        assert where.marks(other, None)[0] != base[0]
    poll = classes.Poll(1, classes.CLASS_POLL, ("cat", "dog"))
    assert where.marks(at, poll)[0] != base[0]
    assert where.marks(at, dataclasses.replace(poll, revealed=True)) != where.marks(at, poll)
    assert where.marks(None, None) == (where.GONE, where.GONE)


def _held_route(code: str, query: str, during=None, hold: float = 5.0) -> tuple[int, list[str], float]:
    """What the route answers an ask of class ``code`` with ``query`` (``drawn=MARK&part=P``), and after how many
    seconds; ``during`` (a coroutine function) runs beside the held ask, as another session's
    run would change the class meanwhile."""
    sent = []

    async def send(message):
        sent.append(message)

    async def ask():
        scope = {"type": "http", "method": "GET", "path": where.address(code), "query_string": query.encode()}
        began = asyncio.get_running_loop().time()
        answering = asyncio.create_task(where.Answers(_streamlit)(scope, None, send))
        if during is not None:
            await during()
        await asyncio.wait_for(answering, hold + 5)
        return asyncio.get_running_loop().time() - began

    seconds = asyncio.run(ask())
    return sent[0]["status"], sent[1]["body"].decode().split(" "), seconds


def test_an_ask_with_the_pages_mark_is_answered_when_the_class_moves(monkeypatch):
    """follow.js names the mark its page shows: the server holds the ask until the class's mark is
    another (here the teacher's Next a while later), then answers at once with the new marks; an
    ask whose page is already behind is answered at once."""
    store = classes.MemoryStore()
    monkeypatch.setattr(where, "_server", store)
    monkeypatch.setattr(where, "_watch", None)
    started = store.start()
    code = started.code
    store.publish(code, started.teacher_token, 3, 0)
    before = where.marks_of(code)

    async def next_step():
        await asyncio.sleep(0.4)
        store.publish(code, started.teacher_token, 4, 0)

    status, marks, seconds = _held_route(code, f"drawn={before[0]}&part=0", next_step)
    assert status == 200 and marks == list(where.marks_of(code)) and marks[0] != before[0]
    assert 0.4 <= seconds < 0.4 + 10 * where.WATCH_S  # held, and answered within a few looks
    status, marks, seconds = _held_route(code, f"drawn={before[0]}&part=0")  # behind already: at once
    assert status == 200 and marks[0] != before[0] and seconds < 0.2

    async def a_slide():  # a slide within the step moves presenter mode's mark, not the page's
        await asyncio.sleep(0.2)
        store.publish(code, started.teacher_token, 4, 1)

    monkeypatch.setattr(where, "HOLD_S", 1.0)
    now = where.marks_of(code)
    status, marks, seconds = _held_route(code, f"drawn={now[0]}&part=0", a_slide)
    assert status == 200 and marks[0] == now[0] and 1.0 <= seconds < 1.5  # held the whole while, same step
    status, marks, seconds = _held_route(code, f"drawn={now[1]}&part=1")
    assert marks[1] != now[1] and seconds < 0.2  # presenter mode's page is behind: at once


def test_a_held_ask_learns_that_the_class_ended_or_the_store_went_away(monkeypatch):
    store = classes.MemoryStore()
    monkeypatch.setattr(where, "_server", store)
    monkeypatch.setattr(where, "_watch", None)
    started = store.start()
    code = started.code
    mark = where.marks_of(code)[0]

    async def end():
        await asyncio.sleep(0.2)
        store.end(code, started.teacher_token)

    assert _held_route(code, f"drawn={mark}&part=0", end)[:2] == (200, [where.GONE, where.GONE])

    started = store.start()
    code = started.code
    mark = where.marks_of(code)[0]
    down = []

    def read(asked: str):
        if down:
            raise classes.StoreDown("gone")
        return where.marks_of(asked)

    monkeypatch.setattr(where, "_watch", where.Watch(read=read, in_thread=False))

    async def go_down():
        await asyncio.sleep(0.2)
        down.append(True)

    status, _, seconds = _held_route(code, f"drawn={mark}&part=0", go_down)
    assert status == 503 and seconds < 1.0  # the page keeps what it shows and asks again


def test_one_look_at_a_class_serves_all_its_waiting_pages(monkeypatch):
    """Thirty held asks of one class cost the store one read a look, not thirty; an ask that is no
    mark (too long, other characters, another part) or past MAX_HELD is answered at once."""
    store = classes.MemoryStore()
    monkeypatch.setattr(where, "_server", store)
    started = store.start()
    store.publish(started.code, started.teacher_token, 2, 0)
    reads = []

    def read(asked: str):
        reads.append(asked)
        return where.marks_of(asked)

    watch = where.Watch(read=read, in_thread=False, every=0.05)
    mark = where.marks_of(started.code)[0]

    async def class_of_thirty():
        return await asyncio.gather(*(watch.wait(started.code, mark, 0, hold=0.5) for _ in range(30)))

    answers = asyncio.run(class_of_thirty())
    assert all(a[0] == mark for a in answers)
    assert 30 <= len(reads) <= 30 + 0.5 / 0.05 + 3  # each ask's first look, then one look per tick
    assert watch.held == 0

    monkeypatch.setattr(where, "_watch", watch)
    code = started.code
    for query in (f"drawn={'1' * 65}&part=0", "drawn=<b>&part=0", f"drawn={mark}&part=2", f"drawn={mark}", "x" * 300):
        status, _, seconds = _held_route(code, query)
        assert status == 200 and seconds < 0.2, query
    monkeypatch.setattr(where, "MAX_HELD", 0)
    assert _held_route(code, f"drawn={mark}&part=0")[2] < 0.2


def test_a_full_run_draws_the_place_of_the_teachers_timed_poll():
    """The teacher's live poll is a timed fragment, drawn inside a container of the full run's own,
    so that the page's title keeps its place after it even when a fragment's block goes missing."""
    teacher = _teacher("app_pages/7_prediction.py")
    _button(teacher, "class_ask").click().run()  # a poll open: the teacher's live chart
    assert errors(teacher) == []
    poll = _place(teacher, "vitviz-poll-place")
    assert charts(teacher.main.children[poll]), "the live chart is not inside its place"
    assert poll == _place(teacher, "vitviz-class") + 1  # right after the pop-over, before the slide


def test_the_join_address_is_drawn_as_a_qr_code_once():
    address = "http://192.168.1.20:8501/?class=ABCD2345"
    png = classroom.qr_png(address)
    assert png.startswith(b"\x89PNG") and classroom.qr_png(address) is png  # the teacher's every run: drawn once
    assert classroom.qr_png(address.replace("ABCD", "WXYZ")) != png


def test_a_followed_pages_script_takes_a_pages_address_only():
    """static/followed.js gives the address bar a step's address: one written in code, checked."""
    body = web.script("followed.js", "tag", path=web.page_path("attention"))
    assert 'const path = "attention";' in body
    assert web.page_path("") == ""  # the overview's
    for bad in ('x"; alert(1); "', "../input", "a/b", "a b"):
        with pytest.raises(ValueError):
            web.page_path(bad)
