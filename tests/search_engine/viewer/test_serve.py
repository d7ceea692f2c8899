"""The web viewer in a real headless Chromium (Debian's ``chromium``, driven by Playwright for Python): the pages
render, the keyboard works, forget removes an item from search, hostile memory stays inert under the real
HTML parser and Content-Security-Policy. Screenshots of every page go to ``ui-results/``.

``make test`` installs Debian's chromium when it is missing and it runs as root; without a browser these tests
are skipped, with the reason.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the viewer's optional packages are not installed (make install)")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (make install)")

import uvicorn  # noqa: E402

from conftest import REPO, SAMPLE, write  # noqa: E402
from fake_embedder import FakeEmbedder  # noqa: E402
from indexer.base.settings import resolve_settings  # noqa: E402
from indexer.pipeline import index  # noqa: E402
from search_engine.viewer.app import create_app  # noqa: E402
from search_engine.viewer.serve import bind  # noqa: E402
from test_app import FORMAT_CHARS, HOSTILE, hostile_events, spoofing_memory  # noqa: E402

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("MEMSEARCH_CHROMIUM", "/usr/bin/chromium"))
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
RESULTS = REPO / "ui-results"
TOKEN = "browser-test-token-5b0c1e"

if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium when run as root "
                "(or: apt-get install chromium)", allow_module_level=True)


class Live:
    """The viewer served by uvicorn from a thread, on a free loopback port, over an indexed sample memory."""

    def __init__(self, home: Path):
        self.settings = resolve_settings(home, model="none")
        self.fake = FakeEmbedder(dim=32)
        index(self.settings, embedder=self.fake)
        sock = bind(0)
        self.port = sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        app = create_app(self.settings, token=TOKEN, csrf="browser-test-csrf", port=self.port, embedder=self.fake,
                         refresh_seconds=0.5)
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started, "the viewer did not start"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    import shutil

    base = tmp_path_factory.mktemp("browser")
    home = base / "memory"
    shutil.copytree(SAMPLE, home)
    hostile_events(home)
    with pytest.MonkeyPatch.context() as mp:  # as conftest's isolated_env, for the whole module
        for name in list(os.environ):
            if name.startswith("MEMSEARCH_"):
                mp.delenv(name)
        mp.setenv("HOME", str(base / "user-home"))
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        mp.setenv("MEMSEARCH_HOME", str(home))
        server = Live(home)
        yield server
        server.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        try:
            chromium = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        except sync_api.Error as exc:
            pytest.fail(f"{CHROMIUM} is there but does not start: {str(exc).splitlines()[0]}")
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live):
    """A fresh browser profile signed in through the printed URL; fails the test on any dialog, page error or
    Content-Security-Policy violation."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    tab.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error"
           and not _the_pages_own_status(m, tab) else None)
    tab.goto(f"{live.base}/?token={TOKEN}")
    assert "token" not in tab.url, "the token must leave the address bar"
    yield tab
    context.close()
    assert problems == []


def _the_pages_own_status(message, tab) -> bool:
    """Chromium logs a page answered with 404 or 410 as a failed resource: a test that opens such a page on
    purpose checks its status itself; a script, style or image that fails to load is still a problem."""
    return (message.text.startswith("Failed to load resource: the server responded with a status of 4")
            and message.location.get("url") == tab.url)


def shot(page, name: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    page.screenshot(path=str(RESULTS / f"{name}.png"), full_page=True)


def test_dashboard(page):
    assert page.locator("h1").inner_text() == "Dashboard"
    assert page.locator("svg.chart rect.bar").count() == 30
    assert page.get_by_text("No embedding model: searches run on BM25 alone.").count() == 1  # model none here
    shot(page, "dashboard")


def test_search_with_the_keyboard_and_open_a_hit(page, live):
    page.goto(f"{live.base}/sessions")
    page.keyboard.press("/")  # opens the search page, where the box has the focus
    page.wait_for_url("**/search")
    page.keyboard.type("webhook refund")
    page.keyboard.press("Enter")
    page.wait_for_selector("ol.hits li.hit")
    first = page.locator("ol.hits li.hit").first
    assert "BM25 rank" in first.inner_text() and "vector rank" in first.inner_text() and "score" in first.inner_text()
    shot(page, "search")
    page.locator("ol.hits a.title").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/item/*")
    assert page.locator("pre.text").inner_text().strip()
    shot(page, "item")


def test_open_a_session(page, live):
    page.goto(f"{live.base}/sessions")
    shot(page, "sessions")
    page.locator("table.sessions a[href='/session?id=7f3c9a']").click()  # a sample session with its summary
    page.wait_for_url("**/session?id=7f3c9a")
    assert page.locator("ol.timeline li.item").count() >= 4
    assert page.locator("article.summary").count() >= 1
    shot(page, "session")


def test_two_sessions_with_alike_ids_look_different(page, live):
    events = [{"id": f"alike-{n}", "ts": f"2026-11-24T09:0{n}:00", "session_id": f"sess-secrets-{n}",
               "project": "payments-api", "type": "prompt", "content": f"alike session number {n}"} for n in (1, 2)]
    write(live.settings.home / "events" / "2026-11-24.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    index(live.settings, embedder=live.fake)
    page.goto(f"{live.base}/sessions")
    links = [page.locator(f"table.sessions a[href='/session?id=sess-secrets-{n}']") for n in (1, 2)]
    shown = [link.inner_text() for link in links]
    assert shown == ["sess-secrets-1", "sess-secrets-2"]
    assert [link.get_attribute("title") for link in links] == ["sess-secrets-1", "sess-secrets-2"]
    for link in links:  # nothing of it hidden by the layout
        assert link.evaluate("a => a.scrollWidth <= a.clientWidth + 1 && a.getBoundingClientRect().width > 0")
    shot(page, "sessions-alike-ids")


def test_the_timeline_updates_while_hooks_write(page, live):
    page.goto(f"{live.base}/timeline")
    shot(page, "timeline")
    event = {"id": "live-1", "ts": "2026-11-23T09:00:00", "session_id": "live-session", "project": "payments-api",
             "type": "prompt", "content": "A freshly captured prompt about quokka migrations"}
    write(live.settings.home / "events" / "2026-11-23.jsonl", json.dumps(event) + "\n")
    index(live.settings, embedder=live.fake)
    page.get_by_text("quokka migrations").first.wait_for(timeout=10_000)


def test_stored_script_is_inert(page, live):
    page.goto(f"{live.base}/search?q=zanzibar&mode=bm25")
    page.wait_for_selector("ol.hits li.hit")
    assert page.evaluate("document.documentElement.dataset.pwned") is None
    assert page.locator("ol.hits img").count() == 0
    assert page.locator("a[href^='javascript:']").count() == 0
    assert "<script>document.documentElement.dataset.pwned" in page.locator("ol.hits").inner_text()
    shot(page, "hostile-search")
    page.locator("ol.hits li.hit").filter(has_text="<script>document").locator("a.title").first.click()
    page.wait_for_url("**/item/*")
    assert page.evaluate("document.documentElement.dataset.pwned") is None
    assert HOSTILE.split(" see ")[0] in page.locator("pre.text").inner_text()


def test_settings_dark_and_narrow(browser, live):
    context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme="dark")
    tab = context.new_page()
    tab.goto(f"{live.base}/settings?token={TOKEN}")
    assert tab.locator("h1").inner_text() == "Settings"
    background = tab.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(22, 24, 27)"  # the dark palette
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "no sideways scrolling"
    shot(tab, "settings-dark-narrow")
    tab.goto(f"{live.base}/")
    shot(tab, "dashboard-dark-narrow")
    context.close()


def test_forget_an_item_and_it_is_gone_from_search(page, live):
    page.goto(f"{live.base}/search?q=wrap+dispatch+on_commit&mode=bm25&kind=event")
    titles = page.locator("ol.hits a.title")
    before = titles.count()
    assert before >= 1
    target = titles.first.get_attribute("href")
    titles.first.click()
    page.get_by_role("link", name="Forget this…").click()
    page.wait_for_url("**/forget")
    shot(page, "forget-confirm")
    confirm_url = page.url
    second = page.context.new_page()  # the same confirmation open in another tab
    second.goto(confirm_url)
    page.get_by_role("button", name="Forget it").click()
    page.wait_for_url("**/forgotten?done=*")  # POST/redirect/GET
    assert page.locator("h1").inner_text() == "Forgotten"
    assert target.rsplit("/", 1)[1] in page.locator("ul.forgotten").inner_text()
    shot(page, "forgotten")
    methods: list[str] = []
    page.on("request", lambda r: methods.append(r.method) if r.resource_type == "document" else None)
    reloaded = page.reload()
    assert reloaded.status == 200 and methods == ["GET"]  # a reload fetches the page: the form is not sent again
    assert page.locator("h1").inner_text() == "Forgotten"
    for back_to in (f"{target}/forget", target):  # Back: the confirmation, then the item itself
        gone = page.go_back()
        assert gone is not None and gone.status == 410 and page.url == f"{live.base}{back_to}"
        assert page.locator("h1").inner_text() == "This memory was forgotten"
        assert "memsearch recent" not in page.content() and page.get_by_role("link", name="Search").count() >= 1
    shot(page, "back-to-a-forgotten-item")
    second.get_by_role("button", name="Forget it").click()  # the same id again, from the other tab
    second.wait_for_url("**/forgotten?id=*")
    assert second.locator("h1").inner_text() == "Already forgotten"
    assert "404" not in second.locator("main").inner_text() and "memsearch recent" not in second.content()
    shot(second, "already-forgotten")
    second.close()
    page.goto(f"{live.base}/search?q=wrap+dispatch+on_commit&mode=bm25&kind=event")
    assert target not in [a.get_attribute("href") for a in page.locator("ol.hits a.title").all()]
    assert page.request.get(f"{live.base}{target}").status == 410
    unknown = page.goto(f"{live.base}/item/deadbeef0000")
    assert unknown is not None and unknown.status == 404
    assert page.locator("h1").inner_text() == "No memory with id deadbeef0000"


def test_a_filter_that_matches_nothing_is_not_an_empty_memory(page, live):
    page.goto(f"{live.base}/sessions?project=" + "%3Cb%3Enowhere%3C/b%3E")
    notice = page.locator("main p.notice")
    assert notice.inner_text().split() == "No sessions match the filter project <b>nowhere</b>. Show all sessions".split()
    assert page.locator("main b").count() == 0  # the name shown as text, not markup
    assert "captured yet" not in page.locator("main").inner_text()
    shot(page, "sessions-no-match")
    page.get_by_role("link", name="Show all sessions").click()
    page.wait_for_url(f"{live.base}/sessions")
    assert page.locator("table.sessions tbody tr").count() >= 2

    page.goto(f"{live.base}/timeline?type=prompt&project=nowhere")
    notice = page.locator("#timeline-items p.notice")
    assert notice.inner_text().split() == ("No items match the filters type prompt, project nowhere. "
                                           "Clear the filters").split()
    page.wait_for_timeout(1200)  # the live refresh (every 0.5 s here) keeps saying the same
    assert "No items match the filters" in page.locator("#timeline-items").inner_text()
    shot(page, "timeline-no-match")
    page.get_by_role("link", name="Clear the filters").click()
    page.wait_for_url(f"{live.base}/timeline")
    assert page.locator("#timeline-items li.item").count() >= 2

    page.goto(f"{live.base}/timeline?session=nope")  # a session filter is honoured, not silently ignored
    assert page.locator("input[name=session]").input_value() == "nope"
    page.wait_for_timeout(1200)  # after the live refresh too
    notice = page.locator("#timeline-items p.notice")
    assert notice.inner_text().split() == "No items match the filter session nope. Clear the filter".split()
    assert page.locator("#timeline-items li.item").count() == 0


def test_bidi_overrides_in_memory_never_reorder_what_a_page_shows(page, live):
    """"please deploy the \u202egnp.exe\u202c build" was displayed as "please deploy the exe.png build"."""
    spoofing_memory(live.settings.home)
    index(live.settings, embedder=live.fake)
    page.goto(f"{live.base}/search?q=quetzal&mode=bm25")
    page.wait_for_selector("ol.hits li.hit")
    hits = page.locator("ol.hits").inner_text()
    assert "please deploy the gnp.exe build" in hits and "quetzal-txt.exe.md" in hits
    page.locator("ol.hits li.hit").filter(has_text="gnp.exe").locator("a.title").first.click()
    page.wait_for_url("**/item/*")
    shot(page, "bidi-item")
    shown = page.evaluate("document.body.innerText")
    assert "please deploy the gnp.exe build" in shown and "sess-evil-1" in shown and "payments-api" in shown
    # the glyphs in reading order: "g" of gnp.exe is left of its "x"
    left = page.evaluate("""() => {
        const text = [...document.querySelectorAll("pre.text")].find((n) => n.textContent.includes("gnp.exe"));
        const node = text.firstChild, at = node.textContent.indexOf("gnp.exe"), range = document.createRange();
        const x = (i) => { range.setStart(node, i); range.setEnd(node, i + 1); return range.getBoundingClientRect().left; };
        return x(at) < x(at + 5);
    }""")
    assert left
    for path in ("/timeline", "/sessions", "/search?q=quetzal&mode=bm25"):
        page.goto(f"{live.base}{path}")
        assert not set(FORMAT_CHARS) & set(page.evaluate("document.body.innerText + document.title")), path


def test_the_timeline_pages_to_older_items_and_back(page, live):
    events = [{"id": f"old-{n}", "ts": f"2026-11-26T08:{n:02d}:00", "session_id": "paging-session",
               "type": "prompt", "content": f"paging prompt {n:02d}"} for n in range(60)]
    write(live.settings.home / "events" / "2026-11-26.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    index(live.settings, embedder=live.fake)
    page.goto(f"{live.base}/timeline?session=paging-session")
    items = page.locator("#timeline-items li.item")
    assert items.count() == 50 and "paging prompt 59" in items.first.inner_text()
    page.get_by_role("link", name="Older →").click()
    page.wait_for_url("**/timeline?session=paging-session&page=2")
    assert [t.split()[-1] for t in page.locator("#timeline-items p.snippet").all_inner_texts()] == [
        f"{n:02d}" for n in range(9, -1, -1)]
    assert page.locator("input[name=session]").input_value() == "paging-session"
    page.wait_for_timeout(1200)  # no live refresh swaps an older page back to the latest items
    assert page.locator("#timeline-items li.item").count() == 10
    shot(page, "timeline-older")
    page.get_by_role("link", name="← Newer").click()
    page.wait_for_url("**/timeline?session=paging-session")
    assert page.locator("#timeline-items li.item").count() == 50
