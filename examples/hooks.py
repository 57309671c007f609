"""Hooks: watch and change gradients and activations without editing the model.

Shows the four hooks PyTorch users reach for:

* ``tensor.register_hook(fn)``: called with a tensor's gradient during backward; may return a
  replacement (here: clip it); ``handle.remove()`` takes it off.
* ``tensor.retain_grad()``: keep ``.grad`` on a non-leaf tensor.
* ``module.register_forward_hook(fn)``: see (or replace) a module's output, e.g. to record
  activations.
* ``module.register_full_backward_hook(fn)``: see the gradients flowing into and out of a module.

Run with ``python examples/hooks.py``.
"""

from __future__ import annotations

import argparse

import ember as torch
from ember import nn


def tensor_hooks() -> None:
    print("# Tensor hooks")
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x          # dy/dx = 2x
    y.retain_grad()    # y is not a leaf: without this, y.grad stays None
    seen = []
    y.register_hook(lambda grad: seen.append(grad.clone()))
    # Returning a tensor from a hook replaces the gradient: clip x's gradient at 3.
    clip = x.register_hook(lambda grad: grad.clamp(max=3.0))
    y.sum().backward()
    print("gradient seen by y's hook:", seen[0])
    print("y.grad (retain_grad):", y.grad)
    print("x.grad, clipped to 3 by x's hook:", x.grad)
    clip.remove()
    x.grad = None
    (x * x).sum().backward()
    print("x.grad after clip.remove():", x.grad)

def module_hooks() -> None:
    print("\n# Module forward hooks: record activations")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 2))
    activations = {}

    def save_activation(name):
        def hook(module, inputs, output):
            activations[name] = output.detach()
        return hook

    handles = [module.register_forward_hook(save_activation(name))
               for name, module in model.named_children() if isinstance(module, nn.ReLU)]
    x = torch.randn(32, 8)
    out = model(x)
    for name, act in activations.items():
        print(f"layer {name} ({type(model[int(name)]).__name__}): shape {tuple(act.shape)}, "
              f"fraction active {(act > 0).float().mean().item():.2f}")

    print("\n# A forward hook that returns a value replaces the output")
    double = model[4].register_forward_hook(lambda module, inputs, output: output * 2)
    print("output doubled:", torch.allclose(model(x), 2 * out))
    double.remove()
    print("after remove():", torch.allclose(model(x), out))

    print("\n# Full backward hooks: gradients in and out of each Linear")
    for h in handles:
        h.remove()
    grad_norms = {}

    def record_grads(name):
        def hook(module, grad_input, grad_output):
            grad_norms[name] = (grad_output[0].norm().item(),
                                None if grad_input[0] is None else grad_input[0].norm().item())
        return hook

    for name, module in model.named_children():
        if isinstance(module, nn.Linear):
            module.register_full_backward_hook(record_grads(name))
    model(x.requires_grad_()).pow(2).sum().backward()
    for name in sorted(grad_norms, key=int):
        g_out, g_in = grad_norms[name]
        print(f"Linear {name}: |grad_output| = {g_out:.4f}, |grad_input| = {g_in:.4f}")
    print("grad_input of layer 0 is x.grad:",
          abs(grad_norms["0"][1] - x.grad.norm().item()) < 1e-4)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="accepted for symmetry; already fast")
    parser.parse_args(argv)
    tensor_hooks()
    module_hooks()
    print("\nall hooks ran")


if __name__ == "__main__":
    main()
