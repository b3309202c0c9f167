"""The span-finding workload's inputs, loaded by library code alone (no revision's code): the
tokenizer and the corpus's views. `workload.prepare: spanfind_inputs:prepare` lets a zygote
(`launch: zygote`) load them once, before it forks its runs; without it, or under fresh
processes, each run's setup() calls the same function.

Params: ``sources`` (keep the first N sources' views; default all).
"""
from __future__ import annotations

import json


def prepare(ctx) -> dict:
    # The class AutoTokenizer resolves for this tokenizer, loaded directly: AutoTokenizer imports
    # transformers' model configuration and with it torch (1.3 s a fresh process here), which
    # tokenizing never uses; the outputs are the same bytes (the golden digests hold them).
    from transformers.tokenization_utils_tokenizers import TokenizersBackend
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # long renders exceed model_max_length; irrelevant here
    tokenizer = TokenizersBackend.from_pretrained(str(ctx.inputs["tokenizer"]), local_files_only=True)
    limit = (ctx.params or {}).get("sources")
    views: dict[str, dict] = {}
    with open(ctx.inputs["corpus"], encoding="utf-8") as handle:
        for line in handle:
            view = json.loads(line)
            if limit is not None and view["source"] >= int(limit):
                continue
            views[view["id"]] = view
    return {"tokenizer": tokenizer, "views": views}
