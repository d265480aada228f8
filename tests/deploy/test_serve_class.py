"""deploy/serve-class.sh: two app servers behind nginx on this machine, and students in headless
Chromium, each on a CIFAR-10 test image of their own, pressing Next. Every request of a student
(pages, scripts, images, the websocket) must reach one replica, each keeps their image, and both
replicas have students; visitors see no address, port or nginx version, and not Streamlit's
metrics; when a replica is killed, its students' next Next still lands, no slower than the others (MOVED_OVER_STAYED, RECONNECT_S).
Everything listens on 127.0.0.1 and stops at the end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from benchmarks.bench import CHROMIUM, CHROMIUM_ARGS, wait_ready_async
from tests.conftest import SHARED_DATA
from vitviz.models.config import CIFAR10_CLASSES

pytestmark = pytest.mark.cifar10  # the students open CIFAR-10 test images

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "serve-class.sh"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
STUDENTS, AT_ONCE, NEXTS = 10, 5, 3
START_S, WALK_S = 240, 420  # the servers' start; the ten walks
# A student whose replica was killed waits for their next step no longer than this many times the
# slowest student whose replica lived: a ratio measured in one run, since this machine's 2 cores also
# draw the students' pages. Quiet, one click after another: moved 1.4-3.2 s, stayed 1.4-2.3 s, the
# ratio 1.2-1.7 in four runs (the first moved student's click also waits for the reconnect, about
# 0.7 s, and the new replica's first run); a click lost to the dead replica cost 15 s, 7 times.
MOVED_OVER_STAYED = 2.0
# Plus the reconnect, a cost of its own that a faster machine does not shrink: on a machine where a
# stayed student's step took 0.9-1.1 s, the first moved student's took 2.16 s (ratio 2.02).
RECONNECT_S = 1.0


def free_ports(count: int) -> int:
    """A first port such that it and the ``count - 1`` after it are free on 127.0.0.1: from
    VITVIZ_TEST_PORT on where it is set (a machine shared by several runs gives each a range),
    else wherever the system offers one."""
    given = os.environ.get("VITVIZ_TEST_PORT", "")
    for attempt in range(50):
        if given.isascii() and given.isdigit():
            first = int(given) + attempt * count
        else:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                first = probe.getsockname()[1]
        if first + count > 65535:
            continue
        try:
            for port in range(first, first + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError("no free run of ports on 127.0.0.1")


def answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def replica_table(folder: Path) -> list[tuple[str, str, int]]:
    """serve-class.sh's replicas.txt: (the name students' cookies give it, address, process id) a replica."""
    rows = [line.split() for line in (folder / "replicas.txt").read_text().splitlines()]
    return [(name, address, int(pid)) for name, address, pid in rows]


@pytest.fixture
def small_test_folder(tmp_path) -> Path:
    """One CIFAR-10 test image a class: the servers need no more (the lab is not visited)."""
    data = tmp_path / "data"
    for name in CIFAR10_CLASSES:
        (data / "test" / name).mkdir(parents=True)
        first = sorted((SHARED_DATA / "test" / name).iterdir())[0]
        shutil.copy(first, data / "test" / name / "0000.jpg")
    return data


@pytest.fixture
def class_server(tmp_path, small_test_folder):
    """deploy/serve-class.sh 2 PORT on 127.0.0.1; its URL and folder. Stopped (TERM, then KILL of
    its process group) at the end, and every port it used must be closed again."""
    assert Path(NGINX).exists(), "install Debian's nginx: apt-get install -y nginx"
    port, folder = free_ports(3), tmp_path / "serve"
    env = dict(
        os.environ,
        VITVIZ_LISTEN="127.0.0.1",
        VITVIZ_SERVE_DIR=str(folder),
        VITVIZ_DATA=str(small_test_folder),
        VITVIZ_NGINX=NGINX,
        PYTHON=shutil.which("python") or "python3",
    )
    output = (tmp_path / "serve-class.out").open("w+")
    process = subprocess.Popen(
        ["bash", str(SCRIPT), "2", str(port)],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: nothing it started can outlive the test
    )
    try:
        deadline = time.monotonic() + START_S
        while "serving a class" not in (text := Path(output.name).read_text()):
            assert process.poll() is None, f"serve-class.sh stopped: {text[-2000:]}"
            assert time.monotonic() < deadline, f"serve-class.sh did not start within {START_S} s: {text[-2000:]}"
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", folder
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # anything of its group still there
        output.close()
    assert not [p for p in range(port, port + 3) if answers(p)], "a server still listens after the class"


async def student(browser, url: str, image: str) -> dict:
    """One student in a browser of their own: open the app on ``image``, press Next ``NEXTS``
    times. What every response's X-Vitviz-Replica said, the websockets opened, and what the page showed."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    seen: dict = {"upstreams": set(), "sockets": [], "urls": [], "shown": [], "errors": 0, "elsewhere": []}

    async def loopback_only(route):
        if route.request.url.startswith(url):
            await route.continue_()
        else:
            seen["elsewhere"].append(route.request.url)
            await route.abort()

    await context.route("**/*", loopback_only)
    context.on("response", lambda response: seen["upstreams"].add(response.headers.get("x-vitviz-replica")))
    cdp = await context.new_cdp_session(page)  # the websocket's handshake: headers Playwright does not show
    await cdp.send("Network.enable")

    def handshake(event: dict) -> None:
        headers = {k.lower(): v for k, v in event["response"]["headers"].items()}
        seen["sockets"].append(headers.get("x-vitviz-replica"))

    cdp.on("Network.webSocketHandshakeResponseReceived", handshake)
    try:
        await page.goto(f"{url}/?lang=en&test={image}", wait_until="domcontentloaded")
        await wait_ready_async(page, timeout_ms=180_000)
        for _ in range(NEXTS):
            title = await page.locator("h1").first.inner_text()
            await page.locator(".st-key-nav_next button").click()
            await wait_ready_async(page, old_title=title, timeout_ms=180_000)
            seen["errors"] += await page.locator("[data-testid='stException']").count()
            seen["urls"].append(parse_qs(urlparse(page.url).query).get("test", [None])[0])
            seen["shown"].append(
                (
                    await page.locator(".st-key-test_class input").first.input_value(),
                    await page.locator(".st-key-test_index input").first.input_value(),
                )
            )
        seen["cookies"] = {c["name"]: c["value"] for c in await context.cookies()}
    finally:
        await context.close()
    return seen


async def lesson(url: str, images: list[str]) -> list[dict]:
    from playwright.async_api import async_playwright

    gate = asyncio.Semaphore(AT_ONCE)

    async def one(browser, image):
        async with gate:
            return await student(browser, url, image)

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return await asyncio.wait_for(asyncio.gather(*(one(browser, image) for image in images)), WALK_S)
        finally:
            await browser.close()


def test_ten_students_through_nginx_each_stay_on_one_replica_with_their_image(class_server):
    url, folder = class_server
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium chromium-driver"
    images = [f"{name}/0" for name in CIFAR10_CLASSES][:STUDENTS]  # a different image each
    walks = asyncio.run(lesson(url, images))
    replicas = []
    for image, seen in zip(images, walks, strict=True):
        assert len(seen["upstreams"]) == 1, (image, seen["upstreams"])  # pages, scripts, images: one replica ...
        (replica,) = seen["upstreams"]
        assert seen["sockets"] == [replica], (image, seen["sockets"])  # ... and one websocket, there too
        assert seen["cookies"]["vitviz_replica"] == replica
        assert seen["errors"] == 0 and seen["elsewhere"] == [], (image, seen)
        assert seen["urls"] == [image] * NEXTS, (image, seen["urls"])  # the link keeps the image ...
        cls, index = image.split("/")
        assert all(shown_cls.startswith(cls) and shown_index == index for shown_cls, shown_index in seen["shown"]), (
            image,
            seen["shown"],
        )  # ... and so does the session, on its replica
        replicas.append(replica)
    assert len(set(replicas)) == 2, replicas  # both replicas have students
    served = {name: address for name, address, _ in replica_table(folder)}
    log = (folder / "access.log").read_text()
    assert all(f"replica={served[name]} " in log and f"answered={name}" in log for name in set(replicas))
    assert "/_stcore/stream" in log


def headers_of(url: str, cookie: str = "") -> list[tuple[str, str]]:
    """Every header of nginx's answer to a GET of ``url`` (an error status too)."""
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return list(response.headers.items())
    except urllib.error.HTTPError as err:
        return list(err.headers.items())


def websocket_handshake_headers(url: str, cookie: str = "") -> tuple[int, list[tuple[str, str]]]:
    """The status and headers of the websocket handshake at /_stcore/stream, as a browser sends it."""
    host, port = urlparse(url).hostname, urlparse(url).port
    lines = [
        "GET /_stcore/stream HTTP/1.1",
        f"Host: {host}:{port}",
        f"Origin: {url}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Protocol: streamlit, PLACEHOLDER_AUTH_TOKEN",
    ] + ([f"Cookie: {cookie}"] if cookie else [])
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    return int(head[0].split()[1]), [tuple(part.strip() for part in line.split(":", 1)) for line in head[1:]]


def test_visitors_see_no_address_port_or_version_and_no_metrics(class_server):
    """What any visitor's requests get back names no address or port of this machine (not in the
    sticky cookie, not in a header, not in the websocket's handshake), nginx without its version,
    and no Streamlit metrics (function names, cache hits), however the path is spelt."""
    url, folder = class_server
    table = replica_table(folder)
    port = urlparse(url).port
    internal = re.compile(  # an address, or a port of the class as an address writes it
        r"127\.0\.0\.1|localhost|::1|" + "|".join(rf":{p}(?!\d)" for p in range(port, port + 3))
    )
    answers_seen = {}
    for path in ("/", "/_stcore/health", "/_stcore/host-config", "/no-such-page", "/media/nothing.png"):
        answers_seen[path] = headers_of(url + path)
    for name, _, _ in table:  # a browser pinned to each replica, and one whose cookie names none
        answers_seen[f"/ with {name}"] = headers_of(url + "/_stcore/health", cookie=f"vitviz_replica={name}")
    answers_seen["/ with an unknown cookie"] = headers_of(url + "/", cookie="vitviz_replica=127.0.0.1:1")
    status, answers_seen["websocket"] = websocket_handshake_headers(url)
    assert status == 101, answers_seen["websocket"]
    names = {name for name, _, _ in table}
    for where, headers in answers_seen.items():
        for header, value in headers:
            assert not internal.search(f"{header}: {value}"), (where, header, value)
            if header.lower() == "server":
                assert value == "nginx", (where, value)  # server_tokens off
            if header.lower() == "x-vitviz-replica":
                assert value in names, (where, value)
        cookies = [v for h, v in headers if h.lower() == "set-cookie" and v.startswith("vitviz_replica=")]
        assert all(c.split(";")[0].split("=", 1)[1] in names for c in cookies), (where, cookies)
    assert any(h.lower() == "server" for h, _ in answers_seen["/"])
    assert {v for h, v in answers_seen["/"] if h.lower() == "x-vitviz-replica"} <= names
    assert len(names) == 2 and all(name.isalnum() for name in names)  # no address's dots or colons
    for path in (
        "/_stcore/metrics",
        "/_stcore/metrics?families=cache_memory_bytes",
        "/_stcore/%6detrics",
        "/_stcore//metrics",
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + path, timeout=30)
        assert refused.value.code in (403, 404), path
        assert b"cache" not in refused.value.read(), path
    _, address, _ = table[0]
    with urllib.request.urlopen(f"http://{address}/_stcore/metrics", timeout=30) as direct:
        assert direct.status == 200  # the teacher, on the machine itself, still reads them


async def student_on_a_step(browser, url: str, image: str, step: int) -> dict:
    """A student in a browser context of their own, with ``image`` open on tour step ``step`` and ready."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    sockets = {"opened": 0, "closed": 0}

    def opened(socket) -> None:
        sockets["opened"] += 1
        socket.on("close", lambda _: sockets.update(closed=sockets["closed"] + 1))

    page.on("websocket", opened)
    await page.goto(f"{url}/?lang=en&test={image}&step={step}", wait_until="domcontentloaded")
    await wait_ready_async(page, timeout_ms=180_000)
    title = await page.locator("h1").first.inner_text()
    replica = {c["name"]: c["value"] for c in await context.cookies()}["vitviz_replica"]
    return {
        "image": image,
        "step": step,
        "context": context,
        "page": page,
        "sockets": sockets,
        "title": title,
        "replica": replica,
    }


async def next_after_the_kill(you: dict, moved: bool) -> dict:
    """``you`` press Next once (a student whose replica was killed: once their page has seen its
    websocket close): seconds from the click to the next step ready, and what the page shows."""
    page = you["page"]
    if moved:
        while you["sockets"]["closed"] == 0:
            await asyncio.sleep(0.02)
    started = time.perf_counter()
    await page.locator(".st-key-nav_next button").click()  # waits for the button to come back
    seconds = await wait_ready_async(page, old_title=you["title"], timeout_ms=60_000) - started
    return {
        "seconds": seconds,
        "title": await page.locator("h1").first.inner_text(),
        "step": parse_qs(urlparse(page.url).query).get("step", [None])[0],
        "test": parse_qs(urlparse(page.url).query).get("test", [None])[0],
        "shown": (
            await page.locator(".st-key-test_class input").first.input_value(),
            await page.locator(".st-key-test_index input").first.input_value(),
        ),
        "errors": await page.locator("[data-testid='stException']").count(),
        "replica": {c["name"]: c["value"] for c in await you["context"].cookies()}["vitviz_replica"],
    }


async def class_loses_a_replica(url: str, folder: Path, students: list[tuple[str, int]]) -> tuple[list, list, str]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            class_ = [await student_on_a_step(browser, url, image, step) for image, step in students]
            killed, _, pid = next(row for row in replica_table(folder) if row[0] == class_[0]["replica"])
            os.kill(pid, signal.SIGKILL)  # one app server dies under its students
            while Path(f"/proc/{pid}").exists():
                await asyncio.sleep(0.02)
            moved = [you["replica"] == killed for you in class_]
            after = []
            for you, m in zip(class_, moved, strict=True):  # one after another, as a class clicks on its
                # own devices: five Chromiums at once would measure this machine's 2 cores drawing five pages
                after.append(await asyncio.wait_for(next_after_the_kill(you, m), 60))
            return class_, after, killed
        finally:
            await browser.close()


def test_students_of_a_killed_replica_go_on_with_their_next_click(class_server):
    """Five students on different images and steps; one app server is killed by its process id;
    every student's next Next opens the next step, on their image, and those of the killed server
    (now on the other one) wait no longer than MOVED_OVER_STAYED times the others, plus the
    reconnect (nginx sends their requests and their new websocket there, and the app follows a Next
    clicked in a session it never drew)."""
    url, folder = class_server
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium chromium-driver"
    students = [("cat/0", 0), ("dog/0", 1), ("ship/0", 2), ("frog/0", 3), ("truck/0", 1)]
    class_, after, killed = asyncio.run(class_loses_a_replica(url, folder, students))
    assert len({you["replica"] for you in class_}) == 2  # students on both: some move, some stay
    titles = {}
    for you, now in zip(class_, after, strict=True):
        image, step = you["image"], you["step"]
        assert now["errors"] == 0 and now["step"] == str(step + 1), (image, step, now)
        assert now["title"] != you["title"] and now["title"].startswith(f"{step + 1}. "), (image, now["title"])
        assert now["test"] == image and now["shown"] == tuple(image.split("/")), (image, now)
        assert now["replica"] != killed, (image, now)  # the cookie follows the live replica
        titles[step + 1] = now["title"]
    assert len(titles) == 4  # steps 1, 2, 3 and 4
    waits = [
        (you["image"], "moved" if you["replica"] == killed else "stayed", round(now["seconds"], 2))
        for you, now in zip(class_, after, strict=True)
    ]
    print("seconds from Next to the next step (image, moved or stayed, seconds):", waits)  # for the log (-s)
    moved = [seconds for _, kind, seconds in waits if kind == "moved"]
    stayed = [seconds for _, kind, seconds in waits if kind == "stayed"]
    assert moved and stayed and max(moved) <= MOVED_OVER_STAYED * max(stayed) + RECONNECT_S, waits


def test_the_class_route_passes_nginx_to_each_replica_unlogged(class_server):
    """A following student's page asks ``/api/vitviz/class/CODE`` twice a second (vitviz.app.where):
    nginx passes it to the browser's replica, which answers (a class it does not hold: "gone"),
    and keeps it out of its access log, which thirty students would fill."""
    url, folder = class_server
    for name, _, _ in replica_table(folder):
        request = urllib.request.Request(
            url + "/api/vitviz/class/ABCD2345", headers={"Cookie": f"vitviz_replica={name}"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200 and answer.read() == b"gone gone"
            assert answer.headers["X-Vitviz-Replica"] is None  # not the pages' location: no sticky headers
    headers_of(url + "/_stcore/health")  # a logged request after them: the log is written up to here
    log = (folder / "access.log").read_text()
    assert "/_stcore/health" in log and "/api/vitviz/class/" not in log
