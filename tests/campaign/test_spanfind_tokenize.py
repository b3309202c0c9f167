"""Behaviour of the span-finding code under test at its three revisions (base, the
reference's candidate, the shared-render revision): spans, tensors and recorded errors
identical, fallbacks, inputs not mutated, the corpus profiles and their pins, recorded
model-error returns kept inside the tensors, unmappable histories as identical recorded
errors, and the workload through the real (offline-built) Qwen2.5 tokenizer."""
from __future__ import annotations

import collections
import copy
import hashlib
import json
import math
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from harness.files import tree_digest
from spanfind_support import (  # noqa: F401 (fixtures)
    CAMPAIGN, ROOT, VARIANTS, chatml, corpus, corpus_module, id_render, make_corpus, revisions, sampler_views,
    text_render, tokenizer, tokenizer_dir,
)

MODES = ["plain", "think", "last", "last_think", "query"]


def m(role, content, reasoning=None):
    message = {"role": role, "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return message


SCENARIOS = {
    "agent": [m("system", "sys"), m("user", "do it"), m("assistant", "call a", "plan a"),
              m("tool", "result a " * 40), m("assistant", "call b"), m("tool", "result b"),
              m("assistant", "done", "wrap up")],
    "consecutive": [m("system", "sys"), m("user", "q"), m("assistant", "one", "r1"),
                    m("assistant", "two", "r2"), m("user", "more"), m("assistant", "three", "r3")],
    "followup": [m("system", "sys"), m("user", "q1"), m("assistant", "a", "r1"), m("tool", "t"),
                 m("assistant", "b", "r2"), m("user", "q2"), m("assistant", "c", "r3")],
    "empty_after_reasoning": [m("user", "q1"), m("assistant", "", "r1"), m("assistant", "x", "r2"),
                              m("user", "q2"), m("assistant", "y")],
    "two_final": [m("system", "s"), m("user", "q"), m("assistant", "one", "r1"), m("assistant", "two", "r2")],
    "no_assistant": [m("system", "s"), m("user", "u")],
    "empty_content": [m("user", "q"), m("assistant", ""), m("tool", "t"), m("assistant", "", "r")],
    "unicode": [m("user", "caf\u00e9 \U0001F680"), m("assistant", "e\u0301 \u6f22\u5b57 \U0001F468\u200d\U0001F469"),
                m("user", "\u0915\u094d\u0937"), m("assistant", "\U0001F680" * 20, "\u263a")],
}


def outcome(module, messages, render, *, add_generation_prompt=False):
    rendered = render(messages, add_generation_prompt=add_generation_prompt)
    try:
        return ("ok", module.find_assistant_spans(messages, rendered, render,
                                                  add_generation_prompt=add_generation_prompt))
    except ValueError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("flavour", ["text", "ids"])
def test_spans_identical_between_revisions(revisions, mode, scenario, flavour):
    messages = SCENARIOS[scenario]
    frozen = copy.deepcopy(messages)
    render = (text_render if flavour == "text" else id_render)(mode)
    for gen in (False, True):
        outcomes = [outcome(revisions[v], messages, render, add_generation_prompt=gen) for v in VARIANTS]
        assert outcomes[0] == outcomes[1] == outcomes[2]
    assert messages == frozen  # never mutated


def test_every_path_and_error_is_exercised(revisions, monkeypatch):
    seen = {"suffix": 0, "removed": 0}
    errors = set()
    for module in revisions.values():
        for name, key in (("_unique_prompt_suffix_end", "suffix"), ("_removed_message_span", "removed")):
            original = getattr(module, name)

            def counted(*a, _original=original, _key=key, **k):
                seen[_key] += 1
                return _original(*a, **k)
            monkeypatch.setattr(module, name, counted)
    for mode in MODES:
        for messages in SCENARIOS.values():
            for flavour in (text_render, id_render):
                kind, value = outcome(revisions["base"], messages, flavour(mode))
                if kind == "error":
                    errors.add(value.split(" ")[0] + " " + ("overlap" if "overlap" in value else
                                                            "anchored" if "anchored" in value else "map"))
    assert seen["suffix"] and seen["removed"]
    assert errors == {"Rendered overlap", "Assistant anchored", "Cannot map"}, errors
    # The shared loop runs when the <think> prompt and the finished turn disagree.
    render = text_render("think")
    messages = SCENARIOS["agent"]
    assert not render(messages[:5], add_generation_prompt=False).startswith(
        render(messages[:4], add_generation_prompt=True))


def test_expected_spans_plain_and_think(revisions):
    messages = SCENARIOS["agent"]
    for mode in ("plain", "think"):
        render = text_render(mode)
        rendered = render(messages, add_generation_prompt=False)
        for module in revisions.values():
            spans = module.find_assistant_spans(messages, rendered, render)
            texts = [rendered[s:e] for s, e in spans]
            if mode == "plain":
                assert texts == ["<think>\nplan a\n</think>\n\ncall a<|im_end|>\n", "call b<|im_end|>\n",
                                 "<think>\nwrap up\n</think>\n\ndone<|im_end|>\n"]
            else:
                assert texts == ["call a<|im_end|>\n", "call b<|im_end|>\n", "done<|im_end|>\n"]
            ids = id_render(mode)
            # one id per character: the same spans in id space
            assert module.find_assistant_spans(messages, ids(messages, add_generation_prompt=False), ids) == spans


def test_fallbacks_locate_rewritten_turns(revisions):
    messages = SCENARIOS["consecutive"]
    render = text_render("last")
    rendered = render(messages, add_generation_prompt=False)
    for module in revisions.values():
        texts = [rendered[s:e] for s, e in module.find_assistant_spans(messages, rendered, render)]
        # Deleting "two" is matched at its earliest place, so the terminator goes to "one".
        assert texts == ["one<|im_end|>\n", "two", "<think>\nr3\n</think>\n\nthree<|im_end|>\n"]
    messages = SCENARIOS["two_final"]  # the final turn: found by the generation prompt's suffix
    rendered = render(messages, add_generation_prompt=False)
    for module in revisions.values():
        texts = [rendered[s:e] for s, e in module.find_assistant_spans(messages, rendered, render)]
        assert texts == ["one<|im_end|>\n", "<think>\nr2\n</think>\n\ntwo<|im_end|>\n"]


# ---- the real tokenizer and corpus ------------------------------------------------------

CAMPAIGN_FOR = {"agent": "span_finding.yaml", "retail": "span_finding_retail.yaml",
                "followups": "span_finding_unmappable.yaml"}


def pinned(name, profile="agent"):
    spec = yaml.safe_load((ROOT / "campaigns" / CAMPAIGN_FOR[profile]).read_text())
    return spec["inputs"][name]["sha256"]


def result(module, tokenizer, view):
    try:
        r = module.tokenize_history(tokenizer, view)
    except ValueError as exc:
        return str(exc)
    return r.tokens, [x.hex() for x in r.logprobs], r.flags


def test_tokenizer_ids_and_pinned_digest(tokenizer, tokenizer_dir):
    assert tokenizer.convert_tokens_to_ids("<|im_start|>") == 151644
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == 151645
    assert tokenizer.encode("Hello", add_special_tokens=False) == [9707]
    assert tree_digest(tokenizer_dir) == pinned("tokenizer")


def test_corpus_is_deterministic_and_a_prefix_of_the_pinned_one(corpus, tmp_path):
    again = make_corpus(tmp_path / "again.jsonl", "--sources", "3")
    assert again.read_bytes() == corpus.read_bytes()
    views = [json.loads(line) for line in corpus.read_text().splitlines()]
    assert [v["id"] for v in views] == ["s000/real", "s000/canonical", "s001/real", "s001/canonical",
                                        "s002/real", "s002/canonical"]
    for view in views:
        assert 10 <= len(view["messages"]) <= 46 and view["profile"] == "agent"
        assert 4 <= sum(x["role"] == "assistant" for x in view["messages"]) <= 17
        assert all(len(x["content"]) <= 8192 for x in view["messages"] if x["role"] == "tool")


@pytest.mark.parametrize("profile", sorted(CAMPAIGN_FOR))
def test_full_corpus_matches_pin(tmp_path, profile):
    out = make_corpus(tmp_path / "corpus.jsonl", "--profile", profile)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == pinned("corpus", profile)
    views = [json.loads(line) for line in out.read_text().splitlines()]
    sources = {v["source"] for v in views}
    assert len(views) == 2 * len(sources) == 2 * {"agent": 128, "retail": 32, "followups": 8}[profile]
    errors = {v["source"] for v in views if any("error" in m for m in v["messages"])}
    # about a quarter of the sources hold a recorded model-error return (34 of 128 as in the reference)
    assert len(errors) == {"agent": 34, "retail": 8, "followups": 0}[profile]
    if profile == "retail":  # many short user and assistant turns with tool calls
        assert min(sum(m["role"] == "user" for m in v["messages"]) for v in views) >= 3
        assert all(m.get("tool_calls") for v in views for m in v["messages"]
                   if m["role"] == "assistant" and "reasoning_content" not in m and len(m["content"]) < 40)


def test_corpus_through_all_revisions(revisions, tokenizer, corpus):
    views = [json.loads(line) for line in corpus.read_text().splitlines()]
    frozen = copy.deepcopy(views)
    results = {(v, view["id"]): result(revisions[v], tokenizer, view) for v in VARIANTS for view in views}
    assert views == frozen
    stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for view in views:
        base = results["base", view["id"]]
        assert base == results["candidate", view["id"]] == results["shared", view["id"]]
        assert not isinstance(base, str), base  # the main corpus maps every history
        tokens, logprobs, flags = base
        assert any(f & 1 for f in flags)
        assert all((f & 2) == 0 or (tokens[i] == stop and f & 1) for i, f in enumerate(flags))
        sampled = [i for i, f in enumerate(flags) if f & 4]
        if view["view"] == "real":
            assert sampled and all(not math.isnan(float.fromhex(logprobs[i])) for i in sampled)
            assert tokens == results["base", view["id"].replace("real", "canonical")][0]
        else:
            assert not sampled and all(math.isnan(float.fromhex(x)) for x in logprobs)


def test_model_error_return_stays_inside_the_tensors(revisions, tokenizer):
    module = corpus_module()
    for profile in ("agent", "retail"):
        real, canonical = sampler_views(min(module.error_sources(profile, module.SEED)), profile)
        for view in (real, canonical):
            assert result(revisions["base"], tokenizer, view) == result(revisions["candidate"], tokenizer, view) \
                == result(revisions["shared"], tokenizer, view)
            tokens, logprobs, flags = result(revisions["base"], tokenizer, view)
            # the invalid tool call the model returned (cut short, then its stop) lies inside
            # one assistant span, apart from the retry that follows it
            broken = next(m for m in view["messages"] if "error" in m)["content"].split("<tool_call>")[-1]
            broken += "<|im_end|>"
            runs, start = [], None
            for i, f in enumerate([*flags, 0]):
                if f & 1 and start is None:
                    start = i
                elif not f & 1 and start is not None:
                    runs.append(tokenizer.decode(tokens[start:i]))
                    start = None
            assert sum(broken in run for run in runs) == 1
            assert len(runs) == sum(m["role"] == "assistant" for m in view["messages"])


def test_unmappable_histories_are_identical_recorded_errors(revisions, tokenizer, tmp_path):
    out = make_corpus(tmp_path / "followups.jsonl", "--profile", "followups", "--sources", "3")
    errors = 0
    for view in (json.loads(line) for line in out.read_text().splitlines()):
        outcomes = [result(revisions[v], tokenizer, view) for v in VARIANTS]
        assert outcomes[0] == outcomes[1] == outcomes[2]
        if isinstance(outcomes[0], str):
            errors += 1
            assert "Cannot map assistant message" in outcomes[0]
    assert errors >= 2


class CountingTokenizer:
    """The real tokenizer, counting its renders and encodings."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer, self.calls = tokenizer, collections.Counter()

    def apply_chat_template(self, messages, **kwargs):
        self.calls["render", len(messages), kwargs["add_generation_prompt"]] += 1
        return self.tokenizer.apply_chat_template(messages, **kwargs)

    def encode(self, text, **kwargs):
        self.calls["encode", text] += 1
        return self.tokenizer.encode(text, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


def test_shared_revision_renders_each_prefix_once(revisions, tokenizer, corpus):
    view = json.loads(corpus.read_text().splitlines()[0])  # s000/real: request proofs re-render
    counts = {}
    for variant in VARIANTS:
        counting = CountingTokenizer(tokenizer)
        assert result(revisions[variant], counting, view) == result(revisions["base"], tokenizer, view)
        counts[variant] = counting.calls
    assert counts["base"] == counts["candidate"]  # the helper changes no render or encoding
    assert max(counts["shared"].values()) == 1  # every prefix rendered, every piece encoded once
    assert set(counts["shared"]) == set(counts["base"])  # ... and each one the base needed
    assert sum(counts["shared"].values()) < sum(counts["base"].values()) / 2


def test_workload_returns_arrays(tokenizer_dir, corpus, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "campaigns" / "workloads"))
    monkeypatch.syspath_prepend(str(CAMPAIGN / "tree"))
    for name in [n for n in sys.modules if n == "spanfind" or n.startswith("spanfind.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "spanfind_workload", raising=False)
    import spanfind_workload

    ctx = SimpleNamespace(params={"sources": 2}, inputs={"tokenizer": tokenizer_dir, "corpus": corpus},
                          slots=1, label="A1", variant="base", tree=CAMPAIGN / "tree")
    workload = spanfind_workload.setup(ctx)
    assert workload.items == ["s000/real", "s000/canonical", "s001/real", "s001/canonical"]
    out = workload.run("s001/real")
    assert out["tokens"].dtype == np.int64 and out["logprobs"].dtype == np.float32
    assert out["flags"].dtype == np.int32
    assert out["tokens"].shape == out["logprobs"].shape == out["flags"].shape
    metrics = workload.metrics()
    assert metrics["views"] == 4 and metrics["profile"] == "agent"
    followups = make_corpus(tmp_path / "followups.jsonl", "--profile", "followups", "--sources", "1")
    ctx.inputs["corpus"] = followups
    with pytest.raises(ValueError, match="Cannot map assistant message"):
        spanfind_workload.setup(ctx).run("s000/real")


def test_keep_reasoning_template(revisions, tokenizer, corpus):
    view = json.loads(corpus.read_text().splitlines()[3])  # s001/canonical
    outcomes = [revisions[v].tokenize_history(tokenizer, view, chat_template="keep_reasoning") for v in VARIANTS]
    assert all((o.tokens, o.flags) == (outcomes[0].tokens, outcomes[0].flags) for o in outcomes)
    assert "<think>" in chatml([{"role": "assistant", "content": "x", "reasoning_content": "r"}],
                               add_generation_prompt=False)
