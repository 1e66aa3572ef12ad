"""A fake Slack Web API on loopback, for tests and by hand: the real `slack_sdk` client talks to it.

    async with FakeSlack() as slack:
        client = AsyncWebClient(token="xoxb-test", base_url=slack.base_url)
        slack.not_in_channel("C999")                 # chat.postMessage there fails
        slack.rate_limit("chat.update", times=1)     # one HTTP 429 with Retry-After
        slack.fail("views.open", "expired_trigger_id")
        slack.not_json("chat.getPermalink", 502)   # a proxy's HTML error page instead
        slack.slow("chat.postMessage", 3.0)        # posted at once, answered 3 s later
        slack.enforce_tiers()                      # Slack's per-method limits (slack_tiers.py)
        await client.chat_postMessage(channel="C1", text="hi")
        assert slack.messages("C1")[0]["text"] == "hi"

Like bolt-python's tests/mock_web_api_server, but a real aiohttp server on 127.0.0.1, port 0,
with state: messages are kept (and changed by chat.update), so tests assert on what a user would
see. Blocks are validated with `slack_sdk.models` plus the per-message limits Slack enforces.
Every call is recorded; the token itself never is.

By hand: `python -m tests.fakes.slack_server --port 8901`.

This module is the entry point (FakeSlack and the names tests import); the parts:
slack_requests (arguments, checks, the call log), slack_state (the workspace),
slack_methods (the Web API methods), slack_assistant (AI-app threads), slack_streams
(chat.*Stream), slack_entities (unfurls, Work Objects, feedback presses), slack_faults,
slack_signin (OpenID) and slack_socket (Socket Mode).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from aiohttp import web

from tests.fakes.slack_assistant import SlackAssistant
from tests.fakes.slack_entities import SlackEntities
from tests.fakes.slack_faults import PROXY_PAGES, Fault, SlackFaults, take
from tests.fakes.slack_installs import SlackInstalls
from tests.fakes.slack_requests import (
    JSON_ARGS,
    MAX_BLOCKS,
    MAX_BLOCKS_CHARS,
    MAX_TEXT,
    Args,
    Call,
    Predicate,
    Reply,
    blocks_problem,
    decode_args,
    err,
    ok,
    read_args,
    view_problem,
)
from tests.fakes.slack_signin import SlackSignIn
from tests.fakes.slack_socket import SocketMode
from tests.fakes.slack_streams import SlackStreams
from tests.fakes.slack_tiers import SlackTiers

__all__ = ["JSON_ARGS", "MAX_BLOCKS", "MAX_BLOCKS_CHARS", "MAX_TEXT", "PROXY_PAGES", "Call",
           "FakeSlack", "Fault", "Predicate", "blocks_problem", "decode_args", "err", "main", "ok",
           "view_problem"]

RESPONSE_URL_USES = 5


class FakeSlack(SlackAssistant, SlackStreams, SlackEntities, SlackSignIn, SlackInstalls,
                SlackFaults, SlackTiers):
    """A fake Slack Web API with state, fault injection and a record of every call."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, team_id: str = "T0FAKE",
                 bot_user_id: str = "UBOT0001", bot_id: str = "B0FAKE") -> None:
        SlackAssistant.__init__(self, team_id=team_id, bot_user_id=bot_user_id, bot_id=bot_id)
        SlackSignIn.__init__(self)
        SlackInstalls.__init__(self)
        SlackFaults.__init__(self)
        SlackTiers.__init__(self)                          # Slack's rate limits, when asked
        self.init_streams()                                # chat.startStream and the rest
        self.init_entities()                               # unfurls, flexpanes, feedback
        self.host, self.port = host, port
        self.base_url = ""
        self.responses: list[dict[str, Any]] = []
        self._response_uses: dict[str, int] = {}
        self.socket_mode = SocketMode()                    # apps.connections.open, the socket
        self._runner: web.AppRunner | None = None
        self._handlers: dict[str, Callable[[Args], Reply]] = {**self.handlers(),
                                                              **self.stream_handlers(),
                                                              **self.entity_handlers()}

    # --- lifecycle ---

    async def start(self) -> str:
        """Start serving; returns the API base URL ending in "/" (what AsyncWebClient wants)."""
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle_api)
        app.router.add_post("/response/{token}", self._handle_response_url)
        app.router.add_get("/openid/connect/authorize", self._handle_authorize)
        app.router.add_get("/oauth/v2/authorize", self._handle_oauth_authorize)
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

    def response_url(self, token: str) -> str:
        """A response_url on this server; what is POSTed there lands in `responses`."""
        if not self.base_url:
            raise RuntimeError("start the server first")
        return f"http://{self.host}:{self.port}/response/{token}"

    # --- HTTP ---

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = decode_args(await read_args(request))
        args.pop("token", None)  # never recorded
        page = take(self._not_json, method)
        if page is not None:
            await self._record(Call(method, args, time.time(), page.status,
                                    {"not_json": page.body}))
            return web.Response(status=page.status, body=page.body.encode(),
                                headers={"Content-Type": page.content_type})
        auth = request.headers.get("Authorization", "")
        status, reply, headers = self._dispatch(method, args, auth)
        install = self.issued.get(auth.removeprefix("Bearer ").strip())
        await self._record(Call(method, args, time.time(), status, reply,
                                team=install.key if install else ""))
        delay = self.delay_for(method, args)
        if delay:
            await asyncio.sleep(delay)
        return web.json_response(reply, status=status, headers=headers)

    async def _handle_response_url(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        body = decode_args(await read_args(request))
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

    def _dispatch(self, method: str, args: Args, auth: str) -> tuple[int, Reply, dict[str, str]]:
        if method == "openid.connect.token":
            return 200, self._oidc_token(args, auth), {}
        if method == "oauth.v2.access":
            return 200, self._oauth_access(args, auth), {}
        token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        if not token:
            return 200, err("not_authed"), {}
        if method == "auth.test" and self.installed_auth_test(token) is not None:
            return 200, self.installed_auth_test(token) or {}, {}
        if method == "apps.connections.open":
            return 200, self.socket_mode.open(token, f"http://{self.host}:{self.port}"), {}
        if not token.startswith(("xoxb-", "xoxp-")):
            return 200, err("invalid_auth"), {}
        over = self.over_tier(token, method, args)
        if over is not None:
            return 429, err("ratelimited"), {"Retry-After": str(over)}
        limited = take(self._rate_limits, method)
        if limited is not None:
            return 429, err("ratelimited"), {"Retry-After": str(limited.retry_after)}
        failure = take(self._failures, method)
        if failure is not None:
            return 200, err(failure.error), {}
        handler = self._handlers.get(method)
        if handler is None:
            return 200, err("unknown_method"), {}
        return 200, handler(args), {}


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
