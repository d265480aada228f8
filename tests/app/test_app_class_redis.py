"""A class kept in Redis loses its Redis mid-class (issue 56): the teacher's slide says so in one
sentence, the student goes on alone, and nothing crashes. A teacher's and a student's AppTest
sessions share the class through a redis-server started here (the app's store made from
VITVIZ_REDIS, as ``--redis`` makes it), which the test then kills by its process id."""

from __future__ import annotations

import signal

import pytest

from tests import redis_server
from tests.app.test_app_class import _button, _student, _teacher
from tests.apptest import errors
from vitviz.app import classroom, where
from vitviz.render import i18n
from vitviz.server import classes


@pytest.fixture
def redis_class(monkeypatch):
    """A redis-server of this test's own, and the app's store of classes made from its URL; yields
    the server's process (the test kills it)."""
    port = redis_server.free_port()
    server = redis_server.start(port)
    try:
        monkeypatch.setenv("VITVIZ_REDIS", f"redis://127.0.0.1:{port}/0")
        monkeypatch.setattr(where, "_server", None)  # made again, from VITVIZ_REDIS
        yield server
    finally:
        server.kill()
        server.wait()
        where._server = None  # the next test's store: in memory again (monkeypatch restores None)


def _exceptions(at) -> list[str]:
    return [e.value for e in at.exception]


def _said(at) -> list[str]:
    """Every sentence the page shows in an alert or a caption."""
    return [e.value for kind in ("warning", "error", "info", "caption") for e in getattr(at, kind)]


def test_the_sentences_exist_in_english_and_korean():
    for key in ("class.store_down_teacher", "class.store_down_student"):
        english, korean = i18n.TEXT[key]["en"], i18n.TEXT[key]["ko"]
        assert english and korean and english != korean, key
        assert english.count(". ") == 0 and english.rstrip().endswith("."), key  # one sentence


def test_redis_killed_mid_class(redis_class):
    teacher = _teacher()
    assert isinstance(classroom.server_store(), classes.RedisStore)
    code, _ = teacher.session_state[classroom.TEACHER]
    student = _student(code)
    assert _exceptions(student) == [] and student.session_state["step"] == 2  # follows, through Redis
    for _ in range(10):  # the teacher's slides, to the next step
        _button(teacher, "nav_next").click().run()
        if teacher.session_state["step"] == 3:
            break
    student.run()
    assert student.session_state["step"] == 3

    redis_class.send_signal(signal.SIGKILL)  # Redis goes away mid-class
    redis_class.wait()

    teacher.run()
    down_teacher = i18n.TEXT["class.store_down_teacher"]["en"]
    assert _exceptions(teacher) == []
    shown = [s for s in _said(teacher) if s == down_teacher]
    assert shown, _said(teacher)
    assert [w.value for w in teacher.warning] == [down_teacher]  # on the slide itself, once
    _button(teacher, "nav_next").click().run()  # the teacher goes on too: nothing to publish to
    assert _exceptions(teacher) == []

    student.run()
    down_student = i18n.TEXT["class.store_down_student"]["en"]
    assert _exceptions(student) == [] and down_student in _said(student)
    assert not [s for s in _said(teacher) + _said(student) if "Traceback" in s or "Error" in s]
    for expected in (4, 5):  # alone: its own Next moves it, and nothing pulls it back
        _button(student, "nav_next").click().run()
        assert _exceptions(student) == [] and student.session_state["step"] == expected
        student.run()
        assert student.session_state["step"] == expected and errors(student) == []
