"""Behaviour of the span-finding code under test at both revisions: spans, masks and
recorded errors identical at both call sites, fallbacks, inputs not mutated, and a tiny
corpus through the workload with the real (offline-built) Qwen2.5 tokenizer."""
from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from harness.fsutil import tree_digest
from spanfind_support import CAMPAIGN, ROOT, build_revisions, chatml, id_render, load_module, text_render

MODES = ["plain", "think", "last", "last_think", "query"]


@pytest.fixture(scope="module")
def revisions(tmp_path_factory):
    trees = build_revisions(tmp_path_factory.mktemp("spanfind"))
    return {v: load_module(t / "spanfind" / "tokenize.py", f"spanfind_tokenize_{v}") for v, t in trees.items()}


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
        base = outcome(revisions["base"], messages, render, add_generation_prompt=gen)
        cand = outcome(revisions["candidate"], messages, render, add_generation_prompt=gen)
        assert base == cand
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
            mask = module.assistant_token_mask(messages, id_render(mode)(messages, add_generation_prompt=False),
                                               id_render(mode))
            assert [i for i, x in enumerate(mask) if x] == [i for s, e in spans for i in range(s, e)]


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

@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("tok") / "qwen"
    subprocess.run([sys.executable, str(CAMPAIGN / "build_tokenizer.py"), str(out)], check=True,
                   capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    return AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    subprocess.run([sys.executable, str(CAMPAIGN / "make_corpus.py"), str(out), "--sources", "3"], check=True,
                   capture_output=True, timeout=300)
    return out


def pinned(name):
    spec = yaml.safe_load((ROOT / "campaigns" / "span_finding.yaml").read_text())
    return spec["inputs"][name]["sha256"]


def test_tokenizer_ids_and_pinned_digest(tokenizer, tokenizer_dir):
    assert tokenizer.convert_tokens_to_ids("<|im_start|>") == 151644
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == 151645
    assert tokenizer.encode("Hello", add_special_tokens=False) == [9707]
    assert tree_digest(tokenizer_dir) == pinned("tokenizer")


def test_corpus_is_deterministic_and_a_prefix_of_the_pinned_one(corpus, tmp_path):
    again = tmp_path / "again.jsonl"
    subprocess.run([sys.executable, str(CAMPAIGN / "make_corpus.py"), str(again), "--sources", "3"], check=True,
                   capture_output=True, timeout=300)
    assert again.read_bytes() == corpus.read_bytes()
    views = [json.loads(line) for line in corpus.read_text().splitlines()]
    assert [v["id"] for v in views] == ["s000/real", "s000/canonical", "s001/real", "s001/canonical",
                                        "s002/real", "s002/canonical"]
    for view in views:
        assert 10 <= len(view["messages"]) <= 60
        assert 5 <= sum(x["role"] == "assistant" for x in view["messages"]) <= 30
        assert all(len(x["content"]) <= 8192 for x in view["messages"] if x["role"] == "tool")


def test_full_corpus_matches_pin(tmp_path):
    out = tmp_path / "corpus.jsonl"
    subprocess.run([sys.executable, str(CAMPAIGN / "make_corpus.py"), str(out)], check=True,
                   capture_output=True, timeout=300)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == pinned("corpus")


def test_corpus_through_both_revisions(revisions, tokenizer, corpus):
    views = [json.loads(line) for line in corpus.read_text().splitlines()]
    frozen = copy.deepcopy(views)
    results = {}
    for variant, module in revisions.items():
        for view in views:
            try:
                r = module.tokenize_history(tokenizer, view)
                results[variant, view["id"]] = (r.tokens, [x.hex() for x in r.logprobs], r.flags)
            except ValueError as exc:
                results[variant, view["id"]] = str(exc)
    assert views == frozen
    errors = 0
    for view in views:
        base, cand = results["base", view["id"]], results["candidate", view["id"]]
        assert base == cand
        if isinstance(base, str):
            errors += 1
            assert "assistant message" in base
            continue
        tokens, logprobs, flags = base
        assert any(f & 1 for f in flags)
        stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
        assert all((f & 2) == 0 or tokens[i] == stop for i, f in enumerate(flags))
        sampled = [i for i, f in enumerate(flags) if f & 4]
        if view["view"] == "real":
            assert sampled and all(not math.isnan(float.fromhex(logprobs[i])) for i in sampled)
            # turn-by-turn cached encoding gives the same ids as encoding the whole render
            other = results["base", view["id"].replace("real", "canonical")]
            assert tokens == other[0]
        else:
            assert not sampled and all(math.isnan(float.fromhex(x)) for x in logprobs)
    assert errors == 2  # s000 asks a follow-up after reasoning turns: unmappable in both views


def test_workload_returns_arrays(tokenizer_dir, corpus, monkeypatch):
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
    with pytest.raises(ValueError, match="Cannot map assistant message"):
        workload.run("s000/real")
    out = workload.run("s001/real")
    assert out["tokens"].dtype == np.int64 and out["logprobs"].dtype == np.float32
    assert out["flags"].dtype == np.int32
    assert out["tokens"].shape == out["logprobs"].shape == out["flags"].shape
    assert workload.metrics()["views"] == 4


def test_keep_reasoning_template(revisions, tokenizer, corpus):
    view = json.loads(corpus.read_text().splitlines()[3])  # s001/canonical
    a = revisions["base"].tokenize_history(tokenizer, view, chat_template="keep_reasoning")
    b = revisions["candidate"].tokenize_history(tokenizer, view, chat_template="keep_reasoning")
    assert (a.tokens, a.flags) == (b.tokens, b.flags)
    assert "<think>" in chatml([{"role": "assistant", "content": "x", "reasoning_content": "r"}],
                               add_generation_prompt=False)
