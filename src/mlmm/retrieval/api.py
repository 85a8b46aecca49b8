"""A trained model for other stages: ``load_trained(path)`` rebuilds it from ``model.pt``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from mlmm.errors import InputError
from mlmm.fingerprint import RECORD_KEY, check_inside_record
from mlmm.io import read_json_object, read_torch
from mlmm.retrieval.data import Vocabularies, pad
from mlmm.retrieval.model import JointEmbedding, rowwise_score


def build_model(record: dict, feature_dim: int, vocabs: Vocabularies) -> JointEmbedding:
    return JointEmbedding(
        feature_dim=feature_dim,
        vocab_sizes={name: len(v) for name, v in vocabs.vocabs.items()},
        embed_dim=record["embed_dim"],
        hidden=record["hidden"],
        joint=record["joint"],
        dropout=record["dropout"],
        similarity=record["similarity"],
        # .get: model.pt files written before these keys existed
        shared_projection=record.get("sentence_projection") == "shared",
        dropout_after_image_projection=record.get("image_dropout") == "projection",
        init=record.get("init", "vsepp"),
        dropout_position=record.get("dropout_position", "before_norm"),
        embedding_dropout=record.get("embedding_dropout", "elementwise"),
        word_dropout=record.get("word_dropout", 0.0),
        recurrent_dropout=record.get("recurrent_dropout", 0.0),
        use_abs=record.get("use_abs", True),
        image_norm=record.get("image_norm", "always"),
    )


class TrainedModel:
    """Embeds images and tokenised sentences into the joint space; scores pairs row by row."""

    def __init__(self, model: JointEmbedding, vocabs: Vocabularies, record: dict) -> None:
        self.model, self.vocabs, self.record = model.eval(), vocabs, record
        self.device = next(model.parameters()).device

    @property
    def languages(self) -> list[str]:
        return list(self.vocabs.encoder_of)

    @torch.no_grad()
    def embed_images(self, features: np.ndarray, batch: int = 1024) -> torch.Tensor:
        feats = torch.as_tensor(np.asarray(features, dtype=np.float32))
        parts = [
            self.model.embed_images(feats[a : a + batch].to(self.device)).cpu()
            for a in range(0, len(feats), batch)
        ]
        return torch.cat(parts) if parts else torch.empty(0, self.record["joint"])

    @torch.no_grad()
    def embed_sentences(
        self, language: str, sentences: list[list[str]], batch: int = 512
    ) -> torch.Tensor:
        if language not in self.vocabs.encoder_of:
            raise InputError(
                "embed_sentences", f"a language of the model {self.languages}", language
            )
        encoder = self.vocabs.encoder_of[language]
        parts = []
        for a in range(0, len(sentences), batch):
            ids, lengths = pad([self.vocabs.encode(language, s) for s in sentences[a : a + batch]])
            parts.append(self.model.embed_text(encoder, ids.to(self.device), lengths).cpu())
        return torch.cat(parts) if parts else torch.empty(0, self.record["joint"])

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """s(a_i, b_i) for every row; for order similarity a is the image (specific) side."""
        return rowwise_score(a, b, self.model.similarity)


def load_trained(
    path: str | Path, device: str = "cpu", run: dict | None = None
) -> TrainedModel:
    """The model of a ``train-retrieval`` run (its ``model.pt``, or the run's directory),
    refused unless the record inside it names the run asked for: ``run`` ({"variant": ...,
    "seed": ...}) when given, else the run of the ``metrics.json`` beside it when there is
    one (another variant's model copied into this run's directory is refused), and the
    model is as written (``mlmm.fingerprint.check_inside_record``)."""
    path = Path(path)
    if path.is_dir():
        path = path / "model.pt"
    if not path.is_file():
        raise InputError(path, "a trained model (mlmm train-retrieval)", "no such file")
    saved = read_torch(
        path, "a trained model (mlmm train-retrieval)", map_location=device, weights_only=False
    )
    if not isinstance(saved, dict):
        raise InputError(path, "a trained model (mlmm train-retrieval)", type(saved).__name__)
    asked = "asked for"
    if run is None and (path.parent / "metrics.json").is_file():
        metrics = read_json_object(
            path.parent / "metrics.json", ("variant", "seed"), "a metrics.json of train-retrieval"
        )
        run = {key: metrics[key] for key in ("variant", "seed")}
        asked = "the run of metrics.json beside it"
    check_inside_record(
        path, saved.get(RECORD_KEY), lambda: {k: v for k, v in saved.items() if k != RECORD_KEY},
        maker="train-retrieval for this variant", run=run, asked=asked,
    )  # fmt: skip
    vocabs = Vocabularies.from_state(saved["vocabularies"])
    model = build_model(saved["record"], saved["feature_dim"], vocabs)
    model.load_state_dict(saved["state"])
    return TrainedModel(model.to(device), vocabs, saved["record"])
