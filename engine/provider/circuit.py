"""A circuit breaker for the provider's endpoint: when it cannot be reached at all (connection
refused, a name that does not resolve, no route to it), stop calling it for a while instead of
retrying every step of every debate with backoff.

    closed ──(`threshold` unreachable failures in a row)──> open
    open ──(`cooldown` seconds)──> half-open: the next call goes through as a probe
    half-open ──(the endpoint answers)──> closed ──(still unreachable)──> open again

While it is open, calls fail at once with `LLMCircuitOpen` (no request is sent, no retry), so
a debate fails in moments with the reason the endpoint gave. Any answer from the endpoint, even
an HTTP error, closes it: the endpoint is there. A timeout says nothing either way (a slow
endpoint is a reachable one), except that a probe which times out leaves the circuit open.

One circuit per gateway, so every debate of a process shares what the first one found out.
"""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from engine.errors import LLMCircuitOpen, LLMError, LLMTimeout, LLMUnreachable

_NO_ROUTE = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED})


def unreachable_reason(exc: BaseException) -> str | None:
    """Why the endpoint could not be reached at all ("connection refused", "name not known"),
    found in `exc`'s chain of causes; None for any other failure (a reset, a timeout)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or (
                isinstance(current, OSError) and current.errno == errno.ECONNREFUSED):
            return "connection refused"   # the refusal itself, or a transport's wrapper of it
        if isinstance(current, socket.gaierror):
            return f"the host name does not resolve ({current.strerror or current})"
        if isinstance(current, OSError) and current.errno in _NO_ROUTE:
            return current.strerror or "no route to the host"
        current = current.__cause__ or current.__context__
    return None


@dataclass
class Circuit:
    """The breaker's state; every request goes through `request()`."""

    threshold: int = 3
    cooldown: float = 15.0
    clock: Callable[[], float] = time.monotonic
    failures: int = 0
    opened_at: float | None = None
    reason: str = ""
    probing: bool = field(default=False, repr=False)

    @property
    def open(self) -> bool:
        return self.opened_at is not None

    @contextmanager
    def request(self, endpoint: str) -> Iterator[None]:
        """Around one request: refused at once while the circuit is open; an unreachable
        endpoint counts towards opening it (the failure that opens it is raised as
        `LLMCircuitOpen`); any answer closes it."""
        probe = self._admit(endpoint)
        reached: bool | None = None
        try:
            yield
            reached = True
        except LLMUnreachable as exc:
            reached = False
            if self._failed(exc.reason, probe):
                raise LLMCircuitOpen(f"could not reach {endpoint}: {exc.reason}",
                                     endpoint=endpoint) from exc
            raise
        except LLMTimeout:
            raise
        except LLMError:
            reached = True
            raise
        finally:
            self._settle(reached, probe)

    def _admit(self, endpoint: str) -> bool:
        """True for the probe sent once `cooldown` is over; raises while the circuit is open."""
        if self.opened_at is None:
            return False
        waited = self.clock() - self.opened_at
        if waited >= self.cooldown and not self.probing:
            self.probing = True
            return True
        again = max(self.cooldown - waited, 0.0)
        raise LLMCircuitOpen(f"could not reach {endpoint}: {self.reason} (not calling it again "
                             f"for {again:.0f} s)", endpoint=endpoint)

    def _failed(self, reason: str, probe: bool) -> bool:
        """Count an unreachable failure; True when it opens (or re-opens) the circuit."""
        self.failures += 1
        self.reason = reason
        if probe or self.failures >= self.threshold:
            self.opened_at = self.clock()
            return True
        return False

    def _settle(self, reached: bool | None, probe: bool) -> None:
        if reached:
            self.failures, self.opened_at, self.reason = 0, None, ""
        elif probe and reached is None:  # the probe timed out or was cancelled: told nothing
            self.opened_at = self.clock()
        if probe:
            self.probing = False
