"""Multi-workspace mode: where each workspace's installation is kept, its tokens encrypted.

slack_sdk's `AsyncSQLAlchemyInstallationStore` and `AsyncSQLAlchemyOAuthStateStore` do the
storing, on the service's own database (tables from migration 0017, storage/installations.py).
`SealedInstallationStore` only encrypts every token on its way in and decrypts it on its way out
(Fernet, through `MultiFernet`: `DIALECTIC_TOKEN_KEYS` is a comma-separated list of keys, the
first encrypts and every one decrypts, so a key is rotated by putting the new one first). The
database never holds a token in clear. `InstalledWorkspaces` answers the gate's question (is the
workspace a request was delivered to installed?) from the same store, org-wide installs of an
Enterprise Grid organisation included. `app_uninstalled` and `tokens_revoked` remove the
workspace's tokens, then hand the workspace to `on_uninstall` (bot/service/uninstalls.py: its
unfinished work stopped, its data kept or purged as configured).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore

from bot.slack.settings import SlackSettings
from engine.errors import ConfigurationError
from storage.db import Database
from storage.tenancy import Workspace

__all__ = [
    "BOT_SCOPES",
    "INSTALL_PATH",
    "REDIRECT_PATH",
    "InstalledWorkspaces",
    "OnUninstall",
    "SealedInstallationStore",
    "TokenCipher",
    "installation_store",
    "oauth_settings",
    "register_revocation",
    "state_store",
]

log = logging.getLogger("dialectic.slack.installations")

STATE_SECONDS = 600
#: what a Fernet token begins with (its version byte, 0x80, in URL-safe base64)
SEALED_PREFIX = "gAAAAA"
TOKEN_FIELDS = ("bot_token", "bot_refresh_token", "user_token", "user_refresh_token",
                "incoming_webhook_url")


class TokenCipher:
    """Encrypts with the first key, decrypts with any (rotation)."""

    def __init__(self, keys: str) -> None:
        parts = [k.strip() for k in keys.split(",") if k.strip()]
        if not parts:
            raise ConfigurationError("DIALECTIC_TOKEN_KEYS is empty: give one Fernet key "
                                     "(python -c 'from cryptography.fernet import Fernet; "
                                     "print(Fernet.generate_key().decode())')")
        try:
            self._fernet = MultiFernet([Fernet(k.encode()) for k in parts])
        except ValueError:
            raise ConfigurationError("DIALECTIC_TOKEN_KEYS: each key must be a Fernet key "
                                     "(32 url-safe base64-encoded bytes)") from None

    def seal(self, value: str | None) -> str | None:
        if not value or value.startswith(SEALED_PREFIX):
            return value
        return self._fernet.encrypt(value.encode()).decode()

    def open(self, value: str | None) -> str | None:
        if not value or not value.startswith(SEALED_PREFIX):
            return value
        try:
            return self._fernet.decrypt(value.encode()).decode()
        except InvalidToken:
            raise ConfigurationError("a stored Slack token cannot be decrypted with "
                                     "DIALECTIC_TOKEN_KEYS: keep the key it was encrypted with "
                                     "in the list") from None


def _with_tokens(thing: Any, change: Any) -> Any:
    changed = copy.copy(thing)
    for name in TOKEN_FIELDS:
        if hasattr(changed, name):
            setattr(changed, name, change(getattr(changed, name)))
    return changed


class SealedInstallationStore(AsyncSQLAlchemyInstallationStore):
    """The library's store; every token encrypted at rest."""

    def __init__(self, client_id: str, db: Database, cipher: TokenCipher) -> None:
        super().__init__(client_id=client_id, engine=db.engine, logger=log)
        self.cipher = cipher

    async def async_save(self, installation: Installation) -> None:
        await super().async_save(_with_tokens(installation, self.cipher.seal))

    async def async_save_bot(self, bot: Bot) -> None:
        await super().async_save_bot(_with_tokens(bot, self.cipher.seal))

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        bot = await super().async_find_bot(enterprise_id=enterprise_id, team_id=team_id,
                                           is_enterprise_install=is_enterprise_install)
        return None if bot is None else _with_tokens(bot, self.cipher.open)

    async def async_find_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                      user_id: str | None = None,
                                      is_enterprise_install: bool | None = False
                                      ) -> Installation | None:
        found = await super().async_find_installation(
            enterprise_id=enterprise_id, team_id=team_id, user_id=user_id,
            is_enterprise_install=is_enterprise_install)
        return None if found is None else _with_tokens(found, self.cipher.open)

    async def installed_bot(self, *, team_id: str, enterprise_id: str | None) -> Bot | None:
        """The bot installed for the workspace: in the workspace itself, or org-wide in its
        Enterprise Grid organisation."""
        bot = await self.async_find_bot(enterprise_id=enterprise_id, team_id=team_id)
        if bot is None and enterprise_id:
            bot = await self.async_find_bot(enterprise_id=enterprise_id, team_id=None,
                                            is_enterprise_install=True)
        return bot


def state_store(db: Database) -> AsyncSQLAlchemyOAuthStateStore:
    """The OAuth round trip's state, kept ten minutes, in the service's database."""
    return AsyncSQLAlchemyOAuthStateStore(expiration_seconds=STATE_SECONDS, engine=db.engine,
                                          logger=log)


class InstalledWorkspaces:
    """The gate's question answered by the installation store: a workspace is installed while
    a bot token is stored for it (its own install, or its organisation's org-wide one)."""

    def __init__(self, store: SealedInstallationStore) -> None:
        self.store = store

    async def workspace_for(self, *, team_id: str | None, enterprise_id: str | None
                            ) -> Workspace | None:
        if not team_id:
            return None
        bot = await self.store.installed_bot(team_id=team_id, enterprise_id=enterprise_id)
        if bot is None:
            return None
        return Workspace(team_id, bot.enterprise_id or enterprise_id)


#: what is done once a workspace's tokens are gone: (team_id, enterprise_id)
OnUninstall = Callable[[str, str | None], Awaitable[object]]


def register_revocation(app: AsyncApp, store: SealedInstallationStore,
                        on_uninstall: OnUninstall | None = None) -> None:
    """`app_uninstalled` and a revoked bot token remove the workspace's tokens, then hand the
    workspace to `on_uninstall`; a revoked user token removes that user's installation."""
    def where(context: AsyncBoltContext) -> dict[str, str | None]:
        org_wide = bool(context.is_enterprise_install)
        return {"enterprise_id": context.enterprise_id,
                "team_id": None if org_wide else context.team_id}

    async def gone(context: AsyncBoltContext) -> None:
        if on_uninstall is None:
            return
        if not context.team_id:   # an organisation's org-wide install: no one workspace
            log.warning("the org-wide install of %s is gone; its workspaces' data is kept "
                        "(purge each with `dialectic workspaces purge TEAM_ID`)",
                        context.enterprise_id)
            return
        await on_uninstall(context.team_id, context.enterprise_id)

    @app.event("app_uninstalled")
    async def uninstalled(context: AsyncBoltContext) -> None:
        await store.async_delete_all(**where(context))
        log.info("Slack workspace %s (enterprise %s) uninstalled the app: its tokens are gone",
                 context.team_id, context.enterprise_id)
        await gone(context)

    @app.event("tokens_revoked")
    async def revoked(event: dict[str, Any], context: AsyncBoltContext) -> None:
        tokens = event.get("tokens") or {}
        for user_id in tokens.get("oauth") or []:
            await store.async_delete_installation(**where(context), user_id=str(user_id))
        if tokens.get("bot"):
            await store.async_delete_all(**where(context))
            log.info("Slack workspace %s revoked the bot token: its tokens are gone",
                     context.team_id)
            await gone(context)


#: the bot scopes an install asks for: manifest.yml's (tests/integration/test_manifest.py)
BOT_SCOPES = ("commands", "chat:write", "reactions:write", "app_mentions:read",
              "channels:history", "groups:history", "usergroups:read", "users:read",
              "channels:read", "assistant:write", "im:history", "links:read", "links:write")
INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"


def installation_store(settings: SlackSettings, db: Database) -> SealedInstallationStore:
    """The store of multi-workspace mode; ConfigurationError when a setting it needs is not
    set."""
    if settings.slack_client_id is None or settings.slack_client_secret is None:
        raise ConfigurationError("multi-workspace mode needs SLACK_CLIENT_ID and "
                                 "SLACK_CLIENT_SECRET")
    if settings.token_keys is None:
        raise ConfigurationError("multi-workspace mode stores each workspace's bot token "
                                 "encrypted: set DIALECTIC_TOKEN_KEYS to a Fernet key")
    return SealedInstallationStore(settings.slack_client_id, db,
                                   TokenCipher(settings.token_keys.get_secret_value()))


def oauth_settings(settings: SlackSettings, db: Database, store: SealedInstallationStore, *,
                   public_url: str) -> AsyncOAuthSettings:
    """Bolt's OAuth flow ("Add to Slack" at /slack/install, back at /slack/oauth_redirect),
    its installations and states in the service's database, the tokens encrypted."""
    assert settings.slack_client_id is not None and settings.slack_client_secret is not None
    root = settings.slack_api_url.rstrip("/").removesuffix("/api")
    return AsyncOAuthSettings(
        client_id=settings.slack_client_id,
        client_secret=settings.slack_client_secret.get_secret_value(),
        scopes=list(BOT_SCOPES), installation_store=store, state_store=state_store(db),
        install_path=INSTALL_PATH, redirect_uri_path=REDIRECT_PATH,
        redirect_uri=public_url.rstrip("/") + REDIRECT_PATH,
        authorization_url=f"{root}/oauth/v2/authorize", logger=log)
