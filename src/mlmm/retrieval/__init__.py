"""Image-sentence ranking: one trainer for every variant of Kádár 2018, Calixto 2017 and AME 2019.

A variant is a record (see ``config.variant_defaults``); ``train.train_variant`` reads it, and
``api.load_trained`` rebuilds a trained model for other stages (the NMT reranker).
"""
