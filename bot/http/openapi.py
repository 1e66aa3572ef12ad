"""The OpenAPI 3.1 document, generated from the route table (routes.py) and the pydantic models:
every route with its method, path and query parameters, request body and replies. Nothing in it
is written per route by hand, so it cannot drift from what the server registers and parses."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from aiohttp import web
from pydantic import TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from bot.http.auth import needs_token
from bot.http.errors import BAD_INPUT, TOO_LARGE, UNAUTHORIZED, UNAVAILABLE
from bot.http.routes import Reply, Route, route
from bot.http.session import COOKIE

REF_TEMPLATE = "#/components/schemas/{model}"
SECURITY_SCHEMES = {"bearer": {"type": "http", "scheme": "bearer"},
                    "cookie": {"type": "apiKey", "in": "cookie", "name": COOKIE}}
DOCUMENT: web.AppKey[dict[str, Any]] = web.AppKey("openapi", dict)
SchemaKey = tuple[Any, JsonSchemaMode]   # (a type pydantic can describe, the mode)


def document(routes: Sequence[Route]) -> dict[str, Any]:
    """The document for `routes`; raises ValueError on a route or operationId given twice."""
    schemas, components = _schemas(routes)
    paths: dict[str, dict[str, Any]] = {}
    names: set[str] = set()
    for r in routes:
        operations = paths.setdefault(r.path, {})
        if r.method.lower() in operations or r.name in names:
            raise ValueError(f"{r.method} {r.path} ({r.name}) is in the route table twice")
        names.add(r.name)
        operations[r.method.lower()] = _operation(r, schemas, components)
    for r in routes:  # a query model is told as its parameters, not as a schema of its own
        if r.query is not None:
            components.pop(r.query.__name__, None)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Dialectic", "version": "0.1.0",
                 "description": "Adversarial multi-agent LLM debates with judges and review."},
        "components": {"schemas": components, "securitySchemes": SECURITY_SCHEMES},
        "paths": paths,
    }


def _schemas(routes: Sequence[Route]) -> tuple[dict[SchemaKey, Any], dict[str, Any]]:
    """Every model the routes name, in one pass, so shared models become one component."""
    wanted = dict.fromkeys(_schema_keys(routes))
    inputs: list[tuple[SchemaKey, JsonSchemaMode, TypeAdapter[Any]]] = [
        (key, key[1], TypeAdapter(key[0])) for key in wanted]
    by_key, defs = TypeAdapter.json_schemas(inputs, ref_template=REF_TEMPLATE)
    return {key: schema for (key, _), schema in by_key.items()}, defs.get("$defs", {})


def _schema_keys(routes: Sequence[Route]) -> Iterator[SchemaKey]:
    for r in routes:
        for model in (r.body, r.query):
            if model is not None:
                yield model, "validation"
        for reply in _replies(r).values():
            if reply.schema is not None:
                yield reply.schema, "serialization"


def _operation(r: Route, schemas: dict[SchemaKey, Any],
               components: dict[str, Any]) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": r.name, "summary": r.summary, "tags": [r.tag]}
    if r.description:
        operation["description"] = r.description
    parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                  for name in r.path_parameters]
    if r.query is not None:
        parameters += _query_parameters(schemas[(r.query, "validation")], components)
    if parameters:
        operation["parameters"] = parameters
    if r.body is not None:
        operation["requestBody"] = {"required": True, "content": {
            "application/json": {"schema": schemas[(r.body, "validation")]}}}
    operation["responses"] = {str(status): _response(reply, schemas)
                              for status, reply in sorted(_replies(r).items())}
    operation["security"] = [{"bearer": []}, {"cookie": []}] if needs_token(r.path) else []
    return operation


def _query_parameters(schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
    """One parameter per field of the query model, its schema and description from the model."""
    model = components[schema["$ref"].rsplit("/", 1)[1]]
    required = set(model.get("required", ()))
    out = []
    for name, field in model["properties"].items():
        field = dict(field)
        description = field.pop("description", None)
        field.pop("title", None)
        parameter = {"name": name, "in": "query", "required": name in required, "schema": field}
        if description:
            parameter["description"] = description
        out.append(parameter)
    return out


def _replies(r: Route) -> dict[int, Reply]:
    """The route's own replies and the ones the middlewares add to it."""
    replies = dict(r.replies)
    if r.body is not None or r.query is not None:
        replies.setdefault(400, BAD_INPUT)
    if r.body is not None:
        replies.setdefault(413, TOO_LARGE)
    if needs_token(r.path):
        replies.setdefault(401, UNAUTHORIZED)
    replies.setdefault(503, UNAVAILABLE)  # any route may find the database away
    return replies


def _response(reply: Reply, schemas: dict[SchemaKey, Any]) -> dict[str, Any]:
    if reply.schema is not None:
        schema = schemas[(reply.schema, "serialization")]
    else:
        schema = {"type": "object" if reply.content_type == "application/json" else "string"}
    return {"description": reply.description, "content": {reply.content_type: {"schema": schema}}}


async def openapi_document(request: web.Request) -> web.Response:
    """This document, generated from the routes the server registered."""
    return web.json_response(request.app[DOCUMENT])


ROUTE = route("GET", "/api/openapi.json", openapi_document, summary="The OpenAPI document",
              replies={200: Reply(description="this document")})
