"""Attention NMT (Bahdanau et al. 2015) for the n-best lists that Calixto & Liu 2017 rerank.

``model`` (the network and its vocabularies), ``train`` (training with early stopping on
validation BLEU), ``search`` (greedy and beam search, n-best lists with features), ``features``
(feature plug-ins, e.g. embedding similarities) and ``metrics`` (BLEU/TER/chrF/METEOR).
Importing this package does not import torch.
"""
