"""Helpers for the span-finding tests: both revisions of the code under test exported from
the campaign's pinned commits into a temp directory, loaded as standalone modules, and a small ChatML renderer that needs no tokenizer."""
from __future__ import annotations

from pathlib import Path

from harness.microbench import checkout, load_module  # noqa: F401 (load_module re-exported)

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "campaigns" / "span_finding"
TREE = CAMPAIGN / "tree"
MODULE = "spanfind/tokenize.py"
CAMPAIGN_YAML = ROOT / "campaigns" / "span_finding.yaml"


def build_revisions(dest: Path) -> dict[str, Path]:
    """{'base': tree, 'candidate': tree}, exported from the campaign's pinned commits."""
    return {variant: checkout(CAMPAIGN_YAML, variant, dest) for variant in ("base", "candidate")}


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
