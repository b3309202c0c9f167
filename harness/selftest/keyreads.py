"""Constant-key reads: how many `x["key"]` and `x.get("key")` with a string-literal key the package
spells outside its independent checker (harness/rehash.py, which reads documents as plain dicts by
design) and the frozen earlier generations (harness/legacy/). Each is a place that reads a document
by a key it spells itself instead of through its type (harness/records.py, harness/bundle/model.py);
the count is a syntactic upper bound (it cannot tell a document from any other dict), kept to see
the trend (issue 47).

    python -m harness.selftest.keyreads          # per module, by package, the total, the documents' share
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
LEFT_OUT = ("rehash.py", "legacy/")
# Modules that read no bundle document through a key on purpose, each with why: left out of the
# "documents" figure (the one issue 47 counts), never out of the total.
NOT_DOCUMENTS = {
    "contract.py": "the closed layout: FIELDS' rules read the keys they declare, for both checkers",
    "rules.py": "the rules both checkers replay: rehash.py hands them its own parsed dicts",
    "selftest/tamper.py": "the adversary: it edits a bundle's raw JSON as a forger would",
    "selftest/closedworld.py": "the adversary's inserted keys, as raw JSON",
    "selftest/fieldwalk.py": "mutates every declared field of the raw JSON by its contract path",
    "plan/spec.py": "campaign.yaml as parsed YAML, before any document exists",
}


def _literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def reads(source: str) -> int:
    """Loads of x["key"] (not stores or deletes) and calls x.get("key", ...) in one module's source."""
    n = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _literal(node.slice):
            n += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and _literal(node.args[0])):
            n += 1
    return n


def count(package: Path = PACKAGE) -> dict[str, int]:
    """module (relative to the package) -> its constant-key reads, modules without any left out."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel == LEFT_OUT[0] or rel.startswith(LEFT_OUT[1]):
            continue
        n = reads(path.read_text(encoding="utf-8"))
        if n:
            out[rel] = n
    return out


def documents(counts: dict[str, int]) -> int:
    """The reads of bundle documents: the count less the modules of NOT_DOCUMENTS."""
    return sum(n for rel, n in counts.items() if rel not in NOT_DOCUMENTS)


def main() -> int:
    counts = count()
    for rel, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{n:5d}  harness/{rel}" + ("  (not a document reader: NOT_DOCUMENTS)" if rel in NOT_DOCUMENTS else ""))
    by_package: dict[str, int] = {}
    for rel, n in counts.items():
        top = rel.split("/")[0] if "/" in rel else "(top)"
        by_package[top] = by_package.get(top, 0) + n
    print("  " + ", ".join(f"{k} {v}" for k, v in sorted(by_package.items(), key=lambda kv: -kv[1])))
    print(f"{sum(counts.values()):5d}  total")
    print(f"{documents(counts):5d}  documents (the total less NOT_DOCUMENTS)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
