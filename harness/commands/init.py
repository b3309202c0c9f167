"""`harness init`: write a minimal, commented campaign for a repository and two revisions.

Five keys are set (name, target, base, candidate, and workload, or with `--suite KIND PATH` a suite
the repository already has: asv, pytest-benchmark, pytest-codspeed, docs/suites.md); every other
key is shown as a comment holding its default, so the file documents what a run will do
(docs/campaign.md has each key). Revisions are quoted: YAML would read an all-digit short SHA as a
number."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from harness import contract as C
from harness.plan import spec

TEMPLATE = """\
# An interleaved A/B campaign written by `harness init`: shuffled rounds of one base (A) and one
# candidate (B) run, each a fresh process. Relative paths are relative to this file.
# Check it with `harness check {file}`, run it with `harness run {file} --out DIR`.
name: {name}
target:
  repo: {repo}                  # the git repository holding the code under test
base:
  rev: {base}                   # any commit-ish; the bundle records the full SHA
  # python: null                # this variant's own interpreter (two interpreters on one commit)
  # fence: {{path/in/tree.py: <sha256>}}   # optional: pin files of this revision by hash
candidate:
  rev: {candidate}              # WORKTREE = the repository's uncommitted (tracked) changes
# python: null                  # the workers' interpreter (a path, or a command such as python3.9), CPython
#                               # 3.9+ with numpy; null: the harness's own. The code's dependencies go there.
{workload}# build: []                     # commands run in each revision's tree first, e.g. [[python, setup.py, build_ext, --inplace]]
# inputs: {{}}                  # name: {{path, sha256, build}}: files pinned by hash
# rounds: auto                  # each round one base (A) and one candidate (B) run, shuffled; one fresh
#                               # process per run. auto: from min_rounds on, stop when the anytime-valid
#                               # interval decides, at most what budget_s holds (or rounds: N; order: ABBA;
#                               # seed: N pins the shuffle)
# budget_s: {budget_s:g}                # rounds: auto: the most time the rounds may take
# min_rounds: {first_look}               # rounds: auto: the first look, after this many rounds
# precision: null               # rounds: auto: 0.10 ends it only at a decided look whose interval is within +-10%
# slots: {slots}                      # worker threads inside each run; 1 for pure-Python code (it holds the GIL)
# timeouts: {{run_s: {run_s:g}, campaign_s: {campaign_s:g}}}
# stages: {{}}                  # name: module:function, timed as per-stage thread CPU
# stage_rounds: {stage_rounds}            # with stages: rounds of stage runs, the only ones with wrappers
# env: {{}}                     # extra environment variables for the workers
# golden: null                  # {{path, sha256}}: digests every run must reproduce
# verdict: {{threshold: {threshold:g}}}   # relative band inside which the change counts as equal; a CI gate
#                               # asks {{question: not_slower, margin: 0.05}}: "not slower than 5%" or not
# noise_floor: null             # {{path, sha256}} of `harness calibrate`'s file: no claim smaller than the floor
# parity: {{max_ulp: null}}       # floats may differ by N units in the last place ("within N ULP (close, not
#                               # identical)"); at most float16 32, float32 4096, float64 2**26; null: bit for bit
# metrics: [wall]               # [wall, instructions]: also count instructions under valgrind, a verdict of
#                               # their own that a noisy machine cannot move
# instructions: {{items: null, runs: {instruction_runs}}}   # with metrics [wall, instructions]: items per run, runs per variant
"""


WORKLOAD = """\
workload:
  entry: {entry}                # module:function returning an object with .items and .run(item)
  path: {workload_path}         # folder holding that module, outside the revision tree
  # sys_path: [src]             # folders of the revision tree to import from first (src layout)
  # params: {{}}                # handed to setup(ctx) as ctx.params
  # items: null                 # run only N items, evenly spread (default: all)
"""
SUITE = """\
suite:                          # the repository's own benchmarks, each an item (docs/suites.md)
  kind: {kind}
  path: {suite_path}            # {where}
  # select: null                # {select}
  # sys_path: []                # folders of the revision tree to import from first, e.g. [src]
  # items: null                 # run only N of the selected, evenly spread (default: all)
  # number: 1                   # calls per timed item; auto: each benchmark's, calibrated to 10 ms
{extra}"""
SUITE_PATHS = {"asv": ("in the revision tree: asv's benchmark folder, or one module of it",
                       "a regular expression searched in each benchmark's name, as asv run --bench"),
               "pytest": ("in the revision tree: a test file, or a folder of them",
                          "a pytest -k expression, e.g. \"test_parse and not slow\"")}
PYTEST_EXTRA = ("  # ini: {{}}                  # pytest -o NAME=VALUE over the suite's configuration, e.g. "
                "{{addopts: ''}}\n")

COMMENT_COLUMN = 32


def _aligned(text: str) -> str:
    """Every trailing comment starts at one column, whatever length the value filled in."""
    def line(raw: str) -> str:
        m = re.match(r"^(.*?\S)\s{2,}(# .*)$", raw)
        if not m:
            return raw
        return f"{m[1]:<{COMMENT_COLUMN - 1}} {m[2]}" if len(m[1]) < COMMENT_COLUMN - 1 else f"{m[1]}  {m[2]}"
    return "\n".join(line(raw) for raw in text.split("\n"))


def add_parser(sub) -> None:
    p = sub.add_parser("init", help="write a minimal commented campaign for a repository and two revisions")
    p.add_argument("--repo", default=".", help="the git repository (default: .)")
    p.add_argument("--base", default="HEAD", help="base revision (default: HEAD)")
    p.add_argument("--candidate", default="WORKTREE", help="candidate revision (default: WORKTREE, the "
                                                           "uncommitted changes)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--entry", metavar="MODULE:FUNCTION", help="the workload's setup function")
    what.add_argument("--suite", nargs=2, metavar=("KIND", "PATH"),
                      help="the repository's own benchmark suite instead of a workload: KIND is asv, pytest-benchmark "
                           "or pytest-codspeed, PATH its folder or file in the repository (docs/suites.md)")
    p.add_argument("--workload-path", default=".", metavar="DIR",
                   help="folder holding the workload module (default: the campaign file's folder)")
    p.add_argument("--name", help="campaign name (default: the repository folder's name)")
    p.add_argument("-o", "--output", default="campaign.yaml", help="file to write (default: campaign.yaml)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=main)


def main(args) -> int:
    out = Path(args.output)
    if out.exists() and not args.force:
        print(f"harness init: error: {out}: already exists (use --force to overwrite it)", file=sys.stderr)
        return 2
    repo = Path(args.repo).resolve()
    if not (repo / ".git").exists():
        print(f"harness init: error: {repo}: not a git repository (no .git)", file=sys.stderr)
        return 2
    here = out.absolute().parent

    def rel(path: str) -> str:
        return os.path.relpath(Path(path).resolve(), here)

    name = args.name or "".join(c if c.isalnum() or c in "_.-" else "_" for c in repo.name)[:64] or "campaign"
    if args.suite:
        kind, path = args.suite
        if kind not in C.SUITE_ENTRIES:
            print(f"harness init: error: --suite {kind}: expected one of {', '.join(C.SUITE_ENTRIES)} (docs/suites.md)",
                  file=sys.stderr)
            return 2
        if Path(path).is_absolute() or ".." in Path(path).parts or not (repo / path).exists():
            print(f"harness init: error: --suite {kind} {path}: expected a file or folder inside the repository "
                  f"{repo}, relative to its top (e.g. benchmarks/benchmarks); {repo / path} is not one",
                  file=sys.stderr)
            return 2
        where, select = SUITE_PATHS["asv" if kind == "asv" else "pytest"]
        workload = SUITE.format(kind=kind, suite_path=json.dumps(Path(path).as_posix()), where=where, select=select,
                                extra="" if kind == "asv" else PYTEST_EXTRA.format())
    else:
        workload = WORKLOAD.format(entry=args.entry, workload_path=rel(args.workload_path))
    text = _aligned(TEMPLATE.format(file=args.output, name=name, repo=rel(args.repo), base=json.dumps(args.base),
                           candidate=json.dumps(args.candidate), workload=workload,
                           instruction_runs=spec.DEFAULT_INSTRUCTION_RUNS,
                           first_look=spec.DEFAULT_FIRST_LOOK, budget_s=spec.DEFAULT_BUDGET_S, stage_rounds=spec.DEFAULT_STAGE_ROUNDS,
                           slots=spec.DEFAULT_SLOTS, run_s=spec.DEFAULT_RUN_TIMEOUT_S,
                           campaign_s=spec.DEFAULT_CAMPAIGN_TIMEOUT_S, threshold=spec.DEFAULT_THRESHOLD))
    try:
        spec.loads(text.encode(), out.absolute())  # what we write must load
    except spec.SpecError as exc:
        print(f"harness init: error: {exc}", file=sys.stderr)
        return 2
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    except OSError as exc:
        print(f"harness init: error: {out}: cannot write ({exc.strerror or exc})", file=sys.stderr)
        return 2
    print(f"wrote {out}: `harness check {out}` next")
    return 0
