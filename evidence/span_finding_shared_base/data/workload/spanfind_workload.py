"""Span-finding workload: tensorize every view of the frozen agent-history corpus.

Inputs: ``tokenizer`` (a Hugging Face tokenizer folder, loaded offline) and ``corpus``
(JSON lines, one view per line, from span_finding/make_corpus.py, any profile).
Params: ``sources`` (use the first N sources; default all), ``chat_template`` (a named
template of the tokenizer folder, e.g. ``keep_reasoning``; default its default one).

Each item is a view id (``s012/real``); ``run`` returns ``tokens`` (int64), ``logprobs``
(float32, NaN where nothing was sampled) and ``flags`` (int32 bit flags), or raises the
code under test's error for a history it cannot map.
"""
from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import spanfind_inputs  # noqa: E402  (this folder: the inputs, loaded by library code alone)
from spanfind.tokenize import tokenize_history  # noqa: E402  (the revision's tree)


class SpanFindWorkload:
    def __init__(self, ctx) -> None:
        # What no revision's code makes (the tokenizer, the corpus) comes from `workload.prepare`
        # when the campaign names it (a zygote then loads it once, before it forks), else from here.
        prepared = getattr(ctx, "prepared", None) or spanfind_inputs.prepare(ctx)
        self.tokenizer, self.views = prepared["tokenizer"], prepared["views"]
        self.chat_template = (ctx.params or {}).get("chat_template")
        self.items = list(self.views)

    def run(self, item: str) -> dict:
        result = tokenize_history(self.tokenizer, self.views[item], chat_template=self.chat_template)
        return {
            "tokens": np.asarray(result.tokens, dtype=np.int64),
            "logprobs": np.asarray(result.logprobs, dtype=np.float32),
            "flags": np.asarray(result.flags, dtype=np.int32),
        }

    def metrics(self) -> dict:
        views = list(self.views.values())
        messages = [len(v["messages"]) for v in views]
        assistant = [sum(m.get("role") == "assistant" for m in v["messages"]) for v in views]
        return {
            "profile": ",".join(sorted({v.get("profile", "agent") for v in views})),
            "views": len(views),
            "sources": len({v["source"] for v in views}),
            "messages_mean": float(np.mean(messages)) if messages else 0.0,
            "assistant_mean": float(np.mean(assistant)) if assistant else 0.0,
            # Views holding a recorded model-error return (an invalid tool call, kept).
            "model_error_views": sum(any("error" in m for m in v["messages"]) for v in views),
            "chat_template": self.chat_template or "default",
        }


def setup(ctx) -> SpanFindWorkload:
    return SpanFindWorkload(ctx)
