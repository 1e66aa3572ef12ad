"""The words and bounds of `dialectic eval`, light enough for the command line's grammar (no
engine import): the modes, the built-in sets, and how far each knob may go."""

from __future__ import annotations

SINGLE, VOTE = "single", "vote"
BASELINES: tuple[str, ...] = (SINGLE, VOTE)
DEBATE_EVAL_MODES: tuple[str, ...] = ("panel", "critique", "redteam", "consensus")
EVAL_MODES: tuple[str, ...] = (*BASELINES, *DEBATE_EVAL_MODES)
DEFAULT_MODES: tuple[str, ...] = (SINGLE, VOTE, "panel")
BUILTIN_SETS: tuple[str, ...] = ("arithmetic", "decisions")
MAX_SAMPLES = 25
MAX_CONCURRENCY = 64
MAX_EVAL_ITEMS = 10_000
DEFAULT_ARITHMETIC_ITEMS = 100
