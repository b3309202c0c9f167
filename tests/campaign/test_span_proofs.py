"""The reference PR's proofs, for the span-finding campaign's base and candidate revisions:

- the candidate is the base plus one helper: removing `_common_prefix_length` and putting the
  element loops back at its two call sites gives exactly the base module's AST;
- the helper is called at *both* call sites, as often as the base enters each loop, on
  targeted histories and on the real corpus, and swapping a linear oracle in for it changes
  no span, token, flag or log-probability;
- its empty and first-mismatch fast paths take no slice of either sequence;
- unusual histories give identical tensors or identical recorded errors in every revision
  (base, candidate, and the shared-render revision);
- at least the reference's 37,468 differential checks against a linear oracle (2.5 million
  with `-m exhaustive`, or `harness microbench span-prefix --differential 2500000`).

No timing assertions."""
from __future__ import annotations

import ast
import collections
import copy
import json
import math
import sys

import pytest

from harness.plan.checkout import bench
span_prefix = bench("span-prefix")
from spanfind_support import (  # noqa: F401 (fixtures)
    HELPER, MODULE, VARIANTS, build_revisions, corpus, helper_call_lines, id_render, linear_prefix,
    load_module, loops_to_calls, module_from_ast, restore_loops, revisions, text_render,
    tokenizer, tokenizer_dir,
)

REFERENCE_CHECKS = 37_468  # the reference PR's helper differential executions


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    trees = build_revisions(tmp_path_factory.mktemp("proofs"))
    return {v: (t / MODULE, (t / MODULE).read_text()) for v, t in trees.items()}


class Sites:
    """The three instrumented variants of one question, with per-site call counts:
    the base with each loop turned into a counted oracle call, the candidate with its helper
    counted, and the candidate with a counted linear oracle in place of the helper."""

    def __init__(self, sources) -> None:
        base_path, base_source = sources["base"]
        cand_path, cand_source = sources["candidate"]
        self.counts = {name: collections.Counter() for name in ("base", "candidate", "oracle")}
        tree, restored = loops_to_calls(base_source, "__prefix_site__")
        assert restored == 2

        def base_site(site, left, right):
            self.counts["base"][site] += 1
            return linear_prefix(left, right)

        self.base = module_from_ast(tree, "spanfind_tokenize_base_sites", base_path, __prefix_site__=base_site)
        self.candidate = load_module(cand_path, "spanfind_tokenize_candidate_sites")
        self.oracle = load_module(cand_path, "spanfind_tokenize_oracle_sites")
        lines = helper_call_lines(cand_source)
        assert sorted(lines.values()) == ["shared", "start"]
        helper = self.candidate._common_prefix_length

        def counted(name, function):
            def call(left, right):
                self.counts[name][lines[sys._getframe(1).f_lineno]] += 1
                return function(left, right)
            return call

        self.candidate._common_prefix_length = counted("candidate", helper)
        self.oracle._common_prefix_length = counted("oracle", linear_prefix)

    def modules(self):
        return {"base": self.base, "candidate": self.candidate, "oracle": self.oracle}

    def reset(self) -> None:
        for counter in self.counts.values():
            counter.clear()


@pytest.fixture(scope="module")
def sites(sources):
    return Sites(sources)


# ---- the AST: the candidate is the base plus the helper -----------------------------------

def test_removing_the_helper_restores_the_base_ast(sources):
    restored, sites = restore_loops(sources["candidate"][1])
    assert sites == 2  # both call sites were helper calls
    assert ast.dump(restored) == ast.dump(ast.parse(sources["base"][1]))
    # and the base has the two loops, nothing that looks like the helper
    _, loops = loops_to_calls(sources["base"][1], "hook")
    names = {getattr(n, "name", None) or getattr(n, "id", None) for n in ast.walk(ast.parse(sources["base"][1]))}
    assert loops == 2 and HELPER not in names


# ---- both call sites, counted --------------------------------------------------------------

def m(role, content, reasoning=None, **extra):
    message = {"role": role, "content": content, **extra}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return message


AGENT = [m("system", "sys"), m("user", "do it \U0001F680"), m("assistant", "call a", "plan a"),
         m("tool", "result a " * 40), m("assistant", "call b"), m("tool", "result b"),
         m("assistant", "done e\u0301\0", "wrap up")]


@pytest.mark.parametrize("flavour", [text_render, id_render])
@pytest.mark.parametrize("add_generation_prompt", [False, True])
@pytest.mark.parametrize(("mode", "expected"), [
    ("plain", {"start": 3}),  # every completed turn extends its prompt: one site
    ("think", {"shared": 3, "start": 3}),  # the <think> prompt is never kept: both sites
])
def test_both_call_sites_are_counted_on_targeted_histories(sites, flavour, add_generation_prompt, mode, expected):
    render = flavour(mode)
    rendered = render(AGENT, add_generation_prompt=add_generation_prompt)
    frozen = copy.deepcopy((AGENT, rendered))
    sites.reset()
    spans = {name: module.find_assistant_spans(AGENT, rendered, render, add_generation_prompt=add_generation_prompt)
             for name, module in sites.modules().items()}
    assert spans["base"] == spans["candidate"] == spans["oracle"] and len(spans["base"]) == 3
    assert sites.counts["base"] == sites.counts["candidate"] == sites.counts["oracle"] == expected
    assert (AGENT, rendered) == frozen


def _outcome(module, tokenizer, view):
    try:
        result = module.tokenize_history(tokenizer, view)
    except Exception as exc:  # noqa: BLE001 - recorded like the harness records it
        return ("error", type(exc).__name__, str(exc))
    return ("ok", result.tokens, [float(x).hex() for x in result.logprobs], result.flags)


class IdsOnly:
    """The real tokenizer with text rendering refused: the code under test falls back on its
    id path (spans found in token-id lists, every render encoded by the template)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def apply_chat_template(self, messages, **kwargs):
        if not kwargs.get("tokenize"):
            raise TypeError("text rendering unavailable")
        return self.tokenizer.apply_chat_template(messages, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


@pytest.mark.parametrize("path", ["text", "ids"])
def test_both_call_sites_are_counted_on_the_real_corpus(sites, tokenizer, corpus, path):
    views = [json.loads(line) for line in corpus.read_text().splitlines()]
    if path == "ids":  # every prefix render is encoded whole: two views are plenty
        tokenizer, views = IdsOnly(tokenizer), views[:2]
    sites.reset()
    outcomes = {name: [_outcome(module, tokenizer, v) for v in views] for name, module in sites.modules().items()}
    assert outcomes["base"] == outcomes["candidate"] == outcomes["oracle"]
    counts = sites.counts
    assert counts["base"] == counts["candidate"] == counts["oracle"]
    assert counts["base"]["shared"] > 0 and counts["base"]["start"] > 0, counts


# ---- the fast paths copy nothing -----------------------------------------------------------

SLICES: list = []


class ProbeStr(str):
    def __getitem__(self, key):
        if isinstance(key, slice):
            SLICES.append(key)
        return str.__getitem__(self, key)


class ProbeList(list):
    def __getitem__(self, key):
        if isinstance(key, slice):
            SLICES.append(key)
        return list.__getitem__(self, key)


@pytest.fixture(scope="module")
def helper(sources):
    return span_prefix.load_helper(sources["candidate"][1].encode())


@pytest.mark.parametrize("probe", [ProbeStr, ProbeList])
def test_empty_and_first_mismatch_take_no_slice(helper, probe):
    def seq(text):
        return probe(text) if probe is ProbeStr else probe(ord(c) * 1000 for c in text)

    history = "x" * 100_000
    for left, right, expected in [("", history, 0), (history, "", 0), ("", "", 0),
                                  ("y" + history, history, 0), (history, "y" + history, 0)]:
        SLICES.clear()
        assert helper(seq(left), seq(right)) == expected
        assert SLICES == []
    SLICES.clear()  # the control: a shared prefix is compared through slices
    assert helper(seq(history + "a"), seq(history + "b")) == len(history)
    assert SLICES


# ---- unusual histories ---------------------------------------------------------------------

def _call(name, *arguments):
    return {"type": "function", "id": f"call_{name}", "function": {"name": name, "arguments": dict(arguments)}}


UNUSUAL = {
    "empty": [],
    "only_system": [m("system", "s")],
    "leading_assistant": [m("assistant", "I start.", "why not"), m("user", "ok"), m("assistant", "fine")],
    "content_none": [m("user", "q"), m("assistant", None, "r1", tool_calls=[_call("read", ("path", "a.py"))]),
                     m("tool", "print(1)", tool_call_id="call_read"), m("assistant", None)],
    "tool_call_only": [m("system", "s"), m("user", "q"),
                       m("assistant", "", tool_calls=[_call("ls", ("path", "."))]),
                       m("tool", "a.py", tool_call_id="call_ls"),
                       m("assistant", "", tool_calls=[_call("cat", ("path", "a.py")), _call("rm", ("path", "b"))]),
                       m("tool", "x", tool_call_id="call_cat"), m("tool", "y", tool_call_id="call_rm"),
                       m("assistant", "done")],
    "nul": [m("user", "a\0b"), m("assistant", "\0", "\0\0"), m("user", "\0"), m("assistant", "x\0y")],
    "lone_surrogate": [m("user", "half \ud83d pair"), m("assistant", "ok \udc00")],
    "surrogate_in_reasoning": [m("user", "q"), m("assistant", "fine", "think \ud800")],
    "long_single": [m("system", "s"), m("user", "u" + "long line of text " * 20_000),
                    m("assistant", "reply " * 30_000, "reason " * 10_000)],
    "consecutive_assistants": [m("user", "q"), m("assistant", "one", "r1"), m("assistant", "two", "r2"),
                               m("assistant", "three")],
}


def _sampled(messages, tokenizer):
    out = []
    for message in messages:
        message = dict(message)
        if message["role"] == "assistant":
            ids = tokenizer.encode((message["content"] or "") + "<|im_end|>", add_special_tokens=False)
            message["token_ids"], message["logprobs"] = ids, [-0.5] * len(ids)
        out.append(message)
    return out


@pytest.mark.parametrize("name", sorted(UNUSUAL))
def test_unusual_histories_identical_in_every_revision(revisions, tokenizer, name):
    try:
        sampled = _sampled(UNUSUAL[name], tokenizer)
    except Exception:  # noqa: BLE001 - text the tokenizer refuses: no samples to attach
        sampled = None
    for messages in (UNUSUAL[name], sampled):
        if messages is None:
            continue
        view = {"messages": messages, "tools": None}
        frozen = copy.deepcopy(view)
        base, candidate, shared = (_outcome(revisions[v], tokenizer, view) for v in VARIANTS)
        assert base == candidate == shared
        assert view == frozen
        if base[0] == "ok":
            tokens, logprobs, flags = base[1:]
            assert len(tokens) == len(logprobs) == len(flags)
            assert all(math.isnan(float.fromhex(x)) for x, f in zip(logprobs, flags) if not f & 4)


def test_unusual_histories_cover_tensors_and_errors(revisions, tokenizer):
    kinds = {name: _outcome(revisions["base"], tokenizer, {"messages": messages, "tools": None})[0]
             for name, messages in UNUSUAL.items()}
    assert kinds["long_single"] == kinds["tool_call_only"] == kinds["content_none"] == kinds["nul"] == "ok"
    assert "error" in kinds.values(), kinds  # at least one history is refused, identically


@pytest.mark.parametrize("flavour", [text_render, id_render])
@pytest.mark.parametrize("mode", ["plain", "think", "last", "query"])
def test_unusual_histories_with_toy_renders(revisions, flavour, mode):
    render = flavour(mode)
    for name, messages in UNUSUAL.items():
        outcomes = []
        for variant in VARIANTS:
            try:
                rendered = render(messages, add_generation_prompt=False)
                outcomes.append(revisions[variant].find_assistant_spans(messages, rendered, render))
            except ValueError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1] == outcomes[2], name


# ---- differential checks against the linear oracle ----------------------------------------

def test_reference_count_of_differential_checks(helper):
    assert span_prefix.differential(helper, REFERENCE_CHECKS, seed=20260917) >= REFERENCE_CHECKS


def test_differential_reports_a_disagreement():
    def off_by_one(left, right):
        return max(0, linear_prefix(left, right) - 1)
    with pytest.raises(AssertionError, match="oracle"):
        span_prefix.differential(off_by_one, 1000, seed=1)


@pytest.mark.exhaustive
def test_two_and_a_half_million_differential_checks(helper, request):
    if "exhaustive" not in (request.config.option.markexpr or ""):
        pytest.skip("2.5 million checks: run with -m exhaustive")
    assert span_prefix.differential(helper, 2_500_000, seed=20260918) >= 2_500_000
