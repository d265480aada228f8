"""A class that follows its teacher: the store of classes, with no Streamlit in it.

A teacher starts a class and gets its join code and a secret teacher token; only that token
publishes where the class is (a step of the tour, a slide of it, and, when the teacher shares it,
the teacher's image), opens a poll and reveals it. Students read the position and vote; nothing
about a student is kept but an anonymous id and its vote.

Two backends behind one interface (``Store``): ``MemoryStore`` (one server, no setup; thread-safe)
and ``RedisStore`` (several app servers share the classes through Redis). Either raises
``StoreDown`` when it cannot answer, and nothing else about its machinery.

Bounds: codes are ``CODE_LENGTH`` characters of an alphabet with no look-alikes (31**8, about
39.6 bits, from ``secrets``); a class lives ``LIFETIME_S`` (3 hours); a store holds at most
``max_classes`` classes; a student votes at most ``VOTE_BURST`` times in ``VOTE_WINDOW_S``, one
vote counted per student (the last, until the reveal); a poll counts at most ``MAX_VOTERS``.
"""

from __future__ import annotations

import hmac
import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vitviz.server.values import CODE_ALPHABET, CODE_LENGTH, class_code

LIFETIME_S = 3 * 60 * 60
MAX_CLASSES = 100  # per store (a server, or the replicas sharing one Redis)
VOTE_BURST = 5  # votes (changes included) a student may send ...
VOTE_WINDOW_S = 10.0  # ... in this many seconds
MAX_VOTERS = 1000  # votes one poll counts
MAX_OPTIONS = 100  # a poll's choices (a model's classes)
MAX_PATCHES = 1024  # a patch poll's choices: the patches of a grid up to 32 x 32
CLASS_POLL = "class"  # which class will the model answer? options: class names
PATCH_POLL = "patch"  # which patch matters most? options: patch indices, "0" to "N-1" (patch_options)
MAX_TEXT = 200  # an option's, an answer's or an image's characters

Clock = Callable[[], float]


class ClassError(Exception):
    """What a class's store refuses, with a reason the app turns into one sentence."""


class StoreDown(ClassError):
    """The store cannot be reached (Redis stopped, or the network between)."""


class ClassesFull(ClassError):
    """The store holds ``max_classes`` classes already."""


class NotTeacher(ClassError):
    """A teacher's action with a token that is not the class's (or a class that has ended)."""


@dataclass(frozen=True)
class Started:
    """A new class: the code students join with, and the secret only the teacher's session holds."""

    code: str
    teacher_token: str


@dataclass(frozen=True)
class Position:
    """Where the class is: a step of the tour, a slide of it (-1: its last), the teacher's image
    when the teacher shared it (None: every student keeps their own), and how many times the
    teacher has moved (so a follower sees a move back to where it was)."""

    step: int = 0
    slide: int = 0
    image: str | None = None
    moves: int = 0


@dataclass(frozen=True)
class Poll:
    """The class's poll: its number within the class, its options, the votes counted per option,
    and, once revealed, the answer it is compared with (None before)."""

    number: int
    kind: str
    options: tuple[str, ...]
    counts: dict[str, int] = field(default_factory=dict)
    revealed: bool = False
    answer: str | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def new_code() -> str:
    """A join code: ``CODE_LENGTH`` characters of ``CODE_ALPHABET``, each from ``secrets``."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def _text(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise ValueError(f"expected a text of 1 to {MAX_TEXT} characters, got {value!r}")
    return value


def _check_position(step: int, slide: int) -> None:
    for value in (step, slide):
        if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value < 10_000:
            raise ValueError(f"a step or slide is a small whole number, got {value!r}")


def patch_options(count: int) -> tuple[str, ...]:
    """A patch poll's options: the patches' indices (row-major, without [CLS]) as texts."""
    if not isinstance(count, int) or not 1 <= count <= MAX_PATCHES:
        raise ValueError(f"a patch poll has 1 to {MAX_PATCHES} patches, got {count!r}")
    return tuple(str(i) for i in range(count))


def patch_grid(count: int, height: int, width: int) -> tuple[int, int]:
    """(grid_h, grid_w) of a patch poll's ``count`` patches laid over a ``height`` x ``width``
    picture: of the pairs that multiply to ``count``, the one shaped most like the picture (a
    square picture with 196 patches: 14 x 14)."""
    pairs = [(rows, count // rows) for rows in range(1, count + 1) if count % rows == 0]
    return min(pairs, key=lambda pair: abs(math.log(pair[0] / pair[1]) - math.log(height / width)))


def _check_options(options: Sequence[str], answer: str | None, kind: str = CLASS_POLL) -> tuple[str, ...]:
    options = tuple(_text(o) for o in options)
    most = MAX_PATCHES if kind == PATCH_POLL else MAX_OPTIONS
    if not 1 <= len(options) <= most or len(set(options)) != len(options):
        raise ValueError(f"a poll has 1 to {most} different options")
    if answer is not None and answer not in options:
        raise ValueError("the answer is one of the options")
    return options


class Store:
    """The interface both backends keep. ``code`` arguments are checked (``values.class_code``):
    a malformed code is a class that does not exist."""

    def start(self) -> Started:
        """A new class, at step 0; raises ``ClassesFull`` when the store holds its maximum."""
        raise NotImplementedError

    def end(self, code: str, token: str) -> None:
        """Close the class (students then go on alone)."""
        raise NotImplementedError

    def publish(self, code: str, token: str, step: int, slide: int, image: str | None = None, share: bool = False):
        """The teacher is at ``step`` and ``slide``; with ``share``, everyone on ``image`` (None
        leaves what was shared as it is)."""
        raise NotImplementedError

    def position(self, code: str) -> Position | None:
        """Where the class is; None when no such class is open (wrong code, ended, expired)."""
        raise NotImplementedError

    def ask(self, code: str, token: str, kind: str, options: Sequence[str], answer: str | None) -> int:
        """Open a poll (the one before closes); returns its number."""
        raise NotImplementedError

    def poll(self, code: str) -> Poll | None:
        """The class's current poll, or None (no poll, or no class)."""
        raise NotImplementedError

    def vote(self, code: str, student: str, number: int, option: str) -> bool:
        """``student``'s vote in poll ``number``: replaces their earlier one. Returns whether it
        counted: not after the reveal, not for another poll or an option it does not have, not
        beyond ``VOTE_BURST`` votes in ``VOTE_WINDOW_S``, not past ``MAX_VOTERS`` students."""
        raise NotImplementedError

    def vote_of(self, code: str, student: str, number: int) -> str | None:
        """The option ``student`` voted for in poll ``number`` (None: no vote)."""
        raise NotImplementedError

    def reveal(self, code: str, token: str) -> None:
        """Close the poll's voting and show its answer."""
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# In memory: one server
# ---------------------------------------------------------------------------------------------


@dataclass
class _Class:
    token: str
    expires: float
    position: Position = Position()
    poll: Poll | None = None
    votes: dict[str, str] = field(default_factory=dict)  # student -> option, this poll's
    sent: dict[str, list[float]] = field(default_factory=dict)  # student -> when their recent votes came


class MemoryStore(Store):
    """Classes in this process's memory, behind one lock."""

    def __init__(self, max_classes: int = MAX_CLASSES, clock: Clock = time.time) -> None:
        self.max_classes, self._clock = max_classes, clock
        self._classes: dict[str, _Class] = {}
        self._lock = threading.Lock()

    def _live(self, code: str) -> _Class | None:
        found = self._classes.get(code) if class_code(code) == code else None
        if found is not None and found.expires <= self._clock():
            del self._classes[code]
            return None
        return found

    def _teachers(self, code: str, token: str) -> _Class:
        found = self._live(code)
        if found is None or not isinstance(token, str) or not hmac.compare_digest(found.token, token):
            raise NotTeacher(code)
        return found

    def start(self) -> Started:
        with self._lock:
            now = self._clock()
            for code in [c for c, k in self._classes.items() if k.expires <= now]:
                del self._classes[code]
            if len(self._classes) >= self.max_classes:
                raise ClassesFull(self.max_classes)
            code = new_code()
            while code in self._classes:
                code = new_code()
            token = secrets.token_urlsafe(24)
            self._classes[code] = _Class(token, now + LIFETIME_S)
            return Started(code, token)

    def end(self, code: str, token: str) -> None:
        with self._lock:
            self._teachers(code, token)
            del self._classes[code]

    def publish(self, code, token, step, slide, image=None, share=False) -> None:
        _check_position(step, slide)
        with self._lock:
            found = self._teachers(code, token)
            shown = (_text(image) if image is not None else None) if share else found.position.image
            before = found.position
            if (before.step, before.slide, before.image) != (step, slide, shown):
                found.position = Position(step, slide, shown, before.moves + 1)

    def position(self, code: str) -> Position | None:
        with self._lock:
            found = self._live(code)
            return None if found is None else found.position

    def ask(self, code, token, kind, options, answer) -> int:
        options = _check_options(options, answer, kind)
        with self._lock:
            found = self._teachers(code, token)
            number = found.poll.number + 1 if found.poll else 1
            found.poll = Poll(number, _text(kind), options, answer=answer)
            found.votes = {}
            return number

    def poll(self, code: str) -> Poll | None:
        with self._lock:
            found = self._live(code)
            if found is None or found.poll is None:
                return None
            counts = dict.fromkeys(found.poll.options, 0)
            for option in found.votes.values():
                counts[option] += 1
            shown = found.poll
            return Poll(
                shown.number,
                shown.kind,
                shown.options,
                counts,
                shown.revealed,
                shown.answer if shown.revealed else None,
            )

    def vote(self, code, student, number, option) -> bool:
        with self._lock:
            found = self._live(code)
            poll = found.poll if found is not None else None
            if poll is None or poll.revealed or poll.number != number or option not in poll.options:
                return False
            if not isinstance(student, str) or not 0 < len(student) <= 64:
                return False
            now = self._clock()
            recent = [t for t in found.sent.get(student, []) if t > now - VOTE_WINDOW_S]
            if len(recent) >= VOTE_BURST or (student not in found.votes and len(found.votes) >= MAX_VOTERS):
                found.sent[student] = recent
                return False
            found.sent[student] = [*recent, now]
            found.votes[student] = option
            return True

    def vote_of(self, code, student, number) -> str | None:
        with self._lock:
            found = self._live(code)
            if found is None or found.poll is None or found.poll.number != number:
                return None
            return found.votes.get(student)

    def reveal(self, code: str, token: str) -> None:
        with self._lock:
            found = self._teachers(code, token)
            if found.poll is not None:
                poll = found.poll
                found.poll = Poll(poll.number, poll.kind, poll.options, revealed=True, answer=poll.answer)


# ---------------------------------------------------------------------------------------------
# Redis: several servers
# ---------------------------------------------------------------------------------------------

PREFIX = "vitviz:class:"
REGISTRY = "vitviz:classes"  # a sorted set: code -> when it expires

# Atomic in Redis: a class is made only while the store holds fewer than the cap (expired ones
# removed first), and never over another class's code.
_START = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
redis.call('HSET', KEYS[2], 'token', ARGV[3], 'expires', ARGV[4], 'position', ARGV[5], 'poll', '')
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[7])
return 1
"""
# A vote: counted only for the open, unrevealed poll it names, within the student's rate and the
# poll's number of voters. KEYS: the class, its votes, the student's recent votes.
_VOTE = """
local poll = redis.call('HGET', KEYS[1], 'poll')
if not poll or poll == '' then return 0 end
local open = cjson.decode(poll)
if open.revealed or tostring(open.number) ~= ARGV[1] then return 0 end
local known = false
for _, option in ipairs(open.options) do if option == ARGV[3] then known = true end end
if not known then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[4] - ARGV[5])
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[7]) then return 0 end
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[9])
redis.call('EXPIRE', KEYS[3], math.ceil(tonumber(ARGV[5])) + 1)
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[8])
return 1
"""


class RedisStore(Store):
    """Classes in Redis, shared by every app server that names the same Redis. Each key expires
    with its class (Redis removes it); the class's own expiry time is checked against ``clock``."""

    def __init__(
        self, url: str, max_classes: int = MAX_CLASSES, clock: Clock = time.time, timeout_s: float = 0.5
    ) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.max_classes, self._clock = max_classes, clock
        self._errors = (redis.exceptions.RedisError, OSError)
        self._redis = redis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),  # a Redis that is gone says so at once: students go on alone
            decode_responses=True,
        )
        self._start = self._redis.register_script(_START)
        self._vote = self._redis.register_script(_VOTE)

    def _call(self, work: Callable[[], object]):
        try:
            return work()
        except self._errors as error:
            raise StoreDown(str(error)) from error

    @staticmethod
    def _key(code: str) -> str:
        return PREFIX + code

    def _read(self, code: str, *fields: str) -> list[str | None] | None:
        """The class's ``fields`` (None: no such class, or expired)."""
        if class_code(code) != code:
            return None
        got = self._call(lambda: self._redis.hmget(self._key(code), "expires", *fields))
        if got[0] is None or float(got[0]) <= self._clock():
            return None
        return got[1:]

    def _teachers(self, code: str, token: str, *fields: str) -> list[str | None]:
        got = self._read(code, "token", *fields)
        if got is None or not isinstance(token, str) or not hmac.compare_digest(got[0], token):
            raise NotTeacher(code)
        return got[1:]

    def start(self) -> Started:
        now = self._clock()
        token = secrets.token_urlsafe(24)
        position = json.dumps([0, 0, None, 0])
        for _ in range(20):
            code = new_code()
            made = self._call(
                lambda code=code: self._start(
                    keys=[REGISTRY, self._key(code)],
                    args=[now, self.max_classes, token, now + LIFETIME_S, position, LIFETIME_S, code],
                )
            )
            if made == 0:
                raise ClassesFull(self.max_classes)
            if made == 1:
                return Started(code, token)
        raise ClassError("no free code")  # 20 collisions in a space of 31**8: never in practice

    def end(self, code: str, token: str) -> None:
        self._teachers(code, token)
        votes = self._call(lambda: self._redis.keys(self._key(code) + ":*"))
        self._call(lambda: self._redis.delete(self._key(code), *votes))
        self._call(lambda: self._redis.zrem(REGISTRY, code))

    def publish(self, code, token, step, slide, image=None, share=False) -> None:
        _check_position(step, slide)
        (kept,) = self._teachers(code, token, "position")
        _, _, shared, moves = json.loads(kept)
        shown = (_text(image) if image is not None else None) if share else shared
        if json.loads(kept)[:3] != [step, slide, shown]:
            moved = json.dumps([step, slide, shown, moves + 1])
            self._call(lambda: self._redis.hset(self._key(code), "position", moved))

    def position(self, code: str) -> Position | None:
        got = self._read(code, "position")
        if got is None:
            return None
        step, slide, image, moves = json.loads(got[0])
        return Position(step, slide, image, moves)

    def ask(self, code, token, kind, options, answer) -> int:
        options = _check_options(options, answer, kind)
        (kept,) = self._teachers(code, token, "poll")
        number = json.loads(kept)["number"] + 1 if kept else 1
        poll = {"number": number, "kind": _text(kind), "options": list(options), "answer": answer, "revealed": False}
        self._call(lambda: self._redis.hset(self._key(code), "poll", json.dumps(poll)))
        return number

    def poll(self, code: str) -> Poll | None:
        got = self._read(code, "poll")
        if not got or not got[0]:
            return None
        kept = json.loads(got[0])
        votes = self._call(lambda: self._redis.hvals(self._key(code) + f":votes:{kept['number']}"))
        counts = dict.fromkeys(kept["options"], 0)
        for option in votes:
            if option in counts:
                counts[option] += 1
        answer = kept["answer"] if kept["revealed"] else None
        return Poll(kept["number"], kept["kind"], tuple(kept["options"]), counts, kept["revealed"], answer)

    def vote(self, code, student, number, option) -> bool:
        if not isinstance(student, str) or not 0 < len(student) <= 64 or not isinstance(option, str):
            return False
        if self._read(code) is None or not isinstance(number, int):
            return False
        key, nonce = self._key(code), secrets.token_hex(8)  # one member of the student's recent votes
        made = self._call(
            lambda: self._vote(
                keys=[key, f"{key}:votes:{number}", f"{key}:sent:{student}"],
                args=[number, student, option, self._clock(), VOTE_WINDOW_S, VOTE_BURST, MAX_VOTERS, LIFETIME_S, nonce],
            )
        )
        return made == 1

    def vote_of(self, code, student, number) -> str | None:
        if self._read(code) is None:
            return None
        return self._call(lambda: self._redis.hget(self._key(code) + f":votes:{number}", student))

    def reveal(self, code: str, token: str) -> None:
        (kept,) = self._teachers(code, token, "poll")
        if kept:
            poll = json.loads(kept)
            poll["revealed"] = True
            self._call(lambda: self._redis.hset(self._key(code), "poll", json.dumps(poll)))


def store_for(url: str | None, max_classes: int = MAX_CLASSES) -> Store:
    """The store a server's ``--redis URL`` names, else one in memory."""
    return RedisStore(url, max_classes) if url else MemoryStore(max_classes)
