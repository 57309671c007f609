"""Probability distributions in the style of the REINFORCE and VAE examples: a policy trained
with Categorical log-probabilities of recorded actions, a Gaussian encoder's KL term and
log-likelihood, and the common families' densities, means and entropies."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (Bernoulli, Beta, Categorical, Dirichlet, Gamma, Independent,
                                 Normal, TransformedDistribution, kl_divergence)
from torch.distributions.transforms import AffineTransform, ExpTransform

from _corpus import init_, labels, report, sines

# REINFORCE on recorded episodes: states, the actions taken and their returns
policy = init_(nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3)))
opt = torch.optim.Adam(policy.parameters(), lr=0.01)
states = sines(32, 4)
actions = labels(32, 3)
returns = sines(32, phase=0.3)
losses = []
for step in range(5):
    dist = Categorical(logits=policy(states))
    loss = -(dist.log_prob(actions) * (returns - returns.mean())).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())

# a VAE's loss terms with a Gaussian encoder and a Bernoulli decoder
mu, log_var = sines(8, 2, scale=0.5), sines(8, 2, scale=0.3, phase=1.0)
posterior = Independent(Normal(mu, (0.5 * log_var).exp()), 1)
prior = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)
kl = kl_divergence(posterior, prior)
recon = Bernoulli(logits=sines(8, 5, scale=2.0)).log_prob((sines(8, 5, phase=2.0) > 0).float())

# densities, moments and entropies of the common families
x = sines(6, scale=0.4, phase=0.2).abs() + 0.1
gamma = Gamma(torch.tensor(2.5), torch.tensor(1.5))
beta = Beta(torch.tensor(2.0), torch.tensor(3.0))
dirichlet = Dirichlet(torch.tensor([1.5, 2.0, 3.0]))
log_normal = TransformedDistribution(Normal(0.0, 1.0), [ExpTransform(), AffineTransform(1.0, 2.0)])
report(losses=losses, kl=kl, recon=recon.sum(-1), gamma_log_prob=gamma.log_prob(x),
       beta_log_prob=beta.log_prob(x / 2), gamma_entropy=gamma.entropy(),
       beta_mean_var=[beta.mean, beta.variance], dirichlet_entropy=dirichlet.entropy(),
       dirichlet_log_prob=dirichlet.log_prob(F.softmax(sines(3), -1)),
       log_normal_log_prob=log_normal.log_prob(x + 1.5), normal_cdf=Normal(0.0, 1.0).cdf(x))
