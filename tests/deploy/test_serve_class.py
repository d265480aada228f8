"""deploy/serve-class.sh: two app servers behind nginx on this machine, and ten students in headless
Chromium, each on a CIFAR-10 test image of their own, pressing Next. Every request of a student
(pages, scripts, images, the websocket) must reach one replica, each keeps their image, and both
replicas have students. Everything listens on 127.0.0.1 and stops at the end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from benchmarks.bench import CHROMIUM, CHROMIUM_ARGS, wait_ready_async
from tests.conftest import SHARED_DATA
from vitviz.config import CIFAR10_CLASSES

pytestmark = pytest.mark.cifar10  # the students open CIFAR-10 test images

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "serve-class.sh"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
STUDENTS, AT_ONCE, NEXTS = 10, 5, 3
START_S, WALK_S = 240, 420  # the servers' start; the ten walks


def free_ports(count: int) -> int:
    """A first port such that it and the ``count - 1`` after it are free on 127.0.0.1."""
    for _ in range(50):
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
    times. What every response's X-Upstream said, the websockets opened, and what the page showed."""
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
    context.on("response", lambda response: seen["upstreams"].add(response.headers.get("x-upstream")))
    cdp = await context.new_cdp_session(page)  # the websocket's handshake: headers Playwright does not show
    await cdp.send("Network.enable")

    def handshake(event: dict) -> None:
        headers = {k.lower(): v for k, v in event["response"]["headers"].items()}
        seen["sockets"].append(headers.get("x-upstream"))

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
    ports = sorted({address.rsplit(":", 1)[1] for address in replicas})
    assert len(ports) == 2, replicas  # both replicas have students
    log = (folder / "access.log").read_text()
    assert all(f"replica=127.0.0.1:{p}" in log for p in ports) and "/_stcore/stream" in log
