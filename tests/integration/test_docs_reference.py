"""The generated references cannot drift: docs/configuration.md, docs/cli.md, docs/api.md and
docs/openapi.json are what `python -m tests.support.reference` writes from the settings models,
the argparse parser and the route table today; every setting has a meaning written."""

from __future__ import annotations

import json

import pytest

from bot.settings import SECTIONS
from tests.support import reference
from tests.support.setting_meanings import COMMON, MEANINGS

FIELDS = {name for model in SECTIONS.values() for name in model.model_fields}


@pytest.mark.parametrize("name", sorted(reference.FILES))
def test_the_committed_reference_is_what_the_code_gives(name: str) -> None:
    committed = (reference.DOCS / name).read_text()
    assert committed == reference.FILES[name](), (
        f"docs/{name} is stale: python -m tests.support.reference (make reference)")


def test_every_setting_has_a_meaning_and_every_meaning_a_setting() -> None:
    described = {name for model in SECTIONS.values()
                 for name, info in model.model_fields.items() if info.description}
    assert sorted(FIELDS - set(MEANINGS) - described) == [], "write its meaning"
    assert sorted(set(MEANINGS) - FIELDS) == [], "a meaning for a setting that is gone"
    assert COMMON <= FIELDS


def test_every_variable_is_in_the_configuration_reference() -> None:
    from bot.settings import ENV_NAMES
    text = (reference.DOCS / "configuration.md").read_text()
    for name, variables in ENV_NAMES.items():
        assert f"| `{name}` |" in text
        assert all(f"`{v}`" in text for v in variables), name


def test_every_command_is_in_the_cli_reference() -> None:
    text = (reference.DOCS / "cli.md").read_text()
    for words, _ in reference._commands(__import__("bot.cli.parser", fromlist=["x"])
                                        .build_parser(), ["dialectic"]):
        assert f"## `{' '.join(words)}`" in text


def test_the_api_reference_is_the_served_document() -> None:
    document = json.loads((reference.DOCS / "openapi.json").read_text())
    text = (reference.DOCS / "api.md").read_text()
    assert document["openapi"].startswith("3.1")
    for path, operations in document["paths"].items():
        for method in operations:
            assert f"## {method.upper()} `{path}`" in text
