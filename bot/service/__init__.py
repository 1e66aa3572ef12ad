"""The application layer: what every surface (Slack, HTTP, CLI, MCP, scheduler) calls.

    debates.py     DebateService: submit (estimate, reserve, queue), read, run, settle, route,
                   replay, reviews (decide, refuse, retry), evidence, calibration history
    runtime.py     Runtime: the settings, database, service and workers a process shares
    worker.py      Worker: claims queued debates under a lease and runs them
    links.py       signed links to a debate's transcript page
    admission.py   whether today's budget would admit a debate now, before submitting it
    results.py     reading a result the same way on every surface (complete or not, alpha
                   against its band, scores on the 1-10 scale)
    progress.py    a debate's events folded into what progress views show (Slack, terminal)
    timeline.py    the same fold plus what each phase said and each judge's card, for the
                   console's live page
    reviews.py     ReviewDesk: who may decide (Reviewers, GroupDirectory) and the decisions
                   (each a label: what it is about, the side that should have won)
    oversight.py   what the reviewers teach: the judge audit, routing against the reviewers,
                   the spot-check sampler, suggested and applied thresholds, evidence weights
    figures.py     how every surface writes an audit figure (n, interval, not enough data)
    grants.py      signed, expiring identities: console sessions, reviewer links, their
                   scope (everything, or a reviewer's part), the IdentityProvider port
    sessions.py    whether an identity still holds (a reviewer still one, a session not
                   signed out), signing out, issuing reviewer links to reviewers only
    providers.py   the LLM client the settings ask for (gateway or rehearsal)
    telemetry.py   this process's Prometheus metrics
    logs.py        one-line, secret-free logging
    settings.py    ServiceSettings: budget, caches, workers, reviewers, links

Imports engine and storage; never a surface or scheduling.
"""
