"""Which model answers for a name asked at an endpoint, so that money is planned at the price
of what answers: the price settlement charges (the reply's `model`).

An Azure deployment (`prod-reasoner`), an alias or a gateway's id is a name only the endpoint can
resolve; its reply names the model that answered (`o1-2024-12-17`). Holds, predictions and
estimates price a call as `priced_model()` says:

    the endpoint has answered for the name   the model that answered (its price, its reply
                                             sizes, its reasoning allowance if it reasons)
    never answered, and the price catalogue  the name itself
    (configured, builtin, library) knows it
    never answered, unknown to the catalogue `STAND_IN`: priced as the dearest reasoning model
                                             an OpenAI-compatible chat-completions endpoint
                                             serves, with a reasoning model's hidden-token
                                             allowance (docs/money.md)

What was learned is kept in the database by the service (bot/service/answers.py), so every
process knows it; this module keeps a process's copy, per endpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from functools import lru_cache
from urllib.parse import urlsplit

#: What a name nobody has answered for, and no catalogue knows, is priced as. o1 ($15 in, $60
#: out per million tokens) is the dearest reasoning model served over chat completions; the
#: dearer "pro" models (o1-pro, o3-pro, gpt-5-pro) answer only OpenAI's Responses API, which the
#: gateway does not call.
STAND_IN = "o1"
#: The endpoint of a process that names none (the openai SDK's default).
DEFAULT_ENDPOINT = "https://api.openai.com/v1"


@lru_cache(maxsize=256)  # asked several times per LLM call, of a few endpoints
def endpoint_key(base_url: str | None) -> str:
    """How an endpoint is named in the book: scheme, host, port and path; never credentials
    or a query (neither is part of which models answer, and a key must not be stored)."""
    parts = urlsplit(base_url or DEFAULT_ENDPOINT)
    host = (parts.hostname or "").lower()
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme.lower()}://{host}{port}{parts.path.rstrip('/')}"


class AnsweringModels:
    """A process's book of (endpoint, name asked) -> model that answered. Shared by every copy
    of the settings that carries it; safe to read and learn from any thread."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        #: how many times what the book says has changed (what was priced by it is stale then)
        self.version = 0

    def answering(self, endpoint: str, asked: str) -> str | None:
        """The model that answered for `asked` at `endpoint`, or None when none has yet."""
        return self._known.get((endpoint, asked))

    def learn(self, endpoint: str, asked: str, answered: str) -> bool:
        """Remember that `answered` answered for `asked`; True when that is news (the service
        then stores it)."""
        if not asked or not answered:
            return False
        with self._lock:
            if self._known.get((endpoint, asked)) == answered:
                return False
            self._known[(endpoint, asked)] = answered
            self.version += 1
            return True

    def merge(self, endpoint: str, known: Mapping[str, str]) -> None:
        """What another process learned (read from the database)."""
        with self._lock:
            for asked, answered in known.items():
                if self._known.get((endpoint, asked)) != answered:
                    self._known[(endpoint, asked)] = answered
                    self.version += 1

    def known(self, endpoint: str) -> dict[str, str]:
        with self._lock:
            return {asked: answered for (where, asked), answered in self._known.items()
                    if where == endpoint}


def priced_model(model: str, *, endpoint: str, book: AnsweringModels,
                 catalogued: Callable[[str], bool]) -> str:
    """The model a call asking for `model` is priced as (the module docstring's table);
    `catalogued(name)`: whether the price catalogue knows the name."""
    answered = book.answering(endpoint, model)
    if answered is not None:
        return answered
    return model if catalogued(model) else STAND_IN


__all__ = ["DEFAULT_ENDPOINT", "STAND_IN", "AnsweringModels", "endpoint_key", "priced_model"]
