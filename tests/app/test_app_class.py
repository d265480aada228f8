"""A class that follows its teacher (issue 56), through AppTest: a teacher's session in presenter
mode and students' sessions of the same server (one process: one store in memory)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.apptest import APP, TIMEOUT, errors, figure
from vitviz.app import classroom

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
        assert len(at.info) == 1 and "ABCD2345"[:4] in at.info[0].value or "not a code" in at.info[0].value
        assert at.session_state["step"] in (0, None)
        at.run()  # and only once
        assert not [i for i in at.info if "class" in i.value.lower()]


def test_everyone_on_my_image():
    teacher = _teacher(sample="")
    code, _ = teacher.session_state[classroom.TEACHER]
    student = _student(code)
    samples = (
        [o for o in student.selectbox(key="sample").options]
        if any(s.key == "sample" for s in student.selectbox)
        else []
    )
    mine = student.session_state["sample"]
    teacher_image = teacher.session_state["sample"]
    other = next(s for s in samples if s != teacher_image) if samples else None
    if other is not None:  # the student picks another image
        student.selectbox(key="sample").set_value(other).run()
        mine = other
    _button(teacher, "class_share").click().run()
    assert classroom.server_store().position(code).image == f"sample:{teacher_image}"
    student.run()
    assert student.session_state["sample"] == teacher_image != mine or other is None


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
