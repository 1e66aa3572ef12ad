"""Running a debate: from a request to its result, every LLM call a durable step.

    debate        one debate, start to result: plan, protocol, statistics, settle the outcome
    runner        the step runner: every call a keyed, checkpointed step (`DebateContext.step`)
    step_outcome  what one step ended as (done, degraded, refused, filtered) and why
    planning      a request's plan and estimate, without a provider
    replay        a new debate from a stored one: more rounds, another synthesizer
    presets       the built-in presets and how a request picks one
    prompts       every role's prompt text

May import everything else in engine/ (the basics at the top, schemas, protocols, the provider
door, money, untrusted text, the reading of a result). Nothing in engine/ outside core/ and the
protocols imports it (pyproject.toml import-linter contracts).
"""
