"""Models for tests/tch.rs, made by torch itself: a ResNet-18 (the torchvision layout, 11.7 M
parameters, written out here so that torchvision is not needed) and a 2-layer LSTM forecaster
(8 features x 96 steps -> 24 values), both with seeded weights, traced with torch.jit.trace,
exported to ONNX with the TorchScript exporter, and run by torch on seeded inputs.

Writes into OUT: NAME.pt, NAME.onnx, NAME-altered.onnx (the export with every output shifted
by 1, a conversion that changed the model), NAME-input.npy (the input, named after forward's
argument) and NAME-output.npy (torch's own output, eval mode, no grad).
Usage: python tests/py/tch_models.py OUT
"""
import os
import sys

import numpy as np
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, image):
        x = self.layers(self.stem(image))
        return self.fc(torch.flatten(torch.mean(x, dim=(2, 3), keepdim=True), 1))


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 64, num_layers=2, batch_first=True)
        self.head = nn.Linear(64, 24)

    def forward(self, series):
        y, _ = self.lstm(series)
        return self.head(y[:, -1, :])


def make(out, name, model, x, arg):
    torch.manual_seed(0)
    model.eval()
    with torch.no_grad():
        # BatchNorm statistics that are not the identity, so a wrong fold would show.
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
        traced = torch.jit.trace(model, (x,))
        traced.save(os.path.join(out, f"{name}.pt"))
        y = model(x)
        np.save(os.path.join(out, f"{name}-input.npy"), x.numpy())
        np.save(os.path.join(out, f"{name}-output.npy"), y.numpy())
        torch.onnx.export(model, (x,), os.path.join(out, f"{name}.onnx"), input_names=[arg],
                          output_names=["output"], opset_version=17, dynamo=False)
        # A conversion that changed the model: every output shifted by 1 (MSE 1).
        head = model.fc if hasattr(model, "fc") else model.head
        head.bias.add_(1.0)
        torch.onnx.export(model, (x,), os.path.join(out, f"{name}-altered.onnx"), input_names=[arg],
                          output_names=["output"], opset_version=17, dynamo=False)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    make(out, "resnet18", ResNet18(), torch.rand(1, 3, 224, 224), "image")
    torch.manual_seed(1)
    make(out, "lstm", Forecaster(), torch.rand(1, 96, 8), "series")
    print(torch.__version__)


if __name__ == "__main__":
    main()
