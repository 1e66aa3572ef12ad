"""The tables of slack_sdk's SQLAlchemy installation and OAuth state stores, on our schema.

In multi-workspace mode (OAuth "Add to Slack") each workspace's installation is kept by
`slack_sdk`'s `AsyncSQLAlchemyInstallationStore` and each round trip's state by its
`AsyncSQLAlchemyOAuthStateStore` (bot/slack/installations.py wraps them). Their tables are made
by our migration 0017, never by `create_all` at run time; they are declared here, on
`Base.metadata`, with the library's names, columns and indexes, so the schema check compares them
like every other table. Token columns are wider than the library's (its 200): a token is stored
encrypted (Fernet), which is longer than the token itself.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, DateTime, Index, Integer, String, Table

from storage.models import Base

__all__ = ["BOTS", "INSTALLATIONS", "OAUTH_STATES", "SEALED_TOKEN_CHARS"]

#: room for a Fernet token over a rotating Slack token (xoxe.xoxb-…, about 170 characters)
SEALED_TOKEN_CHARS = 1024

def _bot_columns() -> list[Column[object]]:
    """The columns an installation and a bot share (the library's, in its order)."""
    return [
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("client_id", String(32), nullable=False),
        Column("app_id", String(32), nullable=False),
        Column("enterprise_id", String(32)),
        Column("enterprise_name", String(200)),
        Column("team_id", String(32)),
        Column("team_name", String(200)),
        Column("bot_token", String(SEALED_TOKEN_CHARS)),
        Column("bot_id", String(32)),
        Column("bot_user_id", String(32)),
        Column("bot_scopes", String(1000)),
        Column("bot_refresh_token", String(SEALED_TOKEN_CHARS)),
        Column("bot_token_expires_at", DateTime),
        Column("is_enterprise_install", Boolean, nullable=False),
        Column("installed_at", DateTime, nullable=False),
    ]


INSTALLATIONS = Table(
    "slack_installations", Base.metadata, *_bot_columns(),
    Column("enterprise_url", String(200)),
    Column("user_id", String(32), nullable=False),
    Column("user_token", String(SEALED_TOKEN_CHARS)),
    Column("user_scopes", String(1000)),
    Column("user_refresh_token", String(SEALED_TOKEN_CHARS)),
    Column("user_token_expires_at", DateTime),
    Column("incoming_webhook_url", String(SEALED_TOKEN_CHARS)),
    Column("incoming_webhook_channel", String(200)),
    Column("incoming_webhook_channel_id", String(200)),
    Column("incoming_webhook_configuration_url", String(200)),
    Column("token_type", String(32)),
    Index("slack_installations_idx", "client_id", "enterprise_id", "team_id", "user_id",
          "installed_at"),
)

BOTS = Table(
    "slack_bots", Base.metadata, *_bot_columns(),
    Index("slack_bots_idx", "client_id", "enterprise_id", "team_id", "installed_at"),
)

OAUTH_STATES = Table(
    "slack_oauth_states", Base.metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("state", String(200), nullable=False),
    Column("expire_at", DateTime, nullable=False),
)
