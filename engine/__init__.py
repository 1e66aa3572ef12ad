"""Dialectic's debate engine: protocols, the LLM gateway, consensus statistics, cost and events.

Imports neither Slack, SQL, aiohttp nor APScheduler; storage and bot implement its interfaces.

    (top)        the basics every group reads (errors, vocabulary, settings, domain, options,
                 outcomes, agreement, verdicts, headline, discussion, presets, prompts) and what
                 runs a debate (ports, runner, planning, debate, replay)
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
