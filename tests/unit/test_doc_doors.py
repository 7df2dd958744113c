"""The README as the first page of three readers (issue #51): short, a maturity line, the
architecture picture that the docs site's home page shows too, a door per reader to a page
that exists and is on the site, the commands CI runs (``.ci/run``) shown as written, and no
page telling anyone to ``pip install appstack`` by name from an index that does not have it.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.shell_blocks import blocks
from tests.support.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
DOORS = ["docs/on-your-cluster.md", "docs/seeds.md", "docs/build-your-own-operator.md"]
MERMAID = re.compile(r"^```mermaid\n.*?^```$", re.MULTILINE | re.DOTALL)
# "pip install appstack", "pipx install 'appstack[cel]'": by name, from an index
BY_NAME = re.compile(
    r"\bpipx? install (?:-\S+ )*['\"]?appstack(?:\[[\w,-]+\])?+['\"]?+(?![\w@ ./-])"
)


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_the_readme_is_short_and_says_how_mature_it_is() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 120
    assert "**Maturity**" in text
    assert "appstack.dev/v1" in text
    assert "0.1.0" in text


def test_the_picture_is_the_same_in_the_readme_and_on_the_site() -> None:
    (readme,) = MERMAID.findall(README.read_text())
    assert "flowchart" in readme
    assert readme in MERMAID.findall((REPO_ROOT / "docs" / "index.md").read_text())


def test_each_door_is_a_page_of_the_site() -> None:
    doors = _section(README.read_text(), "Three doors")
    nav = (REPO_ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]  # its last key
    pages = set(re.findall(r": ([\w-]+\.md)$", nav, re.MULTILINE))
    for door in DOORS:
        assert f"]({door})" in doors, door
        assert (REPO_ROOT / door).is_file(), door
        assert Path(door).name in pages, f"{door} is not in mkdocs.yml's nav"
    seeds = (REPO_ROOT / "docs" / "seeds.md").read_text()
    assert "A *seed* is" in seeds.split("\n## ", 1)[0], "seeds.md defines a seed first"


def test_the_readme_shows_the_commands_ci_runs() -> None:
    script = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    ci = [line for line in script if line.startswith("make ")]
    assert ci == ["make test", "make demo", "make demo-down"]
    shown = {c.split("#", 1)[0].strip() for b in blocks(README) for c in b.commands}
    assert set(ci) <= shown


def test_no_page_installs_appstack_by_name_from_an_index() -> None:
    pages = [
        README,
        REPO_ROOT / "CONTRIBUTING.md",
        REPO_ROOT / "testbed" / "README.md",
        REPO_ROOT / "charts" / "appstack" / "README.md",
        REPO_ROOT / "CHANGELOG.md",
        *sorted((REPO_ROOT / "docs").glob("*.md")),
        # what a scaffolded project's reader is told: its README, Makefile, Dockerfile
        *sorted((REPO_ROOT / "src" / "appstack" / "scaffold" / "templates").glob("*.tmpl")),
    ]
    found = [
        f"{page.relative_to(REPO_ROOT)}:{n}: {line.strip()}"
        for page in pages
        for n, line in enumerate(page.read_text().splitlines(), start=1)
        if BY_NAME.search(line)
    ]
    assert not found


def test_the_by_name_pattern_tells_an_index_from_a_file_or_url() -> None:
    assert BY_NAME.search("pip install appstack")
    assert BY_NAME.search("`pipx install appstack`")
    assert BY_NAME.search("pip install 'appstack[cel]'")
    assert not BY_NAME.search("pip install ./appstack-0.1.0-py3-none-any.whl")
    assert not BY_NAME.search('pip install "appstack @ git+https://host/appstack.git"')
    assert not BY_NAME.search("pip install 'appstack[cel] @ ./appstack-0.1.0-py3-none-any.whl'")
    assert not BY_NAME.search("pip install appstack-testbed")
