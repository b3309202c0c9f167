"""Torch tensors hash like their numpy view (harness/bundle/arrays.py canonicalises them): the
unit tier has no torch, so this lives with the campaigns that bring it."""
from __future__ import annotations

import pytest

from harness.bundle import arrays as tensors
from harness.bundle.arrays import ArrayError


def test_torch_tensors_hash_like_their_numpy_view():
    torch = pytest.importorskip("torch")
    cases = [
        torch.tensor([1.0, -0.0, float("nan")], dtype=torch.float32),
        torch.arange(12, dtype=torch.int64).reshape(3, 4).T,  # non-contiguous
        torch.tensor([True, False]),
        torch.tensor([1 + 2j], dtype=torch.complex64),
        torch.ones(2, 2, requires_grad=True) * 2,
    ]
    for t in cases:
        view = t.detach().contiguous().numpy()
        assert tensors.describe(t) == tensors.describe(view)
    nan_bits = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    plain_nan = torch.tensor([float("nan")], dtype=torch.float32)
    assert tensors.digest(nan_bits) != tensors.digest(plain_nan)
    with pytest.raises(ArrayError, match="bfloat16"):
        tensors.digest(torch.ones(2, dtype=torch.bfloat16))
