"""An unmodified training loop with two optimizers a batch, as a GAN or an actor-critic has
(no dreamscope in it): a small Wasserstein GAN with gradient penalty on a DataLoader, the
discriminator's update and then the generator's, each with its own Adam. The penalty takes
gradients with torch.autograd.grad, which runs no backward through `loss.backward()`.
The tests trace it to check that a step stays one pass of the loop.

    python3 two_optimizers.py [--workers N] [--steps N] [--no-loader]
"""
import argparse

import torch
from torch import nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--no-loader", action="store_true", help="make each batch in the loop, no DataLoader")
    a = p.parse_args()
    torch.manual_seed(0)
    real_data = torch.randn(a.steps * a.batch_size, 16)
    if a.no_loader:
        batches = (real_data[i:i + a.batch_size] for i in range(0, len(real_data), a.batch_size))
    else:
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(real_data), batch_size=a.batch_size,
                                             num_workers=a.workers)
        batches = (real for (real,) in loader)
    gen = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 16))
    critic = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    opt_gen, opt_critic = torch.optim.Adam(gen.parameters()), torch.optim.Adam(critic.parameters())
    for real in batches:
        z = torch.randn(real.shape[0], 8)
        fake = gen(z)
        opt_critic.zero_grad()
        alpha = torch.rand(real.shape[0], 1)
        mixed = (alpha * real + (1 - alpha) * fake.detach()).requires_grad_(True)
        grad, = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
        penalty = ((grad.norm(dim=1) - 1) ** 2).mean()
        (critic(fake.detach()).mean() - critic(real).mean() + 10 * penalty).backward()
        opt_critic.step()
        opt_gen.zero_grad()
        loss = -critic(gen(z)).mean()
        loss.backward()
        opt_gen.step()
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
