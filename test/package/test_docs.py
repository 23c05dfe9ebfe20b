"""The README and the pages under docs/: every link leads somewhere. The README is also shown on
the package index, where only absolute links work: it links to this repository's files by URL,
and those URLs name files and headings that exist here."""
import re
from pathlib import Path

import pytest

from support import REPO_ROOT

REPOSITORY = "https://github.com/OpenVoiceOS/ovos-a2a-solver-plugin"
FILE_URLS = (f"{REPOSITORY}/blob/main/", "https://raw.githubusercontent.com/OpenVoiceOS/ovos-a2a-solver-plugin/main/")
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "CHANGELOG.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as the code host makes them."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("#"):
            found.add(re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-"))
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return LINK.findall(text)


def target(page: Path, link: str) -> tuple[Path, str] | None:
    """(the local file, the anchor) a link leads to; None for a link off this repository."""
    for prefix in FILE_URLS:
        if link.startswith(prefix):
            path, _, anchor = link[len(prefix):].partition("#")
            return REPO_ROOT / path, anchor
    if re.match(r"^[a-z]+:", link):
        return None
    path, _, anchor = link.partition("#")
    return (page.parent / path if path else page), anchor


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_link_leads_to_a_file_and_heading_that_exist(page):
    broken = []
    for link in links(page):
        where = target(page, link)
        if where is None:
            continue
        path, anchor = where
        if not path.exists():
            broken.append(f"{link}: no {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{link}: no heading #{anchor}")
    assert not broken, broken


def test_the_readme_links_only_by_url_so_that_the_package_index_shows_them():
    relative = [link for link in links(REPO_ROOT / "README.md")
                if not re.match(r"^[a-z]+:", link) and not link.startswith("#")]
    assert not relative, relative


def test_the_readme_says_what_a_newcomer_needs_first():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    order = [readme.index(words) for words in ("**Why.**", "```mermaid", "**Words used here**", "## Try it",
                                               "## User stories", "## The command line", "## Documentation")]
    assert order == sorted(order), order
    for explained in ("**Agent card**", "**contextId**", "`input-required`"):  # before the stories use them
        assert readme.index(explained) < readme.index("## User stories"), explained
