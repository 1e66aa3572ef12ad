"""The service's settings: the daily budget, caches, workers and leases, who may review, and how
the service is reached (its public URL, and the token that protects it and signs its links)."""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator

from engine.money.sizing import CEILING_MULTIPLE
from engine.vocabulary import MAX_WINDOW_DAYS, MAX_WORKERS

log = logging.getLogger("dialectic.settings")

_MENTION = re.compile(r"<[@!](?:subteam\^)?([A-Z0-9]+)(?:\|[^>]*)?>")
_SEPARATORS = re.compile(r"[\s,;]+")
_SLACK_ID = re.compile(r"[UWS][A-Z0-9]+")


def parse_reviewers(entries: list[Any] | tuple[Any, ...]) -> tuple[str, ...]:
    """Reviewer ids from what people paste (ids, mentions, separated by commas, semicolons or
    spaces); ValueError naming the first word that is no Slack user or user-group id."""
    found: list[str] = []
    for entry in entries:
        text = _MENTION.sub(lambda m: f" {m.group(1)} ", str(entry))
        for word in (w for w in _SEPARATORS.split(text) if w):
            if not _SLACK_ID.fullmatch(word):
                raise ValueError(f"{word!r} is no Slack user id (U…, W…) or user-group id "
                                 "(S…); give ids, or paste mentions such as <@U0123ABC>")
            found.append(word)
    return tuple(dict.fromkeys(found))


class ServiceSettings(BaseModel):
    """Budget, caches, workers, reviewers, links. Frozen: built once at the top, passed down."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              allow_inf_nan=False)

    # --- tracing (docs/tracing.md): whether traces are on, and whether they carry the text;
    # the OpenTelemetry SDK reads every other OTEL_* variable itself ---
    otel_exporter_otlp_endpoint: str = Field(default="", validation_alias=AliasChoices(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "otel_exporter_otlp_endpoint"))
    otel_traces_exporter: str = Field(default="", validation_alias=AliasChoices(
        "OTEL_TRACES_EXPORTER", "otel_traces_exporter"))
    otel_capture_message_content: bool = Field(default=False, validation_alias=AliasChoices(
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "otel_capture_message_content"))

    # --- money ---
    daily_budget_usd: float = Field(default=10.0, ge=0)
    budget_alert_fraction: float = Field(default=0.8, gt=0, le=1)
    # The most one debate may hold: it is admitted holding its high estimate, and its hold may
    # grow from the day's free budget as it learns its real size, up to this. Unset: a multiple
    # of its high estimate (engine/money/sizing.py CEILING_MULTIPLE).
    max_debate_usd: float | None = Field(default=None, gt=0)
    # No longer used (the ceiling above replaced it); accepted so old configurations still load.
    budget_margin_fraction: float | None = Field(default=None, ge=0, le=10)

    # --- caches ---
    cache_ttl_seconds: int = Field(default=3600, ge=0)
    judge_cache_ttl_seconds: int = Field(default=86400, ge=0)

    # --- workers ---
    worker_concurrency: int = Field(default=4, ge=1, le=MAX_WORKERS)
    lease_seconds: float = Field(default=30.0, gt=0)
    max_attempts: int = Field(default=5, ge=1, le=50)  # claims before a crashing debate fails
    poll_interval: float = Field(default=0.5, gt=0)

    # --- reviewers measuring routing (bot/service/oversight.py) ---
    # The share of published (auto-approved or tentative) results sent to a reviewer anyway,
    # marked as spot checks, so how often routing publishes wrongly is measured, not assumed.
    spot_check_fraction: float = Field(default=0.05, ge=0, le=1)
    audit_window_days: int = Field(default=90, ge=1,   # what the audits read back
                                   le=MAX_WINDOW_DAYS)

    # --- people and links ---
    reviewers: tuple[str, ...] = ()   # Slack user ids (U…, W…) and user-group ids (S…)
    # unset: the address the server listens on, DIALECTIC_HOST and DIALECTIC_PORT (filled in
    # where the layers' settings are composed, bot/settings.py); this default is theirs
    public_url: str = "http://127.0.0.1:3000"
    api_token: SecretStr | None = None
    link_ttl_days: int = Field(default=30, ge=1, le=3650)          # signed transcript links
    console_session_hours: float = Field(default=12.0, gt=0, le=24 * 90)  # console cookie
    log_level: str = "INFO"

    # --- MCP at /mcp signed in by the team's identity provider (bot/mcp/authorization.py) ---
    # issuer URLs whose access tokens /mcp accepts beside the API token; the audience they must
    # name (unset: the public URL's /mcp, RFC 8707's resource)
    mcp_authorization_servers: tuple[str, ...] = ()
    mcp_audience: str = ""

    @field_validator("reviewers", mode="before")
    @classmethod
    def _split_reviewers(cls, value: Any) -> Any:
        """Reviewers in the forms people paste: ids separated by commas, semicolons or spaces,
        Slack mentions (<@U0123ABC>, <@U0123ABC|ana>) and user-group mentions
        (<!subteam^S0123ABC|@oncall>). Anything else is an error naming it, never dropped."""
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            return value
        return parse_reviewers(value)

    @field_validator("mcp_authorization_servers", mode="before")
    @classmethod
    def _issuers(cls, value: Any) -> Any:
        """Issuer URLs separated by commas or spaces; each an https URL (http on loopback)."""
        if isinstance(value, str):
            value = [v for v in _SEPARATORS.split(value) if v]
        if not isinstance(value, list | tuple):
            return value
        for issuer in value:
            parts = urlsplit(str(issuer))
            local = parts.hostname in ("127.0.0.1", "localhost", "::1")
            secure = parts.scheme == "https" or (parts.scheme == "http" and local)
            if not parts.netloc or not secure or parts.query or parts.fragment:
                raise ValueError(f"{issuer!r} is no issuer URL: give the identity provider's "
                                 "issuer, https://… (http:// on loopback only), no query")
        return tuple(str(v).rstrip("/") for v in value)

    @field_validator("api_token")
    @classmethod
    def _no_empty_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("is empty: set a long random token, or remove the variable to "
                             "serve on loopback only")
        return value

    @field_validator("budget_margin_fraction")
    @classmethod
    def _deprecated_margin(cls, value: float | None) -> float | None:
        if value is not None:
            log.warning("budget_margin_fraction (DIALECTIC_BUDGET_MARGIN_FRACTION) is no longer "
                        "used: a debate's hold grows up to its ceiling, DIALECTIC_MAX_DEBATE_USD "
                        "(unset: %g x its high estimate); remove the setting", CEILING_MULTIPLE)
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError("use DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return level

    def secrets(self) -> tuple[str, ...]:
        return (self.api_token.get_secret_value(),) if self.api_token else ()
