"""Turn chat histories into training tensors: tokens, log-probabilities and flags.

A history is a mapping with ``messages`` (system, user, assistant and tool messages;
assistant messages may carry ``tool_calls``, ``reasoning_content`` and, when they were
sampled, ``token_ids`` and ``logprobs``) and an optional ``tools`` list.

Assistant spans are found by rendering prefixes of the history through the tokenizer's
chat template: for every assistant message the history before it is rendered with a
generation prompt (``prompt``) and the history including it without one
(``completed``); what the assistant generated is where those renders stop agreeing, and
that text is then located in the full render.  The algorithm is sequence-generic: it runs
on text, and on token-id lists when a template cannot render text.

The pipeline follows OpenPipe ART's tokenization before its ``_common_prefix_length``
change (``src/art/trajectories/_tokenize.py``); each step names its ART counterpart.
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
    "tokenize_history",
]

Render = Callable[..., Any]  # (messages, *, add_generation_prompt) -> str | list[int]

_SAMPLED_KEYS = ("token_ids", "logprobs")
_STOP_TOKEN = "<|im_end|>"


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
    """``str.find`` for strings and lists alike (ART calls ``str.find`` itself)."""
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
    (ART: `_unique_prompt_suffix_end`.)
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
    """Locate message ``index`` as the one contiguous block its removal deletes.

    ART: `_removed_message_span`.
    """
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
    ART: `_assistant_char_spans` (text) and `_assistant_token_mask_from_ids` (ids).
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


def _template_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What the chat template sees: the messages without sampling records.

    (ART: `_tokenize_chat_view` renders `history.messages`; the sampled ids and logprobs
    live in the messages' sources, never in what the template is given.)
    """
    return [
        {key: value for key, value in message.items() if key not in _SAMPLED_KEYS}
        for message in messages
    ]


class _Renderer:
    """Renders prefixes of one history: as text, as ids, or segmented into assistant spans."""

    def __init__(self, tokenizer: Any, tools: Any, chat_template: str | None) -> None:
        self.tokenizer = tokenizer
        self.tools = tools
        self.extra = {} if chat_template is None else {"chat_template": chat_template}

    def text(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> str:
        """ART: `_tokenize_chat_view.render_text`."""
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

    def ids(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> list[int]:
        """ART: `_tokenize_chat_view.raw_render`: the template renders and encodes every call."""
        value = self.tokenizer.apply_chat_template(
            messages,
            tools=self.tools,
            tokenize=True,
            add_generation_prompt=add_generation_prompt,
            **self.extra,
        )
        return list(value["input_ids"] if isinstance(value, Mapping) else value)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    def segmented(
        self, messages: list[dict[str, Any]], *, add_generation_prompt: bool
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids of the render and the token spans the assistant generated.

        ART: `_tokenize_chat_view.segmented_render`: spans are found in the text, then the
        text between and inside them is encoded piece by piece (so every span boundary is a
        token boundary), anew for every render; when the template cannot render text, or
        a piece cannot be encoded, spans are found in id space instead
        (`_assistant_token_mask_from_ids`).
        """
        try:
            text = self.text(messages, add_generation_prompt=add_generation_prompt)
            spans = find_assistant_spans(
                messages, text, self.text, add_generation_prompt=add_generation_prompt
            )
        except (TypeError, KeyError):
            return self._id_spans(messages, add_generation_prompt=add_generation_prompt)
        try:
            tokens: list[int] = []
            token_spans: list[tuple[int, int]] = []
            cursor = 0
            for start, end in spans:
                tokens.extend(self.encode(text[cursor:start]))
                first = len(tokens)
                tokens.extend(self.encode(text[start:end]))
                token_spans.append((first, len(tokens)))
                cursor = end
            tokens.extend(self.encode(text[cursor:]))
        except (TypeError, KeyError, ValueError):
            return self._id_spans(messages, add_generation_prompt=add_generation_prompt)
        return tokens, token_spans

    def _id_spans(
        self, messages: list[dict[str, Any]], *, add_generation_prompt: bool
    ) -> tuple[list[int], list[tuple[int, int]]]:
        tokens = self.ids(messages, add_generation_prompt=add_generation_prompt)
        spans = find_assistant_spans(
            messages, tokens, self.ids, add_generation_prompt=add_generation_prompt
        )
        return tokens, spans


def tokenize_history(
    tokenizer: Any,
    history: Mapping[str, Any],
    *,
    chat_template: str | None = None,
) -> TokenizedHistory:
    """Tokenize one history; raise ``ValueError`` when an assistant span cannot be mapped.

    ART: `_tokenize_chat_view`. The full history is rendered segmented (spans found in
    text, pieces encoded); each span is ASSISTANT up to and including its last stop token
    (STOP). Sampled assistant messages (with ``token_ids``) get their ``logprobs`` and the
    SAMPLED flag where their span starts with the sampled ids, and CONTEXT when the
    request they answered (the history before them, rendered segmented with a generation
    prompt) has its assistant spans at the same tokens of the full render.
    """
    source = history["messages"]
    messages = _template_messages(source)
    renderer = _Renderer(tokenizer, history.get("tools"), chat_template)
    stop_id = tokenizer.convert_tokens_to_ids(_STOP_TOKEN)
    tokens, spans = renderer.segmented(messages, add_generation_prompt=False)
    flags = [0] * len(tokens)
    for start, end in spans:
        # ART: `_assistant_stop_masks`: the span ends at its last stop token; template
        # text after it is not the assistant's.
        stop = next((i for i in range(end - 1, start - 1, -1) if tokens[i] == stop_id), None)
        last = end if stop is None else stop + 1
        flags[start:last] = [int(TokenFlag.ASSISTANT)] * (last - start)
        if stop is not None:
            flags[stop] |= TokenFlag.STOP
    logprobs = [math.nan] * len(tokens)
    if any(m.get("role") == "assistant" and m.get("token_ids") for m in source):
        proven = _prove_requests(messages, source, renderer, tokens)
        _attach_samples(source, spans, tokens, flags, logprobs, proven)
    return TokenizedHistory(tokens=tokens, logprobs=logprobs, flags=flags)


def _prove_requests(
    messages: list[dict[str, Any]],
    source: Sequence[Mapping[str, Any]],
    renderer: _Renderer,
    tokens: list[int],
) -> set[int]:
    """Indices of sampled messages whose request's assistant spans the full render keeps.

    ART: `_tokenize_chat_view`'s probe renders: a sampled message's request (the history
    before it, with a generation prompt) is rendered again through `segmented_render`,
    spans and all, and must agree with the full render.
    """
    proven: set[int] = set()
    for index, message in enumerate(source):
        if message.get("role") != "assistant" or not message.get("token_ids"):
            continue
        request, spans = renderer.segmented(messages[:index], add_generation_prompt=True)
        if all(tokens[start:end] == request[start:end] for start, end in spans):
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
    """Mark each assistant message's sampled ids where its span starts with them.

    ART: `_tokenize_chat_view`'s replacements: a sampled output is located at the start of
    its proven assistant bounds.
    """
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
