"""One settings object for the whole service, read once from the environment and `dialectic.toml`.

Environment variables win over the file. Provider and Slack variables keep their usual names
(`OPENAI_API_KEY`, `SLACK_BOT_TOKEN`, `DATABASE_URL`, ...); Dialectic's own start `DIALECTIC_`.
The file is `./dialectic.toml`, or the path in `DIALECTIC_CONFIG`. Nothing else reads `os.environ`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

OutputMode = Literal["json_schema", "json_object", "prompt"]


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True)
    input: float = Field(ge=0)
    output: float = Field(ge=0)


class JudgeSpec(BaseModel):
    """One judge of a panel: its expertise (the lens it scores through), model and vote weight."""

    model_config = ConfigDict(frozen=True)
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    expertise: str
    model: str | None = None
    weight: float = Field(default=1.0, gt=0)


class ThresholdSpec(BaseModel):
    """Alpha bands that route a result: auto-approve, tentative, human review, escalate."""

    model_config = ConfigDict(frozen=True)
    high: float = 0.80
    tentative: float = 0.67
    escalate: float = 0.50
    irreconcilable_spread: float = 3.0


class PresetSpec(BaseModel):
    """A named combination of mode, personas, judges, rounds and routing thresholds."""

    model_config = ConfigDict(frozen=True)
    name: str
    description: str = ""
    mode: str = "consensus"
    rounds: int = Field(default=1, ge=0, le=5)
    pro_persona: str = "an advocate arguing FOR the proposition"
    con_persona: str = "an advocate arguing AGAINST the proposition"
    judges: tuple[JudgeSpec, ...] = ()
    thresholds: ThresholdSpec = ThresholdSpec()
    allow_downgrade: bool = True
    policy: str = ""
    perspectives: tuple[str, ...] = ()
    temperature: float | None = None


DEFAULT_JUDGES: tuple[JudgeSpec, ...] = (
    JudgeSpec(name="technical",
              expertise="technical feasibility, engineering soundness and evidence"),
    JudgeSpec(name="business", expertise="business value, cost, market and organisational impact"),
    JudgeSpec(name="risk", expertise="risk, compliance, security and what could go wrong"),
    JudgeSpec(name="general", expertise="overall reasoning quality, fairness and clarity"),
)

DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-4o-mini": ModelPrice(input=0.15, output=0.60),
    "gpt-4o": ModelPrice(input=2.50, output=10.00),
    "gpt-4.1-mini": ModelPrice(input=0.40, output=1.60),
    "gpt-4.1": ModelPrice(input=2.00, output=8.00),
    "deepseek-chat": ModelPrice(input=0.27, output=1.10),
    "rehearsal": ModelPrice(input=0.0, output=0.0),
}


def _config_path() -> Path:
    return Path(os.environ.get("DIALECTIC_CONFIG", "dialectic.toml"))


class Settings(BaseSettings):
    """Every knob of the service. Build it once (`Settings()`), pass it down."""

    model_config = SettingsConfigDict(
        env_prefix="DIALECTIC_", extra="ignore", frozen=True, populate_by_name=True
    )

    # --- LLM provider (the openai SDK's own variable names) ---
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "openai_base_url")
    )
    rehearsal: bool = False  # DIALECTIC_REHEARSAL=1 forces the offline model even with a key
    output_mode: OutputMode = "json_schema"
    default_model: str = "gpt-4o-mini"
    models: dict[str, str] = Field(default_factory=dict)  # role -> model (pro, con, judge, ...)
    prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    default_price: ModelPrice = ModelPrice(input=2.50, output=10.00)
    temperature: float | None = 0.7

    # --- time and retries ---
    call_timeout: float = Field(default=60.0, gt=0)
    phase_timeout: float = Field(default=120.0, gt=0)
    debate_timeout: float = Field(default=300.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=10)
    backoff_base: float = Field(default=1.0, ge=0)
    backoff_cap: float = Field(default=8.0, ge=0)
    invalid_output_retries: int = Field(default=2, ge=0, le=5)

    # --- debates ---
    judges: tuple[JudgeSpec, ...] = DEFAULT_JUDGES
    presets: dict[str, PresetSpec] = Field(default_factory=dict)
    default_rounds: int = Field(default=1, ge=0, le=5)
    max_topic_chars: int = Field(default=4000, ge=10)

    # --- storage, budget, workers ---
    database_url: str = Field(
        default="sqlite+aiosqlite:///./dialectic.db",
        validation_alias=AliasChoices("DATABASE_URL", "database_url"),
    )
    daily_budget_usd: float = Field(default=10.0, ge=0)
    budget_alert_fraction: float = Field(default=0.8, gt=0, le=1)
    cache_ttl_seconds: int = Field(default=3600, ge=0)
    judge_cache_ttl_seconds: int = Field(default=86400, ge=0)
    worker_concurrency: int = Field(default=4, ge=1, le=256)
    lease_seconds: float = Field(default=30.0, gt=0)
    max_attempts: int = Field(default=5, ge=1, le=50)  # claims before a crashing debate fails
    poll_interval: float = Field(default=0.5, gt=0)

    log_level: str = "INFO"

    # --- HTTP surfaces ---
    host: str = "127.0.0.1"
    port: int = 3000
    api_token: SecretStr | None = None
    public_url: str = "http://127.0.0.1:3000"
    metrics_port: int | None = None   # Prometheus on 127.0.0.1 for worker-only processes

    # --- Slack ---
    slack_bot_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_BOT_TOKEN", "slack_bot_token")
    )
    slack_signing_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_SIGNING_SECRET", "slack_signing_secret"),
    )
    slack_app_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_APP_TOKEN", "slack_app_token")
    )
    slack_api_url: str = Field(
        default="https://slack.com/api/",
        validation_alias=AliasChoices("SLACK_API_URL", "slack_api_url"),
    )
    slack_post_interval: float = Field(default=1.0, ge=0)   # seconds between posts per channel
    review_channel: str | None = None
    appeal_policy: str = ""                                  # policy text for content appeals
    workspace_policies: dict[str, str] = Field(default_factory=dict)  # team id -> policy text
    reviewers: tuple[str, ...] = ()

    # --- schedules (see bot/scheduler.py) ---
    schedules: tuple[dict[str, Any], ...] = ()
    timezone: str = "UTC"

    @field_validator("slack_api_url")
    @classmethod
    def _slack_url_ends_in_slash(cls, value: str) -> str:
        # slack_sdk joins method names with urljoin, which drops the last segment without a "/".
        return value if value.endswith("/") else value + "/"

    @field_validator("reviewers", mode="before")
    @classmethod
    def _split_reviewers(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(v.strip() for v in value.replace(";", ",").split(",") if v.strip())
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=_config_path())
        return (init_settings, env_settings, toml)

    # --- derived ---
    @property
    def is_rehearsal(self) -> bool:
        """True when debates run on the offline rehearsal model (no key, no endpoint, or forced)."""
        return self.rehearsal or (self.openai_api_key is None and self.openai_base_url is None)

    @property
    def slack_enabled(self) -> bool:
        return self.slack_bot_token is not None and (
            self.slack_signing_secret is not None or self.slack_app_token is not None
        )

    def secrets(self) -> tuple[str, ...]:
        """Every configured secret, for log redaction."""
        values = (self.openai_api_key, self.slack_bot_token, self.slack_signing_secret,
                  self.slack_app_token, self.api_token)
        return tuple(v.get_secret_value() for v in values if v is not None)

    def model_for(self, role: str) -> str:
        """The model a role uses: `models[role]`, then `models[<role family>]`, then the default."""
        if self.is_rehearsal:
            return "rehearsal"
        if role in self.models:
            return self.models[role]
        family = role.split("/", 1)[0]
        return self.models.get(family, self.default_model)

    def price_for(self, model: str) -> ModelPrice:
        return self.prices.get(model, self.default_price)

    def endpoint(self) -> str:
        """Where LLM calls go, for messages; never includes a key."""
        if self.is_rehearsal:
            return "the offline rehearsal model"
        return self.openai_base_url or "https://api.openai.com/v1"
