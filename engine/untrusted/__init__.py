"""Untrusted text: what did not come from the operator's configuration, and the one way it
enters a prompt.

    glyphs      what a reader sees in a string: invisible characters, look-alikes, the skeleton
    injection   text addressed to the AI (instructions, personas, forged markers), as findings
    spotlight   `Spotlight.wrap`: the one boundary, with the reply fields that may repeat it
    material    a debate's untrusted pieces, as prompt text, and model output that repeats them

May import: the basics at the top of engine/ (errors, vocabulary, settings, domain) and
engine.schemas. Never the provider door, money, oversight, the protocols, prompts, ports, the
runner or the debate (pyproject.toml import-linter contracts).
"""
