"""Faults the fake Slack injects, method by method: HTTP 429 with Retry-After, an error reply,
or what a proxy or load balancer answers when it fails (a page that is not Slack's JSON)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Fault:
    remaining: int
    error: str = ""
    retry_after: int = 0
    status: int = 200
    content_type: str = ""
    body: str = ""
    delay: float = 0.0
    when: Callable[[dict[str, Any]], bool] | None = None


# What stands between a client and Slack answers with these when it fails (see `not_json`).
PROXY_PAGES = {
    "text/html": "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
                 "Gateway</h1></center><hr><center>nginx</center></body></html>",
    "text/plain": "upstream connect error or disconnect/reset before headers",
    "application/json": "<html><body>Service Unavailable</body></html>",  # a lying proxy
}


def take(faults: dict[str, list[Fault]], method: str) -> Fault | None:
    """Consume one use of the first pending fault for `method`."""
    pending = faults.get(method) or []
    while pending and pending[0].remaining <= 0:
        pending.pop(0)
    if not pending:
        return None
    pending[0].remaining -= 1
    return pending[0]


class SlackFaults:
    """The configuration half: which of the next calls to a method fail, and how."""

    def __init__(self) -> None:
        self._rate_limits: dict[str, list[Fault]] = {}
        self._failures: dict[str, list[Fault]] = {}
        self._not_json: dict[str, list[Fault]] = {}
        self._slow: dict[str, list[Fault]] = {}

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 1) -> None:
        """The next `times` calls to `method` get HTTP 429 with a Retry-After header."""
        self._rate_limits.setdefault(method, []).append(
            Fault(remaining=times, retry_after=retry_after))

    def slow(self, method: str, seconds: float, times: int = 1_000_000,
             when: Callable[[dict[str, Any]], bool] | None = None) -> None:
        """The next `times` calls to `method` (those `when(args)` picks, if given) are carried
        out at once (the message is posted) and answered `seconds` later, as Slack does under
        load: a caller that dies or gives up meanwhile never learns that it worked."""
        self._slow.setdefault(method, []).append(Fault(remaining=times, delay=seconds,
                                                       when=when))

    def delay_for(self, method: str, args: dict[str, Any]) -> float:
        """How long to wait before answering this call (one use of a matching `slow`)."""
        for fault in self._slow.get(method) or []:
            if fault.remaining > 0 and (fault.when is None or fault.when(args)):
                fault.remaining -= 1
                return fault.delay
        return 0.0

    def fail(self, method: str, error: str, times: int = 1) -> None:
        """The next `times` calls to `method` reply {"ok": false, "error": error}."""
        self._failures.setdefault(method, []).append(Fault(remaining=times, error=error))

    def not_json(self, method: str, status: int = 502, *, content_type: str = "text/html",
                 body: str | None = None, times: int = 1) -> None:
        """The next `times` calls to `method` get what a proxy or load balancer sends when it
        fails: HTTP `status` with a body that is not Slack's JSON (an HTML error page, plain
        text, or HTML labelled application/json; `PROXY_PAGES` unless `body` is given)."""
        page = PROXY_PAGES.get(content_type, "") if body is None else body
        self._not_json.setdefault(method, []).append(Fault(
            remaining=times, status=status, content_type=content_type, body=page))
