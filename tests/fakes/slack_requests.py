"""The fake Slack's requests and what became of them: arguments read the way Slack accepts them
(query string, form or JSON body, with blocks, views and metadata as JSON strings), the checks
Slack makes on blocks and views (`slack_sdk.models` plus the per-message limits), the reply
shapes, and the record of every call that tests read and wait on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

Args = dict[str, Any]
Reply = dict[str, Any]
Predicate = Callable[["Call"], bool]

MAX_BLOCKS = 50
MAX_BLOCKS_CHARS = 13_000
MAX_TEXT = 40_000
JSON_ARGS = ("blocks", "attachments", "view", "metadata")


@dataclass(frozen=True)
class Call:
    """One request: the method, its arguments (JSON strings decoded), when, and the reply."""

    method: str
    args: Args
    at: float
    status: int = 200
    response: Reply = field(default_factory=dict)
    target: str = ""  # the token of a response_url call
    team: str = ""    # the workspace whose installed token made the call (slack_installs.py)


    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))


def blocks_problem(blocks: Any) -> tuple[str, str] | None:
    """(error code, detail) when Slack would refuse these blocks, else None."""
    if not isinstance(blocks, list):
        return "invalid_blocks", "blocks must be a list"
    if len(blocks) > MAX_BLOCKS:
        return "invalid_blocks", f"no more than {MAX_BLOCKS} items allowed"
    if len(json.dumps(blocks)) > MAX_BLOCKS_CHARS:
        return "msg_blocks_too_long", f"blocks exceed {MAX_BLOCKS_CHARS} characters"
    for index, raw in enumerate(blocks):
        detail = _block_problem(raw)
        if detail:
            return "invalid_blocks", f"block {index}: {detail}"
    return None


def _block_problem(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return "a block must be an object"
    try:
        parsed = Block.parse_all([raw])[0]
        if parsed is None:
            return f"unknown block type {raw.get('type')!r}"
        parsed.to_dict()  # runs slack_sdk's JsonValidators
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    for item in raw.get("fields") or []:  # slack_sdk does not check field length
        if isinstance(item, dict) and len(str(item.get("text", ""))) > 2000:
            return "a field's text exceeds 2000 characters"
    return None


def view_problem(view: Any) -> str | None:
    """Why Slack would refuse this view, else None."""
    if not isinstance(view, dict):
        return "view must be an object"
    try:
        View(**view).to_dict()
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def decode_args(args: Args) -> Args:
    """Form bodies carry blocks, views and metadata as JSON strings: decode them."""
    out = dict(args)
    for key in JSON_ARGS:
        value = out.get(key)
        if isinstance(value, str):
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError:
                out[key] = value  # left as is: validation reports it
    return out


def ok(**fields: Any) -> Reply:
    return {"ok": True, **fields}


def err(error: str, **fields: Any) -> Reply:
    return {"ok": False, "error": error, **fields}


async def read_args(request: web.Request) -> Args:
    """Arguments from the query string and a JSON or form body, the way Slack accepts them."""
    args: Args = dict(request.query)
    if not request.can_read_body:
        return args
    if request.content_type == "application/json":
        body = await request.json()
        if isinstance(body, dict):
            args.update(body)
    elif request.content_type == "multipart/form-data":
        args.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
    else:
        args.update(parse_qsl(await request.text(), keep_blank_values=True))
    return args


class CallLog:
    """Every call the fake answered, in order; `wait_for` waits for one that has not come yet."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._changed: asyncio.Condition | None = None

    async def _record(self, call: Call) -> None:
        self.calls.append(call)
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def responses_to(self, token: str) -> list[dict[str, Any]]:
        return [c.args for c in self.calls_to("response_url") if c.target == token]

    async def wait_for(self, method: str, predicate: Predicate | None = None,
                       timeout: float = 5.0) -> Call:
        """The first call to `method` matching `predicate`, past or future; TimeoutError if none."""
        if self._changed is None:
            raise RuntimeError("start the server first")

        def found() -> Call | None:
            return next((c for c in self.calls
                         if c.method == method and (predicate is None or predicate(c))), None)

        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: found() is not None),
                                       timeout)
            except TimeoutError as exc:
                seen = ", ".join(c.method for c in self.calls[-10:]) or "none"
                raise TimeoutError(f"no matching {method} call within {timeout}s; "
                                   f"last calls: {seen}") from exc
        call = found()
        if call is None:  # calls are only ever appended, so this cannot happen
            raise RuntimeError("a matching call disappeared")
        return call
