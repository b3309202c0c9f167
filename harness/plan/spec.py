"""Campaign YAML -> typed, validated Campaign. Every error names the file, the key path
and what was expected; nothing here touches git, runs a build or imports code under test."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import AbstractSet, Any

import yaml

from harness import contract as C
from harness import rules as R
from harness.records import CampaignSandbox, build, to_json
from harness.contract import (CALL_MODES, DEFAULT_BUDGET_S, DEFAULT_CAMPAIGN_TIMEOUT_S, DEFAULT_INSTRUCTION_RUNS,
                              DEFAULT_FIRST_LOOK, DEFAULT_ROUNDS, DEFAULT_RUN_TIMEOUT_S, DEFAULT_SLOTS, DEFAULT_STAGE_ROUNDS,
                              DEFAULT_THRESHOLD, ENTRY_RE, ENV_KEY_RE, HEX64_RE, MAX_INSTRUCTION_RUNS, MAX_ITEMS,
                              MAX_SUITE_NUMBER,
                              MAX_ROUNDS, MAX_RUNS, MAX_SEED, MAX_SLOTS, MAX_TIMEOUT_S, METRICS, NAME_RE, OVERRIDES)

# The campaign's limits and defaults are the contract's (harness/contract.py): the bundle a
# campaign makes must be one the checkers accept. By default rounds are sequential (`rounds:
# auto`): from round min_rounds on, after every round, an interval valid at every look decides
# whether to stop (rules.confidence_sequence); the time budget only caps the count (as many
# rounds as the first round's two runs say fit in budget_s), so stopping early cannot shop for
# a verdict.
STAGE_RE = C.STAGE_PATH_RE


class SpecError(Exception):
    """A campaign that cannot be used; str() is the one-line message."""


@dataclass(frozen=True)
class BuildStep:
    kind: str  # "tree" | "patch"
    path: Path
    message: str


@dataclass(frozen=True)
class Target:
    repo: Path | None
    build: tuple[BuildStep, ...] = ()


@dataclass(frozen=True)
class Revision:
    variant: str  # "base" | "candidate"
    rev: str
    fence: dict[str, str] = field(default_factory=dict)
    python: str | None = None  # the workers' interpreter as the YAML names it (None: the harness's own)


@dataclass(frozen=True)
class Workload:
    entry: str
    path: Path | None
    params: dict[str, Any]
    sys_path: tuple[str, ...] = ()  # folders of the revision tree put first on sys.path (e.g. src)
    items: int | None = None  # run only this many of the workload's items, evenly spread
    prepare: str | None = None  # MODULE:FUNCTION outside the trees: what setup() needs that no revision's code makes


@dataclass(frozen=True)
class Suite:
    """`suite:` (docs/suites.md): an existing benchmark suite in the revision tree, run through the
    harness's own workload entry for its kind (contract.SUITE_ENTRIES), in place of `workload:`."""
    kind: str  # asv | pytest-benchmark | pytest-codspeed
    path: str  # relative to the revision tree: asv's benchmark folder, a test file or a folder of them
    select: str | None = None  # asv: a regex (asv run --bench); pytest: a -k expression


@dataclass(frozen=True)
class Instructions:
    """`metrics: [wall, instructions]`: `runs` instruction runs per variant, each counting
    `items` of the wall runs' items (None: all of them)."""
    items: int | None = None
    runs: int = DEFAULT_INSTRUCTION_RUNS


@dataclass(frozen=True)
class Input:
    name: str
    path: Path
    sha256: str
    build: tuple[str, ...] | None


@dataclass(frozen=True)
class Campaign:
    source: Path
    raw: bytes
    name: str
    description: str
    target: Target
    base: Revision
    candidate: Revision
    workload: Workload
    inputs: tuple[Input, ...]
    order: str
    slots: int
    run_timeout_s: float
    campaign_timeout_s: float
    stages: dict[str, str]
    optional_stages: frozenset[str]
    stage_calls: dict[str, str]
    env: dict[str, str]
    golden: Path | None
    golden_sha256: str | None
    threshold: float
    build: tuple[tuple[str, ...], ...] = ()  # commands run in each exported revision tree
    notes: str = ""
    overrides: dict = field(default_factory=dict)  # from the command line, recorded in the bundle
    rounds: int | None = None  # None: the explicit `order` string; with budget_s, min_rounds until decided
    budget_s: float | None = None  # `rounds: auto`: the cap on the count follows this budget (rules.auto_rounds)
    min_rounds: int | None = None  # `rounds: auto`: the first look, after this many rounds
    precision: float | None = None  # `rounds: auto`: a decided look ends it once its interval is this precise
    stage_rounds: int | None = None  # rounds of stage runs (a, b) among the rounds; None with an order
    seed: int | None = None  # the rounds' shuffle seed; None until `with_seed` draws one
    noise_floor: Path | None = None  # a `harness calibrate` file, pinned by noise_floor_sha256
    noise_floor_sha256: str | None = None
    instructions: Instructions | None = None  # None: `metrics: [wall]`, no instruction runs
    max_ulp: int | None = None  # `parity: {max_ulp: N}`: floats may differ by N units in the last place
    launch: str = C.DEFAULT_LAUNCH  # `launch: zygote`: runs forked from a per-variant zygote (harness/worker/zygote.py)
    preload: tuple[str, ...] = ()  # `launch: {mode: zygote, preload: [...]}`: libraries each zygote imports first
    cores: tuple[int, ...] = ()  # `launch: duet`: the two cores its rounds' runs are pinned to (() until resolved)
    # `interference: {max_steal: S, min_cpu_per_wall: X}`: the bounds that mark a run disturbed, as declared
    # (None: not declared, the contract's); campaign.json records them with the defaults filled in
    interference: dict | None = None
    suite: Suite | None = None  # `suite:` in place of `workload:` (the workload is then the suite's entry)
    question: str = C.DEFAULT_QUESTION  # `verdict: {question: ...}`: a claim, or a one-sided question (QUESTIONS)
    margin: float | None = None  # a one-sided question's margin; None for a claim
    # `sandbox:` how each worker is confined (harness/engine/sandbox.py): its mode (on|off), whether the
    # network is declared, the absolute folders its runs may also read; campaign.json records it as it is
    sandbox: CampaignSandbox = field(default_factory=lambda: build(CampaignSandbox, C.DEFAULT_SANDBOX))

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("wall", "instructions") if self.instructions is not None else ("wall",)

    def with_seed(self, seed: int | None = None) -> "Campaign":
        """A campaign of rounds with its order settled: the YAML's seed, else `seed`, else a
        fresh random one (recorded in the bundle). An explicit order is returned as is."""
        if self.rounds is None:
            return self
        import secrets

        if self.seed is not None:
            seed = self.seed
        elif seed is None:
            seed = secrets.randbelow(MAX_SEED + 1)
        return replace(self, seed=seed, order=R.round_order(self.rounds, seed, self.stage_rounds or 0,
                                                            self.min_rounds))

    def with_rounds(self, rounds: int) -> "Campaign":
        """A `rounds: auto` campaign with its count decided (after its first round): the same
        shuffle, more rounds. The first round is unchanged, so its runs stand."""
        if self.budget_s is None or self.rounds is None:
            raise ValueError("with_rounds: only for a campaign of `rounds: auto`")
        order = R.round_order(rounds, self.seed, self.stage_rounds or 0, self.min_rounds)
        return replace(self, rounds=rounds, order=order)

    def with_cores(self, cores) -> "Campaign":
        """A duet campaign with its cores settled: the YAML's, else `cores` (the runner's first two CPUs,
        recorded in campaign.json). Any other campaign is returned as is."""
        if self.launch != C.DUET or self.cores:
            return self
        return replace(self, cores=tuple(cores))

    @property
    def suite_number(self) -> Any:
        """A suite's `number`: an int, auto, the settled {item: calls}; None without one (or a suite)."""
        from harness.plan.suite import number_of

        return number_of(self.workload.params) if self.suite is not None else None

    @property
    def auto_number(self) -> bool:
        """`suite.number: auto`, not yet calibrated (the runner calibrates it in the pre-flight)."""
        from harness.plan.suite import AUTO

        return self.suite_number == AUTO

    def with_suite_number(self, numbers: Any) -> "Campaign":
        """A `suite.number: auto` campaign with each benchmark's calls settled ({item: calls}, as the
        runner calibrated them or a bundle recorded them; settled again: the runner keeps a re-run's
        to the benchmarks it runs): campaign.json records them in place of `auto`. ValueError, one
        line, for a mapping of any other shape."""
        from harness.plan.suite import numbers_problem

        if not self.auto_number and not isinstance(self.suite_number, dict):
            raise ValueError("with_suite_number: only for a campaign of `suite.number: auto`")
        problem = numbers_problem(numbers)
        if problem:
            raise ValueError(f"suite.number: expected {problem}")
        return replace(self, workload=replace(self.workload, params={**self.workload.params, "number": dict(numbers)}))

    def revision(self, variant: str) -> Revision:
        return self.base if variant == "base" else self.candidate

    def labels(self) -> list[tuple[str, str]]:
        """(label, variant) per run in execution order: ABBA -> A1 B1 B2 A2; ABab -> A1 B1 As1 Bs1."""
        return R.labels(self.order)

    def instrumented(self, label: str) -> bool:
        return R.instrumented(label, self.order)


class _Reader:
    """Walks the YAML mapping, remembering the key path for error messages."""

    def __init__(self, source: Path):
        self.source = source

    def fail(self, path: str, expected: str, got: Any = None, *, show_got: bool = True) -> SpecError:
        msg = f"{self.source}: {path or '(top level)'}: expected {expected}"
        if show_got:
            text = repr(got)
            msg += f", got {text[:60] + '...' if len(text) > 60 else text}"
        # Keys come from the YAML: escape control characters so the message stays one line.
        return SpecError("".join(c if c.isprintable() else repr(c)[1:-1] for c in msg))

    def mapping(self, value: Any, path: str, allowed: set[str], required: AbstractSet[str] = frozenset()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(path, "a mapping", value)
        for key in value:
            if not isinstance(key, str):
                raise self.fail(path, "string keys", key)
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise self.fail(f"{path}.{unknown[0]}" if path else unknown[0],
                            f"one of the known keys ({', '.join(sorted(allowed))})", show_got=False)
        for key in sorted(required):
            if key not in value:
                raise self.fail(f"{path}.{key}" if path else key, "a value (required key is missing)",
                                show_got=False)
        return value

    def string(self, value: Any, path: str, pattern: re.Pattern | None = None, what: str = "a string") -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(path, "a non-empty string" if what == "a string" else what, value)
        if pattern is not None and not pattern.match(value):
            raise self.fail(path, what, value)
        return value

    def number(self, value: Any, path: str, low: float, high: float, integer: bool = False) -> float:
        ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type or not (low <= value <= high):
            kind = "an integer" if integer else "a number"
            raise self.fail(path, f"{kind} from {low:g} to {high:g}", value)
        return value

    def path(self, value: Any, key: str) -> Path:
        text = self.string(value, key, what="a path")
        if "\0" in text:
            raise self.fail(key, "a path without NUL characters", text)
        return (self.source.parent / text).resolve()


class _CampaignLoader(yaml.SafeLoader):
    """safe_load with three refusals, each one line: a key given twice in one mapping (YAML keeps
    the last silently: the reader of the file and the harness would see different campaigns), an
    alias (`*name`: a few lines of anchors and aliases expand into billions of nodes), and an
    integer beyond 64 bits (Python would build it, digit by digit)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "an alias (*name): a campaign file has none (write the "
                                                          "value out)", self.peek_event().start_mark)
        return super().compose_node(parent, index)

    def construct_yaml_int(self, node):
        text = str(node.value).lstrip("+-").replace("_", "")
        if text[:2].lower() in ("0x", "0o", "0b"):  # the prefix is not a digit
            text = text[2:]
        digits = len(text)
        if digits > C.MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(None, None, f"an integer of {digits} digits (at most "
                                                                f"{C.MAX_INT_DIGITS})", node.start_mark)
        return super().construct_yaml_int(node)

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the mapping check reports it
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


_CampaignLoader.add_constructor("tag:yaml.org,2002:int", _CampaignLoader.construct_yaml_int)


def safe_yaml(raw: bytes, source) -> Any:
    """A campaign file's YAML, bounded (contract.MAX_YAML_BYTES, no aliases, 64-bit integers);
    SpecError names the file, the line and the cause."""
    if len(raw) > C.MAX_YAML_BYTES:
        raise SpecError(f"{source}: {len(raw)} bytes; a campaign file has at most {C.MAX_YAML_BYTES}")
    try:
        return yaml.load(raw, Loader=_CampaignLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise SpecError(f"{source}: not valid YAML{at}: {problem}") from None
    except (RecursionError, ValueError) as exc:
        raise SpecError(f"{source}: not valid YAML: {'nested too deeply' if isinstance(exc, RecursionError) else exc}"
                        ) from None


def load(path: str | Path, overrides: dict | None = None) -> Campaign:
    from harness.files import NotReadable, read_regular

    source = Path(path)
    try:
        raw = read_regular(source, C.MAX_YAML_BYTES)
    except NotReadable as exc:
        raise SpecError(f"{source}: {exc}; a campaign file is a regular file of at most {C.MAX_YAML_BYTES} bytes"
                        ) from None
    except OSError as exc:
        raise SpecError(f"{source}: cannot read campaign file ({exc.strerror or exc})") from None
    return loads(raw, source.resolve(), overrides)


def parse_overrides(base=None, candidate=None, order=None, items=None, params=(), rounds=None,
                    metrics=(), budget_s=None, threshold=None) -> dict:
    """Command-line overrides (`--base REV --candidate REV --order ABAB | --rounds N --items N
    --param K=V --metric instructions`, and `harness bisect`'s per-step budget_s and band) as the
    dict a bundle records; a --param value is read as YAML (`3` is a number)."""
    if order is not None and rounds is not None:
        raise SpecError("--order and --rounds: give one of them")
    if rounds is not None and rounds != "auto":
        try:
            rounds = int(rounds)
        except ValueError:
            raise SpecError(f"--rounds {rounds!r}: expected a count of rounds or auto") from None
    out: dict[str, Any] = {}
    for metric in metrics:
        if metric not in METRICS:
            raise SpecError(f"--metric {metric!r}: expected one of {', '.join(METRICS)}")
    if metrics:  # --metric adds to the wall runs, which every campaign has
        out["metrics"] = [m for m in METRICS if m == "wall" or m in metrics]
    for key, value in (("base", base), ("candidate", candidate), ("order", order), ("rounds", rounds),
                       ("items", items), ("budget_s", budget_s), ("threshold", threshold)):
        if value is not None:
            out[key] = value
    for text in params:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise SpecError(f"--param {text!r}: expected KEY=VALUE")
        try:
            out.setdefault("params", {})[key] = safe_yaml(value.encode(), f"--param {key}")
        except SpecError:
            raise SpecError(f"--param {text!r}: the value is not a YAML scalar") from None
    return out


def _apply_overrides(data: Any, overrides: dict, source: Path) -> Any:
    if not overrides:
        return data
    if not isinstance(data, dict):
        return data  # parse() reports the shape
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise SpecError(f"{source}: override {unknown[0]!r}: expected one of {', '.join(OVERRIDES)}")
    data = dict(data)
    for variant in ("base", "candidate"):
        if variant in overrides:
            data[variant] = {**(data.get(variant) if isinstance(data.get(variant), dict) else {}),
                             "rev": overrides[variant]}
            data[variant].pop("fence", None)  # a fence pins the YAML's revision, not another one
    for key, other in (("order", "rounds"), ("rounds", "order")):
        if key in overrides:  # one replaces the other: a campaign has an order or rounds
            data[key] = overrides[key]
            data.pop(other, None)
            if key == "order":
                data.pop("seed", None)
                data.pop("stage_rounds", None)
            if key == "order" or overrides[key] != "auto":
                data.pop("budget_s", None)  # a fixed count or an order has no budget, no looks
                data.pop("min_rounds", None)
                data.pop("precision", None)
    if "budget_s" in overrides:  # the cap of `rounds: auto` (parse refuses it beside a fixed count)
        data["budget_s"] = overrides["budget_s"]
    if "threshold" in overrides:
        data["verdict"] = {**(data.get("verdict") if isinstance(data.get("verdict"), dict) else {}),
                           "threshold": overrides["threshold"]}
    if "metrics" in overrides:
        data["metrics"] = overrides["metrics"]
        if "instructions" not in overrides["metrics"]:
            data.pop("instructions", None)  # `--metric wall` turns the YAML's instruction runs off
    if isinstance(data.get("suite"), dict) and ("items" in overrides or "params" in overrides):
        if "params" in overrides:
            raise SpecError(f"{source}: --param: a suite campaign has no params (suite.select picks its benchmarks)")
        data["suite"] = {**data["suite"], "items": overrides["items"]}
    elif "items" in overrides or "params" in overrides:
        wl = dict(data.get("workload") or {})
        if "items" in overrides:
            wl["items"] = overrides["items"]
        if "params" in overrides:
            wl["params"] = {**(wl.get("params") or {}), **overrides["params"]}
        data["workload"] = wl
    return data


def loads(raw: bytes, source: Path, overrides: dict | None = None) -> Campaign:
    """A campaign from the bytes of its YAML file (and command-line overrides); source names
    it in messages and anchors its relative paths (nothing is read from them here)."""
    data = safe_yaml(raw, source)
    campaign = parse(_apply_overrides(data, overrides or {}, source), source, raw)
    return replace(campaign, overrides=dict(overrides or {}))


def parse(data: Any, source: Path, raw: bytes = b"") -> Campaign:
    r = _Reader(source)
    top = r.mapping(
        data, "",
        allowed={"name", "description", "notes", "target", "base", "candidate", "workload", "inputs", "order",
                 "rounds", "budget_s", "min_rounds", "precision", "stage_rounds", "seed", "noise_floor", "slots", "timeouts", "stages", "env", "golden",
                 "verdict", "build", "metrics", "instructions", "python", "parity", "interference", "suite",
                 "launch", "sandbox"},
        required={"name", "target", "base", "candidate"},
    )
    name = r.string(top["name"], "name", NAME_RE, "a name of letters, digits, '_', '.' or '-' (max 64)")
    description = top.get("description", "")
    if not isinstance(description, str):
        raise r.fail("description", "a string", description)
    notes = top.get("notes", "")  # what a reader of the figures should know; REPORT.md shows it
    if not isinstance(notes, str):
        raise r.fail("notes", "a string", notes)

    target = _target(r, top["target"])
    python = _python(r, top.get("python"), "python")
    base = _revision(r, top["base"], "base", python, raw)
    candidate = _revision(r, top["candidate"], "candidate", python, raw)

    suite = None
    if "workload" in top and "suite" in top:
        raise r.fail("workload", "a workload (module:function) or a suite (an existing benchmark suite, "
                                 "docs/suites.md), not both", show_got=False)
    if "workload" not in top and "suite" not in top:
        raise r.fail("workload", "a value (required key is missing; or `suite:` for an existing benchmark suite, "
                                 "docs/suites.md)", show_got=False)
    if "suite" in top:
        suite, workload = _suite(r, top["suite"])
    else:
        workload = _workload(r, top["workload"])
    return _rest(r, top, source, raw, name, description, notes, target, base, candidate, workload, suite)


def _sys_path(r: _Reader, value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
            isinstance(x, str) and x and "\0" not in x and not x.startswith("/") and ".." not in Path(x).parts
            for x in value):
        raise r.fail(key, "a list of folders relative to the revision tree, e.g. [src]", value)
    return tuple(value)


def _suite(r: _Reader, value: Any) -> tuple[Suite, Workload]:
    """`suite: {kind, path, select, sys_path, items, number}` -> the suite and the workload that
    runs it: the harness's entry for the kind, handed kind, path, select and number as its params
    (so campaign.json records them where it records any workload's). `number` is asv's: how many
    calls of each benchmark one timed item makes, for a benchmark too short to time in one call;
    `auto` is calibrated per benchmark by the runner (Campaign.with_suite_number)."""
    from harness.plan.suite import AUTO, SelectError, SuiteParams, matcher

    s = r.mapping(value, "suite", {"kind", "path", "select", "sys_path", "items", "number", "ini"}, {"kind", "path"})
    kind = s["kind"]
    if not isinstance(kind, str) or kind not in C.SUITE_ENTRIES:
        raise r.fail("suite.kind", "one of " + ", ".join(C.SUITE_ENTRIES), kind)
    path = r.string(s["path"], "suite.path", re.compile(r"^[^\0\n]{1,1024}\Z"), "a path relative to the revision tree")
    if path.startswith("/") or ".." in Path(path).parts:
        raise r.fail("suite.path", "a path inside the revision tree (relative, no '..'), e.g. benchmarks/benchmarks",
                     path)
    select = s.get("select")
    if select is not None:
        select = r.string(select, "suite.select", what="a string: " + ("a -k expression, e.g. \"test_foo or test_bar\""
                                                                        if kind != "asv" else "a regular expression"))
        try:
            matcher(kind, select)
        except SelectError as exc:
            raise r.fail("suite.select", f"a readable selection ({exc})", select) from None
    sys_path = _sys_path(r, s.get("sys_path", []), "suite.sys_path")
    items = s.get("items")
    if items is not None:
        items = int(r.number(items, "suite.items", 1, MAX_ITEMS, integer=True))
    number = s.get("number")
    if number is not None and number != AUTO:
        ok = isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= MAX_SUITE_NUMBER
        if not ok:
            raise r.fail("suite.number", f"an integer from 1 to {MAX_SUITE_NUMBER:,} (calls of each benchmark per timed "
                                         "item), or auto (each benchmark's calls calibrated on the base's pre-flight)",
                         number)
    ini = _ini(r, s["ini"], kind) if "ini" in s else None  # pytest's -o NAME=VALUE, over the suite's own file
    params = to_json(SuiteParams(kind, path, select, number, ini))
    return Suite(kind, path, select), Workload(C.SUITE_ENTRIES[kind], None, params, sys_path, items)


INI_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")
MAX_INI = 32  # entries of suite.ini
MAX_INI_VALUE = 4096  # characters of one


def _ini(r: _Reader, value: Any, kind: str) -> dict[str, str]:
    """`suite.ini`: pytest configuration values that override the suite's own (pytest's
    `-o NAME=VALUE`), e.g. `{addopts: ''}` to run without the configuration's addopts."""
    from harness.plan.suite import PYTEST_KINDS

    if kind not in PYTEST_KINDS:
        raise r.fail("suite.ini", "no ini for an asv suite (it overrides a pytest suite's configuration)", value)
    if not isinstance(value, dict) or len(value) > MAX_INI:
        raise r.fail("suite.ini", f"a mapping of at most {MAX_INI} pytest configuration names to values, e.g. "
                                  "{addopts: ''}", value)
    out = {}
    for name, setting in value.items():
        if not isinstance(name, str) or not INI_NAME_RE.match(name):
            raise r.fail("suite.ini", "pytest configuration names (letters, digits, _ . -)", name)
        if isinstance(setting, bool) or not isinstance(setting, (str, int, float)) or \
                len(str(setting)) > MAX_INI_VALUE or any(c in str(setting) for c in "\0\n\r"):
            raise r.fail(f"suite.ini.{name}", f"a one-line value of at most {MAX_INI_VALUE} characters", setting)
        out[name] = str(setting)
    return out


def _workload(r: _Reader, value: Any) -> Workload:
    wl = r.mapping(value, "workload", {"entry", "path", "params", "sys_path", "items", "prepare"}, {"entry"})
    entry = r.string(wl["entry"], "workload.entry", ENTRY_RE, "'module:function'")
    prepare = r.string(wl["prepare"], "workload.prepare", ENTRY_RE, "'module:function'") if "prepare" in wl else None
    params = wl.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise r.fail("workload.params", "a mapping", params)
    _json_value(r, params, "workload.params")
    import json

    if len(json.dumps(params)) > C.MAX_PARAMS_BYTES:
        raise r.fail("workload.params", f"params of at most {C.MAX_PARAMS_BYTES} bytes as JSON (pin large data as "
                                        "an input)", show_got=False)
    sys_path = _sys_path(r, wl.get("sys_path", []), "workload.sys_path")
    items = wl.get("items")
    if items is not None:
        items = int(r.number(items, "workload.items", 1, MAX_ITEMS, integer=True))
    return Workload(entry, r.path(wl["path"], "workload.path") if "path" in wl else None, params, sys_path, items,
                    prepare)


def _rest(r: _Reader, top: dict, source: Path, raw: bytes, name, description, notes, target, base, candidate,
          workload: Workload, suite: Suite | None) -> Campaign:

    inputs = []
    raw_inputs = top.get("inputs") or {}
    if not isinstance(raw_inputs, dict):
        raise r.fail("inputs", "a mapping of input name -> {path, sha256}", raw_inputs)
    for key, value in raw_inputs.items():
        p = f"inputs.{key}"
        r.string(key, p, ENV_KEY_RE, "an input name made of letters, digits and '_'")
        item = r.mapping(value, p, {"path", "sha256", "build"}, {"path", "sha256"})
        sha = r.string(item["sha256"], f"{p}.sha256", HEX64_RE, "64 lowercase hex digits")
        build = item.get("build")
        if build is not None:
            if not isinstance(build, list) or not build or not all(isinstance(x, str) and x and "\0" not in x
                                                                    for x in build):
                raise r.fail(f"{p}.build", "a non-empty list of strings (a command)", build)
            build = tuple(build)
        inputs.append(Input(key, r.path(item["path"], f"{p}.path"), sha, build))

    if "order" in top and "rounds" in top:
        raise r.fail("rounds", "either rounds or an explicit order, not both", show_got=False)
    rounds: int | None = None
    seed: int | None = None
    order: str | None = None
    budget: float | None = None
    min_rounds: int | None = None
    if "order" in top:
        order = top["order"]
        if not isinstance(order, str) or not C.ORDER_RE.match(order) or "A" not in order \
                or "B" not in order:
            raise r.fail("order", "a string of A and B holding both letters, e.g. ABBA (a and b: stage runs, "
                                  "e.g. ABBAab)", order)
        if len(order) > MAX_RUNS:
            raise r.fail("order", f"at most {MAX_RUNS} runs", order)
        unpaired = R.order_problem(order)
        if unpaired:  # the contract's decision rule: every round interleaves A and B
            raise r.fail("order", f"an order whose every round interleaves A and B, but in {order[:40]}"
                                  f"{'...' if len(order) > 40 else ''} {unpaired}", show_got=False)
        for key in ("seed", "stage_rounds", "budget_s", "min_rounds", "precision"):
            if key in top:
                raise r.fail(key, f"no {key} with an explicit order (it belongs to rounds)", show_got=False)
    elif top.get("rounds", "auto") == "auto":
        # The count is decided after the first round (Runner); until then the minimum.
        budget = float(r.number(top.get("budget_s", DEFAULT_BUDGET_S), "budget_s", 1, MAX_TIMEOUT_S))
        min_rounds = int(r.number(top.get("min_rounds", DEFAULT_FIRST_LOOK), "min_rounds", 3, MAX_ROUNDS,
                                  integer=True))
        rounds = min_rounds
    else:
        for key in ("budget_s", "min_rounds", "precision"):
            if key in top:
                raise r.fail(key, f"only with `rounds: auto` (a fixed count of rounds has no {key})",
                             show_got=False)
        if isinstance(top["rounds"], str):
            raise r.fail("rounds", f"an integer from 1 to {MAX_ROUNDS}, or auto", top["rounds"])
        rounds = int(r.number(top["rounds"], "rounds", 1, MAX_ROUNDS, integer=True))
    precision = _precision(r, top, budget is not None, "suite" in top)
    if rounds is not None and top.get("seed") is not None:
        seed = int(r.number(top["seed"], "seed", 0, MAX_SEED, integer=True))
    slots = int(r.number(top.get("slots", DEFAULT_SLOTS), "slots", 1, MAX_SLOTS, integer=True))

    timeouts = r.mapping(top.get("timeouts", {}), "timeouts", {"run_s", "campaign_s"})
    run_timeout = float(r.number(timeouts.get("run_s", DEFAULT_RUN_TIMEOUT_S), "timeouts.run_s", 1, MAX_TIMEOUT_S))
    campaign_timeout = float(r.number(timeouts.get("campaign_s", DEFAULT_CAMPAIGN_TIMEOUT_S),
                                      "timeouts.campaign_s", 1, MAX_TIMEOUT_S))

    raw_stages = top.get("stages") or {}
    if not isinstance(raw_stages, dict):
        raise r.fail("stages", "a mapping of stage name -> 'module:qualname'", raw_stages)
    stages, optional, stage_calls = {}, set(), {}
    for key, value in raw_stages.items():
        r.string(key, "stages", what="string stage names")
        if isinstance(value, dict):
            # optional: the function may exist in one revision only; calls: per_variant when
            # the change is meant to call it less (counts then only repeat within a variant).
            m = r.mapping(value, f"stages.{key}", {"path", "optional", "calls"}, {"path"})
            if not isinstance(m.get("optional", False), bool):
                raise r.fail(f"stages.{key}.optional", "true or false", m["optional"])
            if m.get("optional"):
                optional.add(key)
            calls = m.get("calls", "equal")
            if calls not in CALL_MODES:
                raise r.fail(f"stages.{key}.calls", " or ".join(repr(c) for c in CALL_MODES), calls)
            if calls != "equal":
                stage_calls[key] = calls
            value = m["path"]
        stages[key] = r.string(value, f"stages.{key}", STAGE_RE, "'module:function' or 'module:Class.method'")

    instructions = _instructions(r, top)
    if rounds is not None:
        default = min(DEFAULT_STAGE_ROUNDS, rounds) if stages else 0
        stage_rounds = int(r.number(top.get("stage_rounds", default), "stage_rounds", 0, rounds, integer=True))
        if budget is not None and instructions is not None and "min_rounds" not in top:
            # The count is decided after the first look, which no instruction run may precede: an
            # unset first look grows to hold them (an explicit one too small is refused below).
            min_rounds = rounds = max(rounds, 2 * instructions.runs + 1 - stage_rounds)
        if stage_rounds and not stages:
            raise r.fail("stage_rounds", "0 without stages (stage runs time the stages)", stage_rounds)
        if stages and not stage_rounds:
            raise r.fail("stage_rounds", "at least 1 with stages (the timed runs carry no stage wrappers)",
                         stage_rounds)
        # Until a seed is drawn (Campaign.with_seed), the order shows the shape of the plan.
        order = R.round_order(rounds, seed, stage_rounds, min_rounds)
    else:
        stage_rounds = None
        assert order is not None  # no rounds: the campaign gave an explicit order
        if order != order.upper() and not stages:
            raise r.fail("order", "only A and B without stages (a and b are stage runs)", order)

    env = top.get("env") or {}
    if not isinstance(env, dict):
        raise r.fail("env", "a mapping of variable -> string", env)
    for key, value in env.items():
        r.string(key, "env", ENV_KEY_RE, "environment variable names")
        if not isinstance(value, str) or "\0" in value:
            raise r.fail(f"env.{key}", "a string without NUL characters (quote numbers)", value)

    golden = golden_sha256 = None
    if top.get("golden") is not None:
        # Pinned by hash: a golden file edited after the fact cannot pass as the same one.
        g = r.mapping(top["golden"], "golden", {"path", "sha256"}, {"path", "sha256"})
        golden = r.path(g["path"], "golden.path")
        golden_sha256 = r.string(g["sha256"], "golden.sha256", HEX64_RE, "64 lowercase hex digits")
    floor = floor_sha256 = None
    if top.get("noise_floor") is not None:  # from `harness calibrate`, pinned like the golden file
        g = r.mapping(top["noise_floor"], "noise_floor", {"path", "sha256"}, {"path", "sha256"})
        floor = r.path(g["path"], "noise_floor.path")
        floor_sha256 = r.string(g["sha256"], "noise_floor.sha256", HEX64_RE, "64 lowercase hex digits")
    # The question the campaign asks: a claim (improved, regressed or equal, against the equal band
    # of +-threshold), or a one-sided one against a margin kept apart from that band: "not slower
    # than the margin?" (a CI gate), or "not faster?" (a claim that what the candidate leaves out
    # cost nothing). Both bands are bounded by the contract's decision rule (MAX_BAND).
    verdict = r.mapping(top.get("verdict", {}), "verdict", {"threshold", "question", "margin"})
    threshold = verdict.get("threshold", DEFAULT_THRESHOLD)
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and threshold > C.MAX_BAND:
        raise r.fail("verdict.threshold", f"at most {C.MAX_BAND} (the contract's widest band: past it \"equal\" would "
                                          "pass a change of 1.3x; a machine that needs more is too noisy to claim "
                                          "anything)", threshold)
    threshold = float(r.number(threshold, "verdict.threshold", 0, C.MAX_BAND))
    question = verdict.get("question", C.DEFAULT_QUESTION)
    if question not in C.QUESTIONS:
        raise r.fail("verdict.question", f"one of {', '.join(C.QUESTIONS)} (a claim, or a one-sided question "
                                         "against verdict.margin)", question)
    margin = None
    if question != "claim":
        margin = float(r.number(verdict.get("margin", C.DEFAULT_MARGIN), "verdict.margin", 0.001, C.MAX_BAND))
    elif "margin" in verdict:
        raise r.fail("verdict.margin", "only with a one-sided question (verdict.question: not_slower or "
                                       "not_faster); a claim's band is verdict.threshold", verdict["margin"])
    # Bit for bit unless the campaign declares how far floats may move (a summation order, a
    # fused multiply-add): then "within N ULP (close, not identical)", never "identical" or "equal".
    # The outputs' dtypes are known only when they are compared: here the widest bound (float64's)
    # refuses a tolerance that spans every dtype's range; the comparison refuses one wider than a
    # differing field's own dtype admits (contract.MAX_ULP).
    parity = r.mapping(top.get("parity") or {}, "parity", {"max_ulp"})
    max_ulp = parity.get("max_ulp")
    if max_ulp is not None:
        if isinstance(max_ulp, int) and not isinstance(max_ulp, bool) and max_ulp > C.MAX_ULP_ANY:
            bounds = ", ".join(f"{name} {C.MAX_ULP[name]}" for name in C.FLOAT_NAMES.values())
            raise r.fail("parity.max_ulp", f"at most {C.MAX_ULP_ANY} ULP (per dtype: {bounds}; a wider tolerance "
                                           "lets more than the low half of a float's significand move and would "
                                           "pass a candidate returning a constant)", max_ulp)
        max_ulp = int(r.number(max_ulp, "parity.max_ulp", 0, C.MAX_ULP_ANY, integer=True))

    interference = _interference(r, top)

    build = top.get("build") or []
    if not isinstance(build, list) or not all(
            isinstance(cmd, list) and cmd and all(isinstance(a, str) and a and "\0" not in a for a in cmd)
            for cmd in build):
        raise r.fail("build", "a list of commands, each a list of strings, e.g. [[python, setup.py, build_ext, "
                              "--inplace]]", build)

    launch, preload, cores = _launch(r, top)
    if launch == C.DUET:
        _duet(r, order, slots, instructions)
    sandbox = _sandbox(r, top)

    if budget is not None and instructions is not None and rounds is not None and stage_rounds is not None \
            and rounds + stage_rounds < 2 * instructions.runs + 1:  # a budget comes with rounds
        # the count is decided after the first round, which no instruction run may precede
        raise r.fail("min_rounds", f"at least {2 * instructions.runs + 1 - stage_rounds} with "
                                   f"{instructions.runs} instruction runs per variant", min_rounds)
    return Campaign(source, raw, name, description, target, base, candidate, workload, tuple(inputs),
                    order, slots, run_timeout, campaign_timeout, stages, frozenset(optional), stage_calls,
                    dict(env), golden, golden_sha256, threshold, tuple(tuple(cmd) for cmd in build),
                    " ".join(notes.split()), rounds=rounds, stage_rounds=stage_rounds, seed=seed,
                    budget_s=budget, min_rounds=min_rounds, precision=precision,
                    noise_floor=floor, noise_floor_sha256=floor_sha256, instructions=instructions,
                    max_ulp=max_ulp, interference=interference, suite=suite, launch=launch,
                    preload=preload, question=question, margin=margin, sandbox=sandbox, cores=cores)


def _precision(r: _Reader, top: dict, auto: bool, suite: bool) -> float | None:
    """`precision: p` (0 < p < 1): a `rounds: auto` campaign of a workload ends at a look that
    decides only once that look's interval lies within a factor 1 + p of its ratio (rules.precise);
    None when not given."""
    value = top.get("precision")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise r.fail("precision", "a number above 0 and below 1 (0.10: the interval within +-10% of the ratio)",
                     value)
    problem = R.precision_problem(float(value), auto, suite)
    if problem:
        raise r.fail("precision", problem, value)
    return float(value)


def _duet(r: _Reader, order: str, slots: int, instructions) -> None:
    """What `launch: duet` cannot run: an order whose consecutive runs are not rounds, more than one
    slot (each run has one core), instruction runs (counted alone, between the rounds)."""
    unpaired = R.duet_problem(order)
    if unpaired:
        raise r.fail("order", f"an order of rounds for `launch: duet`, but {unpaired}", show_got=False)
    if slots != 1:
        raise r.fail("slots", "1 with `launch: duet` (each run of a round is pinned to one core of its own)", slots)
    if instructions is not None:
        raise r.fail("metrics", "[wall] with `launch: duet` (instruction runs count alone, one at a time; run them "
                                "in a campaign of fresh launches)", show_got=False)


def _sandbox(r: _Reader, top: dict) -> CampaignSandbox:
    """`sandbox:` off | {network: true, read: [folder, ...]}: by default every worker sees only its
    tree, its interpreter, the inputs, the workload folder and its own folder, with no network;
    a campaign declares what else its runs need (recorded), or opts out (recorded, and shown)."""
    value = top.get("sandbox")
    if value is None:
        return build(CampaignSandbox, C.DEFAULT_SANDBOX)
    if value == "off" or value is False:
        return replace(build(CampaignSandbox, C.DEFAULT_SANDBOX), mode="off")
    block = r.mapping(value, "sandbox", {"network", "read"})
    network = block.get("network", False)
    if not isinstance(network, bool):
        raise r.fail("sandbox.network", "true or false", network)
    read = block.get("read") or []
    if not isinstance(read, list) or len(read) > C.MAX_SANDBOX_READ:
        raise r.fail("sandbox.read", f"a list of at most {C.MAX_SANDBOX_READ} folders the runs may read", read)
    folders = sorted({str(r.path(p, "sandbox.read")) for p in read})
    return CampaignSandbox("on", network, folders)


def _launch(r: _Reader, top: dict) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
    """`launch:` fresh | zygote | {mode: zygote, preload: [module, ...]}: the libraries both variants
    import from outside their trees (transformers, torch), which each zygote imports once before it
    forks, so that no run pays for them (harness/worker/zygote.py refuses one from the tree);
    duet | {mode: duet, cores: [C0, C1]}: each round's two runs at once, pinned to those cores (by
    default the runner's first two, recorded)."""
    launch = top.get("launch", C.DEFAULT_LAUNCH)
    modes = ("fresh (a new interpreter per run, the default), zygote (runs forked from a per-variant process "
             "that has imported the harness's worker), {mode: zygote, preload: [transformers, ...]}, duet (each "
             "round's two runs at once, each on a core of its own) or {mode: duet, cores: [0, 1]}")
    if isinstance(launch, dict) and launch.get("mode") == C.DUET:
        block = r.mapping(launch, "launch", {"mode", "cores"}, {"mode"})
        cores = block.get("cores")
        if not (isinstance(cores, list) and len(cores) == C.DUET_CORES and len(set(map(repr, cores))) == 2):
            raise r.fail("launch.cores", "two distinct CPU numbers, one for each run of a round, e.g. [0, 1]", cores)
        return C.DUET, (), tuple(int(r.number(c, "launch.cores", 0, C.MAX_CPU, integer=True)) for c in cores)
    if isinstance(launch, dict):
        block = r.mapping(launch, "launch", {"mode", "preload"}, {"mode"})
        if block["mode"] != "zygote":
            raise r.fail("launch.mode", "zygote (preload: is what a zygote imports; fresh launches import "
                                        "everything in each run) or duet (cores: the two it pins)", block["mode"])
        preload = block.get("preload") or []
        if not isinstance(preload, list) or len(preload) > C.MAX_PRELOAD or len(set(map(str, preload))) != len(preload):
            raise r.fail("launch.preload", f"a list of at most {C.MAX_PRELOAD} distinct module names, e.g. "
                                           "[transformers, torch]", preload)
        names = tuple(r.string(m, "launch.preload", C.MODULE_RE, "dotted module names (e.g. transformers)")
                      for m in preload)
        if any(len(name) > 128 for name in names):
            raise r.fail("launch.preload", "module names of at most 128 characters", show_got=False)
        return "zygote", names, ()
    if launch not in C.LAUNCH_MODES:
        raise r.fail("launch", modes, launch)
    return launch, (), ()


def _interference(r: _Reader, top: dict) -> dict | None:
    """`interference:`: the steal bound (a share of the loop's wall) within the contract's limits, and
    min_cpu_per_wall, which declares the timed loop single-threaded CPU-bound work (a run whose
    process CPU over the loop is below that share of its wall was off its core)."""
    if top.get("interference") is None:
        return None
    block = r.mapping(top["interference"], "interference", {"max_steal", "min_cpu_per_wall"})
    out = {}
    if "max_steal" in block:
        out["max_steal"] = float(r.number(block["max_steal"], "interference.max_steal", *C.MAX_STEAL_LIMITS))
    if block.get("min_cpu_per_wall") is not None:
        out["min_cpu_per_wall"] = float(r.number(block["min_cpu_per_wall"], "interference.min_cpu_per_wall",
                                                 *C.MIN_CPU_PER_WALL_LIMITS))
    return out


def _instructions(r: _Reader, top: dict) -> Instructions | None:
    metrics = top.get("metrics", ["wall"])
    if not isinstance(metrics, list) or "wall" not in metrics or len(set(metrics)) != len(metrics) \
            or not set(metrics) <= set(METRICS):
        raise r.fail("metrics", "a list of wall and optionally instructions, e.g. [wall, instructions]", metrics)
    if "instructions" not in metrics:
        if "instructions" in top:
            raise r.fail("instructions", "no instructions settings without instruction runs: add instructions "
                                         "to metrics ([wall, instructions]) or remove the key", show_got=False)
        return None
    m = r.mapping(top.get("instructions") or {}, "instructions", {"items", "runs"})
    items = m.get("items")
    if items is not None:
        items = int(r.number(items, "instructions.items", 1, MAX_ITEMS, integer=True))
    runs = int(r.number(m.get("runs", DEFAULT_INSTRUCTION_RUNS), "instructions.runs", 2, MAX_INSTRUCTION_RUNS,
                        integer=True))
    return Instructions(items, runs)


def _json_value(r: _Reader, value: Any, path: str, depth: int = 0) -> None:
    """Params travel to the worker (and into the bundle) as strict JSON."""
    if depth > 64:  # also stops YAML aliases that make a structure contain itself
        raise r.fail(path, "params nested at most 64 levels deep", show_got=False)
    if isinstance(value, dict):
        for key, sub in value.items():
            if not isinstance(key, str):
                raise r.fail(path, "string keys", key)
            _json_value(r, sub, f"{path}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _json_value(r, sub, f"{path}[{i}]", depth + 1)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise r.fail(path, "a finite number (JSON has no NaN or infinity)", value)
    elif value is not None and not isinstance(value, (str, int, bool)):
        raise r.fail(path, "a JSON value (string, number, true/false, null, list or mapping)", value)


def _target(r: _Reader, value: Any) -> Target:
    t = r.mapping(value, "target", {"repo", "build"})
    if ("repo" in t) == ("build" in t):
        raise r.fail("target", "exactly one of 'repo' or 'build'", sorted(t))
    if "repo" in t:
        return Target(repo=r.path(t["repo"], "target.repo"))
    steps = t["build"]
    if not isinstance(steps, list) or not steps:
        raise r.fail("target.build", "a non-empty list of {tree|patch, message}", steps)
    out = []
    for i, step in enumerate(steps):
        p = f"target.build[{i}]"
        s = r.mapping(step, p, {"tree", "patch", "message"}, {"message"})
        kinds = [k for k in ("tree", "patch") if k in s]
        if len(kinds) != 1:
            raise r.fail(p, "exactly one of 'tree' or 'patch'", sorted(s))
        if i == 0 and kinds[0] != "tree":
            raise r.fail(p, "a 'tree' as the first step", sorted(s))
        out.append(BuildStep(kinds[0], r.path(s[kinds[0]], f"{p}.{kinds[0]}"),
                             r.string(s["message"], f"{p}.message")))
    return Target(repo=None, build=tuple(out))


def _python(r: _Reader, value: Any, key: str) -> str | None:
    """`python: PATH` (a path relative to the campaign file, or a command on PATH such as
    python3.9): the interpreter the workers run; None: the harness's own."""
    if value is None:
        return None
    return r.string(value, key, re.compile(r"^[^\0\n]{1,4096}\Z"), "an interpreter: a path or a command such as "
                                                                   "python3.9")


def _scalar_text(raw: bytes, keys: tuple[str, ...]) -> str | None:
    """A scalar as the file spells it, found by its key path (None: not there): YAML reads the
    short SHA 0123456 as the octal number 42798, so the fix must quote what was written."""
    try:
        node = yaml.compose(raw, Loader=_CampaignLoader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _revision(r: _Reader, value: Any, variant: str, python: str | None = None, raw: bytes = b"") -> Revision:
    m = r.mapping(value, variant, {"rev", "fence", "python"}, {"rev"})
    if isinstance(m["rev"], (int, float)) and not isinstance(m["rev"], bool):
        written = _scalar_text(raw, (variant, "rev")) or m["rev"]
        raise r.fail(f"{variant}.rev", "a git commit-ish as a string: YAML reads an all-digit revision as a number "
                                       f"(quote it: rev: \"{written}\")", m["rev"])
    rev = r.string(m["rev"], f"{variant}.rev", re.compile(r"^[^\s-][^\s]*\Z"), "a git commit-ish")
    fence = m.get("fence") or {}
    if not isinstance(fence, dict):
        raise r.fail(f"{variant}.fence", "a mapping of path -> sha256", fence)
    for key, sha in fence.items():
        r.string(key, f"{variant}.fence", what="file paths")
        if key.startswith("/") or ".." in Path(key).parts:
            raise r.fail(f"{variant}.fence.{key}", "a relative path inside the tree", key)
        r.string(sha, f"{variant}.fence.{key}", HEX64_RE, "64 lowercase hex digits")
    own = _python(r, m.get("python"), f"{variant}.python")
    return Revision(variant, rev, dict(fence), own if own is not None else python)
