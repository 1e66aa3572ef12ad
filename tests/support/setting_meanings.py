"""What each setting means, for the generated configuration reference (docs/configuration.md,
written by `python -m tests.support.reference`). Names, variables, toml keys, types and defaults
come from the settings models themselves; only the meaning is written here, keyed by field name.
A field's own `Field(description=...)` wins over this table. `COMMON` fields are the ones an
operator usually sets: they make the first table (and .env.example lists each of them)."""

from __future__ import annotations

#: field name -> meaning (markdown, one line)
MEANINGS: dict[str, str] = {
    # engine: the provider
    "openai_api_key": "the provider's key; with neither it nor `OPENAI_BASE_URL`, the offline "
                      "rehearsal model",
    "openai_base_url": "an OpenAI-compatible endpoint (a local server needs only this); see "
                       "[providers.md](providers.md)",
    "rehearsal": "`true` forces the offline rehearsal model even with a key",
    "output_mode": "unset: the model's profile decides; or force `json_schema`, `json_object` or "
                   "`prompt` (a provider that refuses a mode with a 400 is learned without it)",
    "provider_kind": "unset: read from the endpoint's host; set it to say who serves the "
                     "models when the address does not say: `anthropic`, "
                     "`gemini`, `azure`, `deepseek`, `gateway` (a LiteLLM proxy), `local` (vLLM, "
                     "llama.cpp, Ollama on a LAN name), `openai`; decides their profile and price "
                     "([providers.md](providers.md))",
    "context_windows": "model -> context window in tokens, for servers that do not say it "
                       "(output caps are fitted in it)",
    "default_model": "model for every role without its own ([providers.md](providers.md))",
    "models": "role -> model (`pro`, `con`, `judge`, `synthesizer`, …)",
    "prices": "model -> USD per million tokens (`input`, `output`, `cached_input`), instead of "
              "genai-prices' figures ([money.md](money.md))",
    "default_price": "the price of a model no price list knows and no `prices` table names",
    "temperature": "sampling temperature for models that take one (reasoning models do not)",
    "reasoning_effort": "reasoning models' effort for every role",
    "reasoning_efforts": "reasoning effort per role (`judge=high,pro=medium`)",
    "call_timeout": "seconds one LLM call may take (the innermost of the three nested timeouts)",
    "phase_timeout": "seconds one phase may take",
    "debate_timeout": "seconds one debate may take",
    "max_retries": "retries of a transient provider error: 1, 2, 4, 8 s, jittered, honouring "
                   "`Retry-After`",
    "backoff_base": "the first retry's wait, in seconds",
    "backoff_cap": "the longest wait between retries, in seconds",
    "invalid_output_retries": "times a reply that is not valid JSON for its step is asked again",
    "overload_wait": "seconds an overloaded provider (503, 529, 429) is retried past "
                     "`MAX_RETRIES`, honouring `Retry-After` and Gemini's `retryDelay`",
    "circuit_failures": "an endpoint that refuses connections (or does not resolve) this many "
                        "times in a row is not called for the cooldown: debates fail at once, "
                        "saying why",
    "circuit_cooldown": "seconds before one call probes an open circuit",
    "judges": "the default judge panel (a list of tables: `name`, `expertise`, `model`, "
              "`weight`)",
    "presets": "`[presets.NAME]` tables: override a built-in preset or add one "
               "([presets-and-scheduling.md](presets-and-scheduling.md))",
    "default_rounds": "rounds when a request names none",
    "max_topic_chars": "the longest topic accepted",
    # storage
    "data_dir": "where the default SQLite database is kept, whatever the current directory "
                "(default `$XDG_DATA_HOME/dialectic`, else `~/.local/share/dialectic`; "
                "blank is unset)",
    "database_url": "`dialectic.db` in the data directory when unset; or "
                    "`postgresql+asyncpg://user:pass@host/db`, or another SQLite file "
                    "(`sqlite+aiosqlite:////srv/dialectic.db`). Commands that read what a server "
                    "stored (`list`, `show`, `audit verify`, `reviews`, `judges`, `thresholds`, "
                    "`replay`) never create a database: a missing file is an error naming the "
                    "path they looked for",
    # service
    "otel_exporter_otlp_endpoint": "where spans go (OTLP); setting it turns tracing on "
                                   "([tracing.md](tracing.md))",
    "otel_traces_exporter": "`otlp`, `console`, or several; `none` turns tracing off",
    "otel_capture_message_content": "`true`: each `chat` span carries the prompt and the reply, "
                                    "spotlight regions as plain text, secrets redacted",
    "daily_budget_usd": "the daily cap; alerts at `budget_alert_fraction`",
    "budget_alert_fraction": "the share of the daily cap at which the budget alerts",
    "max_debate_usd": "the most one debate may hold (its ceiling); unset: 4 × its high estimate "
                      "([money.md](money.md))",
    "budget_margin_fraction": "no longer used (the ceiling replaced it); accepted with a warning",
    "cache_ttl_seconds": "the same question to the same machinery within it is answered with the "
                         "finished debate, marked cached; 0 turns it off "
                         "([caching-and-replay.md](caching-and-replay.md))",
    "judge_cache_ttl_seconds": "how long a judge's scorecard for the same transcript is reused; "
                               "0 turns it off",
    "worker_concurrency": "debates a worker runs at once",
    "lease_seconds": "a dead worker's debates are reclaimed after this many seconds",
    "max_attempts": "claims before a debate that keeps crashing its worker is failed",
    "poll_interval": "seconds between an idle worker's looks at the queue",
    "spot_check_fraction": "the share of published results sent to a reviewer anyway, as spot "
                           "checks ([reviewers.md](reviewers.md))",
    "audit_window_days": "how far back the judge audit, routing figures, suggestions and "
                         "evidence weights read",
    "reviewers": "who may decide reviews: user ids (U…, W…) and user-group ids (S…), or mentions "
                 "pasted from Slack (`<@U0123ABC>`, `<!subteam^S0123ABC\\|@oncall>`), separated "
                 "by commas or spaces; anything else is an error at start",
    "public_url": "base of every link the service gives out (transcripts, signed when a token "
                  "is set; reviewer sign-in); its host is one the server answers to. Default: "
                  "`http://` and the host and port it listens on",
    "api_token": "bearer token for `/api/*`, `/metrics` and the console; required to listen "
                 "beyond loopback, and then at least 32 characters and not `.env.example`'s "
                 "placeholder (on loopback a weak one is a warning); empty is an error",
    "link_ttl_days": "how long a signed transcript link opens its page",
    "console_session_hours": "how long the console's signed session cookie lasts",
    "log_level": "`INFO`, `DEBUG`, …; secrets are redacted from every log line",
    # scheduling
    "timezone": "the time zone of schedules that name none",
    "schedules": "`[[schedules]]` tables: digests on cron slots "
                 "([presets-and-scheduling.md](presets-and-scheduling.md))",
    "allow_private_sources": "let schedule sources be fetched from loopback, link-local and "
                             "private addresses",
    # http
    "host": "listening address",
    "port": "listening port (0: any free port)",
    "metrics_port": "a worker-only process serves `/metrics` on this loopback port",
    "allowed_hosts": "more `Host` names to answer besides the public URL's and loopback names",
    "idle_timeout_seconds": "a connection without a whole request's headers this long after "
                            "connecting (or after its last response) is closed",
    "body_timeout_seconds": "a body not fully arrived this long after its headers is a 408",
    "sse_per_client": "live event streams one client (signed-in person, bearer token, else "
                      "address) may hold; past it, 429 with `Retry-After`",
    "sse_global": "live event streams the whole process may hold; past it, 429",
    "sse_heartbeat_seconds": "a quiet stream's comment line, every this many seconds",
    "sse_max_seconds": "a stream's lifetime, after which the browser reconnects with "
                       "`Last-Event-ID`",
    # slack
    "slack_bot_token": "the bot token (xoxb-…) ([slack-install.md](slack-install.md))",
    "slack_signing_secret": "verifies Slack's requests to `/slack/events`",
    "slack_app_token": "the app-level token (xapp-…) for Socket Mode",
    "slack_api_url": "the Web API base (tests point it at a fake)",
    "slack_client_id": "\"Sign in with Slack\" for reviewers in the console (with the secret)",
    "slack_client_secret": "\"Sign in with Slack\": the app's client secret",
    "slack_post_interval": "seconds between posts in one channel (pacing)",
    "slack_streaming": "`auto`: each debate streams as one plan message in its thread where the "
                       "workspace allows it (else the status message); `off`: always the status "
                       "message and phase replies",
    "slack_status_refresh": "seconds between re-sends of a DM debate's status line while it runs "
                            "(Slack removes a status after two minutes without a message); 0: "
                            "never re-sent",
    "review_channel": "the channel id review requests go to",
    "appeal_policy": "the policy text appeals are argued against",
    "workspace_policies": "team id -> policy text, per workspace, for appeals",
    # several providers, families, timeouts (docs/providers.md)
    "providers": "named providers (`[providers.NAME]`: `base_url`, `api_key_env`, `kind`, "
                 "`output_mode`, `prices`, `context_windows`, `read_timeout`, `max_concurrency`); "
                 "their models are written `NAME:model` ([providers.md](providers.md))",
    "families": "model name -> its family (`openai`, `anthropic`, `google`, …) for names that do "
                "not say it, such as an Azure deployment; mixed-family panels and self-vote "
                "exclusion read it ([providers.md](providers.md))",
    "read_timeout": "seconds of silence while a reply is read (its first byte too) before it is "
                    "cut and retried once; unset: the call timeout",
    # multi-workspace Slack (docs/slack-install.md)
    "token_keys": "Fernet keys (comma-separated; the first encrypts, every one decrypts) for the "
                  "bot tokens stored by \"Add to Slack\" installs "
                  "([slack-install.md](slack-install.md))",
    "uninstall_data": "what an uninstall (or a revoked bot token) does with the workspace's "
                      "data once its unfinished debates are cancelled: `keep` it, or `purge` it "
                      "([workspaces.md](workspaces.md))",
    # MCP sign-in (docs/mcp.md)
    "mcp_authorization_servers": "issuer URLs of the identity provider(s) whose access tokens "
                                 "`/mcp` accepts beside the API token; needs "
                                 "`DIALECTIC_API_TOKEN` ([mcp.md](mcp.md))",
    "mcp_audience": "the audience (`aud`) those tokens must name; unset: the public URL's `/mcp`",
}

#: the settings an operator usually sets (.env.example lists every one of them)
COMMON: frozenset[str] = frozenset({
    "openai_api_key", "openai_base_url", "default_model", "reasoning_effort", "reasoning_efforts",
    "output_mode", "provider_kind", "database_url", "data_dir", "daily_budget_usd",
    "max_debate_usd", "call_timeout", "phase_timeout", "debate_timeout", "max_retries",
    "backoff_base", "backoff_cap", "overload_wait", "circuit_failures", "circuit_cooldown",
    "worker_concurrency", "lease_seconds", "cache_ttl_seconds", "host", "port", "api_token",
    "public_url", "allowed_hosts", "idle_timeout_seconds", "body_timeout_seconds",
    "sse_per_client", "sse_global", "sse_heartbeat_seconds", "sse_max_seconds", "link_ttl_days",
    "console_session_hours", "allow_private_sources", "slack_bot_token", "slack_signing_secret",
    "slack_app_token", "slack_api_url", "slack_client_id", "slack_client_secret",
    "slack_streaming", "slack_status_refresh", "review_channel", "reviewers",
    "spot_check_fraction", "audit_window_days", "log_level", "read_timeout", "token_keys",
    "uninstall_data", "mcp_authorization_servers", "mcp_audience",
})
