"""Every list of appstack's kinds in the documentation is the registry's
(:data:`appstack.controllers.registry.ALL`), so a kind added or removed there fails here
until every page says so (issue #51: five places listed four or three of five).

A page lists the kinds in a block (a paragraph, a table or a bullet list) with
``<!-- kinds -->`` on the line before it. What the block lists: a table's first column, a
list's items' first words, a paragraph's bold names (``**AppStack** (a whole system...)``)
or else its longest enumeration (``AppService, AppStack, CronTab, EtcdCluster and
MongoDBCommunity``, ``A/B/C``). Elsewhere, an enumeration of three or more of the kinds is
an unmarked list (mark it and make it whole, or name fewer), and "its/our/appstack's
<number> kinds" must say how many there are. The site's nav has a page per kind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from appstack.controllers.registry import ALL
from tests.support.paths import REPO_ROOT

KINDS = [controller.kind.kind for controller in ALL]
PAGES = [
    REPO_ROOT / "README.md",
    REPO_ROOT / "CONTRIBUTING.md",
    REPO_ROOT / "SECURITY.md",
    REPO_ROOT / "charts" / "appstack" / "README.md",
    REPO_ROOT / "testbed" / "README.md",
    REPO_ROOT / "tests" / "README.md",
    *sorted((REPO_ROOT / "docs").glob("*.md")),
]
MARKER = "<!-- kinds -->"
WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
NUMBERS = {**{str(n): n for n in range(1, 100)}, **{w: n for n, w in enumerate(WORDS, start=1)}}
#: "its five kinds", "appstack's 5 CRDs", "all four custom resources": a count of ours.
COUNT = re.compile(
    r"\b(?:its|our|appstack's|the operator's|all)\s+(\w+)\s+(?:custom\s+)?"
    r"(?:kinds|CRDs|custom resources)\b",
    re.IGNORECASE,
)
_NAME = r"[*`]{0,2}[A-Z][A-Za-z0-9]*[*`]{0,2}"
ENUMERATION = re.compile(rf"{_NAME}(?:(?:,\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+|/){_NAME})+")
BOLD = re.compile(r"\*\*([A-Z][A-Za-z0-9]*)\*\*")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def _name(word: str) -> str:
    """A listed word as a kind's name: formatting dropped, a plural made singular."""
    word = word.strip("*` ")
    if word not in KINDS and word.endswith("s") and word[:-1] in KINDS:
        return word[:-1]
    return word


def prose(lines: list[str]) -> list[str]:
    """Lines of ``lines`` that are text: not in a fenced code block, not a table row."""
    out, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        elif fenced or line.lstrip().startswith("|"):
            out.append("")
        else:
            out.append(line)
    return out


def enumerations(text: str) -> list[list[str]]:
    """Every enumeration of capitalised names in ``text`` (inline code spans and link
    targets dropped, so ``AppService``-like words in code are not taken for a list)."""
    text = LINK.sub(r"\1", text)
    text = re.sub(r"``[^`]*``|`[^`*]*[^A-Za-z0-9`*][^`*]*`", " ", text)  # code, not `Name`
    return [
        [_name(w) for w in re.split(r",\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+|/", m.group(0))]
        for m in ENUMERATION.finditer(" ".join(text.split()))
    ]


def listed(block: list[str]) -> list[str]:
    """The kinds a marked block lists (see the module's docstring)."""
    if block[0].lstrip().startswith("|"):  # a table: the first cell of each row
        rows = [line.strip().strip("|").split("|") for line in block]
        return [_name(LINK.sub(r"\1", row[0])) for row in rows[2:]]
    if block[0].lstrip().startswith(("- ", "* ")):  # a list: each item's first word
        items = [line.lstrip()[2:] for line in block if line.lstrip().startswith(("- ", "* "))]
        return [_name(LINK.sub(r"\1", item).split()[0]) for item in items]
    text = " ".join(block)
    bold = BOLD.findall(text)
    if bold:
        return [_name(b) for b in bold]
    return max(enumerations(text), key=len, default=[])


def marked_blocks(path: Path) -> list[tuple[int, list[str]]]:
    """(line, the block's lines) of every block marked ``<!-- kinds -->`` in ``path``."""
    lines = path.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() == MARKER:
            block = []
            for following in lines[i + 1 :]:
                if not following.strip():
                    break
                block.append(following)
            blocks.append((i + 2, block))
    return blocks


def problems(path: Path) -> list[str]:
    """What ``path`` says about the kinds that the registry does not."""
    out = []
    name = path.relative_to(REPO_ROOT)
    lines = path.read_text().splitlines()
    in_marked: set[int] = set()
    for line, block in marked_blocks(path):
        in_marked.update(range(line - 1, line - 1 + len(block)))
        kinds = listed(block) if block else []
        if sorted(kinds) != sorted(KINDS):
            missing = [k for k in KINDS if k not in kinds]
            extra = [k for k in kinds if k not in KINDS or kinds.count(k) > 1]
            out.append(f"{name}:{line}: lists {kinds}: missing {missing}, not a kind {extra}")
    text = prose(lines)
    paragraph: list[tuple[int, str]] = []
    for number, line in enumerate([*text, ""]):
        if line.strip():
            paragraph.append((number, line))
            continue
        if paragraph and not any(n in in_marked for n, _ in paragraph):
            for enumeration in enumerations(" ".join(t for _, t in paragraph)):
                ours = {k for k in enumeration if k in KINDS}
                if len(ours) >= 3:
                    out.append(
                        f"{name}:{paragraph[0][0] + 1}: an unmarked list of kinds "
                        f"{enumeration}: put {MARKER} before it and name all {len(KINDS)}, "
                        "or name fewer"
                    )
        paragraph = []
    whole = "\n".join(lines)
    for match in COUNT.finditer(whole):  # across a line break too
        count = NUMBERS.get(match.group(1).lower())
        if count is not None and count != len(KINDS):
            number = whole.count("\n", 0, match.start()) + 1
            said = " ".join(match.group(0).split())
            out.append(f"{name}:{number}: {said!r}, but there are {len(KINDS)}")
    return out


def test_every_list_of_the_kinds_is_the_registrys() -> None:
    assert sum(len(marked_blocks(page)) for page in PAGES) >= 5  # the lists were found
    found = [problem for page in PAGES for problem in problems(page)]
    assert not found, "\n".join(found)


def test_the_sites_nav_has_a_page_per_kind() -> None:
    # BaseLoader: strings only (mkdocs.yml names a Python function with a tag), no objects
    nav = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]  # noqa: S506
    (section,) = [entry["Kinds"] for entry in nav if "Kinds" in entry]
    pages = {title: page for entry in section for title, page in entry.items()}
    kinds = {title for title, page in pages.items() if page == f"{title.lower()}.md"}
    assert kinds == set(KINDS)
    assert all((REPO_ROOT / "docs" / f"{kind.lower()}.md").is_file() for kind in KINDS)


def _page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text)
    return path


@pytest.fixture
def relative_to_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(f"{__name__}.REPO_ROOT", tmp_path)
    return tmp_path


ALL_FIVE = ", ".join(KINDS[:-1]) + f" and {KINDS[-1]}"


@pytest.mark.parametrize(
    "text",
    [
        f"{MARKER}\nEvery {ALL_FIVE} in all namespaces.\n",
        f"{MARKER}\nAn author of an {ALL_FIVE.replace(' and ', ' or ')}.\n",
        f"{MARKER}\n" + ", ".join(f"**{k}** (what it does, with a Deployment)" for k in KINDS),
        f"{MARKER}\n| kind | page |\n|---|---|\n"
        + "".join(f"| **{k}** | [{k}]({k.lower()}.md) |\n" for k in KINDS),
        f"{MARKER}\n" + "".join(f"- [{k}](#{k.lower()})\n" for k in KINDS),
        f"Its {len(KINDS)} kinds; a CronTab and an EtcdCluster; a Deployment, Service and Pod.\n",
        "```text\nAppService, AppStack and CronTab\n```\n",
    ],
)
def test_a_whole_list_passes(relative_to_root: Path, text: str) -> None:
    assert problems(_page(relative_to_root, text)) == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"{MARKER}\nEvery AppService, AppStack and CronTab.\n", "missing"),
        (f"{MARKER}\nEvery {ALL_FIVE.replace(' and ', ', ')} and DataService.\n", "not a kind"),
        (
            f"{MARKER}\n| kind | x |\n|---|---|\n" + "".join(f"| {k} | x |\n" for k in KINDS[1:]),
            "missing",
        ),
        ("Anyone who may create an AppService, AppStack or CronTab in N.\n", "unmarked"),
        ("An AppStack/AppService/CronTab author.\n", "unmarked"),
        ("appstack's operator: its four kinds and more.\n", "but there are"),
        ("the CRDs of our\nthree kinds\n", "but there are"),
    ],
)
def test_a_partial_list_fails(relative_to_root: Path, text: str, says: str) -> None:
    found = problems(_page(relative_to_root, text))
    assert found
    assert says in found[0], found


def test_a_kind_gone_from_the_registry_fails_the_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.KINDS", KINDS[:-1])
    found = [problem for page in PAGES for problem in problems(page)]
    assert any("not a kind" in problem for problem in found)
