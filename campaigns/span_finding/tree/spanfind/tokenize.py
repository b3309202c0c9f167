"""Turn chat histories into training tensors: tokens, log-probabilities and flags.

A history is a mapping with ``messages`` (system, user, assistant and tool messages;
assistant messages may carry ``tool_calls``, ``reasoning_content`` and, when they were
sampled, ``token_ids`` and ``logprobs``) and an optional ``tools`` list.

Assistant spans are found by rendering prefixes of the history through the tokenizer's
chat template: for every assistant message the history before it is rendered with a
generation prompt (``prompt``) and the history including it without one
(``completed``); what the assistant generated is where those renders stop agreeing, and
that text is then located in the full render.  The same algorithm runs on token-id lists
when the history carries sampled tokens (renders are encoded, and the spans are found in
id space, so the sampled ids can be matched exactly).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TokenFlag",
    "TokenizedHistory",
    "find_assistant_spans",
    "assistant_token_mask",
    "tokenize_history",
]

Render = Callable[..., Any]  # (messages, *, add_generation_prompt) -> str | list[int]

_SAMPLED_KEYS = ("token_ids", "logprobs")
_STOP_TOKEN = "<|im_end|>"
# Every ChatML turn starts with this special token; text between special tokens is
# tokenized independently, so a render can be encoded turn by turn.
_TURN_START = "<|im_start|>"


class TokenFlag(enum.IntFlag):
    ASSISTANT = 1  # inside a rendered assistant span
    STOP = 2  # the assistant's terminator token
    SAMPLED = 4  # the id was sampled by the model (its logprob is known)
    CONTEXT = 8  # sampled, and the roles of the request it answered were proven


@dataclass
class TokenizedHistory:
    tokens: list[int]
    logprobs: list[float]
    flags: list[int]


def _find(haystack: Sequence, needle: Sequence, start: int = 0) -> int:
    """``str.find`` for strings and lists alike."""
    if isinstance(haystack, str):
        return haystack.find(needle, start)
    if not needle:
        return start if start <= len(haystack) else -1
    first, size = needle[0], len(needle)
    position = start
    while True:
        try:
            position = haystack.index(first, position, len(haystack) - size + 1)
        except ValueError:
            return -1
        if haystack[position : position + size] == needle:
            return position
        position += 1


def _unique_prompt_suffix_end(prompt: Sequence, rendered: Sequence, *, after: int) -> int | None:
    """End of the one place after ``after`` where the longest suffix of ``prompt`` occurs.

    Used when a template rewrote earlier turns for the final assistant message: the
    generation prompt's tail (the assistant header) still marks where it starts.
    """
    if not prompt or after >= len(rendered):
        return None
    segment = rendered[after:]
    # Occurring is monotone in the suffix length: search the longest that occurs.
    low, high = 0, len(prompt)
    while low < high:
        middle = (low + high + 1) // 2
        if _find(segment, prompt[len(prompt) - middle :]) >= 0:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        return None
    suffix = prompt[len(prompt) - low :]
    first = _find(segment, suffix)
    if _find(segment, suffix, first + 1) >= 0:
        return None
    return after + first + low


def _removed_message_span(
    messages: list[dict[str, Any]],
    index: int,
    rendered: Sequence,
    render: Render,
    *,
    add_generation_prompt: bool,
) -> tuple[int, int]:
    """Locate message ``index`` as the one contiguous block its removal deletes."""
    without = render(
        messages[:index] + messages[index + 1 :], add_generation_prompt=add_generation_prompt
    )
    start = 0
    while start < len(rendered) and start < len(without) and rendered[start] == without[start]:
        start += 1
    kept = without[start:]
    end = _find(rendered, kept, start) if kept else len(rendered)
    # Prefer the earliest block when the deleted text repeats around the cut.
    while start > 0 and end > start and without[start - 1] == rendered[end - 1]:
        start -= 1
        end -= 1
    if end < 0 or rendered[:start] + rendered[end:] != without:
        raise ValueError(f"Cannot map assistant message {index} into the rendered history")
    return start, end


def find_assistant_spans(
    messages: list[dict[str, Any]],
    rendered: Sequence,
    render: Render,
    *,
    add_generation_prompt: bool = False,
) -> list[tuple[int, int]]:
    """Half-open spans of ``rendered`` that the assistant generated, in message order.

    ``rendered`` is ``render(messages, add_generation_prompt=...)``; it and every render
    are either all strings or all token-id lists (the algorithm is sequence-generic).
    """
    spans: list[tuple[int, int]] = []
    previous_end = 0
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        head = messages[:index]
        prompt = render(head, add_generation_prompt=True)
        completed = render(messages[: index + 1], add_generation_prompt=False)
        if completed[: len(prompt)] == prompt:
            generated = completed[len(prompt) :]
        else:
            # The template rewrote something when the message was added (e.g. its
            # generation prompt opens a block the finished turn does not keep).
            prior = render(head, add_generation_prompt=False)
            shared = 0
            limit = min(len(prompt), len(completed))
            while shared < limit and prompt[shared] == completed[shared]:
                shared += 1
            anchored = (
                shared >= len(prior)
                and prompt[: len(prior)] == prior
                and completed[: len(prior)] == prior
            )
            if not anchored:
                # Earlier turns were rewritten too: fall back on the suffix of the
                # generation prompt (final message) or on deleting the message.
                if index == len(messages) - 1 and not add_generation_prompt:
                    start = _unique_prompt_suffix_end(prompt, rendered, after=previous_end)
                    if start is not None:
                        if start < len(rendered):
                            spans.append((start, len(rendered)))
                            previous_end = len(rendered)
                        continue
                removed_start, end = _removed_message_span(
                    messages, index, rendered, render, add_generation_prompt=add_generation_prompt
                )
                block = rendered[removed_start:end]
                scaffold = min(len(prompt), len(block))
                while scaffold and prompt[len(prompt) - scaffold :] != block[:scaffold]:
                    scaffold -= 1
                if scaffold == 0 and prompt != prior:
                    raise ValueError(
                        f"Assistant message {index} is not anchored to its generation prompt"
                    )
                start = removed_start + scaffold
                if start < previous_end:
                    raise ValueError("Rendered assistant message spans overlap")
                if start < end:
                    spans.append((start, end))
                    previous_end = end
                continue
            generated = completed[shared:]
        if not generated:
            continue
        # Where the full render stops agreeing with the prompt is where the message starts.
        start = 0
        limit = min(len(prompt), len(rendered))
        while start < limit and prompt[start] == rendered[start]:
            start += 1
        # The full render may keep only a tail of what was generated (dropped reasoning).
        size = len(generated)
        retained = next(
            (
                offset
                for offset in range(size)
                if rendered[start : start + size - offset] == generated[offset:]
            ),
            None,
        )
        if retained is None:
            removed_start, end = _removed_message_span(
                messages, index, rendered, render, add_generation_prompt=add_generation_prompt
            )
            if not removed_start <= start < end:
                raise ValueError(f"Cannot map assistant message {index} into the rendered history")
        else:
            end = start + size - retained
        if start < previous_end:
            raise ValueError("Rendered assistant message spans overlap")
        spans.append((start, end))
        previous_end = end
    return spans


def assistant_token_mask(
    messages: list[dict[str, Any]],
    rendered: list[int],
    render: Render,
    *,
    add_generation_prompt: bool = False,
) -> list[bool]:
    """Token-id path: the assistant mask of ``rendered`` found in id space."""
    mask = [False] * len(rendered)
    for start, end in find_assistant_spans(
        messages, rendered, render, add_generation_prompt=add_generation_prompt
    ):
        mask[start:end] = [True] * (end - start)
    return mask


def _template_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What the chat template sees: the messages without sampling records."""
    return [
        {key: value for key, value in message.items() if key not in _SAMPLED_KEYS}
        for message in messages
    ]


class _Renderer:
    """Renders prefixes of one history as text, or as ids encoded turn by turn."""

    def __init__(self, tokenizer: Any, tools: Any, chat_template: str | None) -> None:
        self.tokenizer = tokenizer
        self.tools = tools
        self.extra = {} if chat_template is None else {"chat_template": chat_template}
        self.turns: dict[str, list[int]] = {}  # per history: every distinct turn, encoded once

    def text(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> str:
        value = self.tokenizer.apply_chat_template(
            messages,
            tools=self.tools,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            **self.extra,
        )
        if not isinstance(value, str):
            raise TypeError("chat template did not render text")
        return value

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for number, turn in enumerate(text.split(_TURN_START)):
            if number:
                turn = _TURN_START + turn
            elif not turn:
                continue
            encoded = self.turns.get(turn)
            if encoded is None:
                encoded = self.turns[turn] = self.tokenizer.encode(turn, add_special_tokens=False)
            ids.extend(encoded)
        return ids

    def ids(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> list[int]:
        return self.encode(self.text(messages, add_generation_prompt=add_generation_prompt))


def tokenize_history(
    tokenizer: Any,
    history: Mapping[str, Any],
    *,
    chat_template: str | None = None,
) -> TokenizedHistory:
    """Tokenize one history; raise ``ValueError`` when an assistant span cannot be mapped.

    Histories whose assistant messages carry sampled ``token_ids`` take the token-id path
    (spans in id space; the sampled ids found at the start of their span get their
    ``logprobs`` and the SAMPLED flag), and the request each sample answered (the history
    before it, rendered with a generation prompt) has its assistant roles proven on the
    text path; sampled tokens whose request agrees with the full render get CONTEXT.
    Other histories take the text path (spans in characters, mapped to tokens through
    the encoder's offsets).
    """
    source = history["messages"]
    messages = _template_messages(source)
    renderer = _Renderer(tokenizer, history.get("tools"), chat_template)
    stop_id = tokenizer.convert_tokens_to_ids(_STOP_TOKEN)
    sampled = any(m.get("role") == "assistant" and m.get("token_ids") for m in source)
    if sampled:
        tokens = renderer.ids(messages, add_generation_prompt=False)
        spans = find_assistant_spans(messages, tokens, renderer.ids)
        mask = [False] * len(tokens)
        for start, end in spans:
            mask[start:end] = [True] * (end - start)
    else:
        text = renderer.text(messages, add_generation_prompt=False)
        spans = find_assistant_spans(messages, text, renderer.text)
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        tokens = list(encoded["input_ids"])
        mask = [False] * len(tokens)
        span_index = 0
        for position, (begin, finish) in enumerate(encoded["offset_mapping"]):
            while span_index < len(spans) and spans[span_index][1] <= begin:
                span_index += 1
            if span_index < len(spans) and spans[span_index][0] < max(finish, begin + 1):
                mask[position] = True
    flags = [int(TokenFlag.ASSISTANT) if selected else 0 for selected in mask]
    for position, token in enumerate(tokens):
        if mask[position] and token == stop_id:
            flags[position] |= TokenFlag.STOP
    logprobs = [math.nan] * len(tokens)
    if sampled:
        proven = _prove_requests(messages, source, renderer)
        _attach_samples(source, spans, tokens, flags, logprobs, proven)
    return TokenizedHistory(tokens=tokens, logprobs=logprobs, flags=flags)


def _prove_requests(
    messages: list[dict[str, Any]],
    source: Sequence[Mapping[str, Any]],
    renderer: _Renderer,
) -> set[int]:
    """Indices of sampled messages whose request's assistant spans the full render keeps.

    A sample answered the history before it, rendered with a generation prompt; its
    assistant roles are found in that request's own render (text path) and must read the
    same at the same offsets of the full render.
    """
    text = renderer.text(messages, add_generation_prompt=False)
    proven: set[int] = set()
    for index, message in enumerate(source):
        if message.get("role") != "assistant" or not message.get("token_ids"):
            continue
        request = messages[:index]
        prompt = renderer.text(request, add_generation_prompt=True)
        spans = find_assistant_spans(request, prompt, renderer.text, add_generation_prompt=True)
        if all(text[start:end] == prompt[start:end] for start, end in spans):
            proven.add(index)
    return proven


def _attach_samples(
    source: Sequence[Mapping[str, Any]],
    spans: list[tuple[int, int]],
    tokens: list[int],
    flags: list[int],
    logprobs: list[float],
    proven: set[int],
) -> None:
    """Mark each assistant message's sampled ids where its span starts with them."""
    # Spans are in message order but skip messages that generated nothing; pair a
    # message with the first unused span that starts with its sampled ids.
    cursor = 0
    for index, message in enumerate(source):
        if message.get("role") != "assistant" or not message.get("token_ids"):
            continue
        ids = list(message["token_ids"])
        values = list(message.get("logprobs") or [])
        if len(values) != len(ids):
            raise ValueError("Sampled token ids and logprobs differ in length")
        for number in range(cursor, len(spans)):
            start, end = spans[number]
            if end - start >= len(ids) and tokens[start : start + len(ids)] == ids:
                mark = TokenFlag.SAMPLED | (TokenFlag.CONTEXT if index in proven else 0)
                for offset, value in enumerate(values):
                    flags[start + offset] |= mark
                    logprobs[start + offset] = float(value)
                cursor = number + 1
                break
