"""Helpers for the span-finding tests: both revisions of the code under test in a temp
directory (the base tree, and a copy with candidate.patch applied by `git apply`), loaded
as standalone modules, and a small ChatML renderer that needs no tokenizer."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "campaigns" / "span_finding"
TREE = CAMPAIGN / "tree"
PATCH = CAMPAIGN / "candidate.patch"
MODULE = "spanfind/tokenize.py"


def build_revisions(dest: Path) -> dict[str, Path]:
    """{'base': tree, 'candidate': tree}: copies of the base tree, the second patched."""
    trees = {}
    for variant in ("base", "candidate"):
        tree = dest / variant
        shutil.copytree(TREE, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if variant == "candidate":
            subprocess.run(["git", "apply", "--whitespace=nowarn", str(PATCH)], cwd=tree, check=True,
                           capture_output=True)
        trees[variant] = tree
    return trees


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


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
        out.append(f"<|im_start|>assistant\n{body}{message['content']}<|im_end|>\n")
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
