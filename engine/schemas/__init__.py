"""The structured output of every step, as pydantic models, one module per mode family: the
gateway derives strict JSON schemas from them and validates every reply against them, and the
typed outcomes (engine/reading/outcomes.py) keep the replies a mode ends with.

    base       StrictReply (extra fields forbidden)
    procon     simple, structured, consensus: positions, rebuttals, cross-examination, closings,
               the rubric scorecard and the one-judge verdict
    panel      panelists' answers and reflections, the synthesis, the grade
    critique   proposals, the critic's review, convergence, the final answer
    redteam    analysis, proposal, challenge, revision, decision

May import: pydantic only; nothing else of the engine (pyproject.toml import-linter contracts),
since the domain, untrusted text and the protocols are built on them.
"""
