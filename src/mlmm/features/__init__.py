"""Image features: one array per (dataset, split, backbone), row i = image i of the split list.

``extract`` is the whole stage (used by ``mlmm features`` and the Snakemake rule);
``write_features`` writes an array with the files its readers require beside it (list copy,
sidecar with the array's record); ``BACKBONES`` lists the supported backbones with their
layer and preprocessing.
"""

from mlmm.features.backbones import BACKBONES, FeatureNet, build_trunk, get_backbone, make_transform
from mlmm.features.extraction import Outputs, extract, write_features

__all__ = [
    "BACKBONES",
    "FeatureNet",
    "Outputs",
    "build_trunk",
    "extract",
    "get_backbone",
    "make_transform",
    "write_features",
]
