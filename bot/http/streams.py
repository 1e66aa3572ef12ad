"""How many live event streams the process holds: at most `sse_per_client` for one client and
`sse_global` in all (HttpSettings). Past either, a stream is refused with 429 and Retry-After
before it starts, so thousands of open streams cannot starve `/healthz` and the API.

A client is who the request says it is, when it says so (a signed-in session's person, or a
bearer token), else its remote address: people behind one proxy who sign in are counted
apart, and anonymous streams (a loopback server without a token, signed transcript links)
by address."""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from aiohttp import web

from bot.http import session
from bot.http.errors import error
from bot.http.state import RUNTIME

RETRY_AFTER_S = 10  # a stream that ends frees its slot; the browser retries on its own anyway


class TooManyStreams(Exception):
    """No slot for another stream; the message says whose limit was reached."""


@dataclass(slots=True)
class StreamLimits:
    """The counts of open streams, per client and in all (one event loop: no lock needed)."""

    per_client: int
    total: int
    open: Counter[str] = field(default_factory=Counter)

    @property
    def held(self) -> int:
        return sum(self.open.values())

    @contextlib.contextmanager
    def slot(self, client: str) -> Iterator[None]:
        """Holds one stream's slot for `client` while the block runs; TooManyStreams when none."""
        if self.held >= self.total:
            raise TooManyStreams(f"the server holds its limit of {self.total} live streams: "
                                 "try again shortly")
        if self.open[client] >= self.per_client:
            raise TooManyStreams(f"you hold {self.per_client} live streams already (the limit "
                                 "per client): close one, or try again shortly")
        self.open[client] += 1
        try:
            yield
        finally:
            self.open[client] -= 1
            if not self.open[client]:
                del self.open[client]


STREAM_LIMITS: web.AppKey[StreamLimits] = web.AppKey("stream_limits", StreamLimits)


def client_of(request: web.Request) -> str:
    """Whom a stream counts against: the session's person, a bearer token, else the address."""
    found = session.current(request)
    if found is not None:
        return f"session:{found.via}:{found.user}"
    bearer = request.headers.get("Authorization", "").strip()
    if bearer and request.app[RUNTIME].settings.api_token is not None:
        # checked by auth_middleware, so not made up per request; a digest: never the token
        return "bearer:" + hashlib.sha256(bearer.encode()).hexdigest()[:32]
    return f"address:{request.remote or 'unknown'}"


def refusal(exc: TooManyStreams) -> web.Response:
    """The 429 a refused stream gets."""
    return error(429, str(exc), headers={"Retry-After": str(RETRY_AFTER_S)})


__all__ = ["STREAM_LIMITS", "StreamLimits", "TooManyStreams", "client_of", "refusal"]
