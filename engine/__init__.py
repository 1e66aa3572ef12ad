"""Dialectic's debate engine: protocols, the LLM gateway, consensus statistics, cost and events.

Imports neither Slack, SQL, aiohttp nor APScheduler; storage and bot implement its interfaces.

    (top)        only what every part shares: errors, vocabulary, settings, domain (the records
                 a debate produces), options (a request's), ports (what storage and bot
                 implement), tracing (a debate's spans), characters (what a person's text holds)
    core/        running a debate: the step runner, planning, debate, replay, presets, prompts
    reading/     the reading of a result: agreement, verdicts, headline, discussion, outcomes,
                 the judges' figures
    protocols/   one debate protocol per mode
    schemas/     the structured output of every step
    provider/    the provider door: the LLM interface, the gateway (the only openai import), ...
    untrusted/   text that did not come from the operator, and the one way it enters a prompt
    money/       prices, reply sizes, cost, each step's model, spending as a debate runs
    oversight/   statistics over the reviewers' decisions: audits, thresholds, judge weights
    evaluation/  question sets with known answers, answer normalisation, accuracy statistics
                 and the report of which mode pays (`dialectic eval`)

Each sub-package's docstring says what it may import; pyproject.toml's import-linter contracts
hold them to it.
"""
