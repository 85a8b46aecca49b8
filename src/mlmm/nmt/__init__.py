"""Attention NMT (Bahdanau et al. 2015) for the n-best lists that Calixto & Liu 2017 rerank.

``model`` (the network and its vocabularies), ``train`` (training with early stopping on
validation BLEU), ``search`` (greedy and beam search, n-best lists with features), ``features``
(feature plug-ins, e.g. embedding similarities) and ``metrics`` (BLEU/TER/chrF/METEOR).
Importing this package does not import torch.
"""

from mlmm.records import COMMANDS

# What the NMT stage commands read from their record (`--config RECORD`): these keys of the
# config's nmt section (or of a pivot language's NMT, mlmm.pivot.nmt_records), the settings of
# one run of `mlmm train-nmt` or `mlmm nbest` (listed in mlmm.records.COMMANDS); a key the
# record leaves out takes the schema's default (mlmm.schema.read_record).
TRAIN_RECORD_KEYS = COMMANDS["train-nmt"][1]
NBEST_RECORD_KEYS = COMMANDS["nbest"][1]


def train_record(section: dict) -> dict:
    """The record of one `mlmm train-nmt` run: the training keys of ``section``."""
    return {key: section[key] for key in TRAIN_RECORD_KEYS}


def nbest_record(section: dict) -> dict:
    """The record of one `mlmm nbest` run: the beam search keys of ``section``."""
    return {key: section[key] for key in NBEST_RECORD_KEYS}
