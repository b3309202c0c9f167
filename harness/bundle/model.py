"""comparison.json as named types: the read side of a verified comparison.

Every reader of a comparison (the verdict line and exit codes in harness/outcomes.py, the
renderers, the judges, the commands, the attestation's claim, the fleet's table) reads these
frozen dataclasses instead of spelling string keys. Each one mirrors one level of
contract.FIELDS["comparison"], field for field and in its order (tests/unit/test_model.py holds
the two together: a key the contract adds or drops fails it until the model follows), and
`Comparison.of` builds the whole tree from the parsed JSON by the one generic constructor every
typed record is read by (records.build), which reads each field's annotation.

Only a document the contract accepts is built: a verified bundle's (harness/bundle/read.py), or
one `rehash.conform` passed (`harness compare --no-verify`), or the one the runner itself
derived. The constructor checks containers (a dict where a record is, a list where a list is;
TypeError or KeyError otherwise) but not leaves: the checkers bind those. The writer
(harness/comparison/) and both checkers keep building and diffing plain JSON.

It sits in the bundle's layer because the one reader hands it out (Bundle.comparison).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

from harness import contract as C
from harness.records import build


# --- the document, level by level (contract.FIELDS["comparison"]) ---------------------------------
@dataclass(frozen=True)
class Items:
    planned: int
    of: int


@dataclass(frozen=True)
class RunRow:
    label: str
    variant: str
    sha: str
    wall_s: Optional[float]
    exit_code: Optional[int]
    status: str


@dataclass(frozen=True)
class Wall:
    timer: str
    base_mean_s: Optional[float]
    candidate_mean_s: Optional[float]
    saving_s: Optional[float]
    saving_pct: Optional[float]
    speedup: Optional[float]


@dataclass(frozen=True)
class Stage:
    calls_per_run: Any  # one count, {variant: count} or {label: count}
    calls: str
    base_self_cpu_s: Optional[float]
    base_incl_cpu_s: Optional[float]
    candidate_self_cpu_s: Optional[float]
    candidate_incl_cpu_s: Optional[float]
    base_installed: bool
    candidate_installed: bool

    @property
    def ratio(self) -> Optional[float]:
        """Candidate over base self CPU, None without a positive base."""
        b, c = self.base_self_cpu_s, self.candidate_self_cpu_s
        return c / b if b is not None and c is not None and b > 0 else None


@dataclass(frozen=True)
class Tolerance:
    max_ulp: int
    max_ulp_seen: int
    fields_within: int
    over_bound: dict[str, int]


@dataclass(frozen=True)
class GoldenFailing:
    run: str
    items_differing: int


@dataclass(frozen=True)
class Golden:
    items: int
    items_checked: int
    runs: int
    identical: bool
    failing: list[GoldenFailing]


@dataclass(frozen=True)
class Mismatch:
    run: str
    item: str
    field: Optional[str]
    reason: str
    reference_digest: Optional[str] = None
    digest: Optional[str] = None
    max_ulp: Optional[int] = None


@dataclass(frozen=True)
class Parity:
    identical: bool
    agree: bool
    tolerance: Optional[Tolerance]
    reference: Optional[str]
    items: int
    fields_compared: int
    fields_identical: int
    error_returns: int
    errors_identical: bool
    call_counts_identical: bool
    golden: Optional[Golden]
    mismatch_count: int
    mismatches: list[Mismatch]
    note: Optional[str]
    divergence: list[dict]  # open rows (contract: parity.divergence[].**), measured by harness verify


@dataclass(frozen=True)
class Rounds:
    n: int
    min: int
    pairs: list[list[str]]
    unpaired: list[str]
    log_ratios: list[float]
    sd_log: Optional[float]
    t_quantile: Optional[float]
    typical_deviation: Optional[float]


@dataclass(frozen=True)
class Look:
    round: int
    ci95: Optional[list[float]]
    verdict: str
    precise: Optional[bool]  # with a precision: the interval within it (rules.precise); null without one

    EARLIER = ("precise",)  # comparison/v8 (harness/legacy v9-run8) has none: read as null (harness report)


@dataclass(frozen=True)
class Sequential:
    method: str
    first: int
    cap: int
    alpha: float
    sides: int
    levels: list[float]  # the t's and the signs' one-tail nominal level at every look
    looks: list[Look]
    stopped: str  # contract.STOPS
    expected_rounds: Optional[int]  # at the cap, undecided or imprecise: the rounds the rule expects to need in all
    precision: Optional[float]  # `precision:` asked for (null: none)

    EARLIER = ("precision",)  # comparison/v8 (harness/legacy v9-run8) has none: read as null (harness report)

    def more_rounds(self, n: int) -> Optional[str]:
        """"about 6 more rounds" (or "more than one campaign may run"): what the rule expects to need
        past the n rounds run, when the budget ran out first; None otherwise."""
        need = self.expected_rounds
        if need is None:
            return None
        if need > C.MAX_ROUNDS:
            return f"more than the {C.MAX_ROUNDS} rounds one campaign may run"
        return f"about {need - n} more round{'s' if need - n != 1 else ''} ({need} in all)"


@dataclass(frozen=True)
class Paired:
    metric: str
    items: int
    items_excluded: int
    geomean_ratio: Optional[float]
    ci95: Optional[list[float]]
    run_ratio: Optional[float]


@dataclass(frozen=True)
class ItemRatio:
    id: str
    ratio: float
    ci95: Optional[list[float]]


@dataclass(frozen=True)
class PerItem:
    items: int
    band: float
    regressed: int
    improved: int
    note: Optional[str]  # why the items cannot be judged (too few rounds, intervals still unbounded)
    worst: Optional[ItemRatio]
    table: list[ItemRatio]
    more: int


@dataclass(frozen=True)
class Member:
    """One benchmark of a suite's family: its own interval, verdict and the look that decided it."""
    id: str
    n: int
    ratio: Optional[float]
    ci95: Optional[list[float]]
    verdict: str
    verdict_reason: str
    decided_at: Optional[int]
    expected_rounds: Optional[int]

    @property
    def changed(self) -> bool:
        return self.verdict in C.CHANGED


@dataclass(frozen=True)
class Family:
    """A suite's benchmarks, each a claim of its own (stats.family)."""
    members: int
    alpha: float
    counts: dict[str, int]  # every verdict word -> how many benchmarks have it
    items: list[Member]
    expected_rounds: Optional[int]

    def leading(self) -> list[Member]:
        """The benchmarks, changed first (regressed, then improved, by how far), then undecided, then
        the rest, each group by ratio: the order a table shows them in."""
        rank = {"regressed": 0, "improved": 1, "inconclusive": 2}

        def key(m: Member) -> tuple:
            far = abs(math.log(m.ratio)) if m.ratio else 0.0
            return rank.get(m.verdict, 3), -far if m.changed else 0.0, m.id

        return sorted(self.items, key=key)

    @property
    def undecided(self) -> int:
        return self.counts.get("inconclusive", 0)


@dataclass(frozen=True)
class DriftSide:
    first: list[str]
    last: list[str]
    first_s: float
    last_s: float
    change_pct: float


@dataclass(frozen=True)
class DriftRatio:
    first_rounds: list[int]
    last_rounds: list[int]
    first: float
    last: float
    change_pct: float
    noise_pct: float


@dataclass(frozen=True)
class Drift:
    base: Optional[DriftSide]
    candidate: Optional[DriftSide]
    ratio: Optional[DriftRatio]
    effect_pct: float
    max_abs_drift_pct: Optional[float]
    flagged: bool
    rule: str


@dataclass(frozen=True)
class Load:
    overloaded: list[str]


@dataclass(frozen=True)
class Without:
    rounds: int
    geomean_ratio: Optional[float]
    ci95: Optional[list[float]]
    verdict: str


@dataclass(frozen=True)
class Interference:
    max_steal: float
    min_cpu_per_wall: Optional[float]
    steal_runs: int
    freq_runs: int
    disturbed: list[str]
    disturbed_rounds: list[int]
    without: Optional[Without]
    holds: bool


@dataclass(frozen=True)
class Moved:
    """The time-outside-the-loop rule over the paired rounds (rules.moved_outside)."""
    rounds: int
    saved_s: float
    grown_s: float
    grown_cpu_s: Optional[float]
    lower_s: list[Optional[float]]
    flagged: bool


@dataclass(frozen=True)
class OutsideStats:
    """What the runner's own figures say of the claim (rules.outside_veto)."""
    contradicted: list[str]
    moved: Optional[Moved]
    holds: bool


@dataclass(frozen=True)
class Sandbox:
    """What every worker ran under (environment.json's sandbox): its level and why it is not full."""
    level: str
    reason: Optional[str]

    @property
    def full(self) -> bool:
        return self.level == "full"


@dataclass(frozen=True)
class Stats:
    method: str
    question: str  # contract.QUESTIONS: a claim, or a one-sided question against `margin`
    threshold: float
    margin: Optional[float]
    floor: Optional[float]
    band: float
    claim_band: float
    rounds: Rounds
    sequential: Optional[Sequential]
    paired: Paired
    per_item: Optional[PerItem]
    family: Optional[Family]
    drift: Optional[Drift]
    load: Load
    # present exactly when campaign.json's interference is (None when absent)
    interference: Optional[Interference] = dataclasses.field(default=None, kw_only=True)
    verdict: str
    verdict_reason: str
    warnings: list[str]
    # the runner's own figures against the claim (rules.outside_veto), after interference (None:
    # stats a look derives, before it; a bundle's always has it)
    outside: Optional[OutsideStats] = dataclasses.field(default=None, kw_only=True)

    ABSENT = ("interference", "outside")  # left out of the JSON (not null) while None (records.to_json)

    @classmethod
    def of(cls, doc: dict) -> Stats:
        """comparison.json's `stats` as a Stats."""
        return build(cls, doc)


@dataclass(frozen=True)
class InstructionSide:
    runs: list[str]
    counts: list[int]
    repeated: bool
    spread_pct: Optional[float]


@dataclass(frozen=True)
class Instructions:
    tool: str
    items: int
    base: InstructionSide
    candidate: InstructionSide
    ratio: Optional[float]
    change_pct: Optional[float]
    repeated: bool
    detected: bool
    direction: Optional[str]
    disagrees: bool
    contradicted: bool
    band: float
    verdict: str
    verdict_reason: str


@dataclass(frozen=True)
class MetricEntry:
    """One metric's entry (contract.METRIC_DEFINITIONS), one shape for every metric."""
    name: str
    unit: str
    of: str
    n: int
    base: Optional[float]
    candidate: Optional[float]
    ratio: Optional[float]
    ci95: Optional[list[float]]
    band: float
    verdict: str
    verdict_reason: str

    @property
    def title(self) -> str:
        return C.METRIC[self.name].title


@dataclass(frozen=True)
class Comparison:
    """data/comparison.json of a verified bundle."""
    schema: str
    campaign: str
    status: str
    reason: Optional[str]
    order: str
    items: Items
    runs: list[RunRow]
    sandbox: Sandbox
    wall: Wall
    stages: dict[str, Stage]
    parity: Parity
    stats: Stats
    instructions: Optional[Instructions]
    metrics: list[MetricEntry]

    @classmethod
    def of(cls, doc: dict) -> Comparison:
        """The model of a parsed comparison.json the contract accepts (KeyError or TypeError for
        a document whose shape is not the contract's)."""
        return build(cls, doc)

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def metric(self, name: str) -> Optional[MetricEntry]:
        """The `metrics` entry of that name, or None when the campaign did not measure it."""
        return next((m for m in self.metrics if m.name == name), None)

    def other_metrics(self) -> list[MetricEntry]:
        """The entries of every metric but the headline, in the contract's order."""
        return [m for m in self.metrics if m.name != C.HEADLINE]

    def ok_runs(self) -> list[RunRow]:
        return [r for r in self.runs if r.status == "ok"]
