"""vitviz.server.classes: the store of classes, in memory and in Redis (a redis-server started here,
where Debian's is installed), with a clock the tests move."""

from __future__ import annotations

import math
import threading
import time

import pytest

from tests import redis_server
from vitviz.server import classes, values


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis_process():
    """One redis-server for the module's tests: its port and process."""
    port = redis_server.free_port()
    server = redis_server.start(port)
    yield port, server
    server.kill()
    server.wait()


@pytest.fixture(params=["memory", "redis"])
def make(request):
    """A function that makes an empty store of this backend: make(clock=..., max_classes=...)."""
    if request.param == "memory":
        return lambda **kw: classes.MemoryStore(**kw)
    port, _ = request.getfixturevalue("redis_process")
    import redis

    redis.Redis(port=port).flushall()
    return lambda **kw: classes.RedisStore(f"redis://127.0.0.1:{port}/0", **kw)


def test_codes_are_unguessable_and_read_back():
    codes = {classes.new_code() for _ in range(2000)}
    assert len(codes) == 2000
    assert all(values.class_code(code) == code for code in codes)
    bits = classes.CODE_LENGTH * math.log2(len(classes.CODE_ALPHABET))
    assert bits >= 30
    # every character of the alphabet turns up (secrets.choice over all of it, not a slice)
    assert set("".join(codes)) == set(classes.CODE_ALPHABET)
    assert not set(classes.CODE_ALPHABET) & set("01OIL")


def test_class_code_reads_what_people_type_and_refuses_the_rest():
    assert values.class_code(" abcd-2345 ") == "ABCD2345"
    for wrong in ("ABCD234", "ABCD23456", "ABCD0000", "ABCDIIII", "²²²²²²²²", "", None, 12345678, "A" * 10_000):
        assert values.class_code(wrong) is None, wrong


def test_a_class_follows_its_teacher(make):
    store = make()
    started = store.start()
    assert store.position(started.code) == classes.Position(0, 0, None, 0)
    store.publish(started.code, started.teacher_token, 3, 1)
    assert store.position(started.code) == classes.Position(3, 1, None, 1)
    store.publish(started.code, started.teacher_token, 3, 1)  # no move: nothing changes
    assert store.position(started.code).moves == 1
    store.publish(started.code, started.teacher_token, 3, -1, image="sample:cat.jpg")  # not shared
    assert store.position(started.code) == classes.Position(3, -1, None, 2)
    store.publish(started.code, started.teacher_token, 3, -1, image="sample:cat.jpg", share=True)
    assert store.position(started.code) == classes.Position(3, -1, "sample:cat.jpg", 3)
    store.publish(started.code, started.teacher_token, 4, 0)  # the shared image stays shared
    assert store.position(started.code) == classes.Position(4, 0, "sample:cat.jpg", 4)
    store.publish(started.code, started.teacher_token, 4, 0, image=None, share=True)  # everyone on their own again
    assert store.position(started.code).image is None


def test_only_the_teacher_moves_polls_reveals_or_ends(make):
    store = make()
    one, other = store.start(), store.start()
    assert one.code != other.code
    for token in ("", "x" * 32, other.teacher_token, None):
        with pytest.raises(classes.NotTeacher):
            store.publish(one.code, token, 5, 0)
        with pytest.raises(classes.NotTeacher):
            store.ask(one.code, token, "class", ["cat", "dog"], "cat")
        with pytest.raises(classes.NotTeacher):
            store.reveal(one.code, token)
        with pytest.raises(classes.NotTeacher):
            store.end(one.code, token)
    assert store.position(one.code) == classes.Position()
    store.end(one.code, one.teacher_token)
    assert store.position(one.code) is None
    assert store.position(other.code) == classes.Position()
    with pytest.raises(classes.NotTeacher):
        store.publish(one.code, one.teacher_token, 1, 0)


def test_wrong_codes_are_no_class(make):
    store = make()
    started = store.start()
    wrong = "".join(reversed(started.code))
    for code in (wrong if wrong != started.code else "AAAAAAAA", started.code.lower(), "", "../../etc", "A" * 9999):
        assert store.position(code) is None
        assert store.poll(code) is None
        assert store.vote(code, "s1", 1, "cat") is False


def test_classes_expire_after_three_hours(make):
    clock = Clock()
    store = make(clock=clock)
    started = store.start()
    clock.now += classes.LIFETIME_S - 1
    assert store.position(started.code) is not None
    clock.now += 2
    assert store.position(started.code) is None
    with pytest.raises(classes.NotTeacher):
        store.publish(started.code, started.teacher_token, 1, 0)


def test_a_store_holds_a_limited_number_of_classes(make):
    clock = Clock()
    store = make(clock=clock, max_classes=3)
    made = [store.start() for _ in range(3)]
    with pytest.raises(classes.ClassesFull):
        store.start()
    store.end(made[0].code, made[0].teacher_token)
    store.start()  # an ended class frees its place
    with pytest.raises(classes.ClassesFull):
        store.start()
    clock.now += classes.LIFETIME_S + 1  # so do expired ones
    assert len({store.start().code for _ in range(3)}) == 3


def test_a_poll_counts_one_vote_a_student_until_the_reveal(make):
    clock = Clock()
    store = make(clock=clock)
    started = store.start()
    code, token = started.code, started.teacher_token
    assert store.poll(code) is None
    number = store.ask(code, token, "class", ["cat", "dog", "ship"], "dog")
    assert store.vote(code, "s1", number, "cat")
    assert store.vote(code, "s2", number, "cat")
    assert store.vote(code, "s1", number, "dog")  # changed: still one vote
    assert not store.vote(code, "s3", number, "horse")  # not an option
    assert not store.vote(code, "s3", number + 1, "cat")  # not this poll
    poll = store.poll(code)
    assert poll.counts == {"cat": 1, "dog": 1, "ship": 0} and poll.total == 2
    assert poll.answer is None and not poll.revealed  # students cannot read the answer before the reveal
    assert store.vote_of(code, "s1", number) == "dog"
    assert store.vote_of(code, "s3", number) is None
    store.reveal(code, token)
    assert not store.vote(code, "s1", number, "ship")  # closed
    assert not store.vote(code, "s4", number, "ship")
    poll = store.poll(code)
    assert poll.revealed and poll.answer == "dog" and poll.counts == {"cat": 1, "dog": 1, "ship": 0}
    second = store.ask(code, token, "class", ["cat", "dog"], "cat")  # a new poll starts with no votes
    assert second == number + 1
    assert store.poll(code).counts == {"cat": 0, "dog": 0} and not store.poll(code).revealed
    assert store.vote(code, "s1", second, "cat")


def test_votes_are_rate_limited(make):
    clock = Clock()
    store = make(clock=clock)
    started = store.start()
    number = store.ask(started.code, started.teacher_token, "class", ["cat", "dog"], "dog")
    sent = [store.vote(started.code, "s1", number, ("cat", "dog")[i % 2]) for i in range(classes.VOTE_BURST + 3)]
    assert sent == [True] * classes.VOTE_BURST + [False] * 3
    assert store.vote_of(started.code, "s1", number) == ("cat", "dog")[(classes.VOTE_BURST - 1) % 2]
    assert store.vote(started.code, "s2", number, "cat")  # another student is not held back
    clock.now += classes.VOTE_WINDOW_S + 0.1
    assert store.vote(started.code, "s1", number, "cat")
    assert store.poll(started.code).counts == {"cat": 2, "dog": 0}


def test_thirty_votes_at_once_are_thirty_counted(make):
    store = make()
    started = store.start()
    number = store.ask(started.code, started.teacher_token, "class", ["cat", "dog"], "dog")
    results = []

    def vote(i: int) -> None:
        results.append(store.vote(started.code, f"student-{i}", number, "cat" if i % 3 else "dog"))

    threads = [threading.Thread(target=vote, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 30
    assert store.poll(started.code).counts == {"cat": 20, "dog": 10}


def test_bad_teacher_input_is_refused(make):
    store = make()
    started = store.start()
    for step, slide in ((True, 0), (0, "1"), (10**9, 0), (0, -2)):
        with pytest.raises(ValueError):
            store.publish(started.code, started.teacher_token, step, slide)
    for options, answer in (([], None), (["cat", "cat"], None), (["cat"], "dog"), (["x" * 999], None)):
        with pytest.raises(ValueError):
            store.ask(started.code, started.teacher_token, "class", options, answer)


def test_a_redis_that_goes_away_mid_class_raises_one_error_and_comes_back():
    port = redis_server.free_port()
    server = redis_server.start(port)
    try:
        store = classes.RedisStore(f"redis://127.0.0.1:{port}/0")
        started = store.start()
        number = store.ask(started.code, started.teacher_token, "class", ["cat", "dog"], "dog")
        assert store.vote(started.code, "s1", number, "cat")
        server.kill()
        server.wait()
        began = time.monotonic()
        for call in (
            lambda: store.position(started.code),
            lambda: store.publish(started.code, started.teacher_token, 2, 0),
            lambda: store.vote(started.code, "s2", number, "dog"),
            lambda: store.poll(started.code),
            store.start,
        ):
            with pytest.raises(classes.StoreDown):
                call()
        assert time.monotonic() - began < 5  # each says so at once, it does not hang a page
        server = redis_server.start(port)  # an empty Redis again (--save ''): the class is gone, the store works
        assert store.position(started.code) is None
        assert store.position(store.start().code) == classes.Position()
    finally:
        server.kill()
        server.wait()


def test_no_redis_at_all_is_the_same_error():
    store = classes.RedisStore("redis://127.0.0.1:1/0")
    with pytest.raises(classes.StoreDown):
        store.start()
    with pytest.raises(classes.StoreDown):
        store.position("ABCD2345")


def test_the_server_s_option_picks_the_backend():
    assert isinstance(classes.store_for(None), classes.MemoryStore)
    assert isinstance(classes.store_for("redis://127.0.0.1:1/0"), classes.RedisStore)  # connects when used


def test_a_patch_poll_counts_one_clicked_patch_a_student_with_the_same_limits(make):
    clock = Clock()
    store = make(clock=clock)
    started = store.start()
    patches = classes.patch_options(196)  # ViT-B/16 at 224: more patches than a class poll's options
    with pytest.raises(ValueError):
        store.ask(started.code, started.teacher_token, classes.CLASS_POLL, patches, "0")
    number = store.ask(started.code, started.teacher_token, classes.PATCH_POLL, patches, "17")
    assert store.vote(started.code, "ann", number, "17")
    assert store.vote(started.code, "bob", number, "3")
    assert store.vote(started.code, "bob", number, "17")  # changed: still one vote
    assert not store.vote(started.code, "eve", number, "196")  # no such patch
    poll = store.poll(started.code)
    assert (poll.kind, poll.total, poll.counts["17"], poll.counts["3"], poll.answer) == ("patch", 2, 2, 0, None)
    for _ in range(classes.VOTE_BURST):
        store.vote(started.code, "cat", number, "5")
    assert not store.vote(started.code, "cat", number, "6")  # rate-limited
    store.reveal(started.code, started.teacher_token)
    assert not store.vote(started.code, "ann", number, "3")  # closed at the reveal
    assert store.poll(started.code).answer == "17"
    clock.now += classes.LIFETIME_S + 1
    assert store.poll(started.code) is None  # expired with its class
    with pytest.raises(ValueError):
        classes.patch_options(classes.MAX_PATCHES + 1)


def test_a_patch_poll_s_grid_is_shaped_like_the_picture_it_is_drawn_over():
    assert classes.patch_grid(196, 224, 224) == (14, 14)
    assert classes.patch_grid(64, 32, 32) == (8, 8)
    assert classes.patch_grid(224, 224, 256) == (14, 16)  # a wide picture: more columns than rows
    assert classes.patch_grid(224, 256, 224) == (16, 14)
    assert classes.patch_grid(7, 32, 32) in ((1, 7), (7, 1))  # a prime count: one row or column
