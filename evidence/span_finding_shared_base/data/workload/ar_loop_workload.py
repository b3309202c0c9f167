"""Workload for the ar_loop campaigns: the Stage-2 autoregressive sampling loop alone.

Imported by the harness worker with the revision's tree first on ``sys.path``, so
``stage2.model`` is the base or the candidate. Both revisions are driven through the
same call, ``Stage2Autoregressive.sample_secondaries_ar(context, noise)``: the base runs
every slot for every row, the candidate compacts to the active rows.

Params (campaign YAML ``workload.params``):
  history: attention | markov      head: flow | wgan      n_sec_mode: head | stop_token
  hidden, n_blocks, n_heads, k_max, sec_dim   model shape (ctx_dim comes from the input)
  count_rate, count_scale, stop_bias          count calibration (see Stage2Config)
  weights_seed                                seeded initialisation of the weights
  noise_seed                                  noise of item i is drawn from noise_seed + i
  threads                                     torch threads (default: $OMP_NUM_THREADS)
  device: auto | cpu | cuda                   auto picks CUDA when present
Input ``contexts``: a (batches, batch, ctx_dim) float32 .npy; one item per batch.
Outputs per item: secondaries (B, k_max, sec_dim) float32 with invalid slots zero,
n_sec (B,) int64, sec_valid (B, k_max) bool, stop_slot (B,) int64.
"""

from __future__ import annotations

import os
from dataclasses import fields

import numpy as np
import torch

from stage2.model import Stage2Config, build_model, make_noise

_CONFIG_KEYS = ("history", "head", "n_sec_mode", "hidden", "n_blocks", "n_heads", "k_max",
                "sec_dim", "flow_layers", "count_rate", "count_scale", "stop_bias")
_OTHER_KEYS = ("weights_seed", "noise_seed", "threads", "device")


class ArLoopWorkload:
    def __init__(self, ctx) -> None:
        params = dict(ctx.params or {})
        unknown = sorted(set(params) - set(_CONFIG_KEYS) - set(_OTHER_KEYS))
        if unknown:
            raise ValueError(f"ar_loop workload: unknown params {unknown}")
        threads = params.get("threads") or os.environ.get("OMP_NUM_THREADS")
        if threads:
            torch.set_num_threads(int(threads))
        want = params.get("device", "auto")
        if want not in ("auto", "cpu", "cuda"):
            raise ValueError(f"ar_loop workload: device must be auto, cpu or cuda, not {want!r}")
        use_cuda = want == "cuda" or (want == "auto" and torch.cuda.is_available())
        self.device = torch.device("cuda" if use_cuda else "cpu")

        contexts = np.load(ctx.inputs["contexts"], allow_pickle=False)
        if contexts.ndim != 3 or contexts.dtype != np.float32:
            raise ValueError(f"ar_loop workload: contexts must be (batches, batch, dim) float32, "
                             f"got {contexts.dtype} {contexts.shape}")
        known = {f.name for f in fields(Stage2Config)}
        kwargs = {k: params[k] for k in _CONFIG_KEYS if k in params and k in known}
        self.cfg = Stage2Config(ctx_dim=int(contexts.shape[2]), **kwargs)
        self.model = build_model(self.cfg, int(params.get("weights_seed", 0))).to(self.device)

        noise_seed = int(params.get("noise_seed", 0))
        b = contexts.shape[1]
        self.items = [f"batch-{i:03d}" for i in range(contexts.shape[0])]
        self._inputs = {}
        for i, item in enumerate(self.items):
            noise = make_noise(b, self.cfg.k_max, self.cfg.sec_dim, noise_seed + i).to(self.device)
            self._inputs[item] = (torch.from_numpy(contexts[i].copy()).to(self.device), noise)
        self._n_sec: dict[str, np.ndarray] = {}

        # Warm-up outside the timer, the same call as the first item: BLAS initialisation,
        # the allocator's pools, and first touch of fresh memory (slow in some VMs).
        with torch.inference_mode():
            self.model.sample_secondaries_ar(*self._inputs[self.items[0]])
        self.sync()

    def run(self, item: str) -> dict[str, np.ndarray]:
        context, noise = self._inputs[item]
        with torch.inference_mode():
            out = self.model.sample_secondaries_ar(context, noise)
        result = {name: out[name].cpu().numpy() for name in ("secondaries", "n_sec", "sec_valid", "stop_slot")}
        self._n_sec[item] = result["n_sec"]
        return result

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def metrics(self) -> dict:
        counts = [self._n_sec[i] for i in self.items if i in self._n_sec]
        n = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
        return {
            "mean_n_sec": float(n.mean()) if n.size else None,
            "rows": int(n.size),
            "n_sec_histogram": np.bincount(n, minlength=self.cfg.k_max + 1).tolist() if n.size else [],
            "max_n_sec": int(n.max()) if n.size else None,
            "device": str(self.device),
            "torch_threads": torch.get_num_threads(),
            "torch_version": torch.__version__,
            "config": {f.name: getattr(self.cfg, f.name) for f in fields(Stage2Config)},
        }

    def close(self) -> None:
        self._inputs.clear()


def setup(ctx) -> ArLoopWorkload:
    return ArLoopWorkload(ctx)
