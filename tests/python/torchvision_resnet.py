"""An unmodified torchvision training script, as a user would write it (no dreamscope in it):
ResNet-18 on FakeData through PIL transforms and a DataLoader with worker processes, SGD.
The tests trace it to check what dreamscope records of a PyTorch job with no code change.

    python3 torchvision_resnet.py [--workers N] [--steps N] [--persistent] [--val] [--accumulate N]
"""
import argparse

import torch
import torch.nn.functional as F
import torchvision
from torchvision import transforms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--persistent", action="store_true")
    p.add_argument("--val", action="store_true", help="a validation pass under no_grad after each epoch")
    p.add_argument("--accumulate", type=int, default=1,
                   help="gradient accumulation: an optimizer step every N batches, zero_grad after it")
    a = p.parse_args()
    torch.manual_seed(0)
    tf = transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                             transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))])
    data = torchvision.datasets.FakeData(size=a.steps * a.batch_size, image_size=(3, 64, 64), num_classes=10,
                                         transform=tf)
    extra = {"persistent_workers": True} if a.persistent and a.workers else {}
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch_size, shuffle=True, num_workers=a.workers, **extra)
    model = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(a.epochs):
        model.train()
        for i, (x, y) in enumerate(loader):
            if a.accumulate == 1:
                opt.zero_grad()
            loss = F.cross_entropy(model(x), y) / a.accumulate
            loss.backward()
            if (i + 1) % a.accumulate == 0:
                opt.step()
                if a.accumulate > 1:
                    opt.zero_grad()
        if a.val:
            model.eval()
            with torch.no_grad():
                for x, y in loader:
                    model(x)
        print("epoch %d loss %.4f" % (epoch, loss.item()))


if __name__ == "__main__":
    main()
