"""Slack installations for multi-workspace mode (OAuth "Add to Slack"): the tables of
slack_sdk's SQLAlchemy installation store (`slack_installations`, `slack_bots`) and OAuth state
store (`slack_oauth_states`), with the library's names and indexes and wider token columns (the
tokens are stored encrypted). storage/installations.py declares the same tables.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEALED = 1024


def _bot_columns() -> list[sa.Column[object]]:
    """The columns an installation and a bot share."""
    return [
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("client_id", sa.String(32), nullable=False),
        sa.Column("app_id", sa.String(32), nullable=False),
        sa.Column("enterprise_id", sa.String(32)),
        sa.Column("enterprise_name", sa.String(200)),
        sa.Column("team_id", sa.String(32)),
        sa.Column("team_name", sa.String(200)),
        sa.Column("bot_token", sa.String(SEALED)),
        sa.Column("bot_id", sa.String(32)),
        sa.Column("bot_user_id", sa.String(32)),
        sa.Column("bot_scopes", sa.String(1000)),
        sa.Column("bot_refresh_token", sa.String(SEALED)),
        sa.Column("bot_token_expires_at", sa.DateTime()),
        sa.Column("is_enterprise_install", sa.Boolean(), nullable=False),
        sa.Column("installed_at", sa.DateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "slack_installations", *_bot_columns(),
        sa.Column("enterprise_url", sa.String(200)),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("user_token", sa.String(SEALED)),
        sa.Column("user_scopes", sa.String(1000)),
        sa.Column("user_refresh_token", sa.String(SEALED)),
        sa.Column("user_token_expires_at", sa.DateTime()),
        sa.Column("incoming_webhook_url", sa.String(SEALED)),
        sa.Column("incoming_webhook_channel", sa.String(200)),
        sa.Column("incoming_webhook_channel_id", sa.String(200)),
        sa.Column("incoming_webhook_configuration_url", sa.String(200)),
        sa.Column("token_type", sa.String(32)),
    )
    op.create_index("slack_installations_idx", "slack_installations",
                    ["client_id", "enterprise_id", "team_id", "user_id", "installed_at"])
    op.create_table("slack_bots", *_bot_columns())
    op.create_index("slack_bots_idx", "slack_bots",
                    ["client_id", "enterprise_id", "team_id", "installed_at"])
    op.create_table(
        "slack_oauth_states",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("state", sa.String(200), nullable=False),
        sa.Column("expire_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_oauth_states")
    op.drop_index("slack_bots_idx", table_name="slack_bots")
    op.drop_table("slack_bots")
    op.drop_index("slack_installations_idx", table_name="slack_installations")
    op.drop_table("slack_installations")
