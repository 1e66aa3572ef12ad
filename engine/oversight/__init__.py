"""Oversight statistics: how the judges and the routing fare against the reviewers, and what
that evidence suggests, in pure functions over records the service reads from storage.

    panel_records   one record per judged debate; the one meaning of "agreed with the reviewer"
    inference       exact tests and intervals (Wilson, Poisson-binomial) in numpy and math only
    judge_audit     per judge: position and verbosity bias, leniency, drift, agreement
    judge_weights   judge vote weights moved by evidence, shrunk and bounded
    routing_audit   published results overturned, routed ones upheld; the spot-check sampler
    thresholds      suggested alpha cut-offs from the reviewers' decisions

May import: the basics at the top of engine/ (errors, vocabulary, settings, domain, verdicts).
Never the provider door, money, untrusted text, the protocols, the runner or the debate
(pyproject.toml import-linter contracts).
"""
