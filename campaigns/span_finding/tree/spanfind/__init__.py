"""Code under test for the span-finding campaign: chat histories to training tensors."""

from .tokenize import TokenFlag, TokenizedHistory, find_assistant_spans, tokenize_history

__all__ = ["TokenFlag", "TokenizedHistory", "find_assistant_spans", "tokenize_history"]
