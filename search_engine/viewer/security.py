"""The viewer's guard: one ASGI middleware every request passes before any page sees it.

Another web page open in the same browser can make it send requests to ``127.0.0.1``, and a DNS-rebinding page
can even read the answers under its own name. So, in this order:

1. **Host** must be ``127.0.0.1`` or ``localhost`` (with the server's port, when it has one): a rebinding
   page's requests carry its own host name and are refused (400).
2. **Token**: the URL printed at launch carries a random per-launch token. Its first request sets it as an
   HttpOnly, SameSite=Strict cookie and redirects to the same address without it, so it leaves the address bar
   and the history (the address given to the browser at launch carries a one-time ticket instead, see
   :meth:`Guard.ticket`). Every other request needs that cookie: none → 401, a wrong one → 403.
3. **State changes** are POST only (other methods → 405), with an ``Origin`` equal to the viewer's own and a
   ``csrf`` form field equal to the per-launch CSRF token (→ 403 otherwise). The form is read here, once, and
   handed to the page as ``scope["state"]["form"]``.
4. **Headers** on every answer, errors included: a Content-Security-Policy that allows only the viewer's own
   scripts and styles (no inline script, no other origin, no framing), ``nosniff``, no referrer to other sites, no caching.
   No CORS header is ever sent, so no other origin can read an answer.

>>> guard = Guard(app=None, token="t0k", csrf="c5f", port=8765)
>>> guard.host_allowed(b"localhost:8765"), guard.host_allowed(b"evil.example:8765")
(True, False)
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
MAX_FORM_BYTES = 64 * 1024
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    # not no-referrer: under it Chromium sends ``Origin: null`` with the viewer's own form posts
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


def cookie_name(port: int | None) -> str:
    """Cookies are shared by every port of a host, so the name carries the port: two viewers, or another local
    service, never see or overwrite each other's."""
    return f"memsearch_ui_{port or 0}"


class Guard:
    """ASGI middleware enforcing the rules in the module docstring around ``app``."""

    def __init__(self, app: Any, *, token: str, csrf: str, port: int | None,
                 on_error: Callable[[BaseException], None] | None = None):
        self.app, self.token, self.csrf, self.port = app, token, csrf, port
        self.on_error = on_error or (lambda exc: None)
        self.tickets: set[str] = set()
        self.cookie = cookie_name(port)
        #: when the last signed-in request came in: the idle timeout counts from it (refused requests do not
        #: count, so another page cannot keep the viewer running)
        self.last_request = time.monotonic()

    def ticket(self) -> str:
        """A token for one sign-in only: the address handed to a browser process, whose command line other
        local users can read, is worthless once the browser has used it."""
        ticket = secrets.token_urlsafe(32)
        self.tickets.add(ticket)
        return ticket

    def host_allowed(self, host: bytes | None) -> bool:
        """``127.0.0.1`` or ``localhost``, with no port or the server's own."""
        if not host:
            return False
        name, _, port = host.decode("latin-1").lower().partition(":")
        return name in LOOPBACK_NAMES and (not port or self.port is None or port == str(self.port))

    def origin_allowed(self, origin: bytes | None, host: bytes) -> bool:
        """The exact origin the page was loaded from (a POST without an Origin, or ``null``, is refused)."""
        return origin is not None and origin.decode("latin-1").lower() == f"http://{host.decode('latin-1').lower()}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # the viewer has none: refused before any check could be skipped
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(send)
        headers = _headers(scope)
        host = headers.get(b"host")
        if not self.host_allowed(host):
            await _plain(send, 400, "Refused: the Host header is not 127.0.0.1 or localhost.")
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if "token" in query:
            await self._take_token(scope, send, query)
            return
        cookie = _cookies(headers.get(b"cookie")).get(self.cookie)
        if cookie is None:
            await _plain(send, 401, "Open the address `memsearch ui` printed: it carries this launch's token.")
            return
        if not hmac.compare_digest(cookie.encode(), self.token.encode()):
            await _plain(send, 403, "Refused: wrong token (it changes at every launch of `memsearch ui`).")
            return
        self.last_request = time.monotonic()
        method = scope["method"]
        if method in ("GET", "HEAD"):
            await self._app(scope, receive, send)
            return
        if method != "POST":
            await _plain(send, 405, "Method not allowed.", [(b"allow", b"GET, HEAD, POST")])
            return
        if host is None or not self.origin_allowed(headers.get(b"origin"), host):
            await _plain(send, 403, "Refused: this request does not come from the viewer's own page (Origin).")
            return
        form = await _read_form(headers, receive)
        if form is None:
            await _plain(send, 400, "Refused: expected a small url-encoded form.")
            return
        if not hmac.compare_digest(form.get("csrf", "").encode(), self.csrf.encode()):
            await _plain(send, 403, "Refused: missing or wrong CSRF token; reload the page and try again.")
            return
        scope.setdefault("state", {})["form"] = form
        await self._app(scope, _empty_body, send)

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The pages. An unexpected error has had its 500 page from the app; it is logged by ``on_error`` and
        stops here, so the server prints no traceback (which could quote memory text) on the terminal."""
        try:
            await self.app(scope, receive, send)
        except Exception as exc:  # the one place that keeps every page fault off the terminal
            self.on_error(exc)

    async def _take_token(self, scope: Scope, send: Send, query: dict[str, list[str]]) -> None:
        given = query.pop("token")[0]
        if given in self.tickets:
            self.tickets.discard(given)
        elif not hmac.compare_digest(given.encode(), self.token.encode()):
            await _plain(send, 403, "Refused: wrong token (it changes at every launch of `memsearch ui`).")
            return
        rest = urlencode(query, doseq=True)
        location = (scope.get("path") or "/") + (f"?{rest}" if rest else "")
        if not location.startswith("/") or location.startswith("//"):
            location = "/"
        cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"
        await _plain(send, 303, "Signed in.", [(b"location", location.encode("latin-1", "replace")),
                                              (b"set-cookie", cookie.encode())])


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """Request headers by lower-case name; a repeated Host/Origin/Cookie keeps its first value."""
    out: dict[bytes, bytes] = {}
    for name, value in scope.get("headers", ()):
        out.setdefault(name.lower(), value)
    return out


def _cookies(raw: bytes | None) -> dict[str, str]:
    from starlette.requests import cookie_parser

    return cookie_parser(raw.decode("latin-1")) if raw else {}


async def _read_form(headers: dict[bytes, bytes], receive: Receive) -> dict[str, str] | None:
    """The url-encoded body as a dict (first value of each field), or None when it is not one or too large."""
    if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/x-www-form-urlencoded":
        return None
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_FORM_BYTES:
            return None
        if not message.get("more_body"):
            break
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        return None
    return {name: values[0] for name, values in fields.items()}


async def _empty_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {name.lower() for name, _ in SECURITY_HEADERS}
            kept = [(n, v) for n, v in message.get("headers", ()) if n.lower() not in names
                    and not n.lower().startswith(b"access-control-")]
            message = {**message, "headers": [*kept, *SECURITY_HEADERS]}
        await send(message)

    return wrapped


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
