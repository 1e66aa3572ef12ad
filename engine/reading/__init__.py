"""The reading of a result: what the judges' scores say, computed once where the
result is built, so every surface (Slack, console, API, CLI, MCP) shows the same.

    agreement   Krippendorff's alpha (with its bootstrap interval) and Fleiss' kappa
    verdicts    calibration, bands, the weighted vote, divergence points and routing
    headline    the verdict's one sentence, following the judges' votes
    discussion  what a preset promises (`decision`'s "needs human discussion", `brief`)
    outcomes    each mode's outcome record (critique, panel, red team)
    figures     judges' scores as every surface shows them (ratings and calibrated)

May import the basics at engine/'s top (errors, vocabulary, settings, domain) and engine.schemas;
never the core, the protocols, the provider door or money: reading a result runs nothing
(pyproject.toml import-linter contracts).
"""
