"""The engine's exception hierarchy: one tree, so callers catch what they mean.

    DialecticError
    ├── ConfigurationError          settings are missing or contradictory
    ├── InvalidRequest              a request that cannot run (bad mode, empty topic)
    │   └── UnknownPreset           no preset of that name (built in or configured)
    ├── DebateError                 a debate could not go on
    │   └── BudgetExceeded          the daily cap does not leave room for this debate
    └── LLMError                    the provider failed; `retryable`: may a retry help
        ├── LLMAuthError            401/403: fail the debate at once, name the endpoint
        ├── LLMTransientError       429, 5xx, connection errors (retried with backoff)
        │   ├── LLMUnreachable      connection refused, unknown host, no route: counts
        │   │                       towards the circuit (engine/provider/circuit.py)
        │   └── LLMCircuitOpen      the endpoint was just found unreachable: fail at once,
        │                           no retry (a later run of the debate may succeed)
        ├── LLMTimeout              one call ran past its timeout (retried once)
        ├── LLMInvalidOutput        the reply was not valid JSON for the schema (re-asked)
        ├── LLMTruncated            the reply was cut at its output cap, also after one retry
        │                           with a larger cap (step degraded "cut off at N tokens")
        ├── LLMRefused              the model declined in its own words (`refusal`); never
        │                           re-asked (step "refused")
        ├── LLMContentFiltered      content filter refused (no retry; step "filtered")
        └── LLMBadRequest           any other 4xx: our request is wrong, retrying will not help
"""

from __future__ import annotations

from pydantic import ValidationError


def validation_message(exc: ValidationError, *, prefix: str = "") -> str:
    """A pydantic error as one line a person can act on: `where: what` for each problem, with
    pydantic's own framing ("Value error, ...") removed. The one place this translation lives."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        where = f"{prefix}{where}" if where or prefix else ""
        parts.append(f"{where.rstrip('.')}: {message}" if where else message)
    return "; ".join(parts)


class DialecticError(Exception):
    """Base of every error Dialectic raises on purpose."""


class ConfigurationError(DialecticError):
    """Settings are missing, malformed or contradictory."""


class InvalidRequest(DialecticError):
    """A request that cannot run as asked; the message is fit to show the user."""


class UnknownPreset(InvalidRequest):
    """No preset of that name; surfaces add where the configured presets were read from."""


class DebateError(DialecticError):
    """A debate could not go on."""


class BudgetExceeded(DebateError):
    """The daily budget does not leave room for the debate; the message carries the figures."""

    def __init__(self, message: str, *, estimate_usd: float, remaining_usd: float) -> None:
        super().__init__(message)
        self.estimate_usd = estimate_usd
        self.remaining_usd = remaining_usd


class LLMError(DialecticError):
    """The model provider failed."""

    retryable = False

    def __init__(self, message: str, *, status: int | None = None, endpoint: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint


class LLMAuthError(LLMError):
    """401/403 from the provider: the key is missing, wrong or lacks access."""


class LLMTransientError(LLMError):
    """429, 5xx or a connection failure; `retry_after` is the server's hint in seconds."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        endpoint: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, endpoint=endpoint)
        self.retry_after = retry_after


class LLMUnreachable(LLMTransientError):
    """The endpoint could not be reached at all; `reason` says how ("connection refused")."""

    def __init__(self, message: str, *, reason: str, endpoint: str = "") -> None:
        super().__init__(message, endpoint=endpoint)
        self.reason = reason


class LLMCircuitOpen(LLMTransientError):
    """The endpoint was unreachable moments ago: the call is not sent, nor retried."""


class LLMTimeout(LLMError):
    """One call ran past its timeout; `stalled`: its reply began but went silent past the read
    timeout, so the usage it would have reported (its bill) never arrived."""

    retryable = True

    def __init__(self, message: str, *, endpoint: str = "", stalled: bool = False) -> None:
        super().__init__(message, endpoint=endpoint)
        self.stalled = stalled


class LLMInvalidOutput(LLMError):
    """The reply was not valid JSON for the schema, after every re-ask."""


class LLMTruncated(LLMError):
    """The reply stopped at its output cap (`finish_reason: "length"`), also after the retry with
    a larger cap; `cap` is the last cap asked for."""

    def __init__(self, message: str, *, cap: int, endpoint: str = "") -> None:
        super().__init__(message, endpoint=endpoint)
        self.cap = cap


class LLMRefused(LLMError):
    """The model declined to answer (`message.refusal`); `refusal` is its own words."""

    def __init__(self, message: str, *, refusal: str, endpoint: str = "") -> None:
        super().__init__(message, endpoint=endpoint)
        self.refusal = refusal


class LLMContentFiltered(LLMError):
    """The provider's content filter refused the prompt or the completion."""


class LLMBadRequest(LLMError):
    """Any other 4xx: the request itself is wrong. `param` and `code` are the provider's own
    (OpenAI names the refused parameter), so the gateway can learn what a model accepts."""

    def __init__(self, message: str, *, status: int | None = None, endpoint: str = "",
                 param: str | None = None, code: str | None = None,
                 window: int | None = None) -> None:
        super().__init__(message, status=status, endpoint=endpoint)
        self.param = param
        self.code = code
        self.window = window   # the context window the 400 named (a prompt too long), if any
