"""Dialectic in Slack (a surface): `/debate`, live debate threads, reviews, appeals, App Home,
and the scheduler's digests and briefs.

    settings.py     SlackSettings (tokens, API URL, pacing, review channel, appeal policies)
    wiring.py       attach_notifier / attach_slack: what the composition root calls
    app.py          the Bolt AsyncApp, its client, dedupe middleware, HTTP or Socket Mode
    listeners/      one module per Slack surface, each with register(app, ctx)
    views/          Block Kit, one module per message family; pure functions over values
    notifier.py     debate updates into threads (the service's sink and finished hook); the
                    status message renders the service's progress fold (bot.service.progress)
    publisher.py    the scheduling layer's Publisher, in Slack
    decisions.py    reviews decided in the console or CLI, told in Slack (the desk's hook)
    signin.py       Sign in with Slack (OpenID Connect) for the console's reviewers
    pacing.py, mrkdwn.py, parsing.py, usergroups.py, starter.py, housekeeping.py

Importing this package is free: the modules above load only when used.
"""
