"""The viewer's pages: each one calls the library function the CLI calls and renders its result.

Every route is behind :class:`.security.Guard`. Memory text reaches the browser only through Jinja2 templates
with autoescaping on, and only as text: no link, attribute or script is ever built from it (links carry ids,
URL-quoted). Nothing is read from the memory root's files: pages show what the index holds, and the only files
served are the package's own assets.

>>> from indexer.base.settings import resolve_settings
>>> guard = create_app(resolve_settings("/tmp/memsearch-doctest-ui"), token="t", csrf="c", port=8765)
>>> type(guard).__name__
'Guard'
"""

from __future__ import annotations

import os
import secrets
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from indexer.base.errors import MemsearchError, ModelUnavailable, NotFound, UsageError, shown_id
from indexer.base.paths import UI_LOG
from indexer.base.reports import ForgetPlan, ForgetReport
from indexer.base.settings import Settings
from search_engine.context import sanitize
from search_engine.embedding import EmbedderArg, QueryEmbedder
from search_engine.viewer.chart import day_bars
from search_engine.viewer.security import Guard

HERE = Path(__file__).resolve().parent
TIMELINE_LIMIT = 50
SESSION_LIMIT = 500
#: how many forgets' confirmation pages are kept (in memory, until the viewer stops)
FORGOTTEN_KEPT = 20


class Viewer:
    """The pages over one resolved :class:`Settings`. The embedding model, when a search needs it, is loaded
    once and kept (a search would otherwise load it again, about half a second each time)."""

    def __init__(self, settings: Settings, csrf: str, embedder: EmbedderArg = "configured",
                 refresh_seconds: float = 5.0):
        self.settings, self.csrf, self.refresh_ms = settings, csrf, int(refresh_seconds * 1000)
        self.embedding = QueryEmbedder.resolve(settings, embedder)
        #: the last forgets' plans and reports, for the page each one redirects to (ids and counts, no text)
        self.done: dict[str, tuple[ForgetPlan, ForgetReport]] = {}
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                                 undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                 finalize=_shown)
        env.filters["seg"] = lambda value: quote(str(value), safe="")
        env.filters["size"] = _size
        env.filters["sid"] = _sid
        env.globals["qs"] = lambda **kw: urlencode({k: v for k, v in kw.items() if v not in (None, "", False)})
        self.templates = Jinja2Templates(env=env)

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        context.update(csrf=self.csrf, home=str(self.settings.home), nav=name.split(".")[0])
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def embedder(self) -> QueryEmbedder | None:
        """The search's embedder: the one given (tests), else the configured model, loaded once and kept (a
        search would otherwise load it again, about half a second each time); None when there is none."""
        return self.embedding if self.embedding.choice.available else None

    # -- pages ---------------------------------------------------------------------------------------------

    def dashboard(self, request: Request) -> Response:
        from indexer.status import status
        from search_engine.browse import stats

        figures = stats(self.settings)
        info = status(self.settings)
        return self.page(request, "dashboard.html", stats=figures, info=info, bars=day_bars(figures.events_by_day))

    def sessions(self, request: Request) -> Response:
        from search_engine.browse import list_sessions

        project = request.query_params.get("project") or None
        sessions = list_sessions(self.settings, project=project)
        # a filter that matches nothing is not an empty memory: say which, and offer the whole list
        captured = bool(sessions) or (project is not None and bool(list_sessions(self.settings, limit=1)))
        return self.page(request, "sessions.html", sessions=sessions, project=project, captured=captured,
                         filters=_filters(project=project), short=_short_ids([s.session_id for s in sessions]))

    def session(self, request: Request) -> Response:
        from search_engine.browse import list_sessions, recent

        sid = request.query_params.get("id", "")
        info = next((s for s in list_sessions(self.settings) if s.session_id == sid), None)
        if info is None:
            raise NotFound(f"no session {sid!r} in the index")
        items = list(reversed(recent(self.settings, session=sid, limit=SESSION_LIMIT)))
        summary = sorted((h for h in items if info.summary_path and h.path == info.summary_path),
                         key=lambda h: h.line_start or 0)
        events = [h for h in items if not (info.summary_path and h.path == info.summary_path)]
        return self.page(request, "session.html", info=info, summary=summary, items=events)

    def timeline(self, request: Request) -> Response:
        from search_engine.browse import recent

        q = request.query_params
        kind, project, session = q.get("type") or None, q.get("project") or None, q.get("session") or None
        page = _page_number(q.get("page"))
        found = recent(self.settings, type=kind, project=project, session=session, limit=TIMELINE_LIMIT + 1,
                       offset=(page - 1) * TIMELINE_LIMIT)
        items, older = found[:TIMELINE_LIMIT], len(found) > TIMELINE_LIMIT
        filters = _filters(type=kind, project=project, session=session)
        captured = bool(items) or ((bool(filters) or page > 1) and bool(recent(self.settings, limit=1)))
        name = "_timeline_items.html" if q.get("partial") else "timeline.html"
        return self.page(request, name, items=items, type=kind, project=project, session=session,
                         refresh_ms=self.refresh_ms, captured=captured, filters=filters, page=page, older=older,
                         first=(page - 1) * TIMELINE_LIMIT + 1)

    def search(self, request: Request) -> Response:
        from search_engine.filters import Filters
        from search_engine.lookup import get_many
        from search_engine.search import search

        q = request.query_params
        form = {name: q.get(name, "") for name in ("q", "mode", "k", "kind", "category", "session", "project",
                                                     "since", "until", "all_status", "raw")}
        form["mode"] = form["mode"] or "hybrid"
        context: dict[str, Any] = {"form": form, "result": None, "explain": {}, "duplicates": [], "error": None,
                                   "filters": [], "unfiltered": ""}
        if form["q"].strip():
            try:
                k = int(form["k"] or 10)
                filters = Filters.build(kind=form["kind"] or None, category=form["category"] or None,
                                        session=form["session"] or None, project=form["project"] or None,
                                        since=form["since"] or None, until=form["until"] or None,
                                        all_status=bool(form["all_status"]))
                embedder = None if form["mode"] == "bm25" else self.embedder()
                result = search(self.settings, form["q"], mode=form["mode"], k=k, filters=filters,
                                raw=bool(form["raw"]), explain=True, embedder=embedder)
            except ValueError:
                context["error"] = "the number of hits must be a whole number"
            except (UsageError, ModelUnavailable) as exc:
                context["error"] = str(exc)
            else:
                explain = {e.id: e for e in result.explain or ()}
                hidden = [e for e in result.explain or () if e.duplicate_of]
                titles = {h.id: h for h in get_many(self.settings, [e.id for e in hidden])} if hidden else {}
                context.update(result=result, explain=explain,
                               duplicates=[(e, titles.get(e.id)) for e in hidden],
                               filters=_filters(kind=form["kind"], category=form["category"], session=form["session"],
                                                project=form["project"], since=form["since"], until=form["until"]),
                               unfiltered="/search?" + urlencode({"q": form["q"], "mode": form["mode"]}))
        return self.page(request, "search.html", **context)

    def item(self, request: Request) -> Response:
        from search_engine.lookup import show, timeline

        ident = request.path_params["id"]
        try:
            view = show(self.settings, ident)
        except NotFound:
            return self.missing(request, ident)
        around = timeline(self.settings, view.chunk.id, 3) if view.chunk.ts else None
        return self.page(request, "item.html", view=view, around=around)

    def forget_confirm(self, request: Request) -> Response:
        from indexer.base.reports import ForgetSelector
        from indexer.forget import plan_forget
        from search_engine.lookup import show

        try:
            view = show(self.settings, request.path_params["id"])
        except NotFound:
            return self.missing(request, request.path_params["id"])
        plan = plan_forget(self.settings, ForgetSelector(ids=(view.chunk.id,)))
        return self.page(request, "forget.html", view=view, plan=plan)

    def forget(self, request: Request) -> Response:
        from indexer.forget import apply_forget, was_forgotten

        form = request.scope["state"]["form"]
        ident = _checked_id(form.get("id", ""))
        plan = self.forget_plan(ident)
        if plan is None and was_forgotten(self.settings, ident):
            # a second tab, or the form sent again: nothing left to do, and that is no error
            return RedirectResponse("/forgotten?" + urlencode({"id": ident}), 303)
        if plan is None:
            return self.missing(request, ident)
        report = apply_forget(self.settings, plan)
        # POST/redirect/GET: the answer is a page that a reload fetches again, instead of sending the form again
        key = secrets.token_urlsafe(12)
        self.done[key] = (plan, report)
        while len(self.done) > FORGOTTEN_KEPT:
            self.done.pop(next(iter(self.done)))
        return RedirectResponse(f"/forgotten?done={key}", 303)

    def forget_plan(self, ident: str) -> ForgetPlan | None:
        """What forgetting ``ident`` removes, or None when no memory has that id any more (a malformed id is
        still a :class:`UsageError`)."""
        from indexer.base.reports import ForgetSelector
        from indexer.forget import plan_forget

        try:
            plan = plan_forget(self.settings, ForgetSelector(ids=(ident,)))
        except NotFound:
            return None
        return plan if plan.items else None

    def forgotten(self, request: Request) -> Response:
        """What a forget did (the page the form redirects to), or that there was nothing left to forget."""
        from indexer.forget import was_forgotten

        q = request.query_params
        if "done" in q:
            done = self.done.get(q["done"])
            if done is None:  # from an earlier launch, one of many forgets ago, or never made: no telling which
                return self.page(request, "missing.html", status=404, what="confirmation", ident="")
            plan, report = done
            return self.page(request, "forgotten.html", plan=plan, report=report)
        if not q.get("id"):
            return self.page(request, "already_forgotten.html", ident="")
        ident = _checked_id(q["id"])
        if self.forget_plan(ident) is not None:
            return RedirectResponse(f"/item/{quote(ident, safe='')}", 303)  # still there: not forgotten at all
        if not was_forgotten(self.settings, ident):
            return self.missing(request, ident)
        return self.page(request, "already_forgotten.html", ident=ident)

    def missing(self, request: Request, ident: str) -> Response:
        """The page for a chunk id the index does not hold: 410 Gone when the forget log records it as forgotten
        (the Back button after a forget lands here), else 404."""
        from indexer.forget import was_forgotten

        ident = shown_id(ident.strip().lower())
        if was_forgotten(self.settings, ident):
            return self.page(request, "missing.html", status=410, what="forgotten", ident=ident)
        return self.page(request, "missing.html", status=404, what="unknown", ident=ident)

    def settings_page(self, request: Request) -> Response:
        from indexer.base.embedder import resolve_model

        return self.page(request, "settings.html", described=self.settings.describe(),
                         model=resolve_model(self.settings))

    # -- errors --------------------------------------------------------------------------------------------

    def error(self, request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            status, message = exc.status_code, ("not found" if exc.status_code == 404 else exc.detail)
        elif isinstance(exc, NotFound):
            status, message = 404, str(exc)
        elif isinstance(exc, UsageError):
            # a malformed id or date is a page that does not exist, like any other bad address
            status, message = (404 if "id" in request.path_params else 400), str(exc)
        elif isinstance(exc, MemsearchError):
            status, message = 500, str(exc)
        else:
            status = 500
            message = (f"unexpected error ({type(exc).__name__}); it is logged in "
                       f"{self.settings.log_dir / UI_LOG}")
        return self.page(request, "error.html", status=status, status_code=status, message=message)

    def log_error(self, exc: BaseException) -> None:
        """One line per unexpected fault: its type and where it was raised, never its message (which may quote
        memory text)."""
        import traceback

        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
        try:
            from indexer.base.private import private_dirs

            private_dirs(self.settings.log_dir)
            fd = os.open(self.settings.log_dir / UI_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as log:
                log.write(f"{datetime.now().isoformat(timespec='seconds')} {type(exc).__name__} at {where}\n")
        except OSError:
            pass  # a full or read-only disk must not turn one failed page into a crashed viewer


def _shown(value: Any) -> Any:
    """Every value a page prints, as the CLI and the hooks print text (:func:`search_engine.context.sanitize`):
    without control or format characters, so a bidi override in a snippet, title, path, session id or project name
    never reorders what the page shows ("\u202egnp.exe" is not displayed as "exe.png"). Applied before escaping; a
    macro's output (already escaped, its values already passed here) stays markup.

    >>> _shown("deploy the \u202egnp.exe\u202c build"), _shown(3)
    ('deploy the gnp.exe build', 3)
    """
    if isinstance(value, Markup):
        return Markup(sanitize(str(value)))
    return sanitize(value) if isinstance(value, str) else value


def _checked_id(ident: str) -> str:
    """A chunk id from a form or an address, or a :class:`UsageError` (400) saying in one line what an id is.

    >>> _checked_id(" DEADBEEF0000 ")
    'deadbeef0000'
    """
    from search_engine.lookup import valid_id

    ident = ident.strip()
    if not ident:
        raise UsageError("nothing to forget: no id given")
    if not valid_id(ident):
        raise UsageError(f"{shown_id(ident)!r} is not a memory id: ids are 4 to 32 hexadecimal digits, as the viewer shows them")
    return ident.lower()


def _page_number(value: str | None) -> int:
    """The timeline page asked for (``?page=``, 1 the latest items), or a :class:`UsageError` (400).

    >>> _page_number(None), _page_number("3")
    (1, 3)
    """
    if not value:
        return 1
    if not value.isdigit() or not 1 <= len(value) <= 6 or int(value) < 1:
        raise UsageError(f"invalid page {shown_id(value)!r}: pages are numbered from 1")
    return int(value)


def _sid(session_id: str) -> str:
    """A session id in a row of another list (a timeline's item, an item's page): whole up to 20 characters, else
    its first 19 and "…" (the whole id is in the link's title).

    >>> _sid("sess-secrets-1"), _sid("0f3c9a7e-2b41-4c8e-9d55-7a1b2c3d4e5f")
    ('sess-secrets-1', '0f3c9a7e-2b41-4c8e-…')
    """
    return session_id if len(session_id) <= 20 else session_id[:19] + "…"


def _short_ids(ids: list[str], least: int = 12) -> dict[str, str]:
    """Each id cut to the fewest characters (at least ``least``) that no other id of the list starts with, and
    marked "…" when cut: two ids never look the same, and a list of random ids stays narrow.

    >>> list(_short_ids(["sess-secrets-1", "sess-secrets-2", "7f3c9a"]).values())
    ['7f3c9a', 'sess-secrets-1', 'sess-secrets-2']
    >>> _short_ids(["0123456789abcdef-aaaa", "0123456789abcdef-bbbb", "fedcba9876543210"])["0123456789abcdef-aaaa"]
    '0123456789abcdef-a…'
    """
    order = sorted(set(ids))
    shared = dict.fromkeys(order, 0)  # the longest start each id shares with another (its sorted neighbours)
    for a, b in zip(order, order[1:]):
        n = len(os.path.commonprefix([a, b]))
        shared[a], shared[b] = max(shared[a], n), max(shared[b], n)
    cut = {i: max(least, shared[i] + 1) for i in order}
    return {i: i if cut[i] >= len(i) else i[:cut[i]] + "…" for i in order}


def _filters(**given: str | None) -> list[tuple[str, str]]:
    """The filters a list page was given, as (name, value) pairs for its "nothing matches" notice.

    >>> _filters(type=None, project="payments-api")
    [('project', 'payments-api')]
    """
    return [(name, value) for name, value in given.items() if value]


def _size(n: int | None) -> str:
    """Bytes for people.

    >>> _size(1536), _size(3 * 1024 * 1024)
    ('1.5 KB', '3.0 MB')
    """
    value = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover


def create_app(settings: Settings, *, token: str, csrf: str, port: int | None, embedder: EmbedderArg = "configured",
               refresh_seconds: float = 5.0) -> Guard:
    """The viewer as an ASGI app, wrapped in its guard. ``embedder``: a loaded or fake one (tests), or None;
    ``refresh_seconds``: how often the timeline page looks for new items."""
    viewer = Viewer(settings, csrf, embedder, refresh_seconds)
    routes = [
        Route("/", viewer.dashboard),
        Route("/sessions", viewer.sessions),
        Route("/session", viewer.session),
        Route("/timeline", viewer.timeline),
        Route("/search", viewer.search),
        Route("/item/{id}", viewer.item),
        Route("/item/{id}/forget", viewer.forget_confirm),
        Route("/forget", viewer.forget, methods=["POST"]),
        Route("/forgotten", viewer.forgotten),
        Route("/settings", viewer.settings_page),
        Route("/favicon.ico", lambda request: RedirectResponse("/static/favicon.svg", 301)),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers = {HTTPException: viewer.error, MemsearchError: viewer.error, Exception: viewer.error}
    app = Starlette(routes=routes, exception_handlers=handlers)
    return Guard(app, token=token, csrf=csrf, port=port, on_error=viewer.log_error)
