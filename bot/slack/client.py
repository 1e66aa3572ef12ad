"""The Slack Web API client, and the one place a Slack failure is put into words.

Between us and Slack there may be a proxy that answers with an HTML error page, or plain text.
slack_sdk 3.x turns such a reply into an `AttributeError` (a 200 with a text body, or a JSON
array), or into a `SlackApiError` whose `response` is a raw aiohttp response or holds a string
(so `exc.response.get("error")` itself raises). `WebClient` makes every such reply a
`SlackApiError` holding a dict, `{"ok": false, "error": "not_json", ...}`, so callers catch
one error type; `error_code()` and `slack_error()` read any failure without raising.
"""

from __future__ import annotations

import base64
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.slack.limits import limits_token, paced_limits

SLACK_ERRORS = (SlackApiError, ClientError, TimeoutError)
NOT_JSON = "not_json"
PREVIEW_CHARS = 80


class WebClient(AsyncWebClient):
    """AsyncWebClient whose replies are always Slack's JSON object, or an error saying that
    what came back was not one."""

    async def _request(self, *, http_verb: str, api_url: str, req_args: dict[str, Any]
                       ) -> dict[str, Any]:
        limits = paced_limits(self)
        if limits is not None:   # a method Slack lately refused waits its turn
            await limits.acquire(limits_token(req_args.get("headers")),
                                 api_url.rsplit("/", 1)[-1])
        try:
            res: dict[str, Any] = await super()._request(http_verb=http_verb, api_url=api_url,
                                                         req_args=req_args)
        except SlackApiError as exc:
            if isinstance(exc.response, AsyncSlackResponse):
                raise
            # a JSON content type over a body that is not JSON: the raw aiohttp response
            status = int(getattr(exc.response, "status", 0) or 0)
            content_type = str(getattr(exc.response, "content_type", "") or "")
            return _not_json(status, content_type, str(exc))
        data = res.get("data")
        if (isinstance(data, dict) and "ok" in data) or isinstance(data, bytes):
            return res
        content_type = str((res.get("headers") or {}).get("Content-Type", ""))
        return _not_json(int(res.get("status_code") or 0), content_type, str(data or ""))


    async def oauth_v2_access(self, *, client_id: str, client_secret: str,
                              **kwargs: Any) -> AsyncSlackResponse:
        """`oauth.v2.access` (Bolt's OAuth flow exchanges the install's code with it), the
        client's credentials sent as HTTP Basic by hand: slack_sdk's own `auth=` goes through
        aiohttp's deprecated BasicAuth."""
        data = {k: v for k, v in kwargs.items() if v is not None}
        return await self.api_call("oauth.v2.access", data=data,
                                   headers=basic_auth(client_id, client_secret))


def basic_auth(client_id: str, client_secret: str) -> dict[str, str]:
    """The Authorization header of an OAuth client's credentials."""
    basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
    return {"Authorization": f"Basic {basic}"}


def _not_json(status: int, content_type: str, body: str) -> dict[str, Any]:
    data = {"ok": False, "error": NOT_JSON, "http_status": status,
            "content_type": content_type.split(";")[0].strip(),
            "body_preview": " ".join(body.split())[:PREVIEW_CHARS]}
    return {"data": data, "headers": {}, "status_code": status}


def _reply(exc: SlackApiError) -> dict[str, Any]:
    data = getattr(exc.response, "data", None)
    return data if isinstance(data, dict) else {}


def error_code(exc: BaseException) -> str:
    """Slack's error code (`not_in_channel`, `ratelimited`, `not_json` ...), or the kind of
    failure when Slack did not answer (`ClientConnectorError`, `TimeoutError`)."""
    if isinstance(exc, SlackApiError):
        return str(_reply(exc).get("error") or NOT_JSON)
    return type(exc).__name__


def slack_error(exc: BaseException) -> str:
    """A short, secret-free description of a Slack call's failure, for logs and people."""
    code = error_code(exc)
    if not isinstance(exc, SlackApiError):   # Slack never answered: say what happened
        detail = str(exc).strip()[:200]
        return f"could not reach Slack ({code}{': ' + detail if detail else ''})"
    if code != NOT_JSON:
        return code
    reply = _reply(exc)
    status = reply.get("http_status") or getattr(exc.response, "status_code", 0) or "?"
    kind = reply.get("content_type") or "no content type"
    return f"no reply from Slack itself: HTTP {status} {kind} from something in between"


__all__ = ["NOT_JSON", "SLACK_ERRORS", "WebClient", "basic_auth", "error_code", "slack_error"]
