"""Every error a user is likely to hit: its type and its message, checked against PyTorch.

Each case is a program written once and run with ``lib = ember`` and ``lib = torch``: both must
raise the same exception type with the same message (torch's wording, so that searching for
an ember error finds torch's answers), and the message must contain the case's key phrase.
"""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import pytest

import ember

X3 = [1.0, -2.0, 3.0]


def _raised(program, lib) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            program(lib)
        except Exception as exc:  # noqa: BLE001 - the exception is what is under test
            return exc
    raise AssertionError(f"{lib.__name__}: no exception raised")


def _message(exc: BaseException) -> str:
    return str(exc).split(" (Triggered internally at")[0]


def _custom(lib, grads):
    """A two-input custom Function whose backward returns ``grads(lib, g)``."""
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return grads(lib, g)
    return F


def _leaf(lib):
    return lib.tensor(X3, requires_grad=True)


def _grad_of_2x(lib, *others, grad_outputs=None, summed=True, **kwargs):
    """``autograd.grad`` of ``2 * x`` (summed) w.r.t. ``[x, *others]`` for a fresh leaf x."""
    x = _leaf(lib)
    y = x * 2
    return lib.autograd.grad(y.sum() if summed else y, [x, *others], grad_outputs, **kwargs)


def _hooked_backward(lib, replace, leaf=False):
    x = _leaf(lib)
    y = x if leaf else x * 2

    def hook(g):
        return replace(g)
    y.register_hook(hook)
    (y * 3).sum().backward()


def _second_backward(lib):
    x = _leaf(lib)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _second_grad(lib):
    x = _leaf(lib)
    y = x.exp().sum()
    lib.autograd.grad(y, x)
    lib.autograd.grad(y, x)


def _saved_tensors_after_backward(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
    y = Exp.apply(_leaf(lib))
    y.sum().backward()
    _ = y.grad_fn.saved_tensors


def _under_no_grad(lib):
    x = _leaf(lib)
    with lib.no_grad():
        y = (x * 2).sum()
    y.backward()


def _modified_output(lib):
    y = _leaf(lib).exp()
    y.add_(1)
    y.sum().backward()


def _modified_input(lib):
    a = _leaf(lib) * 1
    y = a.sin()
    a.mul_(2)
    y.sum().backward()


def _modified_constant(lib):
    c = lib.tensor([1.0, 2.0, 3.0])
    y = _leaf(lib) * c
    c.zero_()
    y.sum().backward()


def _modified_through_view(lib):
    a = lib.tensor([X3, X3], requires_grad=True) * 1
    y = a.sin()  # saves a
    a[0].add_(1)
    y.sum().backward()


def _saved_view_modified_through_base(lib):
    a = lib.tensor([X3, X3], requires_grad=True) * 1
    y = a.t().sin()  # saves the view a.t()
    a[0].add_(1)
    y.sum().backward()


def _modified_float64(lib):
    x = lib.tensor([[1.0, 2.0]], dtype=lib.float64, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    y.sum().backward()


def _leaf_setitem(lib):
    x = _leaf(lib)
    x[0] = 1.0


def _leaf_iadd(lib):
    x = _leaf(lib)
    x += 1


def _inference_tensor(lib):
    with lib.inference_mode():
        return lib.ones(3)


def _inference_saved(lib):
    _leaf(lib) * _inference_tensor(lib)


def _inference_saved_by_function(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g, None
    F.apply(_leaf(lib), _inference_tensor(lib))


def _save_non_tensor(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, 3)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g
    F.apply(_leaf(lib))


def _no_backward(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2
    F.apply(_leaf(lib)).sum().backward()


def _no_forward(lib):
    class F(lib.autograd.Function):
        pass
    F.apply(_leaf(lib))


def _mark_dirty_leaf(lib, view=False):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 2
    F.apply(_leaf(lib)[1:] if view else _leaf(lib))


def _once_differentiable_twice(lib):
    once = ember.autograd.once_differentiable if lib is ember \
        else lib.autograd.function.once_differentiable

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g
    x = _leaf(lib)
    (g,) = lib.autograd.grad(Cube.apply(x), x, lib.ones(3, requires_grad=True),
                             create_graph=True)
    g.sum().backward()


def _if_tensor(lib):
    if lib.tensor(X3) > 0:
        pass


def _detach_view_in_place(lib):
    (_leaf(lib) * 2)[:2].detach_()


def _out_with_grad(lib):
    lib.add(_leaf(lib), 1, out=lib.zeros(3))


def _in_place_int_cast(lib):
    lib.ones(3, dtype=lib.int64).add_(1.5)


def _in_place_broadcast(lib):
    lib.ones(3).add_(lib.ones(2, 3))


def _in_place_inference(lib):
    _inference_tensor(lib).add_(1)


def _inference_requires_grad(lib):
    _inference_tensor(lib).requires_grad_()


# (id, program, exception type, key phrase that must appear in both messages)
CASES = [
    # ---- backward and autograd.grad
    ("non_scalar_backward", lambda lib: (_leaf(lib) * 2).backward(), RuntimeError,
     "grad can be implicitly created only for scalar outputs"),
    ("non_scalar_grad", lambda lib: lib.autograd.grad(_leaf(lib) * 2, _leaf(lib)),
     RuntimeError, "grad can be implicitly created only for scalar outputs"),
    ("backward_twice", _second_backward, RuntimeError,
     "Trying to backward through the graph a second time"),
    ("grad_twice", _second_grad, RuntimeError,
     "Trying to backward through the graph a second time"),
    ("saved_tensors_after_backward", _saved_tensors_after_backward, RuntimeError,
     "directly access saved tensors after they have already been freed"),
    ("backward_without_grad", lambda lib: lib.tensor(X3).sum().backward(), RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("backward_under_no_grad", _under_no_grad, RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("backward_second_output_without_grad",
     lambda lib: lib.autograd.backward([_leaf(lib).sum(), lib.tensor(1.0)]), RuntimeError,
     "element 1 of tensors does not require grad and does not have a grad_fn"),
    ("grad_of_output_without_grad",
     lambda lib: lib.autograd.grad(lib.tensor(X3).sum(), _leaf(lib)), RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("grad_unused_input",
     lambda lib: lib.autograd.grad((_leaf(lib) * 2).sum(), [_leaf(lib)]), RuntimeError,
     "appears to not have been used in the graph. Set allow_unused=True"),
    ("grad_unused_second_input", lambda lib: _grad_of_2x(lib, _leaf(lib)), RuntimeError,
     "The differentiated Tensor at index 1 appears to not have been used in the graph"),
    ("grad_input_without_grad", lambda lib: _grad_of_2x(lib, lib.ones(3)), RuntimeError,
     "One of the differentiated Tensors does not require grad"),
    ("grad_input_not_a_tensor", lambda lib: _grad_of_2x(lib, 3.0), RuntimeError,
     "all inputs have to be Tensors or GradientEdges, but got float"),
    ("backward_inputs_without_grad",
     lambda lib: (_leaf(lib) * 2).sum().backward(inputs=[lib.ones(3)]), RuntimeError,
     "can't retain_grad on Tensor that has requires_grad=False"),
    ("backward_inputs_empty", lambda lib: (_leaf(lib) * 2).sum().backward(inputs=[]),
     RuntimeError, "`inputs` argument to `backward()` cannot be empty."),
    ("backward_gradient_shape", lambda lib: (_leaf(lib) * 2).backward(lib.ones(2)),
     RuntimeError, ("Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and "
     "output[0] has a shape of torch.Size([3]).")),
    ("grad_outputs_shape", lambda lib: _grad_of_2x(lib, grad_outputs=lib.ones(2), summed=False),
     RuntimeError,
     "Mismatch in shape: grad_output[0] has a shape of torch.Size([2])"),
    ("grad_outputs_not_tensor", lambda lib: _grad_of_2x(lib, grad_outputs=[[1.0]]), TypeError,
     "gradients can be either Tensors or None, but got list"),
    ("materialize_grads_with_allow_unused_false",
     lambda lib: _grad_of_2x(lib, allow_unused=False, materialize_grads=True), ValueError,
     "Expected allow_unused to be True or not passed when materialize_grads=True"),
    ("int_output_backward",
     lambda lib: lib.autograd.backward(lib.tensor([1, 2]).sum(), lib.tensor(1)), RuntimeError,
     "element 0 of tensors does not require grad"),
    # ---- in-place and version counters
    ("modified_saved_output", _modified_output, RuntimeError,
     ("one of the variables needed for gradient computation has been modified by an inplace "
     "operation: [torch.FloatTensor [3]], which is output 0 of Exp, is at version 1; expected "
     "version 0 instead.")),
    ("modified_saved_input", _modified_input, RuntimeError,
     "[torch.FloatTensor [3]], which is output 0 of Mul, is at version 1; expected version 0"),
    ("modified_saved_constant", _modified_constant, RuntimeError,
     "[torch.FloatTensor [3]] is at version 1; expected version 0 instead"),
    ("modified_through_a_view", _modified_through_view, RuntimeError,
     ("[torch.FloatTensor [2, 3]], which is output 0 of torch::autograd::CopySlices, is at "
     "version 1; expected version 0")),
    ("modified_double_saved_output", _modified_float64, RuntimeError,
     "[torch.DoubleTensor [1, 2]], which is output 0 of Sigmoid"),
    ("leaf_in_place", lambda lib: _leaf(lib).add_(1), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    ("leaf_augmented_assignment", _leaf_iadd, RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    ("leaf_zero_", lambda lib: _leaf(lib).zero_(), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    ("leaf_setitem", _leaf_setitem, RuntimeError,
     "a view of a leaf Variable that requires grad is being used in an in-place operation."),
    ("view_of_leaf_in_place", lambda lib: _leaf(lib)[:2].mul_(2), RuntimeError,
     "a view of a leaf Variable that requires grad is being used in an in-place operation."),
    ("reshaped_leaf_in_place", lambda lib: _leaf(lib).view(3, 1).fill_(0), RuntimeError,
     "a view of a leaf Variable that requires grad is being used in an in-place operation."),
    ("in_place_int_cast", _in_place_int_cast, RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("in_place_broadcast", _in_place_broadcast, RuntimeError,
     "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    ("out_with_grad", _out_with_grad, RuntimeError,
     ("add(): functions with out=... arguments don't support automatic differentiation, but "
     "one of the arguments requires grad.")),
    ("detach_view_in_place", _detach_view_in_place, RuntimeError,
     "Can't detach views in-place. Use detach() instead."),
    # ---- requires_grad
    ("int_tensor_requires_grad", lambda lib: lib.tensor([1, 2], requires_grad=True),
     RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"),
    ("int_factory_requires_grad",
     lambda lib: lib.zeros(2, dtype=lib.int64, requires_grad=True), RuntimeError,
     "Only Tensors of floating point and complex dtype can require gradients"),
    ("int_requires_grad_", lambda lib: lib.tensor([1, 2]).requires_grad_(), RuntimeError,
     "only Tensors of floating point dtype can require gradients"),
    ("non_leaf_requires_grad_", lambda lib: (_leaf(lib) * 2).requires_grad_(False),
     RuntimeError, ("you can only change requires_grad flags of leaf variables. If you want to "
     "use a computed variable in a subgraph that doesn't require differentiation use "
     "var_no_grad = var.detach().")),
    ("non_leaf_requires_grad_attribute",
     lambda lib: setattr(_leaf(lib) * 2, "requires_grad", False), RuntimeError,
     "you can only change requires_grad flags of leaf variables."),
    ("hook_changes_size", lambda lib: _hooked_backward(lib, lambda g: g[:2]), RuntimeError,
     "hook 'hook' has changed the size of value"),
    ("hook_changes_type", lambda lib: _hooked_backward(lib, lambda g: g.double()),
     RuntimeError, ("hook 'hook' has changed the type of value (was torch.FloatTensor got "
                    "torch.DoubleTensor)")),
    ("leaf_hook_changes_size", lambda lib: _hooked_backward(lib, lambda g: g[:2], leaf=True),
     RuntimeError, "hook 'hook' has changed the size of value"),
    ("hook_returns_non_tensor", lambda lib: _hooked_backward(lib, lambda g: 3.0, leaf=True),
     TypeError, "expected Variable, but hook returned 'float'"),
    ("hook_without_grad", lambda lib: lib.ones(3).register_hook(lambda g: g), RuntimeError,
     "cannot register a hook on a tensor that doesn't require gradient"),
    ("retain_grad_without_grad", lambda lib: lib.ones(3).retain_grad(), RuntimeError,
     "can't retain_grad on Tensor that has requires_grad=False"),
    ("post_accumulate_hook_on_non_leaf",
     lambda lib: (_leaf(lib) * 2).register_post_accumulate_grad_hook(print), RuntimeError,
     "post accumulate grad hooks cannot be registered on non-leaf tensors"),
    ("grad_assign_shape", lambda lib: setattr(_leaf(lib), "grad", lib.ones(3, 1)),
     RuntimeError, "attempting to assign a gradient of size '[3, 1]' to a tensor of size '[3]'"),
    ("grad_assign_dtype", lambda lib: setattr(_leaf(lib), "grad", lib.ones(3).double()),
     RuntimeError, ("attempting to assign a gradient with dtype 'double' to a tensor with "
     "grad_dtype 'Float'")),
    ("grad_assign_type", lambda lib: setattr(_leaf(lib), "grad", [1.0]), TypeError,
     "assigned grad expected to be a Tensor or None but got grad of type list"),
    ("deepcopy_non_leaf", lambda lib: copy.deepcopy(_leaf(lib) * 2), RuntimeError,
     ("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
     "protocol at the moment.")),
    # ---- inference mode
    ("inference_tensor_saved_for_backward", _inference_saved, RuntimeError,
     "Inference tensors cannot be saved for backward."),
    ("inference_tensor_saved_by_function", _inference_saved_by_function, RuntimeError,
     "Inference tensors cannot be saved for backward."),
    ("inference_tensor_in_place", _in_place_inference, RuntimeError,
     "Inplace update to inference tensor outside InferenceMode is not allowed."),
    ("inference_tensor_requires_grad", _inference_requires_grad, RuntimeError,
     "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."),
    # ---- custom Function
    ("function_too_many_grads",
     lambda lib: _custom(lib, lambda lib, g: (g, g, g)).apply(_leaf(lib), _leaf(lib))
     .sum().backward(), RuntimeError,
     "function FBackward returned an incorrect number of gradients (expected 2, got 3)"),
    ("function_too_few_grads",
     lambda lib: _custom(lib, lambda lib, g: g).apply(_leaf(lib), _leaf(lib)).sum()
     .backward(), RuntimeError,
     "function FBackward returned an incorrect number of gradients (expected 2, got 1)"),
    ("function_grad_wrong_shape",
     lambda lib: _custom(lib, lambda lib, g: (lib.ones(4), g)).apply(_leaf(lib), _leaf(lib))
     .sum().backward(), RuntimeError,
     ("Function FBackward returned an invalid gradient at index 0 - got [4] but expected "
     "shape compatible with [3]")),
    ("function_grad_not_tensor",
     lambda lib: _custom(lib, lambda lib, g: (1.0, g)).apply(_leaf(lib), _leaf(lib)).sum()
     .backward(), RuntimeError, "expected Variable or None (got float)"),
    ("function_legacy_call",
     lambda lib: _custom(lib, lambda lib, g: g)()(_leaf(lib), _leaf(lib)), RuntimeError,
     "Legacy autograd function with non-static forward method is deprecated."),
    ("function_without_forward", _no_forward, NotImplementedError,
     "You must implement the forward function for custom autograd.Function."),
    ("function_without_backward", _no_backward, NotImplementedError,
     ("You must implement either the backward or vjp method for your custom "
     "autograd.Function to use it with backward mode AD.")),
    ("function_saves_non_tensor", _save_non_tensor, TypeError,
     "save_for_backward can only save variables, but argument 1 is of type int"),
    ("function_mark_dirty_leaf", _mark_dirty_leaf, RuntimeError,
     "a leaf Variable that requires grad"),
    ("function_mark_dirty_view_of_leaf", lambda lib: _mark_dirty_leaf(lib, view=True),
     RuntimeError, ("a view of a leaf Variable that requires grad is being used in an in-place "
     "operation.")),
    ("once_differentiable_twice", _once_differentiable_twice, RuntimeError,
     "trying to differentiate twice a function that was marked with @once_differentiable"),
    # ---- conversions
    ("numpy_of_requires_grad", lambda lib: _leaf(lib).numpy(), RuntimeError,
     "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    ("asarray_of_requires_grad", lambda lib: np.asarray(_leaf(lib)), RuntimeError,
     "Can't call numpy() on Tensor that requires grad."),
    ("item_of_many", lambda lib: lib.tensor(X3).item(), RuntimeError,
     "a Tensor with 3 elements cannot be converted to Scalar"),
    ("item_of_empty", lambda lib: lib.tensor([]).item(), RuntimeError,
     "a Tensor with 0 elements cannot be converted to Scalar"),
    ("float_of_many", lambda lib: float(lib.tensor(X3)), ValueError,
     "only one element tensors can be converted to Python scalars"),
    ("int_of_many", lambda lib: int(lib.tensor(X3)), ValueError,
     "only one element tensors can be converted to Python scalars"),
    ("bool_of_many", lambda lib: bool(lib.tensor(X3)), RuntimeError,
     "Boolean value of Tensor with more than one value is ambiguous"),
    ("if_of_many", _if_tensor, RuntimeError,
     "Boolean value of Tensor with more than one value is ambiguous"),
    ("bool_of_empty", lambda lib: bool(lib.tensor([])), RuntimeError,
     "Boolean value of Tensor with no values is ambiguous"),
    ("index_with_float_tensor", lambda lib: [1, 2, 3][lib.tensor(1.0)], TypeError,
     "only integer tensors of a single element can be converted to an index"),
    ("len_of_0d", lambda lib: len(lib.tensor(1.0)), TypeError, "len() of a 0-d tensor"),
    ("iter_of_0d", lambda lib: iter(lib.tensor(1.0)), TypeError,
     "iteration over a 0-d tensor"),
    # ---- shapes
    ("view_of_non_contiguous", lambda lib: lib.ones(2, 3).t().view(6), RuntimeError,
     ("view size is not compatible with input tensor's size and stride (at least one "
     "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")),
    ("view_wrong_numel", lambda lib: lib.ones(2, 3).view(4), RuntimeError,
     "shape '[4]' is invalid for input of size 6"),
    ("view_two_inferred", lambda lib: lib.ones(2, 3).view(-1, -1), RuntimeError,
     "only one dimension can be inferred"),
    ("reshape_wrong_numel", lambda lib: lib.ones(2, 3).reshape(5, -1), RuntimeError,
     "shape '[5, -1]' is invalid for input of size 6"),
    ("mm_shapes", lambda lib: lib.ones(2, 3).mm(lib.ones(2, 3)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ("mm_not_matrix", lambda lib: lib.ones(3).mm(lib.ones(3, 2)), RuntimeError,
     "self must be a matrix"),
    ("matmul_shapes", lambda lib: lib.ones(2, 3) @ lib.ones(4, 5), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("matmul_vectors", lambda lib: lib.ones(3) @ lib.ones(4), RuntimeError,
     ("inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
     "elements, but got 3 and 4 elements respectively")),
    ("matmul_matrix_vector", lambda lib: lib.ones(2, 3) @ lib.ones(4), RuntimeError,
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    ("matmul_batch", lambda lib: lib.ones(2, 2, 3) @ lib.ones(3, 3, 4), RuntimeError,
     ("The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
     "dimension 0")),
    ("matmul_0d", lambda lib: lib.ones(()) @ lib.ones(3), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ("bmm_shapes", lambda lib: lib.ones(2, 2, 3).bmm(lib.ones(2, 4, 3)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    ("expand_size", lambda lib: lib.ones(2, 3).expand(4, 3), RuntimeError,
     ("The expanded size of the tensor (4) must match the existing size (2) at non-singleton "
     "dimension 0.  Target sizes: [4, 3].  Tensor sizes: [2, 3]")),
    ("expand_fewer_dims", lambda lib: lib.ones(2, 3).expand(3), RuntimeError,
     ("expand(torch.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be "
     "greater or equal to the number of dimensions in the tensor (2)")),
    ("add_broadcast", lambda lib: lib.ones(2, 3) + lib.ones(4), RuntimeError,
     ("The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
     "dimension 1")),
    ("mul_broadcast_leading", lambda lib: lib.ones(5, 2, 3) * lib.ones(4, 1, 3), RuntimeError,
     ("The size of tensor a (5) must match the size of tensor b (4) at non-singleton "
     "dimension 0")),
    ("broadcast_with_grad", lambda lib: _leaf(lib) - lib.ones(2, 2), RuntimeError,
     ("The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
     "dimension 1")),
    ("sub_bools", lambda lib: lib.tensor([True]) - lib.tensor([False]), RuntimeError,
     "Subtraction, the `-` operator, with two bool tensors is not supported."),
    # ---- dims and indices
    ("sum_dim_out_of_range", lambda lib: lib.ones(2, 3).sum(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("transpose_dim_out_of_range", lambda lib: lib.ones(2, 3).transpose(0, -3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("unsqueeze_dim_out_of_range", lambda lib: lib.ones(2, 3).unsqueeze(3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("size_dim_out_of_range", lambda lib: lib.ones(2, 3).size(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("index_out_of_bounds", lambda lib: lib.ones(2, 3)[2], IndexError,
     "index 2 is out of bounds for dimension 0 with size 2"),
    ("index_out_of_bounds_dim1", lambda lib: lib.ones(2, 3)[:, 3], IndexError,
     "index 3 is out of bounds for dimension 1 with size 3"),
    ("index_list_out_of_bounds", lambda lib: lib.ones(2, 3)[[0, 5]], IndexError,
     "index 5 is out of bounds for dimension 0 with size 2"),
    ("index_tensor_out_of_bounds", lambda lib: lib.ones(3)[lib.tensor([3])], IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("too_many_indices", lambda lib: lib.ones(2, 3)[0, 0, 0], IndexError,
     "too many indices for tensor of dimension 2"),
    ("float_index", lambda lib: lib.ones(3)[lib.tensor([1.0])], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
]


@pytest.mark.parametrize("program, exc_type, phrase", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_error_matches_torch(torch, program, exc_type, phrase):
    e = _raised(program, ember)
    t = _raised(program, torch)
    assert type(t) is exc_type or isinstance(t, exc_type), f"torch raised {t!r}"
    assert type(e) is exc_type, f"ember raised {e!r}"
    assert phrase in _message(t), f"torch says: {_message(t)}"
    assert _message(e) == _message(t)


# --------------------------------------------------------------------------- ember-only
@pytest.mark.parametrize("program, exc_type, pattern", [
    (lambda: ember.autograd.grad([_leaf(ember) * 2], _leaf(ember),
                                 [ember.ones(3), ember.ones(3)]),
     RuntimeError, "got 2 gradients for 1 outputs"),
    (lambda: ember.autograd.backward([3.0]), TypeError,
     "backward expects Tensors as outputs, but element 0 is a float"),
    (lambda: _leaf(ember).register_hook(3), TypeError, "hook must be callable, but got int"),
    (lambda: ember.autograd.grad((_leaf(ember) * 2).sum(), []), RuntimeError,
     "grad requires non-empty inputs"),
    (lambda: ember.ones(2, 3)[ember.tensor([True, False, True])], IndexError, "mask"),
], ids=["grad_outputs_count", "backward_non_tensor", "hook_not_callable", "grad_no_inputs",
        "mask_shape"])
def test_ember_errors_that_torch_reports_differently(program, exc_type, pattern):
    # torch defers or words these differently (an AssertionError, a failure at backward
    # time); ember reports them at once, naming the problem
    with pytest.raises(exc_type, match=re.escape(pattern)):
        program()


def test_anomaly_mode_error_names_the_failing_node(torch):
    messages = []
    for lib in (ember, torch):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                y = (x.sqrt() * 0).sum()
                with pytest.raises(RuntimeError) as info:
                    y.backward()
        messages.append(str(info.value))
    assert messages[0] == messages[1] == ("Function 'SqrtBackward0' returned nan values in "
                                          "its 0th output.")


def test_saved_view_modified_through_its_base(torch):
    # torch names the view's regenerated node (AsStrided); ember replays the view's own ops
    def masked(lib):
        return re.sub(r"output 0 of \w+,", "output 0 of <view>,",
                      _message(_raised(_saved_view_modified_through_base, lib)))
    e, t = masked(ember), masked(torch)
    assert "[torch.FloatTensor [3, 2]], which is output 0 of <view>, is at version 1; " in t
    assert e == t


def test_modified_error_detail_for_custom_function_output(torch):
    def program(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y
        y = Exp.apply(_leaf(lib))
        y.mul_(2)
        y.sum().backward()
    e, t = _message(_raised(program, ember)), _message(_raised(program, torch))
    assert "has been modified by an inplace operation" in t
    assert e == t


def test_gradcheck_error_message(torch):
    for lib in (ember, torch):
        class Wrong(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 3
        x = lib.tensor(X3, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                               "input 0,\nnumerical:"):
            lib.autograd.gradcheck(Wrong.apply, (x,))
