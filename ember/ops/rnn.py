"""Recurrent layers over a whole sequence: one graph node per layer and direction, as torch's
fused CPU kernel (``MkldnnRnnLayerBackward0``) records for ``nn.LSTM``.

``rnn_layer(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)`` runs one layer in one
direction over time-major ``x`` (T, B, I) and returns ``(output, h_n, c_n)`` (``c_n`` None
but for LSTM). Modes are torch's: ``"LSTM"`` (gates i, f, g, o; ``w_hr`` projects h when
``proj_size``), ``"GRU"`` (r, z, n), ``"RNN_TANH"``, ``"RNN_RELU"``.

The forward projects every time step's input with one matmul (both biases folded in where the
math allows; LSTM folds the projection into its per-step matmul instead); each step then does
its recurrent matmul and the gate math in place on preallocated arrays, and keeps what backward
needs (activated gates, cell states). Backward through time is written on arrays: the per-step
factors that do not depend on the incoming gradient are computed for many steps at once (for
LSTM in place over the forward's buffers, block by block, which a second backward with
retain_graph=True rebuilds by rerunning the forward), each step then costs a few elementwise
ops and one matmul, and the weight gradients are a few large matmuls (for LSTM, per block).

With ``create_graph=True`` the node instead recomputes the layer through ember ops, step by
step (``rnn_layer_per_step``, the same path ``nn.*Cell`` use), and differentiates that, so
double backward works as torch's composite CPU path does.
"""

from __future__ import annotations

from .._backend import xp_of
from .._tensor import Tensor, _make
from ..autograd.grad_mode import enable_grad
from ..autograd.grad_mode import state as _grad_state
from ..autograd.record import emit, link, needs_recording, save
from ._op import Op
from .products import addmm, mm
from .shape import stack
from .unary import relu, sigmoid, tanh

_new = object.__new__

__all__ = ["gru_step", "lstm_step", "rnn_layer", "rnn_layer_per_step"]


# --------------------------------------------------------------------------- per-step path
# ember ops, step by step: what the cells run, what the fused node differentiates when a graph
# of the backward is asked for, and the reference the fused kernels are tested against.


def lstm_step(xg: Tensor, h: Tensor, c: Tensor, whh_t: Tensor, whr_t: Tensor | None):
    """One LSTM step from the input projection ``xg`` (biases included): (h', c')."""
    i, f, g, o = addmm(xg, h, whh_t).chunk(4, 1)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)
    if whr_t is not None:
        h = mm(h, whr_t)
    return h, c


def gru_step(x_rz: Tensor, x_n: Tensor, h: Tensor, whh_t: Tensor, b_hh: Tensor | None,
             hidden: int) -> Tensor:
    """One GRU step; ``x_rz``/``x_n`` are the input projection (with b_ih) split r,z | n.

    n = tanh(x_n + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h = n + z * (h - n).
    """
    hg = mm(h, whh_t) if b_hh is None else addmm(b_hh, h, whh_t)
    h_rz, h_n = hg.split([2 * hidden, hidden], 1)
    r, z = sigmoid(x_rz + h_rz).chunk(2, 1)
    n = tanh(x_n + r * h_n)
    return n + z * (h - n)


def _project(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """``F.linear`` on time-major (T, B, I) ``x``, as it computes it: one (T*B, I) matmul."""
    steps, batch, features = x.shape
    flat = x.reshape(steps * batch, features)
    y = mm(flat, w.t()) if b is None else addmm(b, flat, w.t())
    return y.view(steps, batch, -1)


def rnn_layer_per_step(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, w_ih: Tensor,
                       w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
                       w_hr: Tensor | None, reverse: bool):
    """``rnn_layer`` through ember ops, one handful per time step."""
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    out = [None] * x.shape[0]
    # NOTE: a contiguous copy: NumPy's matmul with a transposed (Fortran-order) right operand
    # is ~1.5x slower, and this product runs once per time step
    whh_t = w_hh.t().contiguous()
    h, c = h0, c0
    if mode == "GRU":
        hidden = h0.shape[1]
        x_rz, x_n = _project(x, w_ih, b_ih).split([2 * hidden, hidden], 2)
        xs_rz, xs_n = x_rz.unbind(0), x_n.unbind(0)
        for t in steps:
            h = out[t] = gru_step(xs_rz[t], xs_n[t], h, whh_t, b_hh, hidden)
    else:
        xs = _project(x, w_ih, None if b_ih is None else b_ih + b_hh).unbind(0)
        if mode == "LSTM":
            whr_t = None if w_hr is None else w_hr.t()
            for t in steps:
                h, c = lstm_step(xs[t], h, c, whh_t, whr_t)
                out[t] = h
        else:
            act = tanh if mode == "RNN_TANH" else relu
            for t in steps:
                h = out[t] = act(addmm(xs[t], h, whh_t))
    return stack(out, 0), h, (c if mode == "LSTM" else None)


# --------------------------------------------------------------------------- fused layers


def rnn_layer(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None, b_hh: Tensor | None, w_hr: Tensor | None, reverse: bool):
    """One layer of ``nn.RNN``/``LSTM``/``GRU`` in one direction over time-major ``x``
    (T, B, I), from the initial state ``h0`` (B, P) (and ``c0`` (B, H) for LSTM): returns
    ``(output (T, B, P), h_n, c_n)``, ``c_n`` None but for LSTM. One graph node."""
    if x.shape[0] == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    node = _new(_KERNELS[mode])
    node.mode = mode
    node.reverse = reverse
    inputs = (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
    outs = node.forward(*[None if t is None else t._data for t in inputs])
    if not needs_recording(inputs, _grad_state.grad_enabled):
        node.buffers = None
        return tuple(None if o is None else _make(o) for o in outs) + (None,) * (3 - len(outs))
    link(node, inputs)
    result = emit(node, outs)
    # the output is kept as its array and version counter (no cycle): h_{t-1} for dW_hh
    save(node, inputs + (result[0],), outputs=result)
    return tuple(result) + (None,) * (3 - len(result))


class _LayerOp(Op):
    """What the fused layers share: the array backward through time (``run_raw``), the
    per-step recomputation when a graph of the backward is recorded (``run``), and freeing.

    ``forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)`` (arrays) returns the outputs and
    keeps in ``buffers`` what ``bptt`` needs.
    """

    __slots__ = ("_num_outputs", "buffers", "mode", "reverse")

    def run_raw(self, grads: list) -> tuple:
        if all(g is None for g in grads):
            return ()
        saved = [None if t is None else t._data for t in self._check_saved()]
        return self.bptt(grads, *saved)

    def run(self, grads: list) -> tuple:
        """With ``create_graph=True``: differentiate the per-step recomputation of the layer,
        so the gradients have a graph (double backward), as torch's composite CPU path."""
        from ..autograd.api import grad as _grad  # (api imports the engine lazily, as here)

        if all(g is None for g in grads):
            return ()
        inputs = list(self._check_saved()[:8])
        wanted = [i for i in range(8) if self.needs_grad(i)]
        for i in wanted:
            # a fresh node in front of each input: autograd.grad stops there, so a leaf's
            # hooks run once, when the engine hands it this node's gradient
            inputs[i] = inputs[i].view_as(inputs[i])
        with enable_grad():
            outs = rnn_layer_per_step(self.mode, *inputs, self.reverse)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
        found = _grad([o for o, _ in pairs], [inputs[i] for i in wanted],
                      [g for _, g in pairs], create_graph=True, allow_unused=True)
        result = [None] * 8
        for i, g in zip(wanted, found):
            result[i] = g
        return tuple(result)

    def _release(self) -> None:
        super()._release()
        self.buffers = None

    def bptt(self, grads: list, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, out) -> tuple:
        raise NotImplementedError


def _steps(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _row_scale(xp, dtype, hidden: int, halves: tuple):
    """(gates * hidden,) of 0.5 for the gates in ``halves`` (True), 1 elsewhere."""
    values = []
    for half in halves:
        values += [0.5 if half else 1.0] * hidden
    return xp.asarray(values, dtype=dtype)


def _scaled_t(xp, w, scale):
    """``w.T * scale`` (scaling w's rows), C-contiguous: the right operand of a per-step
    matmul (NumPy's matmul with a Fortran-order right operand is ~1.5x slower)."""
    wt = xp.empty((w.shape[1], w.shape[0]), dtype=w.dtype)
    if scale is None:
        xp.copyto(wt, w.T)
    else:
        xp.multiply(w.T, scale, out=wt)
    return wt


def _input_projection(xp, x, w, scale):
    """x @ (w.T * scale) over all time steps in one matmul: (T, B, gates), a new array."""
    steps, batch, features = x.shape
    x2 = xp.ascontiguousarray(x).reshape(steps * batch, features)
    wt = w.T if scale is None else _scaled_t(xp, w, scale)
    return xp.matmul(x2, wt).reshape(steps, batch, w.shape[0])


def _state_grad(xp, g, shape, dtype):
    """A private, writable copy of an incoming state gradient (zeros if none came)."""
    return xp.zeros(shape, dtype=dtype) if g is None else xp.array(g, dtype=dtype)


def _weight_grads(node: _LayerOp, xp, dz_x, dz_h, x, h0, out, w_ih, has_bias: bool):
    """The gradients of x, w_ih, w_hh, b_ih, b_hh from the per-step pre-activation
    gradients (T, B, G) on the input side (``dz_x``) and the recurrent side (``dz_h``), as a
    few large matmuls over all steps."""
    steps, batch, gates = dz_x.shape
    flat_x = dz_x.reshape(steps * batch, gates)
    gx = gw_ih = gw_hh = gb_ih = gb_hh = None
    if node.needs_grad(0):
        gx = xp.matmul(flat_x, w_ih).reshape(x.shape)
    if node.needs_grad(3):
        x2 = xp.ascontiguousarray(x).reshape(steps * batch, x.shape[2])
        gw_ih = xp.matmul(flat_x.T, x2)
    if node.needs_grad(4):
        # sum over t of dz_h[t]^T h_{t-1}; h_{t-1} is the previous step's output (h0 first)
        size = out.shape[2]
        if node.reverse:
            gw_hh = xp.matmul(dz_h[steps - 1].T, h0)
            rest, prev = dz_h[:-1], out[1:]
        else:
            gw_hh = xp.matmul(dz_h[0].T, h0)
            rest, prev = dz_h[1:], out[:-1]
        if steps > 1:
            gw_hh += xp.matmul(rest.reshape(-1, gates).T, prev.reshape(-1, size))
    if has_bias:
        if node.needs_grad(5):
            gb_ih = flat_x.sum(0)
        if node.needs_grad(6):
            gb_hh = dz_h.reshape(steps * batch, gates).sum(0) if dz_h is not dz_x else \
                (flat_x.sum(0) if gb_ih is None else gb_ih.copy())
    return gx, gw_ih, gw_hh, gb_ih, gb_hh


def _to_gate_rows(dst, src, hidden: int):
    """Copy ``src``'s rows (torch's gate order i, f, g, o) into ``dst`` in the order o, i, f, g
    (leading axis): the three sigmoid gates, then i, f, g, each a contiguous block."""
    dst[:hidden] = src[3 * hidden:]
    dst[hidden:] = src[:3 * hidden]


def _from_gate_rows(dst, src, hidden: int):
    """The inverse of ``_to_gate_rows``: rows o, i, f, g back to torch's i, f, g, o."""
    dst[:3 * hidden] = src[hidden:]
    dst[3 * hidden:] = src[:hidden]


def _chunks(steps: int, reverse: bool, size: int):
    """Time ranges ``(lo, hi)`` of at most ``size`` steps, in the order backward visits them."""
    if reverse:
        return [(lo, min(lo + size, steps)) for lo in range(0, steps, size)]
    return [(max(hi - size, 0), hi) for hi in range(steps, 0, -size)]


def _views(a) -> list:
    """``a``'s sub-arrays along its first axis: the loops' per-step views, made before the
    loop. (Indexing, not ``list(a)``: ``ember.compile``'s capture records an index but
    stops at iteration.)"""
    return [a[k] for k in range(a.shape[0])]


def _add_product(xp, acc, a, b):
    """``acc + a @ b`` (``a @ b`` when ``acc`` is None), accumulating in place."""
    if acc is None:
        return xp.matmul(a, b)
    acc += xp.matmul(a, b)
    return acc


class MkldnnRnnLayerBackward0(_LayerOp):
    """LSTM layer (torch's fused CPU node's name). Gates i, f, g, o:
    c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c') (@ W_hr^T with proj).

    NOTE: the time loop runs transposed, on (features, batch) blocks: each gate is then a
    contiguous block (NumPy's elementwise ops on the strided column blocks of a (B, 4H) array
    cost ~2.5x more: ~1 us a call at B 32), and W @ h^T is faster than h @ W^T (46 against
    50 us for LSTM(64, 128), B 32). Gates run in the order o, i, f, g: the sigmoids are one
    block, and so are the three gates that take the cell's gradient.
    """

    __slots__ = ()

    # time steps per block of backward. NOTE: 5 to 25 time the same (LSTM(64, 128), B 32);
    # the block's temporary is (4H, CHUNK B), 640 KiB there: the step's peak memory
    CHUNK = 10

    def forward(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr):
        xp = xp_of(x)
        steps, batch, features = x.shape
        hidden, size = c0.shape[1], h0.shape[1]
        dtype = x.dtype
        h3, h4 = 3 * hidden, 4 * hidden
        # NOTE: one matmul a step does the input projection, both biases and the recurrence:
        # [W_hh | W_ih | b] @ [h; x_t; 1] (K = P + I + 1) costs 69 us against 46 us for W_hh
        # @ h, plus 24 us a step for the projection (batched into the gates) and 2.5 us to add
        # it (and the bias as a pass of its own costs 200 us, as a row of ones 0.5 us a step).
        # sigmoid(z) = (tanh(z / 2) + 1) / 2: the rows of o, i and f are halved (exact: a power
        # of two), so one tanh over all four gates and one affine map over the first three
        # give the sigmoids and g's tanh (and tanh, unlike exp(-z), never overflows).
        bias = b_ih is not None
        width = size + features + bias
        w = xp.empty((h4, width), dtype=dtype)
        _to_gate_rows(w[:, :size], w_hh, hidden)
        _to_gate_rows(w[:, size:size + features], w_ih, hidden)
        if bias:
            _to_gate_rows(w[:, -1], b_ih + b_hh, hidden)
        w[:h3] *= 0.5
        # z[s] = [h; x_t; 1] for the step that reads slot s: step t reads slot t (t + 1 in
        # reverse) and writes its h into slot t + 1 (t), where the next step reads it
        z = xp.empty((steps + 1, width, batch), dtype=dtype)
        lead = int(self.reverse)
        xp.copyto(z[lead:lead + steps, size:size + features], x.transpose(0, 2, 1))
        if bias:
            z[:, -1] = 1
        order = _steps(steps, self.reverse)
        z[order[0] + lead, :size] = h0.T
        # what backward needs, per step (5H, B): the gates (o, i, f as sigmoids, g as tanh)
        # and the cell state entering the step (tanh of the one leaving it is recomputed)
        acts = xp.empty((steps, 5 * hidden, batch), dtype=dtype)
        acts[order[0], h4:] = c0.T
        c_n = xp.empty((hidden, batch), dtype=dtype)
        tanh_c = xp.empty((hidden, batch), dtype=dtype)
        prod = xp.empty((2 * hidden, batch), dtype=dtype)
        prod_i, prod_f = prod[:hidden], prod[hidden:]
        h_raw = None if w_hr is None else xp.empty((steps, hidden, batch), dtype=dtype)
        gates, sig, i_f, g_c = (_views(acts[:, :h4]), _views(acts[:, :h3]),
                                _views(acts[:, hidden:h3]), _views(acts[:, h3:]))
        o_, c_in = _views(acts[:, :hidden]), _views(acts[:, h4:])
        z_in, z_h = _views(z), _views(z[:, :size])
        c_out = [c_in[t - 1 if self.reverse else t + 1] for t in order[:-1]] + [c_n]
        matmul, tanh, multiply, add = xp.matmul, xp.tanh, xp.multiply, xp.add
        for k, t in enumerate(order):
            gate = gates[t]
            matmul(w, z_in[t + lead], out=gate)
            tanh(gate, out=gate)
            s = sig[t]
            s *= 0.5
            s += 0.5
            c = c_out[k]
            multiply(i_f[t], g_c[t], out=prod)           # [i; f] * [g; c_{t-1}]
            add(prod_i, prod_f, out=c)
            tanh(c, out=tanh_c)
            h = z_h[t + 1 - lead]
            if w_hr is None:
                multiply(o_[t], tanh_c, out=h)
            else:
                multiply(o_[t], tanh_c, out=h_raw[t])
                matmul(w_hr, h_raw[t], out=h)
        out = xp.empty((steps, batch, size), dtype=dtype)
        xp.copyto(out, z[1 - lead:1 - lead + steps, :size].transpose(0, 2, 1))
        self.buffers = (acts, c_n, h_raw)
        return out, out[order[-1]].copy(), xp.ascontiguousarray(c_n.T)

    def bptt(self, grads, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, out):
        d_out, d_hn, d_cn = grads
        if self.buffers is None:
            # a second backward (retain_graph=True): the first consumed the buffers in place,
            # so rebuild them from the saved inputs (the same arrays, bit for bit)
            self.forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
        acts, c_n, h_raw = self.buffers
        # the buffers are overwritten below: this node's next run (if any) recomputes them
        self.buffers = None
        xp = xp_of(acts)
        steps, _, batch = acts.shape
        hidden, size, features = c0.shape[1], out.shape[2], x.shape[2]
        h2, h3, h4 = 2 * hidden, 3 * hidden, 4 * hidden
        dtype = acts.dtype
        reverse = self.reverse
        # dh_{t-1}^T = W_hh^T dz^T, W_hh's rows in the loop's gate order (unscaled)
        w_t = xp.empty((size, h4), dtype=dtype)
        _to_gate_rows(w_t.T, w_hh, hidden)
        dh = xp.zeros((size, batch), dtype=dtype)
        if d_hn is not None:
            xp.copyto(dh, d_hn.T)
        dc = xp.zeros((hidden, batch), dtype=dtype)
        if d_cn is not None:
            xp.copyto(dc, d_cn.T)
        want_w = [self.needs_grad(i) for i in (0, 3, 4, 5, 6)]
        gx = xp.empty(x.shape, dtype=dtype) if want_w[0] else None
        gw_ih = gw_hh = gb = gw_hr = ones = None
        chunk = min(self.CHUNK, steps)
        # one block's dz^T for the weight gradients; until then, k_c and scratch for tanh(c)
        block = xp.empty((h4 if any(want_w) else h2) * chunk * batch, dtype=dtype)
        cur = xp.empty((size, batch), dtype=dtype)
        tmp = xp.empty((hidden, batch), dtype=dtype)
        # c_t, the cell state leaving the block's last step (in time), for tanh(c_t): the
        # next block's c_{t-1} row, which that block's factors overwrite with f
        carry = c_n
        if w_hr is not None:
            dh_proj = xp.empty((steps, size, batch), dtype=dtype)
            dh_raw = xp.empty((hidden, batch), dtype=dtype)
        matmul, multiply, add, subtract = xp.matmul, xp.multiply, xp.add, xp.subtract
        for lo, hi in _chunks(steps, reverse, chunk):
            n = hi - lo
            blk = acts[lo:hi]
            sig_o, sig_i, sig_f = blk[:, :hidden], blk[:, hidden:h2], blk[:, h2:h3]
            g, c_in = blk[:, h3:h4], blk[:, h4:]
            k_c = block[:hidden * n * batch].reshape(n, hidden, batch)
            tanh_c = block[hidden * n * batch:h2 * n * batch].reshape(n, hidden, batch)
            # tanh(c_t) for the block's steps: c_t is the next step's c_{t-1}
            if reverse:
                xp.tanh(carry, out=tanh_c[0])
                xp.tanh(c_in[:-1], out=tanh_c[1:])
                carry = c_in[-1].copy()
            else:
                xp.tanh(c_in[1:], out=tanh_c[:-1])
                xp.tanh(carry, out=tanh_c[-1])
                carry = c_in[0].copy()
            # Factors independent of the incoming gradient, for the block's steps at once,
            # in place over the forward's buffers: with dh the gradient reaching h_t (W_hr^T
            # applied with proj) and dc reaching c_t,
            #   dz_o = dh * tanh(c) o (1 - o),  dc += dh * o (1 - tanh(c)^2) = dh * k_c,
            #   dz_{i,f,g} = dc * [g i (1 - i), c_{t-1} f (1 - f), i (1 - g^2)],
            #   dc_{t-1} = dc * f;
            # the rows become [k_o, k_i, k_f, k_g, f] (k_c aside), and dz then overwrites
            # k_o..k_g step by step: no (T, 4H, B) temporary
            multiply(tanh_c, tanh_c, out=k_c)
            subtract(1, k_c, out=k_c)
            k_c *= sig_o                                  # k_c
            tanh_c *= sig_o                               # (tanh_c is scratch from here)
            subtract(1, sig_o, out=sig_o)
            sig_o *= tanh_c                               # k_o
            multiply(sig_i, g, out=tanh_c)
            g *= g
            subtract(1, g, out=g)
            g *= sig_i                                    # k_g
            subtract(1, sig_i, out=sig_i)
            sig_i *= tanh_c                               # k_i
            multiply(sig_f, c_in, out=tanh_c)
            xp.copyto(c_in, sig_f)                        # f
            subtract(1, sig_f, out=sig_f)
            sig_f *= tanh_c                               # k_f
            dz, dz_o, dz_ifg, f_, k_cs = (_views(blk[:, :h4]), _views(sig_o),
                                          _views(blk[:, hidden:h4].reshape(n, 3, hidden, batch)),
                                          _views(c_in), _views(k_c))
            d_outs = None if d_out is None else _views(d_out[lo:hi].transpose(0, 2, 1))
            for s in (range(n) if reverse else range(n - 1, -1, -1)):
                if d_outs is not None:
                    grad_h = add(d_outs[s], dh, out=cur)
                else:
                    grad_h = dh
                if w_hr is not None:
                    xp.copyto(dh_proj[lo + s], grad_h)
                    grad_h = matmul(w_hr.T, grad_h, out=dh_raw)
                multiply(dz_o[s], grad_h, out=dz_o[s])
                multiply(grad_h, k_cs[s], out=tmp)
                dc += tmp
                multiply(dz_ifg[s], dc, out=dz_ifg[s])
                dc *= f_[s]
                matmul(w_t, dz[s], out=dh)
            if not any(want_w):
                continue
            # dz^T of the block's steps as one (4H, n B) matrix in torch's gate order: the
            # weight gradients are sums over steps and batch, a matmul each
            dzb = block[:h4 * n * batch].reshape(h4, n, batch)
            _from_gate_rows(dzb, blk[:, :h4].transpose(1, 0, 2), hidden)
            flat = dzb.reshape(h4, n * batch)
            if want_w[0]:
                matmul(flat.T, w_ih, out=gx[lo:hi].reshape(n * batch, features))
            if want_w[1]:
                gw_ih = _add_product(xp, gw_ih, flat, x[lo:hi].reshape(n * batch, features))
            if want_w[2]:
                # sum over t of dz_t^T h_{t-1}; h_{t-1} is the previous step's output (h0 first)
                first = hi - 1 if reverse else lo
                if first == (steps - 1 if reverse else 0):
                    gw_hh = _add_product(xp, gw_hh, dzb[:, first - lo], h0)
                    rest = (lo, hi - 1) if reverse else (lo + 1, hi)
                else:
                    rest = (lo, hi)
                if rest[1] > rest[0]:
                    shift = 1 if reverse else -1
                    prev = out[rest[0] + shift:rest[1] + shift].reshape(-1, size)
                    gw_hh = _add_product(xp, gw_hh, dzb[:, rest[0] - lo:rest[1] - lo]
                                         .reshape(h4, -1), prev)
            if want_w[3] or want_w[4]:
                # NOTE: a matrix-vector product: 7.6 us against 36 us for flat.sum(1)
                if ones is None:
                    ones = xp.ones(chunk * batch, dtype=dtype)
                gb = _add_product(xp, gb, flat, ones[:n * batch])
        if w_hr is not None and self.needs_grad(7):
            gw_hr = xp.tensordot(dh_proj, h_raw, axes=([0, 2], [0, 2]))
        gb_ih = gb if want_w[3] else None
        gb_hh = (gb.copy() if want_w[3] else gb) if want_w[4] else None
        return (gx, xp.ascontiguousarray(dh.T) if self.needs_grad(1) else None,
                xp.ascontiguousarray(dc.T) if self.needs_grad(2) else None,
                gw_ih, gw_hh, gb_ih, gb_hh, gw_hr)


class GruLayerBackward0(_LayerOp):
    """GRU layer. Gates r, z, n: n = tanh(W_in x + b_in + r (W_hn h + b_hn)),
    h' = (1 - z) n + z h. (torch records GRU on CPU op by op: no fused node to name after.)"""

    __slots__ = ()

    def forward(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr):
        xp = xp_of(x)
        steps, batch, _ = x.shape
        hidden = h0.shape[1]
        dtype = x.dtype
        # NOTE: r and z rows halved, as for LSTM: sigmoid(z) = (tanh(z / 2) + 1) / 2
        half = _row_scale(xp, dtype, hidden, (True, True, False))
        gates = _input_projection(xp, x, w_ih, half)
        b_hn = None
        if b_ih is not None:
            gates += b_ih * half
            gates[:, :, :2 * hidden] += b_hh[:2 * hidden] * 0.5  # b_hn stays inside r * (.)
            b_hn = b_hh[2 * hidden:]
        whh_t = _scaled_t(xp, w_hh, half)
        rec = xp.empty((steps, batch, 3 * hidden), dtype=dtype)  # W_hh h (+ b_hn), per step
        new = xp.empty((steps, batch, hidden), dtype=dtype)      # n
        out = xp.empty((steps, batch, hidden), dtype=dtype)
        rz_, r_, z_, xn_ = (gates[:, :, :2 * hidden], gates[:, :, :hidden],
                            gates[:, :, hidden:2 * hidden], gates[:, :, 2 * hidden:])
        rec_rz, rec_n = rec[:, :, :2 * hidden], rec[:, :, 2 * hidden:]
        order = _steps(steps, self.reverse)
        h = h0
        for t in order:
            xp.matmul(h, whh_t, out=rec[t])
            hn = rec_n[t]
            if b_hn is not None:
                hn += b_hn
            rz = rz_[t]
            rz += rec_rz[t]
            xp.tanh(rz, out=rz)
            rz *= 0.5
            rz += 0.5
            n = new[t]
            xp.multiply(r_[t], hn, out=n)
            n += xn_[t]
            xp.tanh(n, out=n)
            y = out[t]
            xp.subtract(h, n, out=y)
            y *= z_[t]
            y += n
            h = y
        self.buffers = (gates, rec, new)
        return out, out[order[-1]].copy()

    def bptt(self, grads, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, out):
        d_out, d_hn = grads
        gates, rec, new = self.buffers
        xp = xp_of(gates)
        steps, batch, hidden = new.shape
        dtype = gates.dtype
        r, z = gates[:, :, :hidden], gates[:, :, hidden:2 * hidden]
        hn = rec[:, :, 2 * hidden:]
        h_prev = xp.empty((steps, batch, hidden), dtype=dtype)
        if self.reverse:
            h_prev[steps - 1] = h0
            h_prev[:-1] = out[1:]
        else:
            h_prev[0] = h0
            h_prev[1:] = out[:-1]
        # Factors independent of the incoming gradient dh (reaching h_t), for all steps:
        #   dn_pre = dh (1 - z)(1 - n^2) = dh k_n,  dz_pre = dh (h_{t-1} - n) z (1 - z),
        #   dr_pre = dh k_n (W_hn h + b_hn) r (1 - r);  the recurrent side's n gradient is
        #   dn_pre r, the input side's dn_pre;  dh_{t-1} = dh z + d(rec) @ W_hh
        one_minus_z = 1 - z
        k_n = new * new
        xp.subtract(1, k_n, out=k_n)
        k_n *= one_minus_z
        k_h = xp.empty((steps, batch, 3, hidden), dtype=dtype)
        kr, kz = k_h[:, :, 0], k_h[:, :, 1]
        xp.multiply(k_n, hn, out=kr)
        kr *= r
        kr *= 1 - r
        xp.subtract(h_prev, new, out=kz)
        kz *= z
        kz *= one_minus_z
        xp.multiply(k_n, r, out=k_h[:, :, 2])
        d_rec = xp.empty((steps, batch, 3 * hidden), dtype=dtype)
        d_rec4 = d_rec.reshape(steps, batch, 3, hidden)
        dh_all = xp.empty((steps, batch, hidden), dtype=dtype)
        dh = _state_grad(xp, d_hn, (batch, hidden), dtype)
        tmp = xp.empty((batch, hidden), dtype=dtype)
        for t in reversed(_steps(steps, self.reverse)):
            cur = dh_all[t]
            if d_out is not None:
                xp.add(d_out[t], dh, out=cur)
            else:
                xp.copyto(cur, dh)
            xp.multiply(cur[:, None, :], k_h[t], out=d_rec4[t])
            xp.matmul(d_rec[t], w_hh, out=tmp)
            xp.multiply(cur, z[t], out=dh)
            dh += tmp
        d_in = d_rec.copy()
        xp.multiply(dh_all, k_n, out=d_in.reshape(steps, batch, 3, hidden)[:, :, 2])
        gx, gw_ih, gw_hh, gb_ih, gb_hh = _weight_grads(self, xp, d_in, d_rec, x, h0, out,
                                                       w_ih, b_ih is not None)
        return (gx, dh if self.needs_grad(1) else None, None, gw_ih, gw_hh, gb_ih, gb_hh, None)


class RnnLayerBackward0(_LayerOp):
    """Elman RNN layer: h' = act(W_ih x + b_ih + W_hh h + b_hh), act tanh or relu. (torch
    records it on CPU op by op: no fused node to name after.)"""

    __slots__ = ()

    def forward(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr):
        xp = xp_of(x)
        out = _input_projection(xp, x, w_ih, None)
        if b_ih is not None:
            out += b_ih + b_hh
        whh_t = _scaled_t(xp, w_hh, None)
        rec = xp.empty(h0.shape, dtype=x.dtype)
        relu_ = self.mode == "RNN_RELU"
        order = _steps(x.shape[0], self.reverse)
        h = h0
        for t in order:
            y = out[t]
            xp.matmul(h, whh_t, out=rec)
            y += rec
            if relu_:
                xp.maximum(y, 0, out=y)
            else:
                xp.tanh(y, out=y)
            h = y
        self.buffers = ()
        return out, out[order[-1]].copy()

    def bptt(self, grads, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, out):
        d_out, d_hn = grads
        xp = xp_of(out)
        steps, batch, hidden = out.shape
        dtype = out.dtype
        if self.mode == "RNN_RELU":
            slope = (out > 0).astype(dtype)  # 0 at 0, as torch's relu backward
        else:
            slope = out * out
            xp.subtract(1, slope, out=slope)
        dz = xp.empty((steps, batch, hidden), dtype=dtype)
        dh = _state_grad(xp, d_hn, (batch, hidden), dtype)
        for t in reversed(_steps(steps, self.reverse)):
            d = dz[t]
            if d_out is not None:
                xp.add(d_out[t], dh, out=d)
            else:
                xp.copyto(d, dh)
            d *= slope[t]
            xp.matmul(d, w_hh, out=dh)
        gx, gw_ih, gw_hh, gb_ih, gb_hh = _weight_grads(self, xp, dz, dz, x, h0, out, w_ih,
                                                       b_ih is not None)
        return (gx, dh if self.needs_grad(1) else None, None, gw_ih, gw_hh, gb_ih, gb_hh, None)


_KERNELS = {"LSTM": MkldnnRnnLayerBackward0, "GRU": GruLayerBackward0,
            "RNN_TANH": RnnLayerBackward0, "RNN_RELU": RnnLayerBackward0}
