"""The route table's vocabulary: a route is its method, path and handler together with what the
API document says of it (the query or body model, the replies). server.py registers the table and
openapi.py describes the very same values, so the document cannot drift from the routes; a
handler receives its input already parsed with the model the document names."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, TypeVar

from aiohttp import web
from pydantic import BaseModel, TypeAdapter, ValidationError

from engine.errors import InvalidRequest, validation_message

Method = Literal["GET", "POST"]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
M = TypeVar("M", bound=BaseModel)
InputHandler = Callable[[web.Request, M], Awaitable[web.StreamResponse]]
PATH_PARAMETER = re.compile(r"\{([^}]*)\}")
#: `\u0000` in JSON text (a raw NUL is no JSON at all): PostgreSQL stores no NUL in text.
NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True, slots=True)
class Reply:
    """One documented response: what it means and the type its body is serialised from (a
    pydantic model, a dataclass, `dict[str, Model]`; None when there is no schema to give)."""

    description: str
    schema: Any = None
    content_type: str = "application/json"


@dataclass(frozen=True, kw_only=True, slots=True)
class Route:
    """One entry of the route table. `name` is the handler's own name (the operationId)."""

    method: Method
    path: str
    handler: Handler
    name: str
    summary: str
    description: str
    replies: Mapping[int, Reply]
    tag: str = "api"
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None

    def __post_init__(self) -> None:
        for parameter in self.path_parameters:
            if not parameter.isidentifier():  # a regex in braces: OpenAPI could not say it
                raise ValueError(f"{self.path}: path parameter {parameter!r} is not a name")

    @property
    def path_parameters(self) -> tuple[str, ...]:
        return tuple(PATH_PARAMETER.findall(self.path))


def route(method: Method, path: str, handler: Handler, *, summary: str,
          replies: Mapping[int, Reply], tag: str = "api") -> Route:
    """A route whose handler reads nothing but the path."""
    return Route(method=method, path=path, handler=handler, name=handler.__name__,
                 summary=summary, description=_doc(handler), replies=replies, tag=tag)


def route_with_body(path: str, body: type[M], handler: InputHandler[M], *, summary: str,
                    replies: Mapping[int, Reply], tag: str = "api") -> Route:
    """A POST whose JSON body is parsed as `body` before `handler` sees it."""

    async def parsed(request: web.Request) -> web.StreamResponse:
        return await handler(request, await parse_body(request, body))

    return Route(method="POST", path=path, handler=parsed, name=handler.__name__,
                 summary=summary, description=_doc(handler), replies=replies, tag=tag,
                 body=body)


def route_with_query(path: str, query: type[M], handler: InputHandler[M], *, summary: str,
                     replies: Mapping[int, Reply], tag: str = "api") -> Route:
    """A GET whose query string is parsed as `query` before `handler` sees it."""

    async def parsed(request: web.Request) -> web.StreamResponse:
        return await handler(request, parse_query(request, query))

    return Route(method="GET", path=path, handler=parsed, name=handler.__name__,
                 summary=summary, description=_doc(handler), replies=replies, tag=tag,
                 query=query)


def _doc(handler: Callable[..., object]) -> str:
    return " ".join((handler.__doc__ or "").split())


async def parse_body(request: web.Request, model: type[M]) -> M:
    """The JSON body as `model`, strictly: `"3"`, `true` or `2.0` is no whole number, and no
    text may hold a NUL. Anything else wrong (not JSON, nested past the parser's limit, a number
    too long to read) is an InvalidRequest saying so, never a server error."""
    raw = await request.read()
    if not raw.strip():
        raise InvalidRequest("the body is empty: send a JSON object")
    if NUL_ESCAPE.search(raw):
        raise InvalidRequest("text may not contain NUL (\\u0000) characters")
    try:
        return model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if not first["loc"] and first["type"] == "model_type":
            raise InvalidRequest("the body must be a JSON object") from None
        if first["type"] == "json_invalid":  # pydantic's words for where: "at line 1 column 2"
            raise InvalidRequest(f"the body is not valid JSON ({first['msg']})") from None
        raise InvalidRequest(validation_message(exc)) from None


def parse_query(request: web.Request, model: type[M]) -> M:
    """The query string as `model` (a repeated key counts once), or InvalidRequest."""
    return _validated(model, dict(request.query))


def _validated(model: type[M], raw: dict[str, Any]) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InvalidRequest(validation_message(exc)) from None


def json_reply(value: object, *, status: int = 200, as_type: Any = None) -> web.Response:
    """`value` as JSON, serialised as `as_type` (else its own class): the type a Reply names."""
    kind: Any = type(value) if as_type is None else as_type
    adapter = _adapter(kind)
    return web.json_response(adapter.dump_python(value, mode="json", by_alias=True),
                             status=status, dumps=dumps)


def finite(value: Any) -> Any:
    """`value` with every NaN or infinite float as None: JSON has no such numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def dumps(value: Any) -> str:
    """The one encoder of the API's JSON bodies: strict JSON, a non-finite statistic as null."""
    return json.dumps(finite(value), allow_nan=False)


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)
