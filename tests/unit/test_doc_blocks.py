"""What can be checked of the documentation's code blocks without a cluster
(:mod:`tests.doc_blocks`): every block says what it is, YAML parses, Python compiles, the
runtime tutorial's blocks are the ones tests/e2e/test_tutorial.py runs, a block noted as
run by another test is read by that test, and every block is run on the cluster
(tests/e2e/test_doc_blocks.py) unless a note above it says why not or which test runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import doc_blocks
from tests.doc_blocks import LANGUAGES, PAGES, Fenced, fenced
from tests.e2e.shell_blocks import SHELLS
from tests.e2e.test_tutorial import DOCS, tutorial_files
from tests.e2e.test_tutorial import PAGES as TUTORIAL_PAGES
from tests.support.paths import REPO_ROOT

BLOCKS = [b for page in PAGES if page.exists() for b in fenced(page)]
#: What another test may run as written (a ``run by`` note): commands, or Python code.
RUNNABLE = {*SHELLS, "python"}


def untested(page: list[Fenced]) -> list[str]:
    """The blocks of a page nothing checks: an unknown language, a note without a
    reason, a refusal on something that is not one of our objects."""
    problems = []
    for block in page:
        if block.language not in LANGUAGES:
            problems.append(f"{block.name}: say what it is ({', '.join(sorted(LANGUAGES))})")
        if block.note is not None and len(block.reason) < 10:
            problems.append(f"{block.name}: say why it is {block.note}")
        if block.note == "refused" and not (
            block.language == "yaml" and doc_blocks.objects_to_create(block, page)
        ):
            problems.append(f"{block.name}: only an object of ours can be refused")
        if block.language in SHELLS and not block.commands:
            problems.append(f"{block.name}: an empty shell block")
        if block.note == "run by" and (block.language not in RUNNABLE or block.runner is None):
            problems.append(
                f"{block.name}: only a shell or Python block is run by a test (tests/...py)"
            )
    return problems


def unread(block: Fenced) -> list[str]:
    """What is wrong with a ``run by`` note: the test it names does not exist, or does not
    name the block's page and heading (what it reads the block by: doc_blocks.run_by)."""
    assert block.runner is not None
    test = REPO_ROOT / block.runner
    if not test.is_file():
        return [f"{block.name}: {block.runner} does not exist"]
    source = test.read_text()
    return [
        f"{block.name}: {block.runner} does not name {what!r}"
        for what in (block.path.name, block.heading)
        if what not in source
    ]


def test_the_pages_show_code() -> None:
    assert {b.language for b in BLOCKS} >= {"console", "bash", "yaml", "python", "text"}
    assert doc_blocks.pages_on_cluster()


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists()], ids=lambda p: p.name)
def test_every_block_is_tested_or_says_why_not(page: Path) -> None:
    assert untested(fenced(page)) == []


def test_an_untagged_block_or_a_note_without_reason_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "new.md"
    page.write_text("```\nls\n```\n\n<!-- not run: no -->\n```bash\nls\n```\n")
    assert len(untested(fenced(page))) == 2


def test_a_block_run_by_a_test_is_read_by_it() -> None:
    run = [b for b in BLOCKS if b.note == "run by"]
    assert run  # docs/on-your-cluster.md's steps (tests/e2e/test_real_node_install.py)
    assert [problem for block in run for problem in unread(block)] == []


def test_blocks_are_found_by_heading_and_runner(tmp_path: Path) -> None:
    page = tmp_path / "door.md"
    page.write_text(
        "# Door\n\n```text\nx\n```\n\n## 1. Build\n\n"
        "<!-- run by: tests/e2e/test_real_node_install.py, as written -->\n"
        "```bash\n# not a heading\nmake dist\n```\n\n"
        "<!-- not run: the reader's own environment, not ours -->\n```bash\npip install x\n```\n"
        "\n### 2. Push\n\n<!-- run by: tests/e2e/test_real_node_install.py -->\n"
        "```bash\nskopeo copy a b\n```\n\n<!-- run by: tests/x.py -->\n```yaml\na: 1\n```\n"
    )
    blocks = fenced(page)
    assert [b.heading for b in blocks] == ["Door", "1. Build", "1. Build", "2. Push", "2. Push"]
    steps = doc_blocks.run_by(page, "tests/e2e/test_real_node_install.py")
    assert {h: b.commands for h, b in steps.items()} == {
        "1. Build": ["# not a heading", "make dist"],
        "2. Push": ["skopeo copy a b"],
    }
    assert not any(doc_blocks.on_cluster(b, blocks) for b in blocks)
    assert untested(blocks) == [
        f"{blocks[4].name}: only a shell or Python block is run by a test (tests/...py)"
    ]
    assert unread(blocks[1]) == [
        f"{blocks[1].name}: tests/e2e/test_real_node_install.py does not name 'door.md'",
        f"{blocks[1].name}: tests/e2e/test_real_node_install.py does not name '1. Build'",
    ]


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "yaml"], ids=str)
def test_yaml_parses(block: Fenced) -> None:
    assert doc_blocks.documents(block), f"{block.name}: an empty YAML block"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "python"], ids=str)
def test_python_compiles(block: Fenced) -> None:
    doc_blocks.compiled(block)


def test_the_tutorial_blocks_are_the_ones_its_test_runs() -> None:
    files: dict[str, str] = {}
    for block in (b for b in BLOCKS if doc_blocks.tutorial_block(b)):
        name = block.lines[0].removeprefix("# ")
        files[name] = files.get(name, "") + block.text.split("\n", 1)[1] + "\n"
    run: dict[str, str] = {}
    for page in TUTORIAL_PAGES:
        run.update(tutorial_files((DOCS / page).read_text()))
    assert files == run


def test_a_part_of_an_object_is_merged_into_the_pages_object(tmp_path: Path) -> None:
    page = tmp_path / "kind.md"
    page.write_text(
        "```yaml\napiVersion: appstack.dev/v1\nkind: CronTab\nmetadata: {name: a}\n"
        "spec: {cronSpec: '@hourly', image: busybox}\n```\n\n"
        "```yaml\n  image: busybox:1.36\n```\n\n```yaml\nresources: [x]\nnamespace: y\n```\n"
    )
    blocks = fenced(page)
    part = doc_blocks.objects_to_create(blocks[1], blocks)
    assert part == [
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "CronTab",
            "metadata": {"name": "a"},
            "spec": {"cronSpec": "@hourly", "image": "busybox:1.36"},
        }
    ]
    assert doc_blocks.objects_to_create(blocks[2], blocks) == []  # other YAML only parses
