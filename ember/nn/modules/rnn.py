"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells, as ``torch.nn``.

Parameters are torch's (names, shapes, order, gate order i,f,g,o for LSTM and r,z,n for GRU),
so state dicts interchange with torch's. Each layer and direction is one fused op
(``ops/rnn.py``'s ``rnn_layer``: one graph node, the input projection of the whole sequence in
one matmul, the time steps in place on arrays, a hand-written backward through time), as
torch's fused CPU kernel. The cells run ``ops/rnn.py``'s per-step ember ops.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ..._backend import dtypes as _dt
from ..._tensor import Tensor
from ...amp import _state as _amp
from ...ops.creation import empty, zeros
from ...ops.products import addmm
from ...ops.rnn import gru_step, lstm_step, rnn_layer, rnn_layer_per_step
from ...ops.shape import cat, stack
from ...ops.unary import relu, tanh
from .. import init
from ..functional.dropout import dropout as _dropout
from ..functional.linear import linear
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]


def _reject_packed(module: Module, input) -> None:
    if isinstance(input, PackedSequence):
        raise NotImplementedError(f"{type(module).__name__}: PackedSequence input is not "
                                  "supported yet; pad the batch instead "
                                  "(nn.utils.rnn.pad_packed_sequence)")
    if not isinstance(input, Tensor):
        raise TypeError(f"{type(module).__name__}: expected input to be a Tensor, but got "
                        f"{type(input).__name__}")


# --------------------------------------------------------------------------- RNNBase


class RNNBase(Module):
    """Shared by ``RNN``, ``LSTM`` and ``GRU`` (``torch.nn.RNNBase``): parameters, checks and
    the stacked, optionally bidirectional, layer loop."""

    __constants__ = ("mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size")

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_sizes = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
        if mode not in gate_sizes:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = gate_sizes[mode] * hidden_size

        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                params = [empty(gate_size, layer_input_size, dtype=dtype),
                          empty(gate_size, real_hidden_size, dtype=dtype)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    params += [empty(gate_size, dtype=dtype), empty(gate_size, dtype=dtype)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    params.append(empty(proj_size, hidden_size, dtype=dtype))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, p in zip(names, params):
                    setattr(self, name, Parameter(p))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        """The parameters in torch's flat order (always the current objects)."""
        params = self._parameters
        return [params.get(name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """Per layer and direction: [w_ih, w_hh, (b_ih, b_hh), (w_hr)]."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op, as torch's on CPU (cuDNN packs weights into one buffer on GPU)."""

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if "proj_size" not in state:
            self.proj_size = 0

    # ------------------------------------------------------------------ checks (torch's)
    def check_input(self, input: Tensor, batch_sizes=None) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes=None) -> tuple[int, int, int]:
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ------------------------------------------------------------------ the computation
    def _prepare(self, input):
        """Unbatched input gets a batch dim; missing states are zeros. Returns the
        time-major input, the states, and whether the input was batched."""
        _reject_packed(self, input)
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        if input.dim() not in (2, 3):
            tail = " tensor instead" if name == "RNN" else " instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail}")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        return input, is_batched, batch_dim

    # the per-step path (ember ops step by step) when False: kept for tests of the fused op
    _fused = True

    def _run(self, input: Tensor, states: list[Tensor]):
        """The stacked layers over time-major or batch-first ``input`` (3-D) with initial
        ``states`` (each (layers * directions, batch, size)); returns output, final states."""
        if _amp.active and self.mode == "LSTM":  # torch's CPU autocast lists lstm
            return self._run_autocast(input, states)
        x = input.transpose(0, 1) if self.batch_first else input  # (T, B, features)
        num_directions = 2 if self.bidirectional else 1
        init_h = states[0].unbind(0)
        init_c = states[1].unbind(0) if len(states) > 1 else None
        finals: list[list[Tensor]] = [[] for _ in states]
        params = self._parameters
        layer_fn = rnn_layer if self._fused else rnn_layer_per_step
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                names = self._all_weights[k]
                w_ih, w_hh = params[names[0]], params[names[1]]
                b_ih = params[names[2]] if self.bias else None
                b_hh = params[names[3]] if self.bias else None
                w_hr = params[names[-1]] if self.proj_size > 0 else None
                out, h, c = layer_fn(self.mode, x, init_h[k], None if init_c is None else
                                     init_c[k], w_ih, w_hh, b_ih, b_hh, w_hr, direction == 1)
                outs.append(out)
                finals[0].append(h)
                if init_c is not None:
                    finals[1].append(c)
            x = outs[0] if num_directions == 1 else cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, True)
        output = x.transpose(0, 1) if self.batch_first else x
        return output, [stack(f, 0) for f in finals]

    def _run_autocast(self, input: Tensor, states: list[Tensor], params=None):
        """``_run`` under CPU autocast: inputs, states and weights rounded to the autocast
        dtype, the layers computed in float32 from those values (NumPy has no bfloat16
        kernels), and the results rounded back, as torch's lower-precision LSTM returns."""
        low = _amp.dtypes["cpu"]

        def rounded(t: Tensor) -> Tensor:
            if t.dtype is _dt.float64 or not t.is_floating_point():
                return t
            return t.to(low).to(_dt.float32)

        saved = self._parameters
        self._parameters = {k: None if v is None else rounded(v) for k, v in saved.items()}
        _amp.active = False  # the inner ops run on the rounded float32 values
        try:
            output, finals = self._run(rounded(input), [rounded(s) for s in states])
        finally:
            _amp.active = True
            self._parameters = saved
        return output.to(low), [f.to(low) for f in finals]


class RNN(RNNBase):
    """``nn.RNN``: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        input, is_batched, batch_dim = self._prepare(input)
        if hx is not None:
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                       f"{hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
            elif hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
        else:
            hx = zeros(*self.get_expected_hidden_size(input), dtype=input.dtype,
                       device=input.device)
        self.check_forward_args(input, hx)
        output, (hidden,) = self._run(input, [hx])
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, hidden


class LSTM(RNNBase):
    """``nn.LSTM``: gates i, f, g, o; c' = f c + i g, h' = o tanh(c') (times W_hr if
    ``proj_size``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes=None) -> tuple[int, int, int]:
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx=None):
        input, is_batched, batch_dim = self._prepare(input)
        if hx is None:
            hx = (zeros(*self.get_expected_hidden_size(input), dtype=input.dtype,
                        device=input.device),
                  zeros(*self.get_expected_cell_size(input), dtype=input.dtype,
                        device=input.device))
        elif is_batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but "
                                   f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        output, (h, c) = self._run(input, [hx[0], hx[1]])
        if not is_batched:
            output = output.squeeze(batch_dim)
            h, c = h.squeeze(1), c.squeeze(1)
        return output, (h, c)


class GRU(RNNBase):
    """``nn.GRU``: gates r, z, n; n = tanh(W_in x + b_in + r (W_hn h + b_hn)),
    h' = (1 - z) n + z h."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        input, is_batched, batch_dim = self._prepare(input)
        if hx is not None:
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                       f"{hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
            elif hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
        else:
            hx = zeros(*self.get_expected_hidden_size(input), dtype=input.dtype,
                       device=input.device)
        self.check_forward_args(input, hx)
        output, (hidden,) = self._run(input, [hx])
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, hidden


# --------------------------------------------------------------------------- cells


class RNNCellBase(Module):
    """Shared by the cells (``torch.nn.RNNCellBase``): weight_ih, weight_hh, bias_ih, bias_hh
    with ``num_chunks`` gates stacked along dim 0."""

    __constants__ = ("input_size", "hidden_size", "bias")

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check(self, input: Tensor, states) -> None:
        """torch's check_rnn_cell_forward_input / _hidden."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {self.input_size}")
        for i, h in enumerate(states):
            if input.size(0) != h.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} "
                                   f"batch size {h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, "
                                   f"expected {self.hidden_size}")

    def _input_gates(self, input: Tensor) -> Tensor:
        return linear(input, self.weight_ih, self.bias_ih)


def _cell_batch(name: str, input: Tensor, hx, what: str = "hidden"):
    if input.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
    if hx is not None and hx.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")
    return input.dim() == 2


class RNNCell(RNNCellBase):
    """``nn.RNNCell``: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    __constants__ = ("input_size", "hidden_size", "bias", "nonlinearity")

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = _cell_batch("RNNCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        if self.nonlinearity == "tanh":
            act = tanh
        elif self.nonlinearity == "relu":
            act = relu
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check(input, (hx,))
        gates = self._input_gates(input)
        ret = act(addmm(gates, hx, self.weight_hh.t()) if self.bias_hh is None
                  else addmm(gates + self.bias_hh, hx, self.weight_hh.t()))
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """``nn.LSTMCell``: one LSTM step; returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (z, z)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check(input, hx)
        gates = self._input_gates(input)
        if self.bias_hh is not None:
            gates = gates + self.bias_hh
        h, c = lstm_step(gates, hx[0], hx[1], self.weight_hh.t(), None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """``nn.GRUCell``: one GRU step (torch's n gate: tanh(W_in x + b_in + r (W_hn h + b_hn)))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = _cell_batch("GRUCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        self._check(input, (hx,))
        hidden = self.hidden_size
        x_rz, x_n = self._input_gates(input).split([2 * hidden, hidden], 1)
        ret = gru_step(x_rz, x_n, hx, self.weight_hh.t(), self.bias_hh, hidden)
        return ret if is_batched else ret.squeeze(0)
