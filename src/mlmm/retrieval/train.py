"""The one trainer: reads a variant record, trains, selects on validation, tests, writes the run.

Its parts live in their own modules: the training examples and how they are batched
(``streams``), model selection and stopping (``selection``), resumable checkpoints
(``checkpoint``), pre-trained word vectors and AME's alignment (``word_embeddings``), STS
(``sts``). This module holds one run: the training step, validation, the final test and the
files it writes (model.pt, history.csv, metrics.json). A non-finite loss stops the run.
"""

from __future__ import annotations

import copy
import csv
import io
import logging
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mlmm import evaluation, rank_metrics
from mlmm.data import multi30k
from mlmm.errors import InputError
from mlmm.fingerprint import RECORD_KEY, inside_record, value_digest
from mlmm.io import atomic_path, discard, write_text
from mlmm.logs import progress as progress_bar
from mlmm.origin import FEATURES
from mlmm.outcomes import write_result
from mlmm.provenance import Timer, provenance
from mlmm.retrieval import checkpoint
from mlmm.retrieval.api import build_model
from mlmm.retrieval.config import languages, select_languages
from mlmm.retrieval.data import (
    Vocabularies,
    eval_set,
    features_path,
    load_features,
    pad,
    published_features,
    training_sets,
    vocabulary_captions,
)
from mlmm.retrieval.losses import ranking_loss, weighted_loss
from mlmm.retrieval.selection import Selector, selection_score
from mlmm.retrieval.streams import Batch, Text, TrainingStreams
from mlmm.retrieval.sts import sts_outcomes, sts_tokens
from mlmm.retrieval.word_embeddings import Alignment, load_vectors

__all__ = ["Paths", "Run", "sts_tokens", "train_variant"]

log = logging.getLogger(__name__)

HISTORY_FIELDS = (
    ["step", "epoch", "loss", "lr", "rsum", "mean_rank"]
    + [f"{m}_{d}" for d in ("i2t", "t2i") for m in ("R@1", "R@5", "R@10", "medr")]
    + ["alignment", "alignment_lr", "seconds"]
)


@dataclass
class Paths:
    """Where a run reads from: Multi30K root, feature root, aligned vectors, MUSE, STS."""

    data_root: Path
    features_root: Path
    vectors: Path | None = None  # directory of wiki.<lang>.align.vec
    muse: Path | None = None  # directory of en-<lang>.txt
    sts: Path | None = None  # directory of <year>/STS.{input,gs}.images.txt


def pick_device(name: str) -> torch.device:
    if name == "auto":  # a GPU rule's job stops here without a GPU (mlmm.slurm)
        from mlmm.slurm import auto_device

        return torch.device(auto_device(torch.cuda.is_available()))
    return torch.device(name)


class Run:
    """One (variant, seed) run: model, optimiser, streams, selection; ``train`` drives it."""

    def __init__(self, record: dict, seed: int, paths: Paths, out: Path) -> None:
        self.record, self.seed, self.paths, self.out = record, seed, paths, Path(out)
        self.langs = languages(record)
        self.device = pick_device(record["device"])
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        sets = training_sets(paths.data_root, record, seed)
        self.vocabs = Vocabularies.build(
            vocabulary_captions(paths.data_root, record, sets.vocabulary), record
        )
        train_names = multi30k.image_list(paths.data_root, "train")
        train_features = load_features(
            paths.features_root, record["backbone"], "train", train_names
        )
        self.features = torch.from_numpy(train_features).to(self.device)
        self.model = build_model(record, self.features.shape[1], self.vocabs).to(self.device)
        known = None  # the words with a pre-trained vector, per language
        if record["word_embeddings"] != "random":
            known = load_vectors(self.model, self.vocabs, self.langs, record, paths.vectors)
        self.alignment = Alignment.build(
            self.model, self.vocabs, self.langs, record, paths.muse, self.device, known
        )
        self.streams = TrainingStreams(
            sets.c2i, self.vocabs, record, seed, self.device, paths.data_root, sets.c2c
        )
        self.steps_per_epoch = math.ceil(self.streams.examples / record["batch_size"])
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(params, lr=record["optimizer"]["lr"])
        self.step, self.history = 0, []
        self.ranks: dict[str, dict[str, np.ndarray]] = {}  # the last evaluation's, per language
        self.losses: list[float] = []  # since the last validation (checkpointed with the run)
        self.selector = Selector(record["early_stopping"]["patience"])
        self.best_state = copy.deepcopy(self.model.state_dict())
        self.best_mapping = self.alignment.snapshot() if self.alignment else None
        self.select_langs = select_languages(record)
        self.val = eval_set(
            paths.data_root,
            paths.features_root,
            record["backbone"],
            record["validation"],
            self.select_langs,
            seed,
        )
        check_feature_dims(paths, record, train_features.shape[1])
        # What checkpoint.pt was made from: a checkpoint of other inputs is not resumed.
        self.fingerprint = {
            "config": value_digest({"record": record, "seed": seed}),
            "train features": value_digest(train_features),
            "validation features": value_digest(self.val.features),
            "captions": value_digest(
                [sets.c2i]
                + [c for c in (sets.c2c, sets.vocabulary) if c is not sets.c2i]  # often c2i
                + [self.val.captions]
            ),
            "vocabularies": value_digest(
                {name: vocab.counts for name, vocab in self.vocabs.vocabs.items()}
            ),
            "initial weights (word vectors)": value_digest(self.model.state_dict()),
            "alignment lexicons": value_digest(
                None
                if self.alignment is None
                else [(d.pair, d.train, d.gold) for d in self.alignment.directions]
            ),
        }

    # ------------------------------------------------------------------ the training step
    def _embed(self, text: Text) -> torch.Tensor:
        """Embed a batch's captions; rows of several encoders are embedded per encoder."""
        encoders = text.encoders
        if (encoders == encoders[0]).all():
            return self.model.embed_text(str(encoders[0]), text.tokens, text.lengths)
        parts, order = [], []
        for encoder in np.unique(encoders):
            rows = np.flatnonzero(encoders == encoder)
            lengths = text.lengths[torch.from_numpy(rows)]
            tokens = text.tokens[torch.from_numpy(rows).to(self.device), : int(lengths.max())]
            parts.append(self.model.embed_text(str(encoder), tokens, lengths))
            order.append(rows)
        inverse = torch.from_numpy(np.argsort(np.concatenate(order))).to(self.device)
        return torch.cat(parts)[inverse]

    def _rank(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ranking_loss(self.model.scores(a, b), self.record["margin"], self.record["loss"])

    def batch_loss(self, batch: Batch) -> torch.Tensor:
        """c2c: captions against captions; c2i / pooled: images against captions; joint:
        Calixto's beta * S_I + (1 - beta) * S_S over the languages' columns."""
        images = None
        if batch.images is not None:
            images = self.model.embed_images(self.features[batch.images])
        texts = [self._embed(text) for text in batch.texts]
        if images is None:
            return self._rank(texts[0], texts[1])
        if not batch.joint:
            return self._rank(images, texts[0])
        beta = self.record["beta"]
        sentence_terms = []
        if beta < 1.0:
            sentence_terms = [
                self._rank(texts[k], texts[m])
                for k in range(len(texts))
                for m in range(k + 1, len(texts))
            ]
        return weighted_loss([self._rank(images, t) for t in texts], sentence_terms, beta)

    def _lr(self, epoch: int) -> float:
        opt = self.record["optimizer"]
        decays = epoch // opt["decay_epochs"] if opt["decay_epochs"] else 0
        return opt["lr"] * opt["decay_factor"] ** decays

    def train_step(self, use_amp: bool) -> tuple[torch.Tensor, int]:
        """One update (and an RCSLS update of W every ``alignment.every`` steps); the loss, left
        on the device (``train`` reads the losses back in groups, not once a step)."""
        record = self.record
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr(self.step // self.steps_per_epoch)
        align_now = self.alignment is not None and self.step % record["alignment"]["every"] == 0
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=use_amp):
            batch = self.streams.next_batch(record["batch_size"])
            loss = self.batch_loss(batch)
            extra = self.alignment.loss() if align_now else None
            if extra is not None:
                loss = loss + extra
        self.optimizer.zero_grad(set_to_none=True)
        if extra is not None:
            self.alignment.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), record["grad_clip"])
        self.optimizer.step()
        if extra is not None:
            self.alignment.step()
        self.step += 1
        return loss.detach(), len(batch)

    def _read_losses(self, pending: list[torch.Tensor]) -> list[float]:
        """The pending losses as floats (one device sync); a non-finite one stops the run."""
        values = torch.stack(pending).float().tolist() if pending else []
        for k, value in enumerate(values):
            if not math.isfinite(value):
                raise InputError(
                    f"training {self.record['name']} (seed {self.seed})",
                    "a finite loss",
                    f"{value} at step {self.step - len(values) + k + 1}",
                )
        return values

    def train(self, progress: bool = True) -> dict:
        record = self.record
        total = record["epochs"] * self.steps_per_epoch
        every = record["early_stopping"]["every"] or self.steps_per_epoch
        resumed = checkpoint.restore(self, self.out / "checkpoint.pt")
        use_amp = self.device.type == "cuda" and record["precision"] == "bf16"
        if self.device.type == "cuda":  # fp32 as the authors trained, matmuls in TF32
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.model.train()
        pairs, start = 0, time.perf_counter()
        self._log_start(total, every, resumed)
        bar = None
        stop = self.selector.exhausted
        pending: list[torch.Tensor] = []
        while self.step < total and not stop:
            if bar is None:  # one bar per epoch: its total and ETA are this epoch's steps
                epoch = self.step // self.steps_per_epoch
                bar = progress_bar(
                    total=self.steps_per_epoch,
                    initial=self.step - epoch * self.steps_per_epoch,
                    disable=not progress,
                    desc=f"{record['name']} epoch {epoch + 1}",
                    unit="step",
                )
            loss, n = self.train_step(use_amp)
            pending.append(loss)
            pairs += n
            bar.update(1)
            validate = self._validation_due(every, total)
            save = self.step % record["checkpoint_every"] == 0 or self.step == total
            if validate or save:  # losses are read back here, not every step
                self.losses += self._read_losses(pending)
                pending = []
            if validate:
                stop = self.validate(float(np.mean(self.losses)), time.perf_counter() - start)
                self._log_validation()
                self.losses = []
            if save or stop:
                checkpoint.save(self, self.out / "checkpoint.pt")
            if self.step % self.steps_per_epoch == 0:
                bar.close()
                bar = None
        if bar is not None:
            bar.close()
        log.info(
            "stopped at step %d (epoch %.2f): %s; best validation at step %s",
            self.step,
            self.step / self.steps_per_epoch,
            "patience exhausted" if stop else "epoch cap",
            self.selector.step,
        )
        elapsed = time.perf_counter() - start
        return {
            "resumed": resumed,
            "pairs": pairs,
            "seconds": elapsed,
            "pairs_per_second": pairs / elapsed if elapsed > 0 else None,
        }

    def _log_start(self, total: int, every: int, resumed: bool) -> None:
        """What the run is about to do, in the first lines of its log."""
        record = self.record
        log.info(
            "%s seed %d: device %s, %d CPU threads; %d training examples, %d images (%d-d"
            " features), vocabularies %s",
            record["name"],
            self.seed,
            self.device,
            torch.get_num_threads(),
            self.streams.examples,
            len(self.features),
            self.features.shape[1],
            {name: len(vocab) for name, vocab in self.vocabs.vocabs.items()},
        )
        log.info(
            "batch %d: %d steps an epoch, at most %d epochs (%d steps); validation every %d"
            " steps on %d images (%s), patience %s",
            record["batch_size"],
            self.steps_per_epoch,
            record["epochs"],
            total,
            every,
            len(self.val.features),
            ", ".join(self.select_langs),
            record["early_stopping"]["patience"],
        )
        if resumed:
            log.info("resumed from its checkpoint at step %d", self.step)

    def _log_validation(self) -> None:
        row = self.history[-1]
        log.info(
            "validation at step %d (epoch %.2f): rsum %.1f, R@1 i2t %.1f t2i %.1f, loss %.4f,"
            " best at step %s",
            row["step"],
            row["epoch"],
            row["rsum"],
            row["R@1_i2t"],
            row["R@1_t2i"],
            row["loss"],
            self.selector.step,
        )

    # ------------------------------------------------------------------ validation, selection
    def _validation_due(self, every: int, total: int) -> bool:
        at_epoch_end = self.step % self.steps_per_epoch == 0
        return (
            self.step % every == 0
            or self.step == total
            or (self.record["early_stopping"]["epoch_end"] and at_epoch_end)
        )

    def validate(self, loss: float, seconds: float) -> bool:
        """One validation point: history row, model selection; True = patience exhausted.

        The history's recall columns are those of the first selecting language; ``rsum`` is
        the recall sum over every selecting language, ``mean_rank`` the sum of its mean ranks
        (both directions), the criteria of ``select_by: rsum`` and ``mean_rank``."""
        # a collapsed model is scored by the tie rule (never selected), not refused
        metrics, _ = self.evaluate(self.val, self.select_langs, refuse_collapsed=False)
        m = metrics[self.select_langs[0]]
        score = selection_score(metrics, self.select_langs, self.record["select_by"])
        rsum = sum(rank_metrics.recall_sum(metrics[lang]) for lang in self.select_langs)
        row = {
            "step": self.step,
            "epoch": self.step / self.steps_per_epoch,
            "loss": loss,
            "lr": self.optimizer.param_groups[0]["lr"],
            "rsum": rsum,
            "mean_rank": -selection_score(metrics, self.select_langs, "mean_rank")[0],
            **{f"{k}_{d}": m[d][k] for d in ("i2t", "t2i") for k in ("R@1", "R@5", "R@10", "medr")},
            "alignment": None if self.alignment is None else self.alignment.ratio(),
            # AME's RCSLS rate as it stands (halve_on_rise: halved after a rising RCSLS loss)
            "alignment_lr": None
            if self.alignment is None or self.alignment.mapping is None
            else self.alignment.lr,
            "seconds": seconds,
        }
        self.history.append(row)
        if self.selector.update(score, self.step):
            self.best_state = copy.deepcopy(self.model.state_dict())
            self.best_mapping = self.alignment.snapshot() if self.alignment else None
        return self.selector.exhausted

    @torch.no_grad()
    def evaluate(
        self, data, langs: list[str], folds: int = 1, refuse_collapsed: bool = True
    ) -> dict:
        """Recalls per language on ``data`` (mean over ``folds`` equal folds), and the captions'
        embeddings; the per-query ranks behind the recalls go to ``self.ranks``; collapsed
        embeddings are refused unless ``refuse_collapsed`` is false (``evaluation``)."""
        self.model.eval()
        feats = torch.from_numpy(data.features)
        images = torch.cat(
            [
                self.model.embed_images(feats[a : a + 1024].to(self.device)).float().cpu()
                for a in range(0, len(feats), 1024)
            ]
        )
        out, texts = {}, {}
        for lang in langs:
            texts[lang] = self.embed_text(lang, data.captions[lang])
            self.ranks[lang] = evaluation.fold_ranks(
                images,
                texts[lang],
                data.per_image[lang],
                similarity=self.record["similarity"],
                folds=folds,
                refuse_collapsed=refuse_collapsed,
            )
            out[lang] = {
                d: rank_metrics.metrics_of_folds(r, folds) for d, r in self.ranks[lang].items()
            }
        self.model.train()
        return out, texts

    def embed_text(self, lang: str, sentences: list[list[str]]) -> torch.Tensor:
        parts = []
        for a in range(0, len(sentences), 512):
            chunk = sentences[a : a + 512]
            tokens, lengths = pad([self.vocabs.encode(lang, s) for s in chunk])
            langs = np.full(len(chunk), lang)
            encoders = np.full(len(chunk), self.vocabs.encoder_of[lang])
            text = Text(langs, encoders, tokens.to(self.device), lengths)
            parts.append(self._embed(text).float().cpu())
        return torch.cat(parts)

    # ------------------------------------------------------------------ final evaluation
    def _restore_best(self) -> None:
        """The selected point: its weights and, for AME, its mapping."""
        self.model.load_state_dict(self.best_state)
        if self.alignment is not None:
            self.alignment.restore(self.best_mapping)

    def test(self) -> dict:
        self._restore_best()
        data = eval_set(
            self.paths.data_root,
            self.paths.features_root,
            self.record["backbone"],
            self.record["test"],
            self.langs,
        )
        folds = self.record["test"]["folds"]
        n_images = len(data.features)
        if n_images % folds:
            raise InputError(
                f"test split {self.record['test']['split']}",
                f"a number of images divisible by test.folds={folds}",
                str(n_images),
                key="folds",
            )
        metrics, texts = self.evaluate(data, self.langs, folds)
        out = {"test": metrics}
        # per-query outcomes of every test number (queries.npz, mlmm.outcomes)
        self.outcomes = {"folds": folds, "images": n_images, "test": dict(self.ranks),
                         "c2c": {}, "sts": {}}  # fmt: skip
        if folds > 1:  # COCO: 1K folds in "test", the whole 5K set beside them
            out["test_full"], _ = self.evaluate(data, self.langs)
        c2c = {}
        for la in self.langs:
            for lb in self.langs:
                if la != lb and data.per_image[la] == data.per_image[lb]:
                    ranks = evaluation.c2c_ranks(
                        texts[la], texts[lb], data.per_image[la], self.record["similarity"]
                    )
                    self.outcomes["c2c"][f"{la}-{lb}"] = ranks
                    c2c[f"{la}-{lb}"] = rank_metrics.summarise_ranks(ranks)
        if c2c:
            out["c2c"] = c2c
        if self.record["sts"] and "en" in self.langs and self.paths.sts is not None:
            self.model.eval()
            pairs = sts_outcomes(lambda s: self.embed_text("en", s), self.paths.sts)
            self.outcomes["sts"] = pairs
            out["sts"] = {year: rank_metrics.pearson_of(*pair) for year, pair in pairs.items()}
            self.model.train()
        if self.alignment is not None:
            out["alignment"] = {self.alignment.pair: self.alignment.ratio()}
        return out

    def data_sets(self) -> tuple[str, ...]:
        """What the run was made from (its provenance's origin): the record's data set, and
        the published features when the arrays it read are a release's
        (``mlmm.features.published``)."""
        published = published_features(self.paths.features_root, self.record["backbone"], "train")
        return (self.record["dataset"], *((FEATURES,) if published else ()))

    def save_model(self) -> None:
        state = self.best_state
        if self.alignment is not None:  # AME: W multiplied into the English rows
            state = self.alignment.baked(state, self.best_mapping)
        saved = {
            "state": state,
            "vocabularies": self.vocabs.state(),
            "record": self.record,
            "feature_dim": int(self.features.shape[1]),
            "seed": self.seed,
        }
        # its record inside it, written with it: which run it is and what it was made from
        run = {"variant": self.record["name"], "seed": self.seed}
        saved[RECORD_KEY] = inside_record(saved, run, self.fingerprint)
        with atomic_path(self.out / "model.pt") as tmp:
            torch.save(saved, tmp)


def check_feature_dims(paths: Paths, record: dict, train_dim: int) -> None:
    """The validation and test splits' features, read before training as the evaluations
    will read them (record, list copy, finite rows: ``load_features``), of the training
    features' width: a bad test array would otherwise fail only after the training."""
    for split in dict.fromkeys((record["validation"]["split"], record["test"]["split"])):
        names = multi30k.image_list(paths.data_root, split)
        dim = load_features(paths.features_root, record["backbone"], split, names).shape[1]
        if dim != train_dim:
            train = features_path(paths.features_root, record["backbone"], "train")
            raise InputError(
                features_path(paths.features_root, record["backbone"], split),
                f"{train_dim} columns, as the training features {train}", f"{dim} columns",
            )  # fmt: skip


def write_history(path: Path, history: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=HISTORY_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in history:
        writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in HISTORY_FIELDS})
    write_text(path, buffer.getvalue())


def train_variant(
    record: dict,
    seed: int,
    paths: Paths,
    out: str | Path,
    progress: bool = True,
    threads: int | None = None,
) -> dict:
    """Train, select on validation, test, and write model.pt, history.csv, metrics.json.

    ``threads`` caps torch's CPU threads: on a shared CPU, more threads than free cores make
    small GRUs tens of times slower (spinning workers), and CPU sums depend on how they are
    split, so Snakemake passes ``retrieval.threads`` (a fixed number) and metrics.json records
    the count the run used.
    """
    if threads:
        torch.set_num_threads(threads)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    timer = Timer()
    with timer("setup"):
        run = Run(record, seed, paths, out)
    with timer("train"):
        speed = run.train(progress)
    with timer("test"):
        results = run.test()
    run.save_model()
    write_history(out / "history.csv", run.history)
    metrics = {
        "variant": record["name"],
        "seed": seed,
        "provenance": {
            **provenance({"retrieval": record}, seed, data=run.data_sets()),
            "threads": torch.get_num_threads(),
        },
        "timings": {**timer.seconds, **speed},
        "best_step": run.selector.step,
        "steps": run.step,
        # stopped_by: patience | cap; still_improving: the cap stopped a run whose last
        # validation was its best (the table notes flag it)
        **run.selector.outcome(),
        "device": str(run.device),
        **results,
        "history": run.history,
    }
    write_result(out / "metrics.json", metrics, "queries", run.outcomes)
    discard(out / "checkpoint.pt")
    return metrics
