"""The installation store of multi-workspace mode on SQLite and PostgreSQL (tables from migration
0017): slack_sdk's own store, every token encrypted at rest, found decrypted, keys rotatable, a
workspace's and an organisation's (org-wide) installs told apart, and deleted on uninstall."""

from __future__ import annotations

import json

import pytest
from cryptography.fernet import Fernet
from slack_sdk.oauth.installation_store import Installation
from sqlalchemy import text

from bot.slack.installations import InstalledWorkspaces, SealedInstallationStore, TokenCipher
from engine.errors import ConfigurationError
from storage.db import Database
from storage.tenancy import Workspace

NEW, OLD = Fernet.generate_key().decode(), Fernet.generate_key().decode()
TOKEN = "xoxb-1111-2222-abcdefghijklmnopqrstuvwx"
USER_TOKEN = "xoxp-1111-3333-abcdefghijklmnopqrstuvwx"


def installation(team: str | None, *, org: str | None = None, org_wide: bool = False,
                 token: str = TOKEN) -> Installation:
    return Installation(app_id="A0FAKE", enterprise_id=org, team_id=team, bot_token=token,
                        bot_id="B1", bot_user_id="UBOT", bot_scopes="chat:write",
                        user_id="UADMIN", user_token=USER_TOKEN, user_scopes="openid",
                        is_enterprise_install=org_wide)


async def raw(db: Database, table: str) -> str:
    async with db.engine.connect() as conn:
        rows = (await conn.execute(text(f"SELECT * FROM {table}"))).mappings()
        return json.dumps([dict(r) for r in rows], default=str)


async def test_tokens_are_stored_encrypted_and_found_in_clear(db: Database) -> None:
    store = SealedInstallationStore("1111.2222", db, TokenCipher(NEW))
    await store.async_save(installation("T1"))
    for table in ("slack_installations", "slack_bots"):
        stored = await raw(db, table)
        assert TOKEN not in stored and USER_TOKEN not in stored and "gAAAAA" in stored
    bot = await store.async_find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None and bot.bot_token == TOKEN
    found = await store.async_find_installation(enterprise_id=None, team_id="T1")
    assert found is not None and (found.bot_token, found.user_token) == (TOKEN, USER_TOKEN)
    assert await store.async_find_bot(enterprise_id=None, team_id="T2") is None


async def test_a_rotated_key_opens_old_tokens_and_a_missing_key_says_so(db: Database) -> None:
    await SealedInstallationStore("c", db, TokenCipher(OLD)).async_save(installation("T1"))
    rotated = SealedInstallationStore("c", db, TokenCipher(f"{NEW}, {OLD}"))
    bot = await rotated.async_find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None and bot.bot_token == TOKEN
    lost = SealedInstallationStore("c", db, TokenCipher(NEW))
    with pytest.raises(ConfigurationError, match="DIALECTIC_TOKEN_KEYS"):
        await lost.async_find_bot(enterprise_id=None, team_id="T1")


async def test_org_wide_installs_cover_their_organisation_only(db: Database) -> None:
    store = SealedInstallationStore("c", db, TokenCipher(NEW))
    await store.async_save(installation(None, org="E1", org_wide=True))
    await store.async_save(installation("T9", token="xoxb-9-own"))
    installed = InstalledWorkspaces(store)
    assert await installed.workspace_for(team_id="T5", enterprise_id="E1") == \
        Workspace("T5", "E1")
    assert await installed.workspace_for(team_id="T5", enterprise_id="E2") is None
    assert await installed.workspace_for(team_id="T9", enterprise_id=None) == Workspace("T9")
    assert await installed.workspace_for(team_id="T8", enterprise_id=None) is None
    assert await installed.workspace_for(team_id=None, enterprise_id="E1") is None
    await store.async_delete_all(enterprise_id="E1", team_id=None)
    assert await installed.workspace_for(team_id="T5", enterprise_id="E1") is None
    assert await installed.workspace_for(team_id="T9", enterprise_id=None) == Workspace("T9")


@pytest.mark.parametrize("keys", ["", " , ", "not-a-fernet-key"])
def test_bad_keys_are_one_clear_error(keys: str) -> None:
    with pytest.raises(ConfigurationError, match="DIALECTIC_TOKEN_KEYS"):
        TokenCipher(keys)
