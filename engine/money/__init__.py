"""Money: what a model costs, what a step will cost, and a debate's spending as it runs.

    prices        what a model costs per million tokens, and where the figure came from
    sizing        reply sizes learned per model and step kind; a debate's ceiling
    cost          pricing usage, estimating a plan, writing money and tokens one way
    step_models   which model each step asks for, so a plan is priced with the models it uses
    spending      no call starts unless the debate's hold covers it and the rest of its plan
    windows       whether a plan fits its models' context windows

May import: the basics at the top of engine/ (errors, vocabulary, settings, domain, options,
ports) and engine.provider.profiles (what a model is decides what it bills); `prices` imports
nothing else, as the settings and a request's options are built on it. Never the
provider's implementations (gateway, rehearsal), oversight, untrusted text, the protocols, the
runner or the debate (pyproject.toml import-linter contracts).
"""
