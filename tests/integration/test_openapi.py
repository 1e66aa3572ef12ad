"""The OpenAPI document against the router it describes, both ways: every route the app registers
is documented with its method, path and query parameters, body and replies; every documented
operation is registered, parses the inputs the document names, answers what the document says
and is guarded as the document says."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.web_urldispatcher import AbstractRoute
from pydantic import TypeAdapter

from bot.http.openapi import document
from bot.http.routes import Reply, Route, route
from bot.http.state import ROUTE_TABLE
from bot.service.runtime import Runtime
from storage.db import Database
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings, running_worker, wait_done

Key = tuple[str, str]   # (method, path template)
#: Protocol endpoints the REST document does not describe: they follow their own specifications
#: (MCP's streamable HTTP transport, docs/mcp.md; Slack's events route, when Slack is on).
PROTOCOL_PATHS = frozenset({"/mcp", "/slack/events"})
Served = tuple[str, Runtime, web.Application, dict[str, Any]]


@pytest.fixture
async def app(sqlite_db: Database) -> AsyncIterator[Served]:
    async with served(sqlite_db, rehearsal_settings()) as (base, rt, app), \
            aiohttp.ClientSession() as s:
        _, doc = await call(s, "GET", f"{base}/api/openapi.json")
        yield base, rt, app, doc


def registered(app: web.Application) -> dict[Key, AbstractRoute]:
    """The router's routes; HEAD is aiohttp's automatic twin of every GET."""
    return {(r.method, r.resource.canonical): r for r in app.router.routes()
            if r.method != "HEAD" and r.resource is not None
            and r.resource.canonical not in PROTOCOL_PATHS}


def documented(doc: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    return {(method.upper(), path): op for path, ops in doc["paths"].items()
            for method, op in ops.items()}


def table(app: web.Application) -> dict[Key, Route]:
    return {(r.method, r.path): r for r in app[ROUTE_TABLE]}


def resolve(doc: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/components/schemas/"), ref
    schema: dict[str, Any] = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return schema


def refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)


def parameters(op: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in op.get("parameters", []) if p["in"] == where}


async def test_the_router_and_the_document_list_the_same_operations(app: Served) -> None:
    _, _, web_app, doc = app
    routes, operations = registered(web_app), documented(doc)
    assert routes.keys() == operations.keys()
    heads = {r.resource.canonical for r in web_app.router.routes()
             if r.method == "HEAD" and r.resource is not None}
    assert heads == {path for method, path in routes if method == "GET"}
    assert len({op["operationId"] for op in operations.values()}) == len(operations)
    for ref in refs(doc):
        resolve(doc, ref)  # every reference points at a component that is there


async def test_each_operation_is_documented_from_what_its_route_parses(app: Served) -> None:
    _, _, web_app, doc = app
    specs, operations = table(web_app), documented(doc)
    for key, aio_route in registered(web_app).items():
        op, spec = operations[key], specs[key]
        assert aio_route.handler is spec.handler, key
        pattern = aio_route.resource.get_info().get("pattern") if aio_route.resource else None
        assert set(parameters(op, "path")) == set(pattern.groupindex if pattern else ()), key
        assert set(parameters(op, "query")) == set(spec.query.model_fields if spec.query
                                                   else ()), key
        if spec.body is None:
            assert "requestBody" not in op, key
        else:
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            assert set(resolve(doc, schema["$ref"])["properties"]) == set(
                spec.body.model_fields), key
        assert set(spec.replies) <= {int(status) for status in op["responses"]}, key


def _url(base: str, path: str, values: dict[str, str]) -> str:
    return base + re.sub(r"\{(\w+)\}", lambda m: values.get(m[1], "nope"), path)


def _any_string_will_do(schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf", [schema])
    return any(o.get("type") == "string" and not o.get("format") for o in options)


async def test_the_server_refuses_what_the_document_says_it_parses(app: Served) -> None:
    base, _, _, doc = app
    async with aiohttp.ClientSession() as s:
        for (method, path), op in documented(doc).items():
            url = _url(base, path, {})
            if "requestBody" in op:
                status, reply = await call(s, method, url, json={"__unknown__": 1})
                assert status == 400 and "__unknown__" in reply["error"], path
                schema = op["requestBody"]["content"]["application/json"]["schema"]
                required = resolve(doc, schema["$ref"]).get("required", [])
                if required:
                    status, reply = await call(s, method, url, json={})
                    assert status == 400, path
                    assert all(f"{name}:" in reply["error"] for name in required), reply
            for name, parameter in parameters(op, "query").items():
                if _any_string_will_do(parameter["schema"]):
                    continue
                status, reply = await call(s, method, url, params={name: "not-a-value"})
                assert status == 400 and reply["error"].startswith(f"{name}:"), (path, reply)


def _reply_for(spec: Route, status: int) -> Reply:
    assert status in spec.replies, (spec.path, status)
    return spec.replies[status]


async def test_every_get_answers_as_documented(app: Served) -> None:
    base, rt, web_app, doc = app
    async with aiohttp.ClientSession() as s:
        _, body = await call(s, "POST", f"{base}/api/debates",
                             json={"topic": "Documented?", "mode": "simple"})
        async with running_worker(rt.service):
            await wait_done(rt.service, body["id"])
        values = {"id": body["id"], "name": "console.css"}
        specs = table(web_app)
        for (method, path), op in documented(doc).items():
            if method != "GET":
                continue
            async with s.get(_url(base, path, values), allow_redirects=False) as resp:
                reply = _reply_for(specs[(method, path)], resp.status)
                assert resp.content_type == reply.content_type, path
                assert str(resp.status) in op["responses"]
                if reply.schema is not None:
                    TypeAdapter(reply.schema).validate_python(await resp.json())


async def test_the_document_says_which_operations_need_the_token(sqlite_db: Database) -> None:
    settings = rehearsal_settings(api_token="s3cret-token")
    async with served(sqlite_db, settings) as (base, _, _), aiohttp.ClientSession() as s:
        async with s.get(f"{base}/api/openapi.json",
                         headers={"Authorization": "Bearer s3cret-token"}) as resp:
            doc = await resp.json()
        for (method, path), op in documented(doc).items():
            url = _url(base, path, {"name": "console.css"})
            async with s.request(method, url, json={}, allow_redirects=False) as resp:
                assert (resp.status == 401) is bool(op["security"]), (method, path)


async def _handler(request: web.Request) -> web.Response:
    return web.Response()


@pytest.mark.parametrize("routes", [
    [route("GET", "/a", _handler, summary="a", replies={}),
     route("GET", "/a", _handler, summary="again", replies={})],
    [route("GET", "/a", _handler, summary="a", replies={}),
     route("POST", "/b", _handler, summary="same operationId", replies={})],
])
def test_a_route_given_twice_is_refused(routes: list[Route]) -> None:
    with pytest.raises(ValueError, match="twice"):
        document(routes)


def test_a_path_parameter_the_document_could_not_state_is_refused() -> None:
    with pytest.raises(ValueError, match="not a name"):
        route("GET", r"/debates/{id:\d+}", _handler, summary="regex", replies={})
