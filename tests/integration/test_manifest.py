"""manifest.yml asks Slack for what the code registers and uses, no more: the slash commands,
shortcuts and events the Bolt listeners register, the request URL the server serves, the bot
scopes the Web API methods and events need (Slack's documented scope of each), and for "Sign in
with Slack" the redirect URL and user scopes bot/http/signin.py and bot/slack/signin.py use.
docs/slack-install.md, the Slack install guide, says the same."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from slack_sdk.web.async_client import AsyncWebClient

from bot.http.signin import CALLBACK
from bot.slack import installations, signin
from bot.slack.app import EVENTS_PATH
from bot.slack.listeners import (
    actions,
    commands,
    direct,
    events,
    feedback,
    home,
    shortcuts,
    unfurls,
)
from bot.slack.parsing import parse_command
from bot.slack.views.assistant import suggested_prompts
from engine.core.presets import BUILTIN_PRESETS

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "slack-install.md").read_text()
MANIFEST: dict[str, Any] = yaml.safe_load((ROOT / "manifest.yml").read_text())
HOST = "https://dialectic.example.com"   # the manifest's placeholder for DIALECTIC_PUBLIC_URL

#: The bot scope each Web API method needs, from Slack's method reference (None: no scope; the
#: sign-in's token exchange authenticates as the app's OAuth client). A method the code starts
#: calling must be added here, with its scope, and the scope to manifest.yml.
METHOD_SCOPES: dict[str, str | None] = {
    "auth.test": None,
    "assistant.threads.setStatus": "chat:write",   # assistant:write too, for now
    "assistant.threads.setSuggestedPrompts": "assistant:write",
    "assistant.threads.setTitle": "assistant:write",
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "chat.postEphemeral": "chat:write",
    "chat.getPermalink": None,
    "chat.startStream": "chat:write",   # docs.slack.dev: the three stream methods, chat:write
    "chat.appendStream": "chat:write",
    "chat.stopStream": "chat:write",
    "reactions.add": "reactions:write",
    "usergroups.users.list": "usergroups:read",
    # a workspace's settings (App Home): who is an admin, whether reviewers and channel exist
    "users.info": "users:read",
    "conversations.info": "channels:read",
    "views.open": None,
    "views.publish": None,
    "views.update": None,
    "openid.connect.token": None,
    "oauth.v2.access": None,   # an install's code exchanged as the app's OAuth client
    "chat.unfurl": "links:write",
    "entity.presentDetails": None,
    # a delivery whose answer was lost looks for its post (bot/slack/delivery.py): the history
    # scope of the conversation's kind, which the bot holds already for threads' evidence
    # (channels:history, groups:history, im:history)
    "conversations.history": "channels:history",
    "conversations.replies": "channels:history",
}
#: The bot scope each event subscription needs (Slack's events reference).
EVENT_SCOPES: dict[str, str | None] = {
    "app_mention": "app_mentions:read",
    "app_home_opened": None,
    "assistant_thread_started": "assistant:write",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "message.mpim": "mpim:history",
    "link_shared": "links:read",
    "entity_details_requested": None,
    "app_uninstalled": None,   # multi-workspace mode: the workspace's tokens are removed
    "tokens_revoked": None,
}
NOT_API_METHODS = frozenset({"api_call"})  # the generic call; its method names are read apart


class Registrations:
    """Stands in for the Bolt app while each listener module registers: records what it
    registers (app.command("/debate"), app.event("message"), ...)."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = defaultdict(set)

    def __getattr__(self, kind: str) -> Callable[[str], Callable[[Any], Any]]:
        def register(name: str) -> Callable[[Any], Any]:
            self.seen[kind].add(name)
            return lambda listener: listener
        return register


def registered() -> dict[str, set[str]]:
    app = Registrations()
    for module in (commands, events, actions, feedback, shortcuts, home, direct, unfurls):
        module.register(app, None)  # type: ignore[arg-type]  # nothing is called at registration
    installations.register_revocation(app, None)  # type: ignore[arg-type]
    return app.seen


def web_api_methods() -> set[str]:
    """The Web API methods the code calls: slack_sdk's method names (`chat_postMessage`) and the
    names it gives `api_call`."""
    found: set[str] = set()
    for path in (ROOT / "bot").rglob("*.py"):
        text = path.read_text()
        for name in set(re.findall(r"\b([a-z]+(?:_[a-zA-Z]+)+)\b", text)):
            if hasattr(AsyncWebClient, name) and name not in NOT_API_METHODS:
                found.add(name.replace("_", "."))
        found.update(re.findall(r"api_call\(\s*\"([a-zA-Z.]+)\"", text))
    return found


def test_slash_commands_and_shortcuts_are_the_registered_ones() -> None:
    seen = registered()
    features = MANIFEST["features"]
    assert {c["command"] for c in features["slash_commands"]} == seen["command"] == {"/debate"}
    assert {s["callback_id"] for s in features["shortcuts"]} == seen["shortcut"]
    assert MANIFEST["settings"]["interactivity"]["is_enabled"] is bool(
        seen["action"] or seen["view"] or seen["shortcut"])


def test_events_are_the_registered_ones() -> None:
    subscribed = MANIFEST["settings"]["event_subscriptions"]["bot_events"]
    assert {event.split(".")[0] for event in subscribed} == registered()["event"]


def test_every_request_url_is_the_servers_events_path() -> None:
    settings = MANIFEST["settings"]
    urls = [c["url"] for c in MANIFEST["features"]["slash_commands"]]
    urls += [settings["event_subscriptions"]["request_url"],
             settings["interactivity"]["request_url"]]
    assert set(urls) == {HOST + EVENTS_PATH}
    assert f"`POST {EVENTS_PATH}`" in GUIDE


def test_bot_scopes_are_exactly_what_the_methods_and_events_need() -> None:
    methods = web_api_methods()
    assert {"chat.postMessage", "reactions.add", "openid.connect.token"} <= methods
    unknown = sorted(methods - set(METHOD_SCOPES))
    assert unknown == [], f"add the scope of {unknown} to METHOD_SCOPES and manifest.yml"
    events_ = MANIFEST["settings"]["event_subscriptions"]["bot_events"]
    needed = {METHOD_SCOPES[m] for m in methods} | {EVENT_SCOPES[e] for e in events_}
    if registered()["command"] or registered()["shortcut"]:
        needed.add("commands")
    assert set(MANIFEST["oauth_config"]["scopes"]["bot"]) == needed - {None}
    # what "Add to Slack" asks for, in multi-workspace mode
    assert list(installations.BOT_SCOPES) == MANIFEST["oauth_config"]["scopes"]["bot"]


def test_the_guide_lists_the_manifests_bot_scopes() -> None:
    after = GUIDE.split("asks only for the scopes the bot uses:", 1)[1]
    sentence = re.split(r"\.\s", after, maxsplit=1)[0]
    assert re.findall(r"`([a-z_:.]+)`", sentence) == MANIFEST["oauth_config"]["scopes"]["bot"]


def test_sign_in_with_slack_has_its_redirect_url_and_user_scopes() -> None:
    oauth = MANIFEST["oauth_config"]
    assert oauth["redirect_urls"] == [HOST + CALLBACK, HOST + installations.REDIRECT_PATH]
    assert oauth["scopes"]["user"] == signin.SCOPES.split()
    assert f"`DIALECTIC_PUBLIC_URL{CALLBACK}`" in GUIDE


def test_socket_mode_is_off_with_request_urls_and_the_guide_says_what_to_remove() -> None:
    assert MANIFEST["settings"]["socket_mode_enabled"] is False
    step = GUIDE.split("**Socket Mode**", 1)[1].split("\n4.", 1)[0]
    assert "socket_mode_enabled: true" in step and "request_url" in step and "`url`" in step


def test_the_dm_surface_is_declared_with_the_prompts_the_bot_offers() -> None:
    features = MANIFEST["features"]
    home = features["app_home"]
    assert home["messages_tab_enabled"] is True
    assert home["messages_tab_read_only_enabled"] is False
    agent = features["agent_view"]
    assert agent["agent_description"]
    assert agent["suggested_prompts"] == suggested_prompts(BUILTIN_PRESETS)
    for prompt in agent["suggested_prompts"]:   # each one starts what it says
        command = parse_command(prompt["message"])
        assert command.action == "start" and (command.preset or "default") in BUILTIN_PRESETS
    assert "message.im" in MANIFEST["settings"]["event_subscriptions"]["bot_events"]
    assert "agent_view" in GUIDE and "assistant_view" in GUIDE


def test_transcript_links_unfurl_from_the_public_urls_host() -> None:
    """The unfurl domain is the host transcript links are on (bot/service/links.py), and the
    install guide says which switch outside the manifest Work Objects need."""
    assert MANIFEST["features"]["unfurl_domains"] == [HOST.removeprefix("https://")]
    assert {"link_shared", "entity_details_requested"} <= registered()["event"]
    assert "Work Object Previews" in GUIDE
