"""Every relative link in README.md and docs/ leads somewhere: the file exists and, when the link
names an anchor in a markdown file, that file has the heading (GitHub's slug) or an explicit
`<a id=...>`. Links to the web are not followed (no test reaches the internet)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: guides other branches are writing in parallel (issue 36's brief): linked from docs/index.md
#: before they exist on this branch; a link to one is accepted only while it is missing
BEING_WRITTEN = frozenset({"docs/workspaces.md"})


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    found = {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}
    return found | set(re.findall(r'<a id="([^"]+)"', text))


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_pages_have_links() -> None:
    assert sum(len(links(p)) for p in PAGES) >= 50


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    for target in links(page):
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        name = goal.relative_to(ROOT).as_posix() if goal.is_relative_to(ROOT) else str(goal)
        if name in BEING_WRITTEN and not goal.exists():
            continue
        assert goal.exists(), f"{page.name}: {target} does not exist"
        if anchor and goal.suffix == ".md":
            assert anchor in anchors(goal), f"{page.name}: {target} has no such heading"


def test_every_guide_is_linked_from_the_index() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    for page in PAGES[1:]:
        assert page.name == "index.md" or f"]({page.name})" in index, page.name
