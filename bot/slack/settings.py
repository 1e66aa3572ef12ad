"""The Slack surface's settings: tokens (Slack's usual variable names), the Web API base URL,
pacing, the review channel and the policy text appeals are judged against."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator

from engine.provider.redaction import url_secrets
from engine.vocabulary import MAX_POLICY_CHARS


class SlackSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              allow_inf_nan=False)

    slack_bot_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_BOT_TOKEN", "slack_bot_token"))
    slack_signing_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_SIGNING_SECRET", "slack_signing_secret"))
    slack_app_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_APP_TOKEN", "slack_app_token"))
    slack_api_url: str = Field(
        default="https://slack.com/api/",
        validation_alias=AliasChoices("SLACK_API_URL", "slack_api_url"))
    # "Sign in with Slack" for the web console (the Slack app's OAuth client id and secret)
    slack_client_id: str | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_CLIENT_ID", "slack_client_id"))
    slack_client_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_CLIENT_SECRET", "slack_client_secret"))
    # multi-workspace mode (no SLACK_BOT_TOKEN; SLACK_CLIENT_ID/SECRET, a signing secret and/or
    # an app token):
    # the Fernet keys that encrypt the stored tokens, comma-separated, the first encrypts
    token_keys: SecretStr | None = None
    # what an uninstall (or a revoked bot token) does with the workspace's data once its
    # unfinished work is stopped: keep it, or purge it (bot/service/uninstalls.py)
    uninstall_data: Literal["keep", "purge"] = "keep"
    slack_post_interval: float = Field(default=1.0, ge=0)   # seconds between posts per channel
    # stream each debate as a plan in its thread where the workspace allows it ("off": the
    # status message and phase replies, as before streaming existed)
    slack_streaming: Literal["auto", "off"] = "auto"
    # seconds between re-sends of a DM debate's status line while nothing else is said (Slack
    # removes a status after two minutes without a message); 0 re-sends nothing
    slack_status_refresh: float = Field(default=90.0, ge=0)
    review_channel: str | None = None
    # policy text for content appeals, and per workspace (team id -> text); a request's
    # policy is bounded (engine/options.py), so the configured one is too
    appeal_policy: str = Field(default="", max_length=MAX_POLICY_CHARS)
    workspace_policies: dict[str, str] = Field(default_factory=dict)

    @field_validator("workspace_policies")
    @classmethod
    def _bounded_policies(cls, value: dict[str, str]) -> dict[str, str]:
        for team, text in value.items():
            if len(text) > MAX_POLICY_CHARS:
                raise ValueError(f"the policy of {team} is {len(text)} characters; the limit "
                                 f"is {MAX_POLICY_CHARS}")
        return value

    @field_validator("slack_api_url")
    @classmethod
    def _ends_in_slash(cls, value: str) -> str:
        # slack_sdk joins method names with urljoin, which drops the last segment without a "/".
        return value if value.endswith("/") else value + "/"

    @property
    def multi_workspace(self) -> bool:
        """Installed from a link in many workspaces (OAuth v2): no bot token, the app's client
        id and secret, and a signing secret (events over HTTP) and/or an app token (events over
        Socket Mode; "Add to Slack" and its redirect are still served over HTTP). With a bot
        token, the service is that token's workspace's alone, whatever else is set."""
        return (self.slack_bot_token is None and bool(self.slack_client_id)
                and self.slack_client_secret is not None
                and (self.slack_signing_secret is not None or self.slack_app_token is not None))

    @property
    def enabled(self) -> bool:
        return self.multi_workspace or (self.slack_bot_token is not None and (
            self.slack_signing_secret is not None or self.slack_app_token is not None))

    @property
    def sign_in(self) -> bool:
        """Sign in with Slack is configured (and Slack itself is): the bot token's workspace's
        people sign in, or, in multi-workspace mode, anyone's of an installed workspace, into
        that workspace's part of the console."""
        return self.enabled and bool(self.slack_client_id) and \
            self.slack_client_secret is not None

    def secrets(self) -> tuple[str, ...]:
        values = (self.slack_bot_token, self.slack_signing_secret, self.slack_app_token,
                  self.slack_client_secret, self.token_keys)
        tokens = tuple(v.get_secret_value() for v in values if v is not None)
        return tokens + url_secrets(self.slack_api_url)
