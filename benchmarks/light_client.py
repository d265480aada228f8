"""A student's browser reduced to Streamlit's own websocket protocol, for the classroom bench.

A class's browsers run on the students' machines, not on the server: measured on the server's own
cores, thirty Chromiums mostly measure their own drawing. ``LightStudent`` costs a few
milliseconds a step instead. It does what Streamlit's frontend does on the wire: it opens
``/_stcore/stream``, asks for a run with the URL's query string (``test=class/index``), and
presses a button by sending a rerun whose widget states hold the button's trigger, with the
page's script hash and the query string the server last sent, and the hashes of the cached
messages it already holds (the server then sends a reference instead of the message again, as
it does to a browser). A run ends at ``script_finished`` (a run that ``st.switch_page`` cut short
for the next one ends with ``FINISHED_EARLY_FOR_RERUN`` and is not the end).

It draws nothing: what it checks is what the server sent. An exception element or a closed
connection is an error; a run whose query string lost the student's image, or whose verdict
(the coloured sentence under a prediction) names another image's class or probability, shows a
wrong image.

A student who follows a class (``?class=CODE``) keeps its page in step with the teacher's through
the page's script (vitviz/app/static/follow.js): it asks the class's route where the class is,
naming the mark the page was drawn with (a plain GET, ``vitviz.app.where``, which the server holds
until the class moves), and, when the answer is not that mark, presses the page's hidden catch-up
button. ``LightStudent`` reads that mark and the route's address from the page's html element, and
``follow`` does what the script does once.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from vitviz.app.web import KEYS

FINISHED_EARLY_FOR_RERUN = ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN
FINISHED_WITH_COMPILE_ERROR = ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR
# "Right. True class (CIFAR-10 test set): **cat**; the model says **dog** with 61.2%." and its
# "Wrong. ..." twin (vitviz/locales/en.json, verdict.right / verdict.wrong)
VERDICT = re.compile(r"True class \([^)]*\): \*\*(?P<truth>[^*]+)\*\*; the model says \*\*(?P<pred>[^*]+)\*\*")
PROBABILITY = re.compile(r"(\d+(?:\.\d+)?)%")
# the mark a following page was drawn with, and its class's route (vitviz.app.students._catch_up)
DRAWN = re.compile(
    r'data-vitviz-class="(?P<mark>[^"]*)" data-vitviz-part="(?P<part>[01])" data-vitviz-address="(?P<address>[^"]*)"'
)
CATCH_UP = KEYS["catch_up"]  # the hidden button follow.js presses


@dataclass(frozen=True)
class Expected:
    """What a student's pages must say about their image: its class, and the model's answers
    (class, the probability it gives the true class in percent) that the server may give, one per
    precision it may compute in (float32, bf16), when the bench knows them."""

    truth: str
    answers: tuple[tuple[str, float], ...] = ()


@dataclass
class Run:
    """What the server sent during one script run."""

    seconds: float = 0.0
    title: str | None = None
    texts: list[str] = field(default_factory=list)  # headings, markdown, captions, alerts
    buttons: dict[str, str] = field(default_factory=dict)  # widget key -> widget id
    # widget key -> the fragment it is in (its press reruns that fragment alone)
    fragments: dict[str, str] = field(default_factory=dict)
    exceptions: list[str] = field(default_factory=list)
    compile_error: bool = False
    drawn: tuple[str, int, str] | None = None  # a following page's (mark, which of the route's marks, route address)
    timers: int = 0  # fragments the run asked the browser to rerun on a timer (auto_rerun)
    restarts: int = 0  # runs of the app cut short for the next one (st.rerun, st.switch_page) before it ended
    messages: int = 0
    received_bytes: int = 0


def button_key(widget_id: str) -> str | None:
    """The user key of a widget id ("$$ID-<hash>-nav_next" -> "nav_next"), None without one."""
    head, _, key = widget_id.rpartition("-")
    return key if head.startswith("$$ID") and key and key != "None" else None


def element_text(element) -> str | None:  # element: streamlit.proto.Element_pb2.Element
    kind = element.WhichOneof("type")
    if kind in ("markdown", "heading", "alert", "text", "caption"):
        return getattr(element, kind).body
    return None


class LightStudent:
    """One student's session on a Streamlit server, over its websocket.

    Args:
        url: the server, "http://host:port".
        image: the student's test image, "class/index" (the URL's ``test=``).
        expected: what the verdicts must say about that image (None: only the URL is checked).
        timeout: seconds a run may take before it counts as an error.
        query: more of the URL's query string, before ``test=`` ("class=CODE", "present=1").
    """

    def __init__(
        self, url: str, image: str, expected: Expected | None = None, timeout: float = 300.0, query: str = ""
    ) -> None:
        self.asker = Asker(url)  # the page's script's requests (follow)
        self.url = url.replace("http://", "ws://").replace("https://", "wss://").rstrip("/") + "/_stcore/stream"
        self.image, self.expected, self.timeout = image, expected, timeout
        self.query_string = f"{query}&test={image}" if query else f"test={image}"
        self.page_script_hash = ""
        self.cached: dict[str, ForwardMsg] = {}  # hash -> a cacheable message, as a browser keeps them
        self.errors = 0
        self.wrong_image = 0
        self.problems: list[str] = []  # what each error or wrong image was, briefly
        self.last: Run | None = None
        self._socket = None

    async def open(self, page_name: str = "") -> Run:
        """Connect and run the app as a browser opening ``/<page_name>?test=<image>`` does."""
        import websockets

        self._socket = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None)
        return await self._rerun(ClientState(query_string=self.query_string, page_name=page_name))

    async def press(self, key: str) -> Run:
        """Click the button with this key on the page shown now (a trigger value, as the frontend
        sends for st.button; in a fragment, naming it, so that only the fragment runs) and wait for
        the run it starts to end."""
        if self.last is None or key not in self.last.buttons:
            raise LookupError(f"no button {key!r} on this page")
        state = ClientState(query_string=self.query_string, page_script_hash=self.page_script_hash)
        widget = state.widget_states.widgets.add()
        widget.id, widget.trigger_value = self.last.buttons[key], True
        if key in self.last.fragments:
            state.fragment_id = self.last.fragments[key]
        return await self._rerun(state)

    async def follow(self, hold: bool = True) -> Run | None:
        """What a following page's script does at each tick: ask the class's route where the class
        is (``hold``: naming the page's mark, so the server answers once the class moves, as the
        script asks) and, when that is not the mark the page was drawn with, press the catch-up
        button. The run the press started, or None (the page is up to date, or follows no class)."""
        drawn = self.last.drawn if self.last is not None else None
        if drawn is None:
            return None
        mark, part, address = drawn
        answer = await self.asker.get(f"{address}?drawn={mark}&part={part}" if hold else address)
        if answer is None or answer.split(" ")[part] == mark:
            return None
        return await self.press(CATCH_UP)

    @property
    def step(self) -> int | None:
        """The tour's step the session's URL names (``step=``), None without one."""
        found = parse_qs(self.query_string).get("step", [""])[0]
        return int(found) if found.isascii() and found.isdigit() and len(found) < 4 else None

    async def close(self) -> None:
        await self.asker.close()
        if self._socket is not None:
            await self._socket.close()

    async def _rerun(self, state: ClientState) -> Run:
        state.cached_message_hashes.extend(self.cached)
        message = BackMsg()
        message.rerun_script.CopyFrom(state)
        run, started = Run(), time.perf_counter()
        await self._socket.send(message.SerializeToString())
        async with asyncio.timeout(self.timeout):
            while not self._read(await self._socket.recv(), run):
                pass
        run.seconds = time.perf_counter() - started
        if state.fragment_id and self.last is not None:  # a fragment's run: the rest of the page stays
            run.buttons = {**self.last.buttons, **run.buttons}
            run.fragments = {**self.last.fragments, **run.fragments}
        self.last = run
        self.errors += len(run.exceptions) + run.compile_error
        self.problems += [f"{run.title}: {text[:200]}" for text in run.exceptions]
        if not self.shows_own_image(run):
            self.wrong_image += 1
            shown = [text[:160] for text in run.texts if VERDICT.search(text)]
            self.problems.append(f"{run.title}: not {self.image} ({self.query_string}; {shown})")
        return run

    def _read(self, data: bytes, run: Run) -> bool:
        """Take in one ForwardMsg; True at the end of the run."""
        message = ForwardMsg()
        message.ParseFromString(data)
        run.messages += 1
        run.received_bytes += len(data)
        if message.ref_hash:  # a message this client has: the server sent only its hash
            message = self.cached.get(message.ref_hash, message)
        elif message.metadata.cacheable and message.hash:
            self.cached[message.hash] = message
        kind = message.WhichOneof("type")
        if kind == "new_session":
            self.page_script_hash = message.new_session.page_script_hash
        elif kind == "navigation":  # the page the run resolved (Next's run opens another one): as the frontend does
            self.page_script_hash = message.navigation.page_script_hash
        elif kind == "auto_rerun":
            run.timers += 1
        elif kind == "page_info_changed":
            self.query_string = message.page_info_changed.query_string
        elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
            element = message.delta.new_element
            what = element.WhichOneof("type")
            if what == "exception":
                run.exceptions.append(f"{element.exception.type}: {element.exception.message}")
            elif what == "button" and (key := button_key(element.button.id)):
                run.buttons[key] = element.button.id
                if message.delta.fragment_id:
                    run.fragments[key] = message.delta.fragment_id
            elif what == "html" and (found := DRAWN.search(element.html.body)):
                run.drawn = (found["mark"], int(found["part"]), found["address"])
            elif (text := element_text(element)) is not None:
                run.texts.append(text)
                if what == "heading" and run.title is None and element.heading.tag == "h1":
                    run.title = text
        elif kind == "script_finished":
            run.compile_error = message.script_finished == FINISHED_WITH_COMPILE_ERROR
            run.restarts += message.script_finished == FINISHED_EARLY_FOR_RERUN
            return message.script_finished != FINISHED_EARLY_FOR_RERUN
        return False

    def shows_own_image(self, run: Run) -> bool:
        """The URL still names the student's image, every verdict of the run names its class, and
        the first (the ViT's: the comparison page's CNN comes second) one of the model's answers
        for it when known (its probability as shown, to one decimal)."""
        if parse_qs(self.query_string).get("test") != [self.image]:
            return False
        if self.expected is None:
            return True
        verdicts = [(found, text) for text in run.texts if (found := VERDICT.search(text))]
        if any(found["truth"] != self.expected.truth for found, _ in verdicts):
            return False
        if not verdicts or not self.expected.answers:
            return True
        found, text = verdicts[0]
        percent = PROBABILITY.findall(text[found.end() :])
        return bool(percent) and any(
            found["pred"] == predicted and abs(float(percent[-1]) - expected) <= 0.15
            for predicted, expected in self.expected.answers
        )


class Asker:
    """A page's script asking its server with ``fetch``: plain GETs over one kept-alive connection,
    as a browser keeps one, on the event loop (thirty held asks need no thirty threads); each
    answer's text, None when the server answers with an error or not at all (the connection is
    then opened again at the next ask)."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.timeout = parts.hostname or "127.0.0.1", parts.port or 80, timeout
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def get(self, path: str) -> str | None:
        try:
            async with asyncio.timeout(self.timeout):
                if self._streams is None:
                    self._streams = await asyncio.open_connection(self.host, self.port)
                reader, writer = self._streams
                writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n".encode())
                await writer.drain()
                status = int((await reader.readline()).split()[1])
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                text = (await reader.readexactly(length)).decode().strip()
        except (OSError, ValueError, IndexError, TimeoutError, asyncio.IncompleteReadError):
            await self.close()
            return None
        return text if status == 200 else None

    async def close(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self._streams = None
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
