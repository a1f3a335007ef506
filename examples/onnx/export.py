#!/usr/bin/python3
# export.py: a CIFAR-sized ResNet-18 from torchvision (the 3x3 stem of the CIFAR papers, no
# max pool, 10 classes) exported to ONNX for mtc: resnet18.onnx beside this script, its
# weights PyTorch's initial ones (or a checkpoint's, with --weights FILE.pt: a state_dict).
#
# usage: /usr/bin/python3 examples/onnx/export.py [--weights FILE.pt] [--batch N] [-o OUT.onnx]
# then:  mtc examples/onnx/resnet18.tdsl -o resnet18.so --mem-budget=50%
import argparse
import os

import torch
import torchvision


def resnet18_cifar():
    m = torchvision.models.resnet18(num_classes=10)
    m.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    m.maxpool = torch.nn.Identity()
    return m


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="export a CIFAR-sized ResNet-18 to ONNX")
    ap.add_argument("--weights", help="a state_dict saved by torch.save")
    ap.add_argument("--batch", type=int, default=32, help="the batch of the example input")
    ap.add_argument("-o", default=os.path.join(here, "resnet18.onnx"))
    a = ap.parse_args()
    torch.manual_seed(0)
    m = resnet18_cifar()
    if a.weights:
        m.load_state_dict(torch.load(a.weights))
    x = torch.randn(a.batch, 3, 32, 32)
    # training mode: batch norm on batch statistics with running ones as buffers, as mtc trains
    # it; the batch dimension symbolic, so the tdsl model chooses it
    torch.onnx.export(m, x, a.o, opset_version=14, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}}, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    print("wrote %s (%.1f MB)" % (a.o, os.path.getsize(a.o) / 1e6))


if __name__ == "__main__":
    main()
