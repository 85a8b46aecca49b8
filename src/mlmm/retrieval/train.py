"""The one trainer: reads a variant record, trains with early stopping, evaluates, writes the run.

Per step (``batching: switch``, Kádár Fig. 2): with probability ``c2c_probability`` a c2c batch
(caption pairs of one image across languages), otherwise a language is drawn uniformly and a
c2i batch of its (image, caption) pairs. With ``batching: joint`` (Calixto) a batch holds
images with one caption per language and the loss is beta * S_I + (1 - beta) * S_S. With
``batching: pooled`` (AME-CMR) every (image, caption) pair of every language is one example
of one shuffled stream, and a batch of mixed languages has one loss.
Validation and model selection are in ``selection``; a non-finite loss stops the run.
Every data stream is its own seeded generator; generators, optimiser and RNG states go into
``checkpoint.pt`` every ``checkpoint_every`` steps, so a killed run resumes where it stopped
and ends bit-identical to an uninterrupted one on CPU.
"""

from __future__ import annotations

import copy
import csv
import io
import math
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from mlmm import evaluation
from mlmm.data import multi30k
from mlmm.errors import InputError
from mlmm.io import atomic_path, write_json, write_text
from mlmm.provenance import Timer, provenance
from mlmm.retrieval import align
from mlmm.retrieval.api import build_model
from mlmm.retrieval.config import languages, select_languages
from mlmm.retrieval.data import (
    Cycler,
    Vocabularies,
    c2c_pairs,
    c2i_pairs,
    eval_set,
    joint_tuples,
    load_features,
    pad,
    training_captions,
)
from mlmm.retrieval.losses import ranking_loss, weighted_loss
from mlmm.retrieval.selection import Selector, selection_score

HISTORY_FIELDS = (
    ["step", "epoch", "loss", "lr", "rsum"]
    + [f"{m}_{d}" for d in ("i2t", "t2i") for m in ("R@1", "R@5", "R@10", "medr")]
    + ["alignment", "seconds"]
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
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def sts_tokens(sentence: str) -> list[str]:
    """Lowercased word / punctuation tokens, close to the Multi30K ``lc.norm.tok`` files: as
    Moses' tokenizer (no ``-a``), a hyphen inside a word keeps it whole ("t-shirt")."""
    return re.findall(r"\w+(?:-\w+)*|[^\w\s]", sentence.lower())


class Run:
    """Everything one (variant, seed) run holds; ``train`` drives it."""

    def __init__(self, record: dict, seed: int, paths: Paths, out: Path) -> None:
        self.record, self.seed, self.paths, self.out = record, seed, paths, Path(out)
        self.langs = languages(record)
        self.device = pick_device(record["device"])
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        captions = training_captions(paths.data_root, record, np.random.default_rng([seed, 0]))
        self.vocabs = Vocabularies.build(captions, record)
        n_train = len(multi30k.image_list(paths.data_root, "train"))
        self.features = torch.from_numpy(
            load_features(paths.features_root, record["backbone"], "train", n_train)
        )
        self.model = build_model(record, self.features.shape[1], self.vocabs).to(self.device)
        self.alignment = self._setup_word_embeddings()
        # training examples, encoded once
        if record["batching"] == "joint":
            self.tuples = [
                (i, [self.vocabs.encode(lang, c) for lang, c in zip(self.langs, caps, strict=True)])
                for i, caps in joint_tuples(captions)
            ]
            self.streams = {"joint": Cycler(len(self.tuples), np.random.default_rng([seed, 1]))}
            self.examples = len(self.tuples)
        elif record["batching"] == "pooled":
            self.pooled = [
                (lang, i, self.vocabs.encode(lang, c))
                for lang, pairs in c2i_pairs(captions).items()
                for i, c in pairs
            ]
            self.streams = {"pooled": Cycler(len(self.pooled), np.random.default_rng([seed, 1]))}
            self.examples = len(self.pooled)
        else:
            self.c2i = {
                lang: [(i, self.vocabs.encode(lang, c)) for i, c in pairs]
                for lang, pairs in c2i_pairs(captions).items()
                if pairs
            }
            self.streams = {
                lang: Cycler(len(pairs), np.random.default_rng([seed, 1, k]))
                for k, (lang, pairs) in enumerate(self.c2i.items())
            }
            self.c2c = []
            if record["c2c"]:
                self.c2c = [
                    (la, self.vocabs.encode(la, a), lb, self.vocabs.encode(lb, b))
                    for la, a, lb, b in c2c_pairs(captions)
                ]
                if self.c2c:
                    self.streams["c2c"] = Cycler(len(self.c2c), np.random.default_rng([seed, 2]))
            self.examples = sum(len(p) for p in self.c2i.values())
        if self.examples < 2:
            raise InputError(paths.data_root, "training captions for the variant", "none")
        self.tasks = np.random.default_rng([seed, 3])
        self.steps_per_epoch = math.ceil(self.examples / record["batch_size"])
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(params, lr=record["optimizer"]["lr"])
        self.step, self.history = 0, []
        self.selector = Selector(record["early_stopping"]["patience"])
        self.best_state = copy.deepcopy(self.model.state_dict())
        self.best_mapping = self._mapping_copy()
        self.select_langs = select_languages(record)
        self.val = eval_set(
            paths.data_root,
            paths.features_root,
            record["backbone"],
            record["validation"],
            self.select_langs,
        )

    # ------------------------------------------------------------------ word embeddings
    def _setup_word_embeddings(self) -> dict | None:
        """FME/AME/pretrained: load pre-aligned vectors into the embedding rows; for AME set up
        the mapping W (Procrustes start, RCSLS updates) and apply it to the English rows in the
        forward pass (AME-CMR's translators)."""
        record = self.record
        if record["word_embeddings"] == "random":
            return None
        if self.paths.vectors is None:
            raise InputError("train-retrieval", "--vectors DIR for fme/ame word embeddings", "none")
        vocab = self.vocabs.vocabs["shared"]
        weight = self.model.text["shared"].embed.weight
        for lang in self.langs:
            words = {w.split(":", 1)[1] for w in vocab.words if w.startswith(f"{lang}:")}
            vectors = align.read_vec(self.paths.vectors / f"wiki.{lang}.align.vec", words)
            for word, vec in vectors.items():
                if vec.shape[0] != record["embed_dim"]:
                    raise InputError(
                        self.paths.vectors / f"wiki.{lang}.align.vec",
                        f"{record['embed_dim']}-d vectors (embed_dim)",
                        f"{vec.shape[0]}-d",
                    )
                with torch.no_grad():
                    weight[vocab.index[f"{lang}:{word}"]] = torch.from_numpy(vec)
        if record["word_embeddings"] == "fme":
            weight.requires_grad_(False)
        if record["word_embeddings"] == "pretrained":  # AME's Mono: fastText start, no mapping
            return None
        others = [lang for lang in self.langs if lang != "en"]
        if "en" not in self.langs or not others or self.paths.muse is None:
            return None
        target = others[0]
        rows = {
            lang: {
                w.split(":", 1)[1]: i for i, w in enumerate(vocab.words) if w.startswith(f"{lang}:")
            }
            for lang in ("en", target)
        }
        train, held_out = align.alignment_lexicons(self.paths.muse, target, record["alignment"])
        src_ids = list(rows["en"].values())
        tgt_ids = list(rows[target].values())
        src_pos = {w: k for k, w in enumerate(rows["en"])}
        tgt_pos = {w: k for k, w in enumerate(rows[target])}
        train_pairs, _ = align.lexicon_indices(train, src_pos, tgt_pos)
        _, gold = align.lexicon_indices(held_out, src_pos, tgt_pos)
        state = {
            "pair": f"en-{target}",
            "src": torch.tensor(src_ids),
            "tgt": torch.tensor(tgt_ids),
            "gold": gold,
            "train": torch.tensor(train_pairs[: record["alignment"]["max_pairs"]]).view(-1, 2),
            "mapping": None,
        }
        if record["word_embeddings"] == "ame" and len(train_pairs) >= 2:
            with torch.no_grad():
                x = weight[state["src"][state["train"][:, 0]]].float()
                y = weight[state["tgt"][state["train"][:, 1]]].float()
            mapping = align.procrustes(x, y).to(self.device).requires_grad_(True)
            state["mapping"] = mapping
            state["optimizer"] = torch.optim.SGD([mapping], lr=record["alignment"]["lr"])
            rows = torch.zeros(len(vocab), dtype=torch.bool, device=self.device)
            rows[state["src"].to(self.device)] = True
            self.model.text["shared"].translator = (rows, mapping)
        return state

    def _mapping_copy(self) -> torch.Tensor | None:
        if self.alignment is None or self.alignment["mapping"] is None:
            return None
        return self.alignment["mapping"].detach().clone()

    def _restore_best(self) -> None:
        """The selected point: its weights and, for AME, its mapping."""
        self.model.load_state_dict(self.best_state)
        if self.best_mapping is not None:
            with torch.no_grad():
                self.alignment["mapping"].copy_(self.best_mapping)

    def alignment_ratio(self) -> float | None:
        if self.alignment is None:
            return None
        weight = self.model.text["shared"].embed.weight.detach().float()
        mapping = self.alignment["mapping"]
        return align.precision_at_1(
            weight[self.alignment["src"].to(self.device)],
            weight[self.alignment["tgt"].to(self.device)],
            self.alignment["gold"],
            None if mapping is None else mapping.detach(),
        )

    def _alignment_loss(self) -> torch.Tensor | None:
        state = self.alignment
        if state is None or state["mapping"] is None or len(state["train"]) == 0:
            return None
        # AME-CMR's RCSLS gradient moves the mapping only, not the word embeddings
        weight = self.model.text["shared"].embed.weight.detach()
        src = weight[state["src"].to(self.device)]
        tgt = weight[state["tgt"].to(self.device)]
        return align.rcsls_loss(
            src,
            tgt,
            state["train"].to(self.device),
            state["mapping"],
            self.record["alignment"]["knn"],
        )

    # ------------------------------------------------------------------ embedding helpers
    def _embed_captions(self, langs: list[str], ids: list[list[int]]) -> torch.Tensor:
        """Embed captions that may come from several languages (grouped by encoder)."""
        out: list[torch.Tensor | None] = [None] * len(ids)
        groups: dict[str, list[int]] = {}
        for row, lang in enumerate(langs):
            groups.setdefault(self.vocabs.encoder_of[lang], []).append(row)
        for encoder, rows in groups.items():
            tokens, lengths = pad([ids[r] for r in rows])
            emb = self.model.embed_text(encoder, tokens.to(self.device), lengths)
            for k, r in enumerate(rows):
                out[r] = emb[k]
        return torch.stack(out)  # type: ignore[arg-type]

    def _images(self, index) -> torch.Tensor:
        feats = self.features[torch.as_tensor(np.asarray(index), dtype=torch.long)]
        return self.model.embed_images(feats.to(self.device))

    def _rank(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ranking_loss(self.model.scores(a, b), self.record["margin"], self.record["loss"])

    def _batch_loss(self) -> tuple[torch.Tensor, int]:
        record, batch_size = self.record, self.record["batch_size"]
        if record["batching"] == "joint":
            batch = [self.tuples[i] for i in self.streams["joint"].next(batch_size)]
            images = self._images([i for i, _ in batch])
            caps = [
                self._embed_captions([lang] * len(batch), [c[k] for _, c in batch])
                for k, lang in enumerate(self.langs)
            ]
            image_terms = [self._rank(images, c) for c in caps]
            sentence_terms = []
            if record["beta"] < 1.0:
                sentence_terms = [
                    self._rank(caps[k], caps[m])
                    for k in range(len(caps))
                    for m in range(k + 1, len(caps))
                ]
            return weighted_loss(image_terms, sentence_terms, record["beta"]), len(batch)
        if record["batching"] == "pooled":
            batch = [self.pooled[i] for i in self.streams["pooled"].next(batch_size)]
            images = self._images([i for _, i, _ in batch])
            caps = self._embed_captions([lang for lang, _, _ in batch], [c for _, _, c in batch])
            return self._rank(images, caps), len(batch)
        if self.c2c and self.tasks.random() < record["c2c_probability"]:
            batch = [self.c2c[i] for i in self.streams["c2c"].next(batch_size)]
            a = self._embed_captions([p[0] for p in batch], [p[1] for p in batch])
            b = self._embed_captions([p[2] for p in batch], [p[3] for p in batch])
            return self._rank(a, b), len(batch)
        langs = list(self.c2i)
        lang = langs[int(self.tasks.integers(len(langs)))]
        batch = [self.c2i[lang][i] for i in self.streams[lang].next(batch_size)]
        images = self._images([i for i, _ in batch])
        caps = self._embed_captions([lang] * len(batch), [c for _, c in batch])
        return self._rank(images, caps), len(batch)

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(self, data, langs: list[str], folds: int = 1) -> dict:
        """Recalls per language on ``data`` (mean over ``folds`` equal folds), and the captions'
        embeddings."""
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
            out[lang] = evaluation.retrieval_metrics(
                images,
                texts[lang],
                data.per_image[lang],
                similarity=self.record["similarity"],
                folds=folds,
            )
        self.model.train()
        return out, texts

    def embed_text(self, lang: str, sentences: list[list[str]]) -> torch.Tensor:
        parts = []
        for a in range(0, len(sentences), 512):
            chunk = sentences[a : a + 512]
            parts.append(
                self._embed_captions(
                    [lang] * len(chunk), [self.vocabs.encode(lang, s) for s in chunk]
                )
                .float()
                .cpu()
            )
        return torch.cat(parts)

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_state(self) -> dict:
        state = {
            "record": self.record,
            "seed": self.seed,
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "streams": {k: s.state() for k, s in self.streams.items()},
            "tasks": self.tasks.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            "selector": self.selector.state(),
            "best_state": self.best_state,
            "best_mapping": self.best_mapping,
            "history": self.history,
            "mapping": None,
        }
        if self.alignment is not None and self.alignment["mapping"] is not None:
            state["mapping"] = self.alignment["mapping"].detach().clone()
            state["mapping_optimizer"] = self.alignment["optimizer"].state_dict()
        return state

    def save_checkpoint(self) -> None:
        with atomic_path(self.out / "checkpoint.pt") as tmp:
            torch.save(self._checkpoint_state(), tmp)

    def load_checkpoint(self) -> bool:
        path = self.out / "checkpoint.pt"
        if not path.is_file():
            return False
        state = torch.load(path, map_location=self.device, weights_only=False)
        if state["record"] != self.record or state["seed"] != self.seed:
            return False  # a checkpoint of another configuration: start afresh
        self.step, self.history = state["step"], state["history"]
        self.selector.load(state["selector"])
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        for key, stream in self.streams.items():
            stream.load(state["streams"][key])
        self.tasks.bit_generator.state = state["tasks"]
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.best_state = state["best_state"]
        self.best_mapping = state["best_mapping"]
        if state["mapping"] is not None:
            with torch.no_grad():
                self.alignment["mapping"].copy_(state["mapping"])
            self.alignment["optimizer"].load_state_dict(state["mapping_optimizer"])
        return True

    # ------------------------------------------------------------------ training
    def _lr(self, epoch: int) -> float:
        opt = self.record["optimizer"]
        decays = epoch // opt["decay_epochs"] if opt["decay_epochs"] else 0
        return opt["lr"] * opt["decay_factor"] ** decays

    def validate(self, loss: float, seconds: float) -> bool:
        """One validation point: history row, model selection; True = patience exhausted.

        The history's recall columns are those of the first selecting language; ``rsum`` is
        the recall sum over every selecting language."""
        metrics, _ = self.evaluate(self.val, self.select_langs)
        m = metrics[self.select_langs[0]]
        score = selection_score(metrics, self.select_langs, self.record["select_by"])
        rsum = sum(evaluation.recall_sum(metrics[lang]) for lang in self.select_langs)
        row = {
            "step": self.step,
            "epoch": self.step / self.steps_per_epoch,
            "loss": loss,
            "lr": self.optimizer.param_groups[0]["lr"],
            "rsum": rsum,
            **{f"{k}_{d}": m[d][k] for d in ("i2t", "t2i") for k in ("R@1", "R@5", "R@10", "medr")},
            "alignment": self.alignment_ratio(),
            "seconds": seconds,
        }
        self.history.append(row)
        if self.selector.update(score, self.step):
            self.best_state = copy.deepcopy(self.model.state_dict())
            self.best_mapping = self._mapping_copy()
        return self.selector.exhausted

    def _validation_due(self, every: int, total: int) -> bool:
        at_epoch_end = self.step % self.steps_per_epoch == 0
        return (
            self.step % every == 0
            or self.step == total
            or (self.record["early_stopping"]["epoch_end"] and at_epoch_end)
        )

    def train(self, progress: bool = True) -> dict:
        record = self.record
        total = record["epochs"] * self.steps_per_epoch
        every = record["early_stopping"]["every"] or self.steps_per_epoch
        resumed = self.load_checkpoint()
        use_amp = self.device.type == "cuda" and record["precision"] == "bf16"
        if self.device.type == "cuda":  # fp32 as the authors trained, matmuls in TF32
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.model.train()
        losses, pairs, start = [], 0, time.perf_counter()
        # In a log file (Snakemake), a progress line every 30 s rather than ten a second.
        interval = 0.1 if sys.stderr.isatty() else 30.0
        bar = tqdm(
            total=total,
            initial=self.step,
            disable=not progress,
            desc=record["name"],
            mininterval=interval,
        )
        stop = self.selector.exhausted
        while self.step < total and not stop:
            lr = self._lr(self.step // self.steps_per_epoch)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=use_amp):
                loss, n = self._batch_loss()
                align_every = record["alignment"]["every"]
                extra = self._alignment_loss() if self.step % align_every == 0 else None
                if extra is not None:
                    loss = loss + extra
            self.optimizer.zero_grad(set_to_none=True)
            if extra is not None:
                self.alignment["optimizer"].zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), record["grad_clip"])
            self.optimizer.step()
            if extra is not None:
                self.alignment["optimizer"].step()
                with torch.no_grad():  # keep W orthogonal (Joulin et al. 2018)
                    u, _, vt = torch.linalg.svd(self.alignment["mapping"].double())
                    self.alignment["mapping"].copy_((u @ vt).float())
            self.step += 1
            value = float(loss.detach())
            if not math.isfinite(value):
                raise InputError(
                    f"training {record['name']} (seed {self.seed})",
                    "a finite loss",
                    f"{value} at step {self.step}",
                )
            losses.append(value)
            pairs += n
            bar.update(1)
            if self._validation_due(every, total):
                stop = self.validate(float(np.mean(losses)), time.perf_counter() - start)
                bar.set_postfix(rsum=f"{self.history[-1]['rsum']:.1f}")
                losses = []
            if self.step % record["checkpoint_every"] == 0 or stop or self.step == total:
                self.save_checkpoint()
        bar.close()
        elapsed = time.perf_counter() - start
        return {
            "resumed": resumed,
            "pairs": pairs,
            "seconds": elapsed,
            "pairs_per_second": pairs / elapsed if elapsed > 0 else None,
        }

    # ------------------------------------------------------------------ final evaluation
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
        if folds > 1:  # COCO: 1K folds in "test", the whole 5K set beside them
            out["test_full"], _ = self.evaluate(data, self.langs)
        c2c = {}
        for la in self.langs:
            for lb in self.langs:
                if la != lb and data.per_image[la] == data.per_image[lb]:
                    c2c[f"{la}-{lb}"] = evaluation.c2c_metrics(
                        texts[la], texts[lb], data.per_image[la], self.record["similarity"]
                    )
        if c2c:
            out["c2c"] = c2c
        if self.record["sts"] and "en" in self.langs and self.paths.sts is not None:
            out["sts"] = self.sts()
        ratio = self.alignment_ratio()
        if ratio is not None:
            out["alignment"] = {self.alignment["pair"]: ratio}
        return out

    def sts(self) -> dict:
        """Pearson r of the English encoder on each SemEval images set found under ``sts``."""
        out = {}
        self.model.eval()
        for year_dir in sorted(p for p in self.paths.sts.iterdir() if p.is_dir()):
            inputs = year_dir / "STS.input.images.txt"
            if not inputs.is_file():
                continue
            s1, s2, gold = evaluation.read_sts(inputs, year_dir / "STS.gs.images.txt")
            with torch.no_grad():
                a = self.embed_text("en", [sts_tokens(s) for s in s1])
                b = self.embed_text("en", [sts_tokens(s) for s in s2])
            out[year_dir.name] = evaluation.sts_pearson(a, b, gold)
        self.model.train()
        return out

    def save_model(self) -> None:
        state = self.best_state
        if self.best_mapping is not None:  # bake W into the English rows, as AME-CMR loads it
            state = copy.deepcopy(state)
            key = "text.shared.embed.weight"
            src = self.alignment["src"].to(state[key].device)
            state[key][src] = state[key][src] @ self.best_mapping.to(state[key].device).t()
        saved = {
            "state": state,
            "vocabularies": self.vocabs.state(),
            "record": self.record,
            "feature_dim": int(self.features.shape[1]),
            "seed": self.seed,
        }
        with atomic_path(self.out / "model.pt") as tmp:
            torch.save(saved, tmp)


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
            **provenance({"retrieval": record}, seed),
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
    write_json(out / "metrics.json", metrics)
    (out / "checkpoint.pt").unlink(missing_ok=True)
    return metrics
