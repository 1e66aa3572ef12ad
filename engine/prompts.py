"""Prompt text for every role. Versioned: the version goes into each result and the audit log, so a
change of wording is visible when comparing debates."""

from __future__ import annotations

from engine.llm import Prompt

PROMPT_VERSION = "2026-11-22.1"

_JSON_RULE = (
    "Reply with a single JSON object matching the required schema. Be specific and concrete; "
    "no markdown."
)


def debater(persona: str, topic: str, task: str, context: str = "") -> Prompt:
    system = (
        f"You are {persona} in a structured debate. Argue your side honestly and well: strong "
        "claims, real evidence or reasoning, no straw men. " + _JSON_RULE
    )
    user = f"Proposition: {topic}\n"
    if context:
        user += f"\n{context}\n"
    user += f"\nTask: {task}"
    return Prompt(system=system, user=user)


def judge(expertise: str, topic: str, transcript: str, task: str, policy: str = "") -> Prompt:
    system = (
        "You are an impartial debate judge whose lens is "
        f"{expertise}. Judge the arguments, not the side; the positions are labelled A and B "
        "and the order they appear in says nothing. " + _JSON_RULE
    )
    user = f"Proposition: {topic}\n"
    if policy:
        user += f"\nPolicy text to judge against:\n{policy}\n"
    user += f"\nTranscript:\n{transcript}\n\nTask: {task}"
    return Prompt(system=system, user=user)


def role(role_description: str, topic: str, task: str, context: str = "") -> Prompt:
    """A non-debater role (panelist, critic, analyst, synthesizer...)."""
    system = f"You are {role_description}. " + _JSON_RULE
    user = f"Question: {topic}\n"
    if context:
        user += f"\n{context}\n"
    user += f"\nTask: {task}"
    return Prompt(system=system, user=user)
