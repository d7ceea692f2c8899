"""The MCP server's stdio stream, made to answer every line it is sent.

The SDK's stdio transport (``mcp.server.stdio.stdio_server``) parses each line with pydantic and, when that fails,
passes the exception down the read stream, where the server logs it at debug level and drops it: a client that
sent a line which is not JSON, or JSON the strict parser refuses (a lone surrogate escape such as ``"\\ud800"``),
or JSON that is no JSON-RPC message, waits for an answer forever. :class:`AnsweringStream` sits between the
transport and the server and answers such lines as JSON-RPC 2.0 says, through the transport's own writer (so the
answer is one whole line, never interleaved with another):

- not JSON → ``{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}``;
- JSON, but no JSON-RPC message → ``-32600 Invalid Request`` (with the request's id when it has a usable one);
- JSON that only Python's parser accepts because of a lone surrogate → the message is served, each lone surrogate
  replaced by U+FFFD (text with one cannot be encoded as UTF-8 anywhere further on);
- an empty line → nothing (a stray newline is not a request).

Then it goes on reading the next line.

>>> import mcp_types as types
>>> def first_error(line):
...     try:
...         types.jsonrpc_message_adapter.validate_json(line, by_name=False)
...     except Exception as exc:
...         return exc
>>> serve, reply = answer(first_error("{not json"))
>>> serve, reply.model_dump(exclude_unset=True)
(None, {'jsonrpc': '2.0', 'id': None, 'error': {'code': -32700, 'message': 'Parse error'}})
>>> serve, reply = answer(first_error('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
...                                   '"params": {"name": "search", "arguments": {"query": "a\\\\ud800"}}}'))
>>> serve.params["arguments"], reply
({'query': 'a\ufffd'}, None)
>>> answer(first_error('{"jsonrpc": "1.0", "id": 7, "method": "ping"}'))[1].model_dump(exclude_unset=True)
{'jsonrpc': '2.0', 'id': 7, 'error': {'code': -32600, 'message': 'Invalid Request'}}
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

PARSE_ERROR = types.ErrorData(code=types.PARSE_ERROR, message="Parse error")
INVALID_REQUEST = types.ErrorData(code=types.INVALID_REQUEST, message="Invalid Request")
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _replace_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD.

    >>> _replace_surrogates({"a\\udc00": ["x\\ud800y", 1, None]})
    {'a\ufffd': ['x\ufffdy', 1, None]}
    """
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def _request_id(errors: list[Any]) -> int | str | None:
    """The id of the JSON-RPC object pydantic refused, when one of its errors shows the whole object and its id
    is a usable one (a string or a whole number); else None, as JSON-RPC asks."""
    for err in errors:
        whole = err.get("input")
        if isinstance(whole, dict) and "jsonrpc" in whole:
            ident = whole.get("id")
            if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)):
                return ident
    return None


def _error(ident: int | str | None, data: types.ErrorData) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=data)


def answer(exc: Exception) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """What to do with a line the transport could not parse: ``(message, None)`` to serve it after all (its lone
    surrogates replaced), ``(None, error)`` to send the error back, ``(None, None)`` to drop it (an empty line, or
    an exception that is no parse failure: the SDK drops those too)."""
    if not isinstance(exc, ValidationError):
        return None, None
    errors = exc.errors()
    if not any(err["type"] == "json_invalid" for err in errors):
        return None, _error(_request_id(errors), INVALID_REQUEST)
    line = errors[0].get("input")
    if not isinstance(line, str | bytes) or not line.strip():
        return None, None
    try:
        value = json.loads(line, parse_constant=_refuse_constant)
    except ValueError:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None, _error(None, PARSE_ERROR)
    try:
        return types.jsonrpc_message_adapter.validate_python(_replace_surrogates(value), by_name=False), None
    except ValidationError as refused:
        return None, _error(_request_id(refused.errors()), INVALID_REQUEST)


class AnsweringStream:
    """The transport's read stream, with each line it failed to parse answered (see the module docstring): the
    server reads messages from it as from the transport's own. ``write`` is the transport's write stream."""

    def __init__(self, inner: Any, write: Any):
        self.inner, self.write = inner, write

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, which the SDK's server reads when the stream carries one."""
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self.inner.receive()
            if not isinstance(item, Exception):
                return item
            serve, reply = answer(item)
            if serve is not None:
                return SessionMessage(serve)
            if reply is not None:
                await self.write.send(SessionMessage(reply))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> AnsweringStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
