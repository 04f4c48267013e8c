"""An unmodified training loop on an IterableDataset (a stream, as LLM pre-training reads its
data; no dreamscope in it): each of the DataLoader's workers yields its share of the stream,
batches made by a collate of the program's own, persistent workers over two epochs, each
followed by an evaluation pass under no_grad. The tests trace it to check that each batch is
fetched and collated once in the worker that made it, and that the last attempt of each
worker, which finds the stream exhausted, is no fetch.

    python3 iterable_stream.py [--workers N] [--items N] [--batch-size N] [--epochs N]
"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Stream(IterableDataset):
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        info = get_worker_info()
        first, step = (info.id, info.num_workers) if info else (0, 1)
        for i in range(first, self.items, step):
            yield torch.randn(20), torch.tensor(i % 3)


def collate(items):
    return torch.stack([x for x, _ in items]), torch.stack([y for _, y in items])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--items", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(inplace=True), nn.Linear(64, 3))
    opt = torch.optim.AdamW(model.parameters())
    loader = DataLoader(Stream(a.items), batch_size=a.batch_size, num_workers=a.workers, collate_fn=collate,
                        persistent_workers=a.workers > 0)
    for _ in range(a.epochs):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            for x, _ in loader:
                model(x)
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
