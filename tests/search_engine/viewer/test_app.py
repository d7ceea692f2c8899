"""The web viewer through Starlette's test client: the guard (token, Host, CSRF, Origin, methods, headers), the
pages over a real index, and memory text that tries to be HTML. The same pages in a real browser:
test_serve.py."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("starlette", reason="the viewer's optional packages are not installed (make install)")

from starlette.testclient import TestClient  # noqa: E402

from conftest import write  # noqa: E402
from indexer.base.settings import resolve_settings  # noqa: E402
from indexer.pipeline import index  # noqa: E402
from search_engine.viewer.app import create_app  # noqa: E402
from search_engine.viewer.security import CSP, cookie_name  # noqa: E402

TOKEN, CSRF, PORT = "launch-token-0123456789", "csrf-token-9876543210", 8765
BASE = f"http://127.0.0.1:{PORT}"
#: Memory text written by someone else: it must come out as text, never as markup, a link or a script.
HOSTILE = ('<script>document.documentElement.dataset.pwned = "yes"</script> see '
           '<a href="javascript:alert(1)">the docs</a> [docs](javascript:alert(2)) '
           '<img src=x onerror="document.documentElement.dataset.pwned=1"> </memory-context> zanzibar')


def hostile_events(home, session="hostile-session") -> None:
    events = [
        {"id": "h1", "ts": "2026-11-22T08:00:00", "session_id": session, "project": "payments-api",
         "type": "prompt", "content": f"Please look at this page: {HOSTILE}"},
        {"id": "h2", "ts": "2026-11-22T08:01:00", "session_id": session, "project": "payments-api",
         "type": "response", "content": "The page tries to inject markup; zanzibar is the marker word."},
    ]
    write(home / "events" / "2026-11-22.jsonl", "".join(json.dumps(e) + "\n" for e in events))


@pytest.fixture
def indexed(sample_home, fake):
    hostile_events(sample_home)
    write(sample_home / "daily" / "2026-11-21.md",
          f"# 2026-11-21\n\n## Odd page <script>document.title = 'owned'</script>\n\n{HOSTILE}\n")
    settings = resolve_settings(sample_home)
    index(settings, embedder=fake)
    return settings


def client_for(settings, fake, **kw) -> TestClient:
    return TestClient(create_app(settings, token=TOKEN, csrf=CSRF, port=PORT, embedder=fake), base_url=BASE, **kw)


@pytest.fixture
def anonymous(indexed, fake) -> TestClient:
    return client_for(indexed, fake)


@pytest.fixture
def client(indexed, fake) -> TestClient:
    c = client_for(indexed, fake)
    c.cookies.set(cookie_name(PORT), TOKEN)
    return c


def hit_ids(html: str) -> list[str]:
    return re.findall(r'href="/item/([0-9a-f]+)"', html)


# -- the guard -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/search?q=webhook", "/static/viewer.css", "/item/abcd", "/nowhere"])
def test_no_token_is_401_and_a_wrong_one_403(anonymous, path):
    assert anonymous.get(path).status_code == 401
    anonymous.cookies.set(cookie_name(PORT), "guessed")
    assert anonymous.get(path).status_code == 403
    anonymous.cookies.clear()
    assert anonymous.get(path + ("&" if "?" in path else "?") + "token=guessed").status_code == 403


def test_the_token_becomes_a_cookie_and_leaves_the_address(anonymous):
    reply = anonymous.get(f"/search?q=webhook&token={TOKEN}&mode=bm25", follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == "/search?q=webhook&mode=bm25"
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(PORT)}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    page = anonymous.get("/search?q=webhook&mode=bm25")
    assert page.status_code == 200 and TOKEN not in page.text


@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{PORT}", f"127.0.0.1.nip.io:{PORT}",
                                  f"127.0.0.1:{PORT + 1}", f"0.0.0.0:{PORT}", f"[::1]:{PORT}", ""])
def test_a_foreign_host_is_refused_even_with_the_token(client, host):
    """DNS rebinding: a page under another name that resolves to 127.0.0.1 sends its own Host."""
    reply = client.get("/", headers={"host": host})
    assert reply.status_code == 400
    assert "Host" in reply.text


def test_loopback_names_are_accepted(client):
    for host in (f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"LOCALHOST:{PORT}"):
        assert client.get("/settings", headers={"host": host}).status_code == 200


def post_forget(client, ident, *, csrf=CSRF, origin=BASE, content_type="application/x-www-form-urlencoded"):
    headers = {"content-type": content_type}
    if origin is not None:
        headers["origin"] = origin
    body = "&".join(f"{k}={v}" for k, v in {"id": ident, "csrf": csrf}.items() if v is not None)
    return client.post("/forget", content=body, headers=headers, follow_redirects=False)


def test_a_post_needs_the_csrf_token_and_the_viewers_origin(client):
    ident = hit_ids(client.get("/search?q=zanzibar&mode=bm25").text)[0]
    assert post_forget(client, ident, csrf=None).status_code == 403
    assert post_forget(client, ident, csrf="forged").status_code == 403
    for origin in (None, "null", "http://evil.example", f"http://127.0.0.1:{PORT + 1}", f"https://127.0.0.1:{PORT}"):
        assert post_forget(client, ident, origin=origin).status_code == 403, origin
    assert post_forget(client, ident, content_type="text/plain").status_code == 400
    assert post_forget(client, ident, content_type="multipart/form-data; boundary=x").status_code == 400
    # nothing was forgotten by any of them
    assert client.get(f"/item/{ident}").status_code == 200


def test_a_post_without_the_cookie_is_refused_before_anything_else(anonymous):
    assert post_forget(anonymous, "abcd1234").status_code == 401


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_only_get_and_post_and_no_cors(client, method):
    reply = client.request(method, "/forget", headers={"origin": "http://evil.example",
                                                         "access-control-request-method": "POST"})
    assert reply.status_code == 405
    assert not [h for h in reply.headers if h.lower().startswith("access-control-")]


def test_websockets_are_refused(client):
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect), client.websocket_connect("/"):
        pass


def test_every_page_answers_before_the_first_index(home, fake):
    c = client_with_cookie(resolve_settings(home), fake)
    assert "The index was never built" in c.get("/").text
    for path in ("/sessions", "/timeline", "/search?q=anything&mode=bm25", "/settings"):
        assert c.get(path).status_code == 200, path
    assert "the index was never built" in c.get("/search?q=anything&mode=bm25").text
    assert c.get("/item/abcd1234").status_code == 404


def test_an_empty_memory_says_nothing_is_captured_even_under_a_filter(home, fake):
    c = client_with_cookie(resolve_settings(home), fake)
    for path in ("/sessions", "/sessions?project=payments-api", "/timeline", "/timeline?project=x&type=prompt",
                 "/timeline?project=x&partial=1"):
        html = c.get(path).text
        assert "captured yet" in html and "match the filter" not in html, path


def test_a_filter_that_matches_nothing_says_so_and_offers_to_clear_it(client):
    """Not "nothing captured yet": the memory has sessions, the filter matches none of them."""
    sessions = " ".join(client.get("/sessions", params={"project": '<b>nope</b>'}).text.split())
    assert "captured yet" not in sessions
    assert 'No sessions match the filter project <code class="filter">&lt;b&gt;nope&lt;/b&gt;</code>.' in sessions
    assert '<a href="/sessions" class="clear-filter">Show all sessions</a>' in sessions
    for path in ("/timeline?project=nope&type=prompt", "/timeline?project=nope&type=prompt&partial=1"):
        html = " ".join(client.get(path).text.split())
        assert "captured yet" not in html, path
        assert ('No items match the filters type <code class="filter">prompt</code>, project '
                '<code class="filter">nope</code>.') in html, path
        assert '<a href="/timeline" class="clear-filter">Clear the filters</a>' in html, path
    assert "Clear the filter<" in client.get("/timeline?project=nope").text


def test_a_search_whose_filters_match_nothing_says_so_and_offers_to_search_without_them(client):
    html = " ".join(client.get("/search", params={"q": "export", "mode": "bm25", "project": "<i>nope</i>",
                                                  "kind": "fact"}).text.split())
    assert "0 hits" in html
    assert ('No hits match the filters kind <code class="filter">fact</code>, project '
            '<code class="filter">&lt;i&gt;nope&lt;/i&gt;</code>.') in html
    assert '<a href="/search?q=export&amp;mode=bm25" class="clear-filter">Search without filters</a>' in html
    unfiltered = client.get("/search", params={"q": "export", "mode": "bm25"}).text
    assert "clear-filter" not in unfiltered and "0 hits" not in unfiltered


def test_forget_is_not_reachable_by_get(client):
    assert client.get("/forget?id=abcd&csrf=" + CSRF).status_code == 405


@pytest.mark.parametrize("path", [
    "/item/../../etc/passwd", "/item/..%2F..%2Fetc%2Fpasswd", "/item/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/item/....//....//etc/passwd", "/item/zzzz", "/item/abc", "/item/" + "a" * 40,
    "/static/../app.py", "/static/..%2Fapp.py", "/static/%2e%2e/app.py", "/static/..%2F..%2F..%2Fetc%2Fpasswd",
    "/static/../../../indexer/settings.py", "/MEMORY.md", "/events/2026-11-22.jsonl", "/.memsearch/index.db",
    "/session?id=../../etc/passwd",
])
def test_traversal_and_unknown_ids_are_404(client, path):
    reply = client.get(path)
    assert reply.status_code == 404
    assert "root:" not in reply.text and "def resolve_settings" not in reply.text and "SQLite format" not in reply.text


@pytest.mark.parametrize("path", ["/", "/search?q=webhook", "/static/viewer.js", "/item/zzzz", "/settings"])
def test_every_answer_carries_the_security_headers(client, anonymous, path):
    for reply in (client.get(path), anonymous.get(path)):
        assert reply.headers["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "frame-ancestors 'none'" in CSP
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["x-frame-options"] == "DENY"
        assert reply.headers["referrer-policy"] == "same-origin"
        assert "access-control-allow-origin" not in reply.headers


def test_pages_have_no_inline_script_or_style(client):
    for path in ("/", "/search?q=zanzibar&mode=bm25", "/settings", "/timeline", "/sessions"):
        html = client.get(path).text
        assert re.findall(r"<script\b[^>]*>", html) == ['<script src="/static/viewer.js" defer>'], path
        assert " style=" not in html and "<style" not in html and " on" + "click=" not in html


# -- memory text stays text --------------------------------------------------------------------------------------

def assert_inert(html: str) -> None:
    assert "<script>document" not in html and "<script>" not in html.split("</head>")[-1]
    assert 'href="javascript:' not in html and "<img src=x" not in html
    assert "</memory-context>" not in html
    assert "&lt;script&gt;document" in html and "&lt;/memory-context&gt;" in html


def test_hostile_memory_is_escaped_in_search_and_item(client):
    page = client.get("/search?q=zanzibar&mode=bm25").text
    assert_inert(page)
    ids = hit_ids(page)
    assert len(ids) >= 2
    for ident in ids:
        item = client.get(f"/item/{ident}")
        assert item.status_code == 200
        if "zanzibar" in item.text and "&lt;script" in item.text:
            assert_inert(item.text)


def test_hostile_text_in_filters_and_errors_is_escaped(client):
    page = client.get("/search", params={"q": "<script>x</script>", "project": '"><script>y</script>',
                                         "since": "<b>never</b>"}).text
    assert "<script>x" not in page and "<script>y" not in page and "<b>never" not in page
    assert "&lt;b&gt;never&lt;/b&gt;" in page  # the bad date is reported, escaped


# -- pages -------------------------------------------------------------------------------------------------------

def test_search_shows_ranks_and_fused_scores_as_explain_gives_them(client, indexed, fake):
    from search_engine.search import search

    html = client.get("/search?q=retry+idempotency&mode=hybrid&k=5").text
    result = search(indexed, "retry idempotency", mode="hybrid", k=5, explain=True, embedder=fake)
    assert hit_ids(html)[:len(result.hits)] == [h.id for h in result.hits]
    explain = {e.id: e for e in result.explain}
    for h in result.hits:
        assert f"score <strong>{h.score:.4f}</strong>" in html
        bm25 = f"BM25 rank {h.bm25_rank} (+{explain[h.id].bm25_contribution:.4f})" if h.bm25_rank else "BM25 rank –"
        vector = (f"vector rank {h.vector_rank} (+{explain[h.id].vector_contribution:.4f})" if h.vector_rank
                  else "vector rank –")
        assert bm25 in html and vector in html
    assert "mode used <strong>hybrid</strong>" in html


def test_search_modes_filters_and_errors(client):
    bm25 = client.get("/search?q=webhook&mode=bm25&kind=event").text
    assert "mode used <strong>bm25</strong>" in bm25 and 'kind-note' not in bm25 and "kind-event" in bm25
    assert "invalid mode" in client.get("/search?q=webhook&mode=psychic").text
    assert "invalid kind" in client.get("/search?q=webhook&kind=poem").text
    assert "whole number" in client.get("/search?q=webhook&k=many").text
    assert 'value="webhook"' in bm25  # the form keeps the query


def test_hidden_duplicates_are_listed_on_demand(home, fake):
    text = "The deploy checklist: run the migrations, warm the cache, then flip the feature flag for payments."
    write(home / "a.md", f"# A\n\n{text}\n")
    write(home / "b.md", f"# B\n\n{text} Done.\n")
    settings = resolve_settings(home)
    index(settings, embedder=fake)
    html = client_with_cookie(settings, fake).get("/search?q=deploy+checklist+migrations&mode=bm25").text
    assert "1 near-duplicate hidden" in html
    dups = html[html.index('<details class="dups">'):]
    assert "duplicate of" in dups and len(hit_ids(dups)) == 2


def client_with_cookie(settings, fake) -> TestClient:
    c = client_for(settings, fake)
    c.cookies.set(cookie_name(PORT), TOKEN)
    return c


def test_item_page_has_text_source_lines_and_neighbours(client, indexed):
    from search_engine.lookup import show

    ident = hit_ids(client.get("/search?q=nightly+export&mode=bm25&kind=note").text)[0]
    view = show(indexed, ident)
    html = client.get(f"/item/{ident}").text
    assert f"{view.chunk.path}:{view.chunk.line_start}" in html
    if view.next_id:
        assert f'href="/item/{view.next_id}" rel="next"' in html
    assert f'href="/item/{ident}/forget"' in html


def test_settings_page_shows_each_value_and_its_origin(indexed, fake, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_RRF_K", "42")
    settings = resolve_settings(indexed.home, chunk_chars=900)
    html = client_with_cookie(settings, fake).get("/settings").text
    row = re.search(r"<code>rrf_k</code></th>\s*<td><code>42</code></td>\s*<td><span class=\"badge\">env</span>", html)
    assert row, html[:3000]
    assert re.search(r"<code>chunk_chars</code></th>\s*<td><code>900</code></td>\s*<td><span class=\"badge\">flag", html)
    assert re.search(r"<code>candidates</code></th>\s*<td><code>50</code></td>\s*<td><span class=\"badge\">default",
                     html)


def test_the_cli_command_refuses_a_bad_port(indexed):
    from typer.testing import CliRunner

    from search_engine.cli.main import app

    result = CliRunner().invoke(app, ["ui", "--port", "70000", "--no-browser"])
    assert result.exit_code == 2 and "--port" in result.output


def test_a_port_in_use_is_one_line(indexed):
    from indexer.base.errors import MemsearchError
    from search_engine.viewer.serve import bind

    taken = bind(0)
    try:
        with pytest.raises(MemsearchError, match=r"cannot listen on 127\.0\.0\.1:\d+: .*choose another --port"):
            bind(taken.getsockname()[1])
    finally:
        taken.close()


def test_forget_with_csrf_and_origin_removes_the_item_everywhere(client, indexed):
    from search_engine.browse import recent

    ident = hit_ids(client.get("/search?q=zanzibar+marker&mode=bm25&kind=event").text)[0]
    confirm = client.get(f"/item/{ident}/forget")
    assert confirm.status_code == 200
    assert f'name="csrf" value="{CSRF}"' in confirm.text and f'name="id" value="{ident}"' in confirm.text
    done = post_forget(client, ident)
    assert done.status_code == 303 and done.headers["location"].startswith("/forgotten?done=")
    assert client.get(f"/item/{ident}").status_code == 410
    assert ident not in hit_ids(client.get("/search?q=zanzibar+marker&mode=bm25").text)
    assert ident not in [h.id for h in recent(indexed, limit=100)]


def test_forget_redirects_to_a_page_that_a_reload_only_fetches_again(client):
    """POST/redirect/GET: the confirmation is a GET page, so a reload neither sends the form again nor shows an
    error; a second POST of the same id (another tab, the form resent) says it is already forgotten."""
    ident = hit_ids(client.get("/search?q=zanzibar+marker&mode=bm25&kind=event").text)[0]
    location = post_forget(client, ident).headers["location"]
    for _ in range(2):  # the page, then a reload
        page = client.get(location)
        assert page.status_code == 200 and "<h1>Forgotten</h1>" in page.text
        assert f"<code>{ident}</code> event" in page.text and "1 chunk removed from the index" in page.text
    again = post_forget(client, ident)
    assert again.status_code == 303 and again.headers["location"] == f"/forgotten?id={ident}"
    friendly = client.get(again.headers["location"])
    assert friendly.status_code == 200 and "<h1>Already forgotten</h1>" in friendly.text
    assert f"no memory with id <code>{ident}</code> is in the index any more" in " ".join(friendly.text.split())
    assert "no chunk with id" not in friendly.text and "error" not in friendly.text.lower()
    expired = client.get("/forgotten?done=from-a-previous-launch")
    assert expired.status_code == 404 and "No such confirmation" in expired.text


def test_the_forgotten_page_does_not_claim_a_present_item_is_forgotten(client):
    ident = hit_ids(client.get("/search?q=zanzibar&mode=bm25").text)[0]
    reply = client.get(f"/forgotten?id={ident}", follow_redirects=False)
    assert reply.status_code == 303 and reply.headers["location"] == f"/item/{ident}"
    hostile = client.get("/forgotten", params={"id": "<script>x</script>"})
    assert "<script>x" not in hostile.text


def test_forgetting_an_id_never_known_or_malformed_is_not_already_forgotten(client):
    """Only an id the forget log records is "already forgotten": one never known is a 404 that says so, a
    malformed one a 400 in one line, both escaped."""
    unknown = post_forget(client, "deadbeef0000")
    assert unknown.status_code == 404 and "<h1>No memory with id <code>deadbeef0000</code></h1>" in unknown.text
    assert 'href="/search"' in unknown.text and "forgotten" not in unknown.text.lower()
    for ident in ("zz", "%3Cb%3Ex%3C%2Fb%3E"):
        bad = post_forget(client, ident)
        assert bad.status_code == 400 and "is not a memory id: ids are 4 to 32 hexadecimal digits" in bad.text
        assert "forgotten" not in bad.text.lower() and "<b>x" not in bad.text
    assert client.get("/forgotten?id=deadbeef0000").status_code == 404
    assert client.get("/forgotten?id=zz").status_code == 400
    bogus = client.get("/forgotten?done=bogus")
    assert bogus.status_code == 404 and "<h1>No such confirmation</h1>" in bogus.text
    assert "forgotten" not in bogus.text.split("<main", 1)[1].split("</main>")[0].lower().replace("/forgotten", "")


def test_a_forgotten_items_page_says_it_was_forgotten(client):
    """The browser's Back button after a forget lands on the item and its confirmation: 410 Gone, in the
    viewer's words; an id never known stays a 404."""
    ident = hit_ids(client.get("/search?q=zanzibar+marker&mode=bm25&kind=event").text)[0]
    post_forget(client, ident)
    for path in (f"/item/{ident}", f"/item/{ident}/forget", f"/item/{ident.upper()}"):
        gone = client.get(path)
        assert gone.status_code == 410, path
        assert "<h1>This memory was forgotten</h1>" in gone.text and f"<code>{ident}</code>" in gone.text
        assert 'href="/search"' in gone.text and 'href="/timeline"' in gone.text
        assert "memsearch recent" not in gone.text
    never = client.get("/item/deadbeef0000")
    assert never.status_code == 404 and "No memory with id <code>deadbeef0000</code>" in never.text
    assert "memsearch recent" not in never.text and 'href="/search"' in never.text


def test_dashboard_shows_index_health_events_per_day_and_privacy(client, indexed):
    from search_engine.browse import stats

    figures = stats(indexed)
    html = client.get("/").text
    assert f"<dt>Chunks</dt><dd>{figures.chunks}</dd>" in html
    from indexer.base.embedder import resolve_model

    if resolve_model(indexed).available:
        assert f"<strong>{figures.pending_embeddings}</strong> pending" in html
    else:
        assert "No embedding model: searches run on BM25 alone." in html
    assert html.count('<rect class="bar"') == 30
    assert "<title>2026-11-22: 2</title>" in html  # the two hostile-session events
    assert f"<dt>Private spans redacted</dt><dd>{figures.privacy.private_spans}</dd>" in html
    assert figures.privacy.private_spans >= 1  # the sample memory has a <private> span


def test_dashboard_without_a_model_says_bm25_alone(indexed, fake):
    html = client_with_cookie(resolve_settings(indexed.home, model="none"), fake).get("/").text
    assert "No embedding model: searches run on BM25 alone." in html and "<progress" not in html


def test_sessions_list_and_one_sessions_timeline(client):
    listing = client.get("/sessions").text
    assert "/session?id=hostile-session" in listing and "/session?id=7f3c9a" in listing
    assert "&lt;script&gt;" in listing and "<script>document" not in listing  # its opening prompt, escaped
    one = client.get("/session?id=hostile-session").text
    assert_inert(one)
    assert one.index("Please look at this page") < one.index("The page tries to inject markup")  # oldest first
    assert client.get("/session?id=no-such-session").status_code == 404
    sample = client.get("/session?id=7f3c9a").text  # the sample memory has its summary, sessions/7f3c9a.md
    summary, timeline = sample.split('id="h-tl"')
    assert '<article class="summary">' in summary and "Files touched" in summary
    assert "Why does test_refund_webhook fail intermittently?" in timeline and "Files touched" not in timeline


def test_two_sessions_never_look_the_same_in_the_list(client, indexed, fake):
    sids = ("sess-secrets-1", "sess-secrets-2", "0123456789abcdef-aaaa", "0123456789abcdef-bbbb")
    events = [{"id": f"twin-{n}", "ts": f"2026-11-23T08:0{n}:00", "session_id": sid, "type": "prompt",
               "content": f"look-alike session {n}"} for n, sid in enumerate(sids)]
    write(indexed.home / "events" / "2026-11-23.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    index(indexed, embedder=fake)
    listing = client.get("/sessions").text
    shown = dict(re.findall(r'<a href="/session\?id=([^"]+)" title="[^"]+"><code>([^<]+)</code></a>', listing))
    assert shown["sess-secrets-1"] == "sess-secrets-1" and shown["sess-secrets-2"] == "sess-secrets-2"
    assert shown["0123456789abcdef-aaaa"] == "0123456789abcdef-a…"
    assert len(set(shown.values())) == len(shown)
    assert 'title="0123456789abcdef-bbbb"' in listing
    # a timeline row names its session too: never cut to 8 characters, the whole id in the title
    rows = {sid: client.get("/timeline", params={"partial": 1, "session": sid}).text for sid in sids}
    assert ">session sess-secrets-1<" in rows["sess-secrets-1"] and ">session sess-secrets-2<" in rows["sess-secrets-2"]
    assert 'title="session 0123456789abcdef-aaaa">session 0123456789abcdef-aa…<' in rows["0123456789abcdef-aaaa"]
    assert ">session 0123456789abcdef-bb…<" in rows["0123456789abcdef-bbbb"]


def test_timeline_newest_first_filtered_and_as_a_fragment(client):
    full = client.get("/timeline").text
    assert 'data-refresh="/timeline?partial=1"' in full
    prompts = client.get("/timeline?type=prompt&partial=1").text
    assert "<html" not in prompts and "kind-event" in prompts
    assert "The page tries to inject markup" not in prompts  # a response, filtered out
    assert_inert(prompts)


def test_the_timeline_honours_a_session_filter(client):
    """``/timeline?session=…`` shows that session's items, keeps the filter in its form and its live refresh, and
    says so when no item matches it (it was silently ignored)."""
    one = client.get("/timeline?session=hostile-session").text
    assert "The page tries to inject markup" in one and "test_refund_webhook" not in one
    assert 'name="session" value="hostile-session"' in one
    assert 'data-refresh="/timeline?partial=1&amp;session=hostile-session"' in one
    for path in ("/timeline?session=nope", "/timeline?session=nope&partial=1"):
        html = " ".join(client.get(path).text.split())
        assert 'No items match the filter session <code class="filter">nope</code>.' in html, path
        assert "<li class=\"item\">" not in html, path


def test_an_unexpected_fault_is_a_500_page_and_a_log_line_without_content(client, indexed, monkeypatch):
    import search_engine.browse

    def broken(settings):
        raise RuntimeError("a fault quoting memory text zanzibar")

    monkeypatch.setattr(search_engine.browse, "stats", broken)
    reply = client.get("/")
    assert reply.status_code == 500
    assert "unexpected error (RuntimeError)" in reply.text and "zanzibar" not in reply.text
    assert reply.headers["content-security-policy"] == CSP
    log = (indexed.log_dir / "ui.log").read_text()
    assert "RuntimeError at test_app.py:" in log and "zanzibar" not in log


def _start_ui(*args):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "search_engine.cli.main", "ui", "--no-browser", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [proc.stdout.readline(), proc.stdout.readline()]
    match = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", "".join(lines))
    assert match, "".join(lines) + proc.stderr.read()
    return proc, int(match.group(1)), match.group(2)


def test_memsearch_ui_serves_on_loopback_and_stops_when_idle(indexed):
    import socket
    import urllib.error
    import urllib.request

    proc, port, token = _start_ui("--idle-timeout", "3")
    try:
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        page = opener.open(f"http://127.0.0.1:{port}/search?q=webhook&mode=bm25&token={token}", timeout=10)
        assert page.status == 200 and page.url.endswith("/search?q=webhook&mode=bm25")  # redirected, signed in
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert refused.value.code == 401
        listening = [c for c in _listeners(port)]
        assert listening and all(addr == "127.0.0.1" for addr in listening)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "stopped (idle timeout)" in out and err == ""
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def _listeners(port: int) -> list[str]:
    """The local addresses listening on ``port`` (from /proc/net/tcp: state 0A is LISTEN)."""
    out = []
    for line in open("/proc/net/tcp").read().splitlines()[1:] + open("/proc/net/tcp6").read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, _, hexport = local.rpartition(":")
        if state == "0A" and int(hexport, 16) == port:
            out.append(".".join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0)) if len(addr) == 8 else addr)
    return out


def test_memsearch_ui_stops_on_ctrl_c(indexed):
    import signal

    proc, _, _ = _start_ui()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "stopped (interrupted)" in out
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["search_engine.viewer.security", "search_engine.viewer.chart",
                                  "search_engine.viewer.app"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_the_browsers_one_time_ticket_signs_in_once(indexed, fake):
    guard = create_app(indexed, token=TOKEN, csrf=CSRF, port=PORT, embedder=fake)
    ticket = guard.ticket()
    first, second = TestClient(guard, base_url=BASE), TestClient(guard, base_url=BASE)
    reply = first.get(f"/settings?token={ticket}", follow_redirects=False)
    assert reply.status_code == 303 and f"{cookie_name(PORT)}={TOKEN};" in reply.headers["set-cookie"]
    assert first.get("/settings").status_code == 200
    assert second.get(f"/settings?token={ticket}", follow_redirects=False).status_code == 403


#: Bidi overrides, embeddings and isolates, and other format characters (zero-width, BOM): what the CLI and the
#: hooks strip (``search_engine.context.sanitize``), so stored text cannot reorder or hide what a page shows.
FORMAT_CHARS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200e\u200f\ufeff"


def spoofing_memory(home) -> None:
    """A prompt whose text, session id and project hold bidi overrides ("gnp.exe" would show as "exe.png"), and a
    note whose file name and heading do."""
    event = {"id": "bidi-1", "ts": "2026-11-24T08:00:00", "session_id": "sess-\u202eevil\u202c-1",
             "project": "pay\u2066ments\u2069-api", "type": "prompt",
             "content": "please deploy the \u202egnp.exe\u202c build, quetzal\u200b"}
    write(home / "events" / "2026-11-24.jsonl", json.dumps(event) + "\n")
    write(home / "daily" / "quetzal-\u202etxt.exe\u202c.md", "# Quetzal \u202eexe.gnp\u202c notes\n\nquetzal rollout\n")


def test_every_page_shows_text_without_bidi_or_format_characters(client, indexed, fake):
    spoofing_memory(indexed.home)
    index(indexed, embedder=fake)
    search = client.get("/search?q=quetzal&mode=bm25").text
    ids = hit_ids(search)
    assert len(ids) == 2
    session = "sess-\u202eevil\u202c-1"
    pages = {"search": search, **{f"item {i}": client.get(f"/item/{i}").text for i in ids},
             "timeline": client.get("/timeline").text, "sessions": client.get("/sessions").text,
             "session": client.get("/session", params={"id": session}).text,
             "timeline of the session": client.get("/timeline", params={"session": session, "partial": 1}).text,
             "dashboard": client.get("/").text}
    for name, html in pages.items():
        assert not set(FORMAT_CHARS) & set(html), name
    assert "please deploy the gnp.exe build" in search
    assert "quetzal-txt.exe.md" in search and "Quetzal exe.gnp notes" in search
    assert "sess-evil-1" in pages["sessions"] and "sess-evil-1" in pages["timeline"]
    assert "payments-api" in pages["session"]
    # links still carry the real id, quoted, so the session is found
    assert "/session?id=sess-%E2%80%AEevil%E2%80%AC-1" in pages["sessions"]


def test_the_timeline_pages_back_past_the_latest_50_items_with_its_filters(client, indexed, fake):
    events = [{"id": f"pg{n}", "ts": f"2026-11-25T{n // 60:02d}:{n % 60:02d}:00", "session_id": "long-session",
               "project": "payments-api", "type": "prompt" if n % 2 else "response", "content": f"numbered item {n:03d}"}
              for n in range(230)]
    write(indexed.home / "events" / "2026-11-25.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    index(indexed, embedder=fake)

    def shown(html: str) -> list[int]:
        return [int(n) for n in re.findall(r"numbered item (\d{3})", html)]

    def links(html: str) -> dict[str, str]:
        return {rel: href.replace("&amp;", "&") for rel, href in re.findall(r'<a rel="(prev|next)" href="([^"]+)"', html)}

    first = client.get("/timeline", params={"type": "prompt", "session": "long-session"}).text
    assert shown(first) == list(range(229, 129, -2))  # the 50 latest prompts, newest first
    assert links(first) == {"next": "/timeline?type=prompt&session=long-session&page=2"}
    assert "items 1–50" in first and "data-refresh=" in first
    second = client.get(links(first)["next"]).text
    assert shown(second) == list(range(129, 29, -2)) and "items 51–100" in second
    assert links(second) == {"prev": "/timeline?type=prompt&session=long-session",
                             "next": "/timeline?type=prompt&session=long-session&page=3"}
    assert "data-refresh=" not in second  # an older page stays still while the hooks write
    last = client.get(links(second)["next"]).text
    assert shown(last) == list(range(29, 0, -2)) and "items 101–115" in last
    assert links(last) == {"prev": "/timeline?type=prompt&session=long-session&page=2"}
    assert "numbered item" in client.get("/timeline?page=5").text  # unfiltered: 230 events and the sample's
    beyond = client.get("/timeline?type=prompt&session=long-session&page=4").text
    assert "No items this far back." in beyond and "No items match" not in beyond
    assert 'href="/timeline?type=prompt&amp;session=long-session">The latest items</a>' in beyond
    partial = client.get("/timeline?type=prompt&session=long-session&partial=1").text
    assert links(partial)["next"] == "/timeline?type=prompt&session=long-session&page=2"  # the live refresh keeps it
    for bad in ("0", "-1", "x", "9" * 40):
        answer = client.get(f"/timeline?page={bad}")
        assert answer.status_code == 400 and "pages are numbered from 1" in answer.text, bad
