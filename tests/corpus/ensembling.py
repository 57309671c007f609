"""Model ensembling, in the style of pytorch.org's tutorial: stack the weights of several
models with stack_module_state and run them together with vmap over functional_call."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state

from _corpus import init_, report, sines


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


num_models = 4
data = sines(16, 1, 28, 28)
minibatches = data[:8].reshape(num_models, 2, 1, 28, 28)
models = [init_(SimpleMLP(), scale=1.0 + 0.25 * i) for i in range(num_models)]

predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]
predictions2 = [model(data[:4]) for model in models]

params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


predictions1_vmap = torch.vmap(fmodel)(params, buffers, minibatches)
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop),
                      atol=1e-3, rtol=1e-5)
predictions2_vmap = torch.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data[:4])
assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)

report(same_minibatch=predictions2_vmap, different_minibatches=predictions1_vmap,
       stacked_shapes=[list(p.shape) for p in params.values()])
