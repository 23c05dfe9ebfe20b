"""The README and the pages under docs/: every link leads somewhere. The README is also shown on
the package index, where only absolute links work: it links to this repository's files by URL,
and those URLs name files and headings that exist here."""
import re
from pathlib import Path

import pytest

from support import REPO_ROOT

#: the repository's name, as the seed README says (the PyPI package is ovos-a2a-solver-plugin)
REPOSITORY_NAME = "ovos-a2a-agent-plugin"
#: the package's name, which is no repository's
PACKAGE_NAME = "ovos-a2a-solver-plugin"
REPOSITORY = f"https://github.com/OpenVoiceOS/{REPOSITORY_NAME}"
FILE_URLS = (f"{REPOSITORY}/blob/main/", f"https://raw.githubusercontent.com/OpenVoiceOS/{REPOSITORY_NAME}/main/")
#: every file that may name the repository: the pages, the package's metadata, the service unit
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "CHANGELOG.md"]
NAMING_FILES = [*PAGES, REPO_ROOT / "pyproject.toml", REPO_ROOT / "setup.py", *sorted((REPO_ROOT / "deploy").iterdir())]
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


def test_no_link_or_command_names_the_package_as_the_repository():
    """The repository is ovos-a2a-agent-plugin: a URL of the code host, a clone's directory or a
    path to the clone that names the package (ovos-a2a-solver-plugin) instead leads nowhere."""
    wrong = re.compile(rf"(github\.com/OpenVoiceOS/|githubusercontent\.com/OpenVoiceOS/|cd |/path/to/){PACKAGE_NAME}\b")
    found = [f"{path.name}:{number}: {line.strip()}" for path in NAMING_FILES if path.is_file()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if wrong.search(line)]
    assert found == []
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert f"git clone {REPOSITORY} && cd {REPOSITORY_NAME}" in readme
    assert re.search(rf'^Homepage = "{REPOSITORY}"$', (REPO_ROOT / "pyproject.toml").read_text(), re.M)
