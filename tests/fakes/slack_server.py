"""A fake Slack Web API on loopback, for tests and by hand: the real `slack_sdk` client talks to it.

    async with FakeSlack() as slack:
        client = AsyncWebClient(token="xoxb-test", base_url=slack.base_url)
        slack.not_in_channel("C999")                 # chat.postMessage there fails
        slack.rate_limit("chat.update", times=1)     # one HTTP 429 with Retry-After
        slack.fail("views.open", "expired_trigger_id")
        slack.not_json("chat.getPermalink", 502)   # a proxy's HTML error page instead
        await client.chat_postMessage(channel="C1", text="hi")
        assert slack.messages("C1")[0]["text"] == "hi"

Like bolt-python's tests/mock_web_api_server, but a real aiohttp server on 127.0.0.1, port 0,
with state: messages are kept (and changed by chat.update), so tests assert on what a user would
see. Blocks are validated with `slack_sdk.models` plus the per-message limits Slack enforces.
Every call is recorded; the token itself never is.

By hand: `python -m tests.fakes.slack_server --port 8901`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode

from aiohttp import web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from tests.fakes.slack_socket import SocketMode

Args = dict[str, Any]
Reply = dict[str, Any]
Predicate = Callable[["Call"], bool]

MAX_BLOCKS = 50
MAX_BLOCKS_CHARS = 13_000
MAX_TEXT = 40_000
RESPONSE_URL_USES = 5
FIRST_TS_MICROS = 1_700_000_000_000_100
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


    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))


@dataclass
class _Fault:
    remaining: int
    error: str = ""
    retry_after: int = 0
    status: int = 200
    content_type: str = ""
    body: str = ""


# What stands between a client and Slack answers with these when it fails (see `not_json`).
PROXY_PAGES = {
    "text/html": "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
                 "Gateway</h1></center><hr><center>nginx</center></body></html>",
    "text/plain": "upstream connect error or disconnect/reset before headers",
    "application/json": "<html><body>Service Unavailable</body></html>",  # a lying proxy
}


# --------------------------------------------------------------------------------------------
# validation


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


def _ts_key(ts: str) -> tuple[int, int]:
    seconds, _, micros = ts.partition(".")
    return int(seconds or 0), int(micros or 0)


def ok(**fields: Any) -> Reply:
    return {"ok": True, **fields}


def err(error: str, **fields: Any) -> Reply:
    return {"ok": False, "error": error, **fields}


# --------------------------------------------------------------------------------------------
# the server


class FakeSlack:
    """A fake Slack Web API with state, fault injection and a record of every call."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, team_id: str = "T0FAKE",
                 bot_user_id: str = "UBOT0001", bot_id: str = "B0FAKE") -> None:
        self.host, self.port = host, port
        self.team_id, self.bot_user_id, self.bot_id = team_id, bot_user_id, bot_id
        self.base_url = ""
        self.calls: list[Call] = []
        self.responses: list[dict[str, Any]] = []
        self.invalid_blocks: list[str] = []
        self.warnings: list[str] = []
        self.views: dict[str, dict[str, Any]] = {}
        self.home_views: dict[str, dict[str, Any]] = {}
        self.ephemerals: list[dict[str, Any]] = []
        self._messages: dict[str, dict[str, dict[str, Any]]] = {}
        self._channels: dict[str, dict[str, Any]] = {}
        self._not_member: set[str] = set()
        self._channel_errors: dict[str, str] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._usergroups: dict[str, list[str]] = {}
        self._rate_limits: dict[str, list[_Fault]] = {}
        self._failures: dict[str, list[_Fault]] = {}
        self._not_json: dict[str, list[_Fault]] = {}
        self._response_uses: dict[str, int] = {}
        self._ts = itertools.count()
        self._view_ids = itertools.count(1)
        self.socket_mode = SocketMode()                    # apps.connections.open, the socket
        self._oidc: tuple[str, str] | None = None          # (client id, secret)
        self._consenting: str | None = None                # who signs in at the authorize page
        self._consenting_team: str | None = None           # from which workspace (None: this)
        self._codes: dict[str, dict[str, str]] = {}
        self._changed: asyncio.Condition | None = None
        self._runner: web.AppRunner | None = None
        self._handlers: dict[str, Callable[[Args], Reply]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.getPermalink": self._permalink,
            "reactions.add": self._reactions_add,
            "views.open": self._views_open,
            "views.publish": self._views_publish,
            "views.update": self._views_update,
            "conversations.info": self._conversations_info,
            "conversations.join": self._conversations_join,
            "usergroups.users.list": self._usergroup_users,
            "users.info": self._users_info,
        }

    # --- lifecycle ---

    async def start(self) -> str:
        """Start serving; returns the API base URL ending in "/" (what AsyncWebClient wants)."""
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle_api)
        app.router.add_post("/response/{token}", self._handle_response_url)
        app.router.add_get("/openid/connect/authorize", self._handle_authorize)
        self.socket_mode.register(app)
        self._changed = asyncio.Condition()
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self.base_url = f"http://{self.host}:{self.port}/api/"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    # --- configuration ---

    def add_channel(self, channel_id: str, name: str | None = None, *, is_private: bool = False,
                    is_member: bool = True) -> None:
        """A channel conversations.info knows; unknown C/G/D ids are made up on the fly."""
        self._channels[channel_id] = {"id": channel_id, "name": name or channel_id.lower(),
                                      "is_channel": not is_private, "is_private": is_private}
        if not is_member:
            self._not_member.add(channel_id)

    def not_in_channel(self, channel_id: str) -> None:
        """The bot is not a member: posting fails with not_in_channel until conversations.join."""
        self._not_member.add(channel_id)

    def channel_error(self, channel_id: str, error: str) -> None:
        """Posting to the channel fails with `error` (e.g. "channel_not_found", "is_archived")."""
        self._channel_errors[channel_id] = error

    def add_user(self, user_id: str, name: str | None = None, **profile: Any) -> None:
        """A user users.info returns (unknown U/W ids get a made-up profile)."""
        self._users[user_id] = {"id": user_id, "team_id": self.team_id,
                                "name": name or user_id.lower(),
                                "real_name": profile.pop("real_name", name or user_id),
                                "is_bot": profile.pop("is_bot", False),
                                "tz": profile.pop("tz", "UTC"), "profile": profile}

    def oidc_client(self, client_id: str, client_secret: str) -> None:
        """The app's OAuth client: `openid.connect.token` accepts only these credentials."""
        self._oidc = (client_id, client_secret)

    def sign_in_as(self, user_id: str | None, *, team_id: str | None = None) -> None:
        """Who consents at the authorize page (None: the person cancels), signed in to
        `team_id` (None: this workspace; another one's id, as a person of another workspace
        gets from Slack's authorize page when the app is distributed)."""
        self._consenting, self._consenting_team = user_id, team_id

    def set_usergroup(self, group_id: str, members: list[str]) -> None:
        """The members usergroups.users.list returns for `group_id`."""
        self._usergroups[group_id] = list(members)

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 1) -> None:
        """The next `times` calls to `method` get HTTP 429 with a Retry-After header."""
        self._rate_limits.setdefault(method, []).append(
            _Fault(remaining=times, retry_after=retry_after))

    def fail(self, method: str, error: str, times: int = 1) -> None:
        """The next `times` calls to `method` reply {"ok": false, "error": error}."""
        self._failures.setdefault(method, []).append(_Fault(remaining=times, error=error))

    def not_json(self, method: str, status: int = 502, *, content_type: str = "text/html",
                 body: str | None = None, times: int = 1) -> None:
        """The next `times` calls to `method` get what a proxy or load balancer sends when it
        fails: HTTP `status` with a body that is not Slack's JSON (an HTML error page, plain
        text, or HTML labelled application/json; `PROXY_PAGES` unless `body` is given)."""
        page = PROXY_PAGES.get(content_type, "") if body is None else body
        self._not_json.setdefault(method, []).append(_Fault(
            remaining=times, status=status, content_type=content_type, body=page))

    def response_url(self, token: str) -> str:
        """A response_url on this server; what is POSTed there lands in `responses`."""
        if not self.base_url:
            raise RuntimeError("start the server first")
        return f"http://{self.host}:{self.port}/response/{token}"

    def add_message(self, channel: str, text: str, *, user: str = "UHUMAN01",
                    thread_ts: str | None = None) -> str:
        """Seed a message as if a person had posted it; returns its ts."""
        ts = self._next_ts()
        message = {"type": "message", "channel": channel, "ts": ts, "user": user, "text": text,
                   "blocks": []}
        if thread_ts:
            message["thread_ts"] = thread_ts
        self._messages.setdefault(channel, {})[ts] = message
        return ts

    # --- what happened ---

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """The channel's messages (thread replies included) as they stand now, oldest first."""
        stored = self._messages.get(channel, {})
        return [json.loads(json.dumps(stored[ts])) for ts in sorted(stored, key=_ts_key)]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        found = self._messages.get(channel, {}).get(ts)
        return json.loads(json.dumps(found)) if found else None

    def replies(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """The replies in one thread (not its root), oldest first."""
        return [m for m in self.messages(channel)
                if m.get("thread_ts") == thread_ts and m["ts"] != thread_ts]

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

    # --- HTTP ---

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = decode_args(await _read_args(request))
        args.pop("token", None)  # never recorded
        page = _take(self._not_json, method)
        if page is not None:
            await self._record(Call(method, args, time.time(), page.status,
                                    {"not_json": page.body}))
            return web.Response(status=page.status, body=page.body.encode(),
                                headers={"Content-Type": page.content_type})
        status, reply, headers = self._dispatch(method, args, request.headers.get(
            "Authorization", ""))
        await self._record(Call(method, args, time.time(), status, reply))
        return web.json_response(reply, status=status, headers=headers)

    async def _handle_authorize(self, request: web.Request) -> web.Response:
        """Slack's sign-in page, consenting (or not) at once: back to redirect_uri."""
        q = request.query
        await self._record(Call("openid.connect.authorize", dict(q), time.time()))
        if self._oidc is None or q.get("client_id") != self._oidc[0]:
            return web.Response(status=400, text="invalid_client_id")
        if self._consenting is None:
            answer = {"error": "access_denied", "state": q.get("state", "")}
        else:
            code = secrets.token_urlsafe(12)
            self._codes[code] = {"user": self._consenting, "nonce": q.get("nonce", ""),
                                 "redirect_uri": q.get("redirect_uri", ""),
                                 "team": self._consenting_team or self.team_id}
            answer = {"code": code, "state": q.get("state", "")}
        raise web.HTTPFound(f"{q.get('redirect_uri', '')}?{urlencode(answer)}")

    def _oidc_token(self, args: Args, auth: str) -> Reply:
        """openid.connect.token: the client's Basic credentials, a code used once."""
        expected = base64.b64encode(":".join(self._oidc or ("", "")).encode()).decode()
        if self._oidc is None or auth != f"Basic {expected}":
            return err("invalid_client")
        grant = self._codes.pop(str(args.get("code", "")), None)
        if grant is None:
            return err("invalid_code")
        if grant["redirect_uri"] != args.get("redirect_uri"):
            return err("bad_redirect_uri")
        claims = {"iss": "https://slack.com", "sub": grant["user"], "aud": self._oidc[0],
                  "nonce": grant["nonce"], "https://slack.com/user_id": grant["user"],
                  "https://slack.com/team_id": grant["team"]}
        part = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        return ok(access_token="xoxp-signin", token_type="Bearer",
                  id_token=f"eyJhbGciOiJub25lIn0.{part}.")

    async def _handle_response_url(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        body = decode_args(await _read_args(request))
        self.responses.append(body)
        uses = self._response_uses[token] = self._response_uses.get(token, 0) + 1
        status, reply = 200, ok()
        problem = blocks_problem(body["blocks"]) if "blocks" in body else None
        if uses > RESPONSE_URL_USES:
            status, reply = 404, err("used_url")
        elif problem is not None:
            self.invalid_blocks.append(problem[1])
            status, reply = 400, err(problem[0], errors=[problem[1]])
        elif not body.get("text") and not body.get("blocks") and not body.get("delete_original"):
            status, reply = 400, err("no_text")
        await self._record(Call("response_url", body, time.time(), status, reply, target=token))
        return web.json_response(reply, status=status)

    async def _record(self, call: Call) -> None:
        self.calls.append(call)
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    def _dispatch(self, method: str, args: Args, auth: str) -> tuple[int, Reply, dict[str, str]]:
        if method == "openid.connect.token":
            return 200, self._oidc_token(args, auth), {}
        token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        if not token:
            return 200, err("not_authed"), {}
        if method == "apps.connections.open":
            return 200, self.socket_mode.open(token, f"http://{self.host}:{self.port}"), {}
        if not token.startswith(("xoxb-", "xoxp-")):
            return 200, err("invalid_auth"), {}
        limited = _take(self._rate_limits, method)
        if limited is not None:
            return 429, err("ratelimited"), {"Retry-After": str(limited.retry_after)}
        failure = _take(self._failures, method)
        if failure is not None:
            return 200, err(failure.error), {}
        handler = self._handlers.get(method)
        if handler is None:
            return 200, err("unknown_method"), {}
        return 200, handler(args), {}

    # --- helpers for the methods ---

    def _next_ts(self) -> str:
        micros = FIRST_TS_MICROS + 100 * next(self._ts)
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def _channel_problem(self, channel: str) -> str | None:
        if not channel:
            return "channel_not_found"
        if channel in self._channel_errors:
            return self._channel_errors[channel]
        return "not_in_channel" if channel in self._not_member else None

    def _content_problem(self, method: str, args: Args) -> Reply | None:
        text, blocks = args.get("text"), args.get("blocks")
        if not text and not blocks and not args.get("attachments"):
            return err("no_text")
        if text and len(str(text)) > MAX_TEXT:
            return err("msg_too_long")
        if blocks is not None:
            problem = blocks_problem(blocks)
            if problem is not None:
                code, detail = problem
                self.invalid_blocks.append(detail)
                return err(code, errors=[detail],
                           response_metadata={"messages": [f"[ERROR] {detail}"]})
        if blocks and not text:
            self.warnings.append(f"{method}: missing_text_or_fallback_or_attachments")
        return None

    def _stored(self, args: Args, ts_key: str = "ts") -> dict[str, Any] | None:
        return self._messages.get(str(args.get("channel") or ""), {}).get(
            str(args.get(ts_key) or ""))

    def _channel_info(self, channel: str) -> dict[str, Any] | None:
        info = self._channels.get(channel)
        if info is None and channel[:1] in ("C", "G", "D") and channel[1:].isalnum():
            info = {"id": channel, "name": channel.lower(), "is_channel": channel[0] == "C",
                    "is_private": channel[0] == "G"}
        if info is None:
            return None
        return {**info, "is_member": channel not in self._not_member,
                "is_archived": self._channel_errors.get(channel) == "is_archived"}

    def _store_view(self, view: dict[str, Any], view_id: str | None = None) -> dict[str, Any]:
        view_id = view_id or f"V{next(self._view_ids):08d}"
        stored = {**view, "id": view_id, "team_id": self.team_id, "app_id": "A0FAKE",
                  "bot_id": self.bot_id, "hash": f"{time.time():.6f}.{view_id}",
                  "state": {"values": {}}, "root_view_id": view_id}
        self.views[view_id] = stored
        return stored


    # --- the Web API methods ---

    def _auth_test(self, args: Args) -> Reply:
        return ok(url="https://fake.slack.com/", team="Fake Workspace", user="dialectic",
                  team_id=self.team_id, user_id=self.bot_user_id, bot_id=self.bot_id,
                  is_enterprise_install=False)

    def _post_message(self, args: Args) -> Reply:
        channel = str(args.get("channel") or "")
        problem = self._channel_problem(channel)
        if problem:
            return err(problem)
        bad = self._content_problem("chat.postMessage", args)
        if bad:
            return bad
        ts = self._next_ts()
        message: dict[str, Any] = {
            "type": "message", "channel": channel, "ts": ts, "user": self.bot_user_id,
            "bot_id": self.bot_id, "text": args.get("text") or "",
            "blocks": args.get("blocks") or []}
        for key in ("thread_ts", "reply_broadcast", "metadata", "unfurl_links", "unfurl_media"):
            if args.get(key) not in (None, ""):
                message[key] = args[key]
        parent = self._messages.get(channel, {}).get(str(args.get("thread_ts") or ""))
        if parent is not None:
            parent["reply_count"] = parent.get("reply_count", 0) + 1
            parent.setdefault("thread_ts", parent["ts"])
        self._messages.setdefault(channel, {})[ts] = message
        return ok(channel=channel, ts=ts, message=dict(message))

    def _update(self, args: Args) -> Reply:
        message = self._stored(args)
        if message is None:
            return err("message_not_found")
        if "text" not in args and "blocks" not in args and "attachments" not in args:
            return err("no_text")
        bad = self._content_problem("chat.update", {**message, **args})
        if bad:
            return bad
        for key in ("text", "blocks", "attachments", "metadata"):
            if key in args:
                message[key] = args[key]
        message["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        return ok(channel=message["channel"], ts=message["ts"], text=message.get("text", ""),
                  message=dict(message))

    def _post_ephemeral(self, args: Args) -> Reply:
        channel = str(args.get("channel") or "")
        problem = self._channel_problem(channel)
        if problem:
            return err(problem)
        if not args.get("user"):
            return err("user_not_found")
        bad = self._content_problem("chat.postEphemeral", args)
        if bad:
            return bad
        ts = self._next_ts()
        self.ephemerals.append({"channel": channel, "user": args["user"], "message_ts": ts,
                                "text": args.get("text") or "", "blocks": args.get("blocks") or [],
                                "thread_ts": args.get("thread_ts")})
        return ok(message_ts=ts)

    def _permalink(self, args: Args) -> Reply:
        message = self._stored(args, "message_ts")
        if message is None:
            return err("message_not_found")
        channel, ts = message["channel"], message["ts"]
        url = f"https://fake.slack.com/archives/{channel}/p{ts.replace('.', '')}"
        if message.get("thread_ts") and message["thread_ts"] != ts:
            url += f"?thread_ts={message['thread_ts']}&cid={channel}"
        return ok(channel=channel, permalink=url)

    def _reactions_add(self, args: Args) -> Reply:
        message = self._stored(args, "timestamp")
        name = str(args.get("name") or "")
        if message is None:
            return err("message_not_found")
        if not name:
            return err("invalid_name")
        reactions = message.setdefault("reactions", [])
        if any(r["name"] == name for r in reactions):
            return err("already_reacted")
        reactions.append({"name": name, "users": [self.bot_user_id], "count": 1})
        return ok()

    def _views_open(self, args: Args) -> Reply:
        if not args.get("trigger_id"):
            return err("invalid_arguments")
        problem = view_problem(args.get("view"))
        if problem:
            return err("invalid_arguments", response_metadata={"messages": [problem]})
        return ok(view=self._store_view(args["view"]))

    def _views_publish(self, args: Args) -> Reply:
        view, user_id = args.get("view"), str(args.get("user_id") or "")
        if not user_id:
            return err("invalid_arguments")
        problem = view_problem(view)
        if problem or not isinstance(view, dict) or view.get("type") != "home":
            return err("invalid_arguments",
                       response_metadata={"messages": [problem or "view type must be home"]})
        previous = self.home_views.get(user_id)
        stored = self._store_view(view, previous["id"] if previous else None)
        self.home_views[user_id] = stored
        return ok(view=stored)

    def _views_update(self, args: Args) -> Reply:
        view_id = str(args.get("view_id") or "")
        if not view_id and args.get("external_id"):
            view_id = next((k for k, v in self.views.items()
                            if v.get("external_id") == args["external_id"]), "")
        current = self.views.get(view_id)
        if current is None:
            return err("not_found")
        if args.get("hash") and args["hash"] != current["hash"]:
            return err("hash_conflict")
        problem = view_problem(args.get("view"))
        if problem:
            return err("invalid_arguments", response_metadata={"messages": [problem]})
        return ok(view=self._store_view(args["view"], view_id))

    def _conversations_info(self, args: Args) -> Reply:
        info = self._channel_info(str(args.get("channel") or ""))
        return ok(channel=info) if info else err("channel_not_found")

    def _conversations_join(self, args: Args) -> Reply:
        channel = str(args.get("channel") or "")
        info = self._channel_info(channel)
        if info is None:
            return err("channel_not_found")
        if info.get("is_private"):
            return err("method_not_supported_for_channel_type")
        self._not_member.discard(channel)
        return ok(channel={**info, "is_member": True})

    def _usergroup_users(self, args: Args) -> Reply:
        group = str(args.get("usergroup") or "")
        if group not in self._usergroups:
            return err("no_such_subteam")
        return ok(users=list(self._usergroups[group]))

    def _users_info(self, args: Args) -> Reply:
        user_id = str(args.get("user") or "")
        if user_id not in self._users:
            if not (user_id[:1] in ("U", "W") and user_id[1:].isalnum()):
                return err("user_not_found")
            self.add_user(user_id)
        return ok(user=json.loads(json.dumps(self._users[user_id])))

def _take(faults: dict[str, list[_Fault]], method: str) -> _Fault | None:
    """Consume one use of the first pending fault for `method`."""
    pending = faults.get(method) or []
    while pending and pending[0].remaining <= 0:
        pending.pop(0)
    if not pending:
        return None
    pending[0].remaining -= 1
    return pending[0]


async def _read_args(request: web.Request) -> Args:
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


# --------------------------------------------------------------------------------------------
# by hand


async def _serve(host: str, port: int) -> None:
    async with FakeSlack(host=host, port=port) as fake:
        print(f"fake Slack Web API at {fake.base_url}  (Ctrl-C to stop)", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    options = parser.parse_args(argv)
    try:
        asyncio.run(_serve(options.host, options.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
