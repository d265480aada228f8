"""The tour's next step, described while the session reads this one.

A step of the tour is a pure function of its subject (the model, the image, their trace, the
language) and of the choices it reads (``vitviz.steps``). While a session reads step k, the work
ahead (``vitviz.app.ahead``'s worker, one torch thread, once no session's run computes or waits
for its turn) describes step k + 1 for the same subject and the session's choices as they stand at
the end of the run, noting every choice the description read. The run that opens step k + 1 (its
Next, or a class's catch-up) draws that description when its subject is the very one (the same
model and trace objects, the same image bytes, language and verdict) and every choice noted has
the same value now; otherwise it describes the step itself, as before. Figures built ahead go on the shelf
of shared figures for the session's mode (``charts.ahead_mode``), written as a run's would be, so
what a page shows is what it would have described itself.

Only the steps whose descriptions read nothing but the subject's caches are described ahead
(``NEXT``: the overview to the comparison with a CNN). The work ahead takes the comparison's CNN
only from the server's cache of registry models that need no download (``AheadCompute.model``): a
CNN to download or upload is the run's to try, with its spinner and its sentence, and the run then
describes the step itself. The card, a page about the model alone, is not described ahead: it is
described once for every session that shows it for the same model, language, mode and choices
(``for_everyone``), so a class that reaches it together describes it once, not thirty times.
Server option: ``streamlit run app.py -- --no-read-ahead`` (or VITVIZ_READ_AHEAD=0) turns it off
with the rest of the work ahead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

from vitviz.app import ahead, charts, presenter, state, turns
from vitviz.app.current import CachedCompute
from vitviz.app.models import cached_model
from vitviz.models import zoo
from vitviz.steps.blocks import Step
from vitviz.steps.subject import Subject

# The tour's pages whose step may be described ahead, in order: script -> the module of its
# ``describe`` (what the page passes to ``render.page``; tests/app/test_described.py reads the
# pages to check).
NEXT = {
    "app_pages/0_home.py": "vitviz.steps.overview",
    "app_pages/1_input.py": "vitviz.steps.model_input",
    "app_pages/2_patches.py": "vitviz.steps.patches",
    "app_pages/3_vectors.py": "vitviz.steps.vectors",
    "app_pages/4_tokens.py": "vitviz.steps.tokens",
    "app_pages/5_attention.py": "vitviz.steps.attention",
    "app_pages/6_block.py": "vitviz.steps.block",
    "app_pages/7_prediction.py": "vitviz.steps.prediction",
    "app_pages/8_compare.py": "vitviz.steps.compare",
}
KEPT = 48  # sessions whose next step is kept described (a class of thirty, and a few more)
MAX_ATTENTION_BYTES = 8 * 2**20  # a larger model's steps (ViT-B/16: 22 MB of maps) are described in the run
RANK = -1  # before the read-ahead's occlusion and comparison: the next step comes first
QUIET_WAIT_S = 30.0  # how long a description waits for the runs to be over before it is left to the run

Describe = Callable[[Subject, Mapping[str, Any]], Step]


@dataclasses.dataclass(frozen=True)
class Described:
    """A step described ahead: for which page and subject, the choices it read (their values, None
    for one not set), and the description."""

    script: str
    subject: tuple  # ``subject_key``
    objects: tuple[weakref.ref, weakref.ref]  # the subject's model and trace, not kept alive by this
    read: tuple[tuple[str, Any], ...]
    step: Step

    def of(self, script: str, subject: Subject) -> bool:
        """Whether this describes ``script`` for this very subject."""
        model, trace = (ref() for ref in self.objects)
        same = model is subject.model and trace is subject.trace
        return same and self.script == script and self.subject == subject_key(subject)


class Noting(Mapping):
    """Choices as a step's description reads them, noting each one read, with its value (None for
    one not set): a description that looks at every choice reads them all."""

    def __init__(self, choices: Mapping[str, Any]) -> None:
        self._choices = choices
        self.read: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        try:
            value = self._choices[key]
        except KeyError:
            self.read[key] = None
            raise
        self.read[key] = value
        return value

    def __iter__(self) -> Iterator[str]:
        self.read.update({key: self._choices.get(key) for key in state.BY_KEY})
        return iter(self._choices)

    def __len__(self) -> int:
        return len(self._choices)


class Recording(Noting):
    """The choices a session's next step is predicted to read (``SessionChoices``' way: a choice
    not set is missing), noting each one read."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        super().__init__({key: value for key, value in values.items() if value is not None})


class NotAhead(Exception):
    """What a description needs is the run's to do (a model to download or upload): it is left to the run."""


class AheadCompute(CachedCompute):
    """The session's caches as a run reads them, without a run's spinners (the worker has no page)."""

    def model(self, name: str) -> zoo.Loaded:
        """A registry model that loads without a download, from the server's cache; any other is
        the run's to try (``models.try_model``: once per session, said in a sentence)."""
        spec = zoo.REGISTRY.get(name)
        if spec is None or not spec.offline:
            raise NotAhead(name)
        return cached_model(name)

    def busy(self, key: str) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()  # no page to show a spinner on


def subject_key(subject: Subject) -> tuple:
    """What, beside the very model and trace objects (the server's cached ones), makes two subjects
    describe the same step: the image bytes, language, verdict, dataset and weights."""
    return (
        subject.name,
        subject.image_bytes,
        subject.lang,
        subject.verdict,
        subject.dataset,
        subject.trained,
        subject.paper,
    )


def small(subject: Subject) -> bool:
    """Whether the subject's steps are small enough to keep one described per session."""
    trace = subject.trace
    if trace is None:
        return False
    return sum(a.numel() * a.element_size() for a in trace.attentions) <= MAX_ATTENTION_BYTES


_kept: OrderedDict[str, Described] = OrderedDict()  # session -> its next step, described
# a model page's key -> (its model, the choices read, its step): ``for_everyone``
_for_everyone: OrderedDict[tuple, tuple[weakref.ref, tuple[tuple[str, Any], ...], Step]] = OrderedDict()
everyone = {"drawn": 0, "described": 0}  # model pages drawn from a description of another session's, or their own
_keeping = threading.Lock()
counts = {"taken": 0, "described": 0}  # runs that drew a description made ahead, and runs that made their own


def describe_of(script: str) -> Describe:
    return importlib.import_module(NEXT[script]).describe


def _session(script: str, subject: Subject) -> str | None:
    """The session whose run this is, where its page ``script`` may be described ahead for
    ``subject``; None where it may not (outside a run, another page, no read-ahead, a large model)."""
    session = turns.session_id()
    if session is None or script not in NEXT or not ahead.server_enabled() or not small(subject):
        return None
    return session


def step(script: str, describe: Describe, subject: Subject, choices: Mapping[str, Any]) -> Step:
    """``describe(subject, choices)`` for the page ``script``, or the same description made ahead
    for this session."""
    session = _session(script, subject)
    if session is None:
        return describe(subject, choices)
    with _keeping:
        found = _kept.get(session)
    if found is not None and found.of(script, subject) and _still(found.read, choices):
        counts["taken"] += 1
        return found.step
    counts["described"] += 1
    return describe(subject, choices)


def ask_next(script: str, subject: Subject, choices: Mapping[str, Any]) -> None:
    """After the page ``script`` drew its step (its widgets have set their choices): ask the work
    ahead to describe the tour's next step for this session, with these choices."""
    session = _session(script, subject)
    if session is None:
        return
    order = list(NEXT)
    at = order.index(script)
    if at + 1 >= len(order):
        return
    following = order[at + 1]
    predicted = {name: choices.get(name) for name in state.BY_KEY} | {"step": at + 1}
    mode = presenter.presenting()
    asked = (id(subject.model), id(subject.trace), subject.image_bytes, subject.lang, mode)
    chosen = tuple(sorted((name, repr(value)) for name, value in predicted.items()))
    ahead.server_ahead().ask(
        ("described", session, following, asked, chosen),
        lambda: _describe_ahead(session, following, subject, predicted, mode),
        rank=RANK,
    )


def for_everyone(script: str, describe: Describe, subject: Subject, choices: Mapping[str, Any]) -> Step:
    """``describe(subject, choices)`` for a page about the model alone (the card), described once for
    every session that shows it for the same model, language and mode with the same choices: the
    first of a class to open it describes it, the others draw that description."""
    key = (script, subject_key(subject), presenter.presenting())
    with _keeping:
        found = _for_everyone.get(key)
    if found is not None:
        model, read, step = found
        if model() is subject.model and _still(read, choices):
            everyone["drawn"] += 1
            return step
    everyone["described"] += 1
    noting = Noting(choices)
    step = describe(subject, noting)
    _keep(_for_everyone, key, (weakref.ref(subject.model), tuple(noting.read.items()), step))
    return step


def _keep(kept: OrderedDict, key: Hashable, value: Any) -> None:
    """Keep ``value`` as the newest of ``kept``, which holds the ``KEPT`` newest."""
    with _keeping:
        kept[key] = value
        kept.move_to_end(key)
        while len(kept) > KEPT:
            kept.popitem(last=False)


def _still(read: tuple[tuple[str, Any], ...], choices: Mapping[str, Any]) -> bool:
    """Whether every choice a description read has the value now that it had then."""
    return all(choices.get(key) == value for key, value in read)


def _describe_ahead(session: str, script: str, subject: Subject, predicted: Mapping[str, Any], mode: bool) -> None:
    """The worker's job: describe ``script`` for the session's subject and predicted choices, once
    the sessions' runs are over (in a class's second of Next, thirty runs wait for the cores)."""
    if not ahead.server_ahead().wait_for(turns.server_turns().idle, QUIET_WAIT_S):
        return
    recording = Recording(predicted)
    try:
        with charts.ahead_mode(mode):
            described = describe_of(script)(dataclasses.replace(subject, compute=AheadCompute()), recording)
    except NotAhead:
        return
    objects = (weakref.ref(subject.model), weakref.ref(subject.trace))
    kept = Described(script, subject_key(subject), objects, tuple(recording.read.items()), described)
    _keep(_kept, session, kept)
