"""The reference stays true to the code: every page exists and is reachable from the README,
every relative link resolves, every subcommand has its row, and the exit codes the README's
table gives are the ones harness/outcomes.py defines."""
from __future__ import annotations

import re

from conftest import ROOT
from harness import cli, outcomes

README = (ROOT / "README.md").read_text()
PAGES = sorted((ROOT / "docs").glob("*.md"))


def _links(path):
    text = path.read_text()
    return [m for m in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in m]


def test_every_page_is_linked_from_the_readme():
    linked = {(ROOT / link).resolve() for link in _links(ROOT / "README.md")}
    assert PAGES and [p.name for p in PAGES if p.resolve() not in linked] == []


def test_every_relative_link_resolves():
    broken = [f"{page.relative_to(ROOT)}: {link}" for page in [ROOT / "README.md", *PAGES]
              for link in _links(page) if not (page.parent / link).exists()]
    assert broken == []


def _table_row(command: str) -> str:
    rows = [line for line in README.splitlines() if line.startswith(f"| `harness {command}")]
    assert rows, f"the README's command table has no row for `harness {command}`"
    return rows[0]


def test_every_subcommand_has_a_row():
    for command in cli.COMMANDS:
        _table_row(command)


def _codes(cell: str) -> dict[str, int]:
    return {word.strip(): int(code) for code, word in re.findall(r"(\d+) ([a-z ]+?)(?=,|;|$| \d)", cell)}


def test_the_readme_exit_codes_are_outcomes():
    compare = _codes(_table_row("compare BUNDLE").split("|")[-2])
    for word, code in outcomes.EXIT_CODES.items():
        assert any(w.startswith(word) or word in w.split(" or ") for w in compare if compare[w] == code), (word, compare)
    reproduce = _codes(_table_row("reproduce").split("|")[-2])
    for word, code in outcomes.REPRODUCTION_CODES.items():
        assert reproduce.get(word) == code, (word, reproduce)
    run = _table_row("run").split("|")[-2]
    for code, meaning in outcomes.RUN_EXIT_MEANING.items():
        assert f"{code} {meaning}" in run, (code, meaning)
