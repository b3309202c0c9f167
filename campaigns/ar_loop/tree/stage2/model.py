"""Stage-2 autoregressive model: samples up to ``k_max`` secondaries per step.

For a batch of B rows (each a step with a context vector from stage 1) the model
samples up to ``k_max`` secondaries of dimension ``sec_dim``, one slot at a time:

* a history encoder turns the row's context and the secondaries sampled so far into a
  hidden state (``AttentionHistory``: transformer blocks over a KV cache of slots;
  ``MarkovHistory``: an MLP over the context and the previous secondary only);
* a sampling head turns that hidden state and fixed noise into a secondary
  (``FlowHead``: conditional affine coupling transform of the noise; ``WGANHead``: a
  generator MLP);
* the count is either predicted up front (``n_sec_mode="head"``) or decided by a stop
  logit per slot (``n_sec_mode="stop_token"``).

Noise is drawn up front for every (row, slot) by :func:`make_noise`, so a row's sample
depends only on its own context, its own history and its own noise.

A row's bits depend only on its own data and on its place in the batch's tile layout,
and the AR loop gives a row the same place at every slot, whichever rows run with it.
Every dense layer runs on tiles of ``TILE`` rows: row i of a call sits at position
``i % TILE`` of tile ``i // TILE`` (zero rows fill the last tile and are dropped), and each
tile is its own gemm call, of the same shape, strides and alignment for every tile of
every call. A BLAS picks its kernels, and how it splits a call between threads, from the
call: MKL's sgemm behind ``F.linear`` gives a row other bits in calls of up to 11 rows,
and a 16-row tile other bits when one batched call holds another number of tiles (Intel
Xeon in MKL's default mode with 2 threads, and this project's stand-in for it,
``MKL_CBWR=COMPATIBLE`` with 4 threads, at hidden 512). One call per tile leaves the BLAS
nothing to decide from the batch. The AR loop runs rows in layout order
(:func:`layout_order`): with counts from the count head, rows with more secondaries to
sample come first, so the rows still sampling at any slot lead the layout and fill whole
tiles; in stop-token mode, batch order. Everything else is row-wise: LayerNorm, softmax,
ReLU, a softsign scale (exact IEEE arithmetic only), plain matmul-softmax attention (a
batched matmul per row and head; ``scaled_dot_product_attention`` is batch-dependent) and
a row-wise dot product for the single stop logit (a matrix-vector product is not).

What is promised, and what it rests on: a row's outputs do not depend on which rows of its
batch run with it at a slot, so a loop that runs only the rows still sampling gets the
bits of one that runs them all, on any machine whose BLAS gives a gemm call the same bits
for the same shape, strides, alignment and thread count (and an element no bits from other
rows' values), and whose row-wise kernels do not depend on the row count. No setting is
needed for it: not ``MKL_CBWR`` (its strict mode does not give it: under
``MKL_CBWR=COMPATIBLE,STRICT`` a batched call still gave tiles other bits at 4 threads).
The tests check it bit for bit at the campaigns' full size in a subprocess under the
campaigns' environment with 1, 2 and 4 threads, and a hidden-128 sweep over batch sizes 1
to 40 and beyond under other kernels (``MKL_CBWR`` modes, ``MKL_ENABLE_INSTRUCTIONS=AVX2``,
``ATEN_CPU_CAPABILITY=default``); a campaign compares both revisions byte for byte on every
run. Not promised: the same bits for a row in another batch. In head mode its place
depends on how many rows of its batch have larger counts, and a BLAS may give other tile
positions other bits (``harness microbench gemm-rows`` reports whether this one does). Nor
are the bits portable across CPUs or BLAS builds: other kernels round differently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

HISTORIES = ("attention", "markov")
HEADS = ("flow", "wgan")
N_SEC_MODES = ("head", "stop_token")
# Dense layers run on tiles of this many rows (see the module docstring).
TILE = 16


@dataclass(frozen=True)
class Stage2Config:
    ctx_dim: int = 64
    sec_dim: int = 8
    hidden: int = 512
    n_blocks: int = 6
    n_heads: int = 8
    k_max: int = 15
    history: str = "attention"
    head: str = "flow"
    n_sec_mode: str = "head"
    flow_layers: int = 4
    # Count calibration: the logits of n = 0..k_max are a Poisson(count_rate) log-pmf
    # plus the learned part scaled by ``count_scale``.
    count_rate: float = 0.38
    count_scale: float = 0.25
    # Stop-token calibration: bias added to the stop logit.
    stop_bias: float = 0.0

    def __post_init__(self) -> None:
        if self.history not in HISTORIES:
            raise ValueError(f"history must be one of {HISTORIES}, not {self.history!r}")
        if self.head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, not {self.head!r}")
        if self.n_sec_mode not in N_SEC_MODES:
            raise ValueError(f"n_sec_mode must be one of {N_SEC_MODES}, not {self.n_sec_mode!r}")
        if self.hidden % self.n_heads:
            raise ValueError("hidden must be a multiple of n_heads")


@dataclass
class Stage2Noise:
    """Noise fixed up front for every (row, slot)."""

    sec: torch.Tensor  # (B, k_max, sec_dim) float32, the head's input noise
    count_u: torch.Tensor  # (B,) float32 in [0, 1), the count head's uniform

    def to(self, device: torch.device | str) -> "Stage2Noise":
        return Stage2Noise(self.sec.to(device), self.count_u.to(device))


def make_noise(batch: int, k_max: int, sec_dim: int, seed: int) -> Stage2Noise:
    """Noise for ``batch`` rows, drawn on the CPU from ``seed`` (device independent)."""
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    sec = torch.randn(batch, k_max, sec_dim, generator=gen, dtype=torch.float32)
    count_u = torch.rand(batch, generator=gen, dtype=torch.float32)
    return Stage2Noise(sec, count_u)


def softsign_scale(x: torch.Tensor) -> torch.Tensor:
    """A positive scale in (0.5, 1.5), built from exact IEEE operations only."""
    return 1.0 + 0.5 * x / (1.0 + x.abs())


def linear(x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
    """``layer(x)`` for (n, in) rows: one gemm call per tile of TILE rows, every call of
    the same shape, strides and alignment, whatever n is."""
    n, k = x.shape
    tiles = -(-n // TILE)
    # A fresh zero-padded copy: every tile then has the same strides and 64-byte alignment
    # (a tile is TILE * k floats), whether x was padded, contiguous or a view.
    padded = x.new_zeros(tiles * TILE, k)
    padded[:n] = x
    columns = padded.t()
    bias = layer.bias[:, None]
    out = x.new_empty(tiles, layer.out_features, TILE)
    # One call per tile, never one call for all tiles: a BLAS may split a larger call
    # between threads differently by its size (MKL does, in its default mode on Intel and
    # under MKL_CBWR=COMPATIBLE here), and the split can change a tile's bits. Transposed
    # (weight @ tile^T) so the weight is the left operand: ~25% faster than tile @ weight^T.
    for t in range(tiles):
        torch.addmm(bias, layer.weight, columns[:, t * TILE:(t + 1) * TILE], out=out[t])
    return out.transpose(1, 2).reshape(tiles * TILE, layer.out_features)[:n]


def layout_order(n_sec: torch.Tensor) -> torch.Tensor:
    """The order the AR loop runs rows in, given their counts: more secondaries to sample
    first, ties in batch order. The rows still sampling at any slot then lead the layout."""
    return torch.argsort(n_sec, descending=True, stable=True)


class MLP(nn.Module):
    def __init__(self, d_in: int, hidden: int, d_out: int, n_layers: int = 2) -> None:
        super().__init__()
        dims = [d_in] + [hidden] * (n_layers - 1) + [d_out]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = linear(x, layer)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


# --------------------------------------------------------------------------------------
# History encoders


class HistoryEncoder(nn.Module):
    """Encodes a row's context and its secondaries so far into a hidden state.

    Stateful over one sequence: ``reset_cache(context)`` starts it for a batch of rows,
    ``forward(slot)`` returns the hidden state for that slot, ``observe(sec)`` records
    the secondary sampled at that slot.
    """

    def __init__(self, cfg: Stage2Config) -> None:
        super().__init__()
        self.cfg = cfg
        self.in_proj = nn.Linear(cfg.ctx_dim + cfg.sec_dim, cfg.hidden)
        self.pos = nn.Parameter(torch.randn(cfg.k_max, cfg.hidden) * 0.02)
        self.ctx: torch.Tensor | None = None
        self.last_sec: torch.Tensor | None = None

    def reset_cache(self, context: torch.Tensor) -> None:
        self.ctx = context
        self.last_sec = context.new_zeros(context.shape[0], self.cfg.sec_dim)

    def observe(self, sec: torch.Tensor) -> None:
        self.last_sec = sec

    def token(self, slot: int) -> torch.Tensor:
        x = torch.cat([self.ctx, self.last_sec], dim=-1)
        return linear(x, self.in_proj) + self.pos[slot]

    def forward(self, slot: int) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class AttentionBlock(nn.Module):
    """Pre-LN transformer block for one new token per row, with a KV cache over slots."""

    def __init__(self, cfg: Stage2Config) -> None:
        super().__init__()
        h = cfg.hidden
        self.n_heads = cfg.n_heads
        self.d_head = h // cfg.n_heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.out = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.mlp = MLP(h, 4 * h, h)

    def forward(
        self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, slot: int
    ) -> torch.Tensor:
        # x: (n, h); caches: (n, heads, k_max, d_head), written in place at ``slot``.
        n = x.shape[0]
        q, k, v = linear(self.ln1(x), self.qkv).split(x.shape[-1], dim=-1)
        q = q.view(n, self.n_heads, 1, self.d_head)
        k_cache[:, :, slot] = k.view(n, self.n_heads, self.d_head)
        v_cache[:, :, slot] = v.view(n, self.n_heads, self.d_head)
        keys = k_cache[:, :, : slot + 1]
        values = v_cache[:, :, : slot + 1]
        # Plain attention: row-independent, unlike scaled_dot_product_attention here.
        scores = torch.matmul(q, keys.transpose(-1, -2)) * (1.0 / math.sqrt(self.d_head))
        att = torch.matmul(torch.softmax(scores, dim=-1), values)
        x = x + linear(att.reshape(n, -1), self.out)
        return x + self.mlp(self.ln2(x))


class AttentionHistory(HistoryEncoder):
    """Transformer history: ``n_blocks`` blocks over a KV cache of the row's slots."""

    def __init__(self, cfg: Stage2Config) -> None:
        super().__init__(cfg)
        self.blocks = nn.ModuleList(AttentionBlock(cfg) for _ in range(cfg.n_blocks))
        self.ln_f = nn.LayerNorm(cfg.hidden)
        self.k_cache: list[torch.Tensor] = []
        self.v_cache: list[torch.Tensor] = []

    def reset_cache(self, context: torch.Tensor) -> None:
        super().reset_cache(context)
        cfg = self.cfg
        shape = (context.shape[0], cfg.n_heads, cfg.k_max, cfg.hidden // cfg.n_heads)
        self.k_cache = [context.new_zeros(shape) for _ in self.blocks]
        self.v_cache = [context.new_zeros(shape) for _ in self.blocks]

    def forward(self, slot: int) -> torch.Tensor:
        x = self.token(slot)
        for block, kc, vc in zip(self.blocks, self.k_cache, self.v_cache):
            x = block(x, kc, vc, slot)
        return self.ln_f(x)


class MarkovHistory(HistoryEncoder):
    """O(1)-state history: an MLP over the context and the previous secondary only."""

    def __init__(self, cfg: Stage2Config) -> None:
        super().__init__(cfg)
        h = cfg.hidden
        self.lns = nn.ModuleList(nn.LayerNorm(h) for _ in range(cfg.n_blocks))
        self.mlps = nn.ModuleList(MLP(h, 4 * h, h) for _ in range(cfg.n_blocks))
        self.ln_f = nn.LayerNorm(h)

    def forward(self, slot: int) -> torch.Tensor:
        x = self.token(slot)
        for ln, mlp in zip(self.lns, self.mlps):
            x = x + mlp(ln(x))
        return self.ln_f(x)


# --------------------------------------------------------------------------------------
# Sampling heads


class FlowHead(nn.Module):
    """Noise -> secondary through a conditional affine coupling transform."""

    def __init__(self, cfg: Stage2Config) -> None:
        super().__init__()
        d = cfg.sec_dim
        self.d_a = d // 2
        self.nets = nn.ModuleList(
            MLP(cfg.hidden + self.d_a if i % 2 == 0 else cfg.hidden + d - self.d_a,
                cfg.hidden, 2 * (d - self.d_a if i % 2 == 0 else self.d_a))
            for i in range(cfg.flow_layers)
        )

    def sample(self, h: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        z = noise
        for i, net in enumerate(self.nets):
            a, b = z[:, : self.d_a], z[:, self.d_a :]
            if i % 2:
                a, b = b, a
            shift, raw = net(torch.cat([h, a], dim=-1)).chunk(2, dim=-1)
            b = b * softsign_scale(raw) + shift
            z = torch.cat([a, b] if i % 2 == 0 else [b, a], dim=-1)
        return z


class WGANHead(nn.Module):
    """A generator from noise, conditioned on the history state."""

    def __init__(self, cfg: Stage2Config) -> None:
        super().__init__()
        self.gen = MLP(cfg.hidden + cfg.sec_dim, cfg.hidden, cfg.sec_dim, n_layers=3)

    def sample(self, h: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        return self.gen(torch.cat([h, noise], dim=-1))


# --------------------------------------------------------------------------------------
# The model


class Stage2Autoregressive(nn.Module):
    def __init__(self, cfg: Stage2Config) -> None:
        super().__init__()
        self.cfg = cfg
        # Count and stop heads first, so their seeded weights do not depend on the
        # history or head type.
        self.count_head = MLP(cfg.ctx_dim, cfg.hidden, cfg.k_max + 1)
        self.stop_w = nn.Parameter(torch.randn(cfg.hidden) / math.sqrt(cfg.hidden))
        self.stop_b = nn.Parameter(torch.zeros(()))
        self.history = AttentionHistory(cfg) if cfg.history == "attention" else MarkovHistory(cfg)
        self.head = FlowHead(cfg) if cfg.head == "flow" else WGANHead(cfg)
        n = torch.arange(cfg.k_max + 1, dtype=torch.float64)
        prior = n * math.log(cfg.count_rate) - torch.lgamma(n + 1)
        self.register_buffer("count_prior", prior.to(torch.float32))

    # -- pieces of one slot (stage boundaries) -----------------------------------------

    def predict_n_sec(self, context: torch.Tensor, count_u: torch.Tensor) -> torch.Tensor:
        """n_sec.mode="head": sample every row's count up front by inverse CDF."""
        logits = self.cfg.count_scale * self.count_head(context) + self.count_prior
        cdf = torch.cumsum(torch.softmax(logits, dim=-1), dim=-1)
        n = (count_u.unsqueeze(-1) >= cdf).sum(dim=-1)
        return n.clamp(max=self.cfg.k_max)

    def encode_history(self, slot: int) -> torch.Tensor:
        return self.history(slot)

    def sample_head(self, h: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        return self.head.sample(h, noise)

    def stop_logits(self, h: torch.Tensor) -> torch.Tensor:
        return (h * self.stop_w).sum(dim=-1) + (self.stop_b + self.cfg.stop_bias)

    def count_stop_step(
        self, slot: int, h: torch.Tensor, derived_n_sec: torch.Tensor
    ) -> torch.Tensor:
        """n_sec.mode="stop_token": record the slot where a row's stop logit fires."""
        stop = self.stop_logits(h) > 0
        return torch.where(stop, torch.full_like(derived_n_sec, slot), derived_n_sec)

    # -- the AR loop -------------------------------------------------------------------

    @torch.no_grad()
    def sample_secondaries_ar(
        self, context: torch.Tensor, noise: Stage2Noise
    ) -> dict[str, torch.Tensor]:
        """Sample up to k_max secondaries per row.

        Returns ``secondaries`` (B, k_max, sec_dim) with invalid slots zero-filled,
        ``n_sec`` (B,), ``sec_valid`` (B, k_max) and ``stop_slot`` (B,): the slot whose
        stop logit set the row's count, or -1 (head mode, or the stop never fired).
        """
        cfg = self.cfg
        b = context.shape[0]
        device = context.device
        k_max = cfg.k_max
        noise = noise.to(device)
        if cfg.n_sec_mode == "head":
            n_sec = self.predict_n_sec(context, noise.count_u)
            order = layout_order(n_sec)
            n_sec = n_sec[order]
        else:
            order = torch.arange(b, device=device)
            derived_n_sec = torch.full((b,), k_max, dtype=torch.long, device=device)
        # From here rows are in layout order (see the module docstring); the outputs go
        # back to batch order at the end.
        context, sec_noise = context[order], noise.sec[order]
        secondaries = context.new_zeros(b, k_max, cfg.sec_dim)

        # Every slot runs for every row; slots past a row's count are masked below.
        self.history.reset_cache(context)
        for slot in range(k_max):
            h = self.encode_history(slot)
            if cfg.n_sec_mode == "stop_token":
                derived_n_sec = self.count_stop_step(slot, h, derived_n_sec)
            sec = self.sample_head(h, sec_noise[:, slot])
            secondaries[:, slot] = sec
            self.history.observe(sec)

        if cfg.n_sec_mode == "head":
            stop_slot = torch.full((b,), -1, dtype=torch.long, device=device)
        else:
            n_sec = derived_n_sec
            stop_slot = torch.where(n_sec < k_max, n_sec, torch.full_like(n_sec, -1))
        slots = torch.arange(k_max, device=device)
        sec_valid = slots.unsqueeze(0) < n_sec.unsqueeze(1)
        secondaries = torch.where(
            sec_valid.unsqueeze(-1), secondaries, torch.zeros_like(secondaries)
        )
        outputs = {
            "secondaries": secondaries,
            "n_sec": n_sec,
            "sec_valid": sec_valid,
            "stop_slot": stop_slot,
        }
        back = torch.argsort(order)
        return {name: value[back] for name, value in outputs.items()}


def build_model(cfg: Stage2Config, seed: int) -> Stage2Autoregressive:
    """Seeded initialisation (CPU generator, so every device gets the same weights)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return Stage2Autoregressive(cfg).eval()
