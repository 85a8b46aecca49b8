"""Bridge CorrNet (Rajendran et al. 2016, Section 3) on sparse bag-of-words input.

One encoder per view, h(v_j) = sigmoid(W_j v_j + b) with the bias b shared by all encoders,
and one decoder per view, g_j(h) = p(W'_j h + c_j). English is the pivot: every training
talk is a pair (v_j, v_en). For a mini-batch from pair j the loss is (Eq. 4)

    L(z, g(h(z))) + L(z, g(h(v_j))) + L(z, g(h(v_en))) - lambda * corr(h(V_j), h(V_en))

with h(z) = sigmoid(W_j v_j + W_en v_en + b), each L reconstructing both views, and corr the
sum over hidden units of the Pearson correlation across the mini-batch (Eq. 5). A mini-batch
holds talks of one pair only; the batches of all pairs are shuffled together every epoch.

Sparse input, dense output: an encoder is an `nn.EmbeddingBag` in "sum" mode fed with the CSR
rows of the batch (indices, offsets, values), so encoding costs O(non-zeros x hidden) and the
encoder gradient is sparse. The decoders reconstruct the full vocabulary densely: the three
hidden codes of a batch are stacked and decoded in one matrix product per view (3 x batch x
vocabulary, about 3.6M outputs at batch 20 and a 60k vocabulary). With binary input the
decoder is a sigmoid with cross-entropy, with count input a linear layer with squared error;
either is summed over the vocabulary and averaged over the batch. The decoder bias starts at
each word's training-set mean (its logit for binary input), so training does not spend its
first steps learning word frequencies.

`reconstruction="reference"` instead follows the authors' CorrNet code (apsarath/CorrNet,
`Model/corrnet.py`): every word-view decoder output is a sigmoid (a dense view's stays linear:
image features are not in [0, 1]), the loss is squared error / 2 on every view, all weights
start uniform in +-4 sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio's sigmoid init) and decoder
biases at zero. The paper leaves L open (Section 3).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from torch.nn import functional as F

from mlmm.io import read_torch

log = logging.getLogger(__name__)

RECONSTRUCTIONS = ("cross_entropy", "reference")


def correlation(hx: torch.Tensor, hy: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Sum over hidden units of the correlation of two views' codes across the batch (Eq. 5)."""
    xc = hx - hx.mean(dim=0, keepdim=True)
    yc = hy - hy.mean(dim=0, keepdim=True)
    numerator = (xc * yc).sum(dim=0)
    denominator = torch.sqrt((xc * xc).sum(dim=0) * (yc * yc).sum(dim=0) + eps)
    return (numerator / denominator).sum()


@dataclass
class DenseBatch:
    """Rows of a dense view (e.g. image features): input and decoder target are the same."""

    dense: torch.Tensor

    @classmethod
    def from_array(cls, rows: np.ndarray, device: str | torch.device = "cpu") -> DenseBatch:
        return cls(dense=torch.from_numpy(np.ascontiguousarray(rows, np.float32)).to(device))


def make_batch(matrix: sp.csr_matrix | np.ndarray, device: str | torch.device = "cpu"):
    """A SparseBatch of CSR rows or a DenseBatch of array rows."""
    if sp.issparse(matrix):
        return SparseBatch.from_csr(matrix, device)
    return DenseBatch.from_array(np.asarray(matrix), device)


@dataclass
class SparseBatch:
    """CSR rows as EmbeddingBag input, plus the dense target for the decoder."""

    indices: torch.Tensor
    offsets: torch.Tensor
    values: torch.Tensor
    dense: torch.Tensor

    @classmethod
    def from_csr(cls, rows: sp.csr_matrix, device: str | torch.device = "cpu") -> SparseBatch:
        return cls(
            indices=torch.from_numpy(rows.indices.astype(np.int64)).to(device),
            offsets=torch.from_numpy(rows.indptr[:-1].astype(np.int64)).to(device),
            values=torch.from_numpy(rows.data.astype(np.float32)).to(device),
            dense=torch.from_numpy(rows.toarray().astype(np.float32)).to(device),
        )


class BridgeCorrNet(nn.Module):
    def __init__(
        self,
        dims: dict[str, int],
        hidden: int = 128,
        binary: bool = True,
        dense: tuple[str, ...] | list[str] = (),
        reconstruction: str = "cross_entropy",
    ) -> None:
        super().__init__()
        if reconstruction not in RECONSTRUCTIONS:
            raise ValueError(
                f"reconstruction must be one of {RECONSTRUCTIONS}, not {reconstruction!r}"
            )
        self.dims, self.hidden_size, self.binary = dict(dims), hidden, binary
        self.reconstruction_kind = reconstruction
        self.dense = tuple(sorted(dense))
        unknown = set(self.dense) - set(dims)
        if unknown:
            raise ValueError(f"dense views {sorted(unknown)} are not among the views {list(dims)}")
        self.encoders = nn.ModuleDict(
            {
                view: nn.Linear(d, hidden, bias=False)
                if view in self.dense
                else nn.EmbeddingBag(d, hidden, mode="sum", sparse=True)
                for view, d in dims.items()
            }
        )
        scale = 4.0 if reconstruction == "reference" else 1.0
        for view, encoder in self.encoders.items():
            bound = scale * float(np.sqrt(6.0 / (dims[view] + hidden)))
            nn.init.uniform_(encoder.weight, -bound, bound)
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.decoders = nn.ModuleDict({view: nn.Linear(hidden, d) for view, d in dims.items()})
        if reconstruction == "reference":
            for view, decoder in self.decoders.items():
                bound = scale * float(np.sqrt(6.0 / (dims[view] + hidden)))
                nn.init.uniform_(decoder.weight, -bound, bound)
                nn.init.zeros_(decoder.bias)

    def pre(self, view: str, batch: SparseBatch | DenseBatch) -> torch.Tensor:
        """W_view v (no bias): the encoder's sum of the batch's word vectors (or W x, dense)."""
        if view in self.dense:
            return self.encoders[view](batch.dense)
        return self.encoders[view](batch.indices, batch.offsets, per_sample_weights=batch.values)

    def encode(self, view: str, batch: SparseBatch | DenseBatch) -> torch.Tensor:
        return torch.sigmoid(self.pre(view, batch) + self.bias)

    def reconstruction(self, view: str, codes: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Loss of decoding `view` from each row of `codes`; summed over words and rows."""
        output = self.decoders[view](codes)
        if self.reconstruction_kind == "reference":
            # dense views (image features) are unbounded: linear outputs, same squared error
            if view not in self.dense:
                output = torch.sigmoid(output)
            return 0.5 * ((output - target) ** 2).sum()
        if self.binary and view not in self.dense:
            return F.binary_cross_entropy_with_logits(output, target, reduction="sum")
        return F.mse_loss(output, target, reduction="sum")

    def loss(
        self,
        view: str,
        pivot: str,
        xv: SparseBatch | DenseBatch,
        xp: SparseBatch | DenseBatch,
        lam: float,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Eq. 4 on one mini-batch of pair (view, pivot): (total, reconstruction, corr)."""
        av, ap = self.pre(view, xv), self.pre(pivot, xp)
        h_joint = torch.sigmoid(av + ap + self.bias)
        h_view, h_pivot = torch.sigmoid(av + self.bias), torch.sigmoid(ap + self.bias)
        codes = torch.cat([h_joint, h_view, h_pivot])
        size = xv.dense.shape[0]
        rec = self.reconstruction(view, codes, xv.dense.repeat(3, 1))
        rec = (rec + self.reconstruction(pivot, codes, xp.dense.repeat(3, 1))) / size
        corr = correlation(h_view, h_pivot)
        return rec - lam * corr, rec, corr

    def init_decoder_bias(self, view: str, matrix: sp.csr_matrix | np.ndarray) -> None:
        """Start the decoder bias at the view's mean (the reference keeps it at zero)."""
        if self.reconstruction_kind == "reference":
            return
        mean = np.asarray(matrix.mean(axis=0)).ravel()
        if self.binary and view not in self.dense:
            mean = np.clip(mean, 1e-4, 1 - 1e-4)
            mean = np.log(mean / (1 - mean))
        with torch.no_grad():
            self.decoders[view].bias.copy_(torch.from_numpy(mean.astype(np.float32)))


def as_input(matrix: sp.csr_matrix | np.ndarray, binary: bool) -> sp.csr_matrix | np.ndarray:
    """Counts as the model sees them: binary (word present) or raw counts; a dense view's
    rows as they are (float32 when an array; other array-likes are indexed lazily)."""
    if isinstance(matrix, np.ndarray):
        return np.asarray(matrix, dtype=np.float32)
    if not sp.issparse(matrix):
        return matrix
    matrix = matrix.tocsr().astype(np.float32)
    if binary:
        matrix = matrix.copy()
        matrix.data[:] = 1.0
    return matrix


def batches(
    sizes: dict[str, int], batch_size: int, rng: np.random.Generator
) -> Iterator[tuple[str, np.ndarray]]:
    """Mini-batches of one pair each, in random order across pairs (a lone last row joins
    the batch before it, since a correlation needs two rows)."""
    plan = []
    for view, n in sizes.items():
        order = rng.permutation(n)
        chunks = [order[i : i + batch_size] for i in range(0, n, batch_size)]
        if len(chunks) > 1 and len(chunks[-1]) < 2:
            last = chunks.pop()
            chunks[-1] = np.concatenate([chunks[-1], last])
        plan += [(view, chunk) for chunk in chunks]
    for i in rng.permutation(len(plan)):
        yield plan[i]


def _stack(matrices: list) -> sp.csr_matrix | np.ndarray:
    if not any(sp.issparse(m) for m in matrices):
        return np.concatenate([np.asarray(m) for m in matrices])
    if not all(sp.issparse(m) for m in matrices):
        raise ValueError("a view is dense in one pair and sparse in another")
    return sp.vstack(matrices).tocsr()


def train(
    pairs: dict[str, tuple[sp.csr_matrix | np.ndarray, sp.csr_matrix | np.ndarray]],
    pivot_dim: int,
    pivot: str = "en",
    hidden: int = 128,
    epochs: int = 10,
    batch_size: int = 20,
    learning_rate: float = 0.01,
    lam: float = 1.0,
    seed: int = 1,
    binary: bool = True,
    device: str = "cpu",
    progress: bool = True,
    model_class: type[BridgeCorrNet] | None = None,
    reconstruction: str = "cross_entropy",
) -> tuple[BridgeCorrNet, list[dict]]:
    """Train on {view: (X_view, X_pivot)} row-aligned training pairs; returns model, history.

    A view given as a numpy array (or array-like) is dense (see the module docstring).
    `model_class`: a subclass with its own `loss` (the pivot experiment's autoencoder).
    `reconstruction`: cross_entropy or reference (see the module docstring).
    `device`: auto, cpu or cuda (cuda without a visible GPU is an error).
    """
    from mlmm.features.extraction import resolve_device
    from mlmm.logs import progress as progress_bar

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    pairs = {v: (as_input(x, binary), as_input(p, binary)) for v, (x, p) in pairs.items()}
    dims = {v: x.shape[1] for v, (x, _) in pairs.items()} | {pivot: pivot_dim}
    pivot_rows = _stack([p for _, p in pairs.values()])
    dense = [v for v, (x, _) in pairs.items() if not sp.issparse(x)]
    dense += [] if sp.issparse(pivot_rows) else [pivot]
    device = resolve_device(str(device))
    model = (model_class or BridgeCorrNet)(dims, hidden, binary, dense, reconstruction).to(device)
    for view, (x, _) in pairs.items():
        model.init_decoder_bias(view, x)
    model.init_decoder_bias(pivot, pivot_rows)
    optimiser = torch.optim.SGD(model.parameters(), lr=learning_rate)
    sizes = {v: x.shape[0] for v, (x, _) in pairs.items()}
    history = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        totals = np.zeros(3)
        steps = 0
        plan = list(batches(sizes, batch_size, rng))
        bar = progress_bar(plan, desc=f"epoch {epoch}", disable=not progress)
        for view, rows in bar:
            x, p = pairs[view]
            xv, xp = make_batch(x[rows], device), make_batch(p[rows], device)
            optimiser.zero_grad(set_to_none=True)
            total, rec, corr = model.loss(view, pivot, xv, xp, lam)
            total.backward()
            optimiser.step()
            totals += [total.item(), rec.item(), corr.item()]
            steps += 1
        mean = totals / max(steps, 1)
        history.append(
            {
                "epoch": epoch,
                "loss": mean[0],
                "reconstruction": mean[1],
                "correlation": mean[2],
                "seconds": time.perf_counter() - start,
            }
        )
        if progress:
            log.info(
                "epoch %d/%d: loss %.2f rec %.2f corr %.2f, %.0f s", epoch, epochs, *mean,
                history[-1]["seconds"],
            )
    return model, history


@torch.no_grad()
def encode(
    model: BridgeCorrNet, view: str, matrix: sp.csr_matrix | np.ndarray, chunk: int = 512
) -> np.ndarray:
    """Hidden codes h(v) of every row of `matrix` for `view`, as float32 (rows x hidden)."""
    model.eval()
    matrix = as_input(matrix, model.binary)
    device = model.bias.device
    out = [
        model.encode(view, make_batch(matrix[i : i + chunk], device)).cpu().numpy()
        for i in range(0, matrix.shape[0], chunk)
    ]
    return np.concatenate(out) if out else np.zeros((0, model.hidden_size), np.float32)


def save(model: BridgeCorrNet, path, run: dict | None = None, inputs: dict | None = None) -> None:
    """Write ``model``; with ``run`` (what its readers ask for: lambda and settings, as the
    run's codes) its record inside it (``mlmm.fingerprint.inside_record``)."""
    from mlmm.fingerprint import RECORD_KEY, inside_record
    from mlmm.io import atomic_path

    state = {
        "dims": model.dims,
        "hidden": model.hidden_size,
        "binary": model.binary,
        "dense": list(model.dense),
        "reconstruction": model.reconstruction_kind,
        "state_dict": model.state_dict(),
    }
    if run is not None:
        state[RECORD_KEY] = inside_record(state, run, inputs or {})
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load(path, device: str = "cpu", expect: dict | None = None) -> BridgeCorrNet:
    """A model of ``save``; with ``expect`` (``run``, ``asked``, ``inputs`` of
    ``mlmm.fingerprint.check_inside_record``) refused unless its record names that run."""
    from mlmm.fingerprint import RECORD_KEY, check_inside_record

    state = read_torch(path, "a Bridge CorrNet model", map_location=device, weights_only=True)
    if expect is not None:
        content = {k: v for k, v in state.items() if k != RECORD_KEY}
        check_inside_record(path, state.get(RECORD_KEY), lambda: content,
                            maker="ted-train for this lambda", **expect)  # fmt: skip
    model = BridgeCorrNet(
        state["dims"], state["hidden"], state["binary"], state.get("dense", ()),
        state.get("reconstruction", "cross_entropy"),
    )
    model.load_state_dict(state["state_dict"])
    return model.to(device)


def word_vectors(model: BridgeCorrNet, view: str) -> np.ndarray:
    """A word's representation: its encoder column W_view e_w (vocabulary x hidden)."""
    return model.encoders[view].weight.detach().cpu().numpy()
