"""Waiting before a retry: the server's own hint (Retry-After) and jittered exponential backoff.
Pure arithmetic, apart from the gateway that uses it (engine/provider/gateway/)."""

from __future__ import annotations

import email.utils
import random
from collections.abc import Mapping
from datetime import UTC, datetime

RETRY_AFTER_CAP_S = 60.0


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """The server's wait hint in seconds: `retry-after-ms`, or `Retry-After` (seconds or a date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_delay(
    retry: int, *, base: float, cap: float, retry_after: float | None, rng: random.Random
) -> float:
    """Seconds to wait before retry number `retry` (0-based): jittered exponential backoff, but
    never less than the server's Retry-After, and never more than a minute."""
    computed = min(base * 2.0**retry, cap) * rng.uniform(0.5, 1.0)
    return min(max(computed, retry_after or 0.0), RETRY_AFTER_CAP_S)
