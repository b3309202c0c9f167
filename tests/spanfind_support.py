"""Helpers for the span-finding tests: the revisions of the code under test exported from the
campaigns' pinned commits, a small ChatML renderer that needs no tokenizer, the AST surgery
that turns the candidate's helper calls back into the base's loops (and the base's loops into
counted calls), and the real tokenizer and corpus built once per test session."""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.plan.checkout import checkout, load_module  # noqa: F401 (load_module re-exported)
# The oracle: the length of the common prefix, one element at a time (the microbenchmark
# checks the helper against the same one).
from harness.plan.checkout import bench  # noqa: E402

linear_prefix = bench("span-prefix").oracle

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "campaigns" / "span_finding"
TREE = CAMPAIGN / "tree"
MODULE = "spanfind/tokenize.py"
CAMPAIGN_YAML = ROOT / "campaigns" / "span_finding.yaml"
SHARED_YAML = ROOT / "campaigns" / "span_finding_shared.yaml"
HELPER = "_common_prefix_length"
VARIANTS = ("base", "candidate", "shared")


def build_revisions(dest: Path, variants=("base", "candidate")) -> dict[str, Path]:
    """{variant: tree} exported from the campaigns' pinned commits: 'base' and 'candidate'
    of span_finding.yaml, 'shared' (the third revision) of span_finding_shared.yaml."""
    return {variant: checkout(SHARED_YAML, "candidate", dest / "shared") if variant == "shared"
            else checkout(CAMPAIGN_YAML, variant, dest) for variant in variants}


def chatml(messages, *, add_generation_prompt: bool, mode: str = "plain") -> str:
    """A toy ChatML template.

    plain        every turn shows its reasoning; plain generation prompt (fast path)
    think        no turn shows reasoning; the generation prompt opens <think> (shared loop)
    last         only the final message shows reasoning (earlier turns rewritten: fallbacks)
    last_think   as `last`, with a <think> generation prompt
    query        reasoning only after the latest user message (Qwen3's rule), <think> prompt
    """
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    out = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            out.append(f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n")
            continue
        reasoning = message.get("reasoning_content") or ""
        show = {
            "plain": True,
            "think": False,
            "last": index == len(messages) - 1,
            "last_think": index == len(messages) - 1,
            "query": index > last_user,
        }[mode] and reasoning
        body = f"<think>\n{reasoning}\n</think>\n\n" if show else ""
        out.append(f"<|im_start|>assistant\n{body}{message['content'] or ''}<|im_end|>\n")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n" + ("<think>\n" if mode in ("think", "last_think", "query") else ""))
    return "".join(out)


def text_render(mode: str):
    def render(messages, *, add_generation_prompt):
        return chatml(messages, add_generation_prompt=add_generation_prompt, mode=mode)
    return render


def id_render(mode: str):
    """Token-id flavour: one id per character, ints > 256 so every call makes new objects."""
    def render(messages, *, add_generation_prompt):
        return [100_000 + ord(c) for c in chatml(messages, add_generation_prompt=add_generation_prompt, mode=mode)]
    return render


# ---- the two call sites, as loops (base) and as helper calls (candidate) -----------------

# The base's element loop at each call site: (assigned name, left, right).
SITES = {"shared": ("prompt", "completed"), "start": ("prompt", "rendered")}
_LOOP = """
{var} = 0
limit = min(len({left}), len({right}))
while {var} < limit and {left}[{var}] == {right}[{var}]:
    {var} += 1
"""


def _loop(site: str) -> list[ast.stmt]:
    left, right = SITES[site]
    return ast.parse(textwrap.dedent(_LOOP.format(var=site, left=left, right=right))).body


def _helper_site(node: ast.stmt) -> str | None:
    """The site name when node is `<site> = _common_prefix_length(<left>, <right>)`."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return None
    call, site = node.value, node.targets[0].id
    if (site in SITES and isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == HELPER and not call.keywords
            and [getattr(a, "id", None) for a in call.args] == list(SITES[site])):
        return site
    return None


class _Rewrite(ast.NodeTransformer):
    """Rewrite every statement list: helper calls -> loops (restore), or loops -> calls."""

    def __init__(self, to_loops: bool, hook: str = "") -> None:
        self.to_loops, self.hook, self.count = to_loops, hook, 0
        self.dumps = {site: [ast.dump(s) for s in _loop(site)] for site in SITES}

    def _rewrite(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out, index = [], 0
        while index < len(body):
            node = body[index]
            if self.to_loops and (site := _helper_site(node)):
                out += _loop(site)
                self.count += 1
                index += 1
                continue
            if not self.to_loops:
                window = [ast.dump(s) for s in body[index:index + 3]]
                site = next((s for s, dumps in self.dumps.items() if window == dumps), None)
                if site:
                    left, right = SITES[site]
                    out += ast.parse(f"{site} = {self.hook}({site!r}, {left}, {right})").body
                    self.count += 1
                    index += 3
                    continue
            out.append(self.visit(node))
            index += 1
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self._rewrite(value))
        for handler in getattr(node, "handlers", []):
            self.generic_visit(handler)
        return node


def restore_loops(candidate_source: str) -> tuple[ast.Module, int]:
    """The candidate with its helper removed and each helper call replaced by the base loop;
    returns the module and the number of call sites restored."""
    tree = ast.parse(candidate_source)
    tree.body = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == HELPER)]
    rewrite = _Rewrite(to_loops=True)
    rewrite.generic_visit(tree)
    return tree, rewrite.count


def loops_to_calls(base_source: str, hook: str) -> tuple[ast.Module, int]:
    """The base with each element loop replaced by `site = hook('<site>', left, right)`."""
    tree = ast.parse(base_source)
    rewrite = _Rewrite(to_loops=False, hook=hook)
    rewrite.generic_visit(tree)
    return ast.fix_missing_locations(tree), rewrite.count


def helper_call_lines(candidate_source: str) -> dict[int, str]:
    """Line number of every helper call site -> its site name."""
    return {node.lineno: site for node in ast.walk(ast.parse(candidate_source))
            if isinstance(node, ast.stmt) and (site := _helper_site(node))}


def module_from_ast(tree: ast.Module, name: str, path: Path, **extra):
    """Execute an AST as module `name` (registered in sys.modules, as dataclasses need)."""
    import types

    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(extra)
    sys.modules[name] = module
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


# ---- the real tokenizer and a few corpus sources, built once per session ----------------

_BUILT: dict = {}


def _once(key, make):
    if key not in _BUILT:
        _BUILT[key] = make()
    return _BUILT[key]


def make_corpus(out: Path, *args: str) -> Path:
    subprocess.run([sys.executable, str(CAMPAIGN / "make_corpus.py"), str(out), *args], check=True,
                   capture_output=True, timeout=600)
    return out


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    def build():
        out = tmp_path_factory.mktemp("tok") / "qwen"
        subprocess.run([sys.executable, str(CAMPAIGN / "build_tokenizer.py"), str(out)], check=True,
                       capture_output=True, timeout=300)
        return out
    return _once("tokenizer_dir", build)


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    def load():
        import os

        os.environ["HF_HUB_OFFLINE"] = "1"
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        return AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
    return _once("tokenizer", load)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """The first 3 sources of the main corpus (6 views)."""
    return _once("corpus", lambda: make_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl",
                                               "--sources", "3"))


@pytest.fixture(scope="session")
def revisions(tmp_path_factory):
    """{'base', 'candidate', 'shared'}: spanfind/tokenize.py modules at the pinned commits."""
    def load():
        trees = build_revisions(tmp_path_factory.mktemp("spanfind"), VARIANTS)
        return {v: load_module(t / "spanfind" / "tokenize.py", f"spanfind_tokenize_{v}") for v, t in trees.items()}
    return _once("revisions", load)


def corpus_module():
    """make_corpus.py, imported (its profiles, error sources and sampler)."""
    return _once("make_corpus", lambda: load_module(CAMPAIGN / "make_corpus.py", "spanfind_make_corpus"))


def sampler_views(index: int, profile: str = "agent") -> list[dict]:
    """The two views of one source, made in-process by make_corpus.py's own functions."""
    module = corpus_module()
    sampler = _once("sampler", module.Sampler)
    return module.views(index, module.SEED, sampler, profile)
