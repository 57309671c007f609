"""Recurrent layers over a whole sequence: one graph node per layer and direction, as torch's
fused CPU kernel (``MkldnnRnnLayerBackward0``) records for ``nn.LSTM``.

``rnn_layer(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)`` runs one layer in one
direction over time-major ``x`` (T, B, I) and returns ``(output, h_n, c_n)`` (``c_n`` None
but for LSTM). Modes are torch's: ``"LSTM"`` (gates i, f, g, o; ``w_hr`` projects h when
``proj_size``), ``"GRU"`` (r, z, n), ``"RNN_TANH"``, ``"RNN_RELU"``.

The forward projects every time step's input with one matmul (both biases folded in where the
math allows); each step then does its recurrent matmul and the gate math in place on
preallocated arrays, and keeps what backward needs (activated gates, cell states). Backward
through time is written on arrays: the per-step factors that do not depend on the incoming
gradient are computed for all steps at once (for LSTM in place over the forward's buffers,
which a second backward with retain_graph=True rebuilds by rerunning the forward), each step
then costs a few elementwise ops and one matmul, and the weight gradients are a few large
matmuls at the end.

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


class MkldnnRnnLayerBackward0(_LayerOp):
    """LSTM layer (torch's fused CPU node's name). Gates i, f, g, o:
    c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c') (@ W_hr^T with proj)."""

    __slots__ = ()

    def forward(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr):
        xp = xp_of(x)
        steps, batch, _ = x.shape
        hidden = c0.shape[1]
        dtype = x.dtype
        # NOTE: sigmoid(z) = (tanh(z / 2) + 1) / 2. The rows of i, f and o are halved in the
        # weights and bias (exact: a power of two), so one in-place tanh over all four gates
        # and one scalar affine map (g's tanh set aside around it) give the three sigmoids and
        # g's tanh (and tanh, unlike exp(-z), never overflows).
        half = _row_scale(xp, dtype, hidden, (True, True, False, True))
        gates = _input_projection(xp, x, w_ih, half)
        if b_ih is not None:
            gates += (b_ih + b_hh) * half
        whh_t = _scaled_t(xp, w_hh, half)
        whr_t = None if w_hr is None else _scaled_t(xp, w_hr, None)
        c_prev = xp.empty((steps, batch, hidden), dtype=dtype)  # the cell state entering t
        tanh_c = xp.empty((steps, batch, hidden), dtype=dtype)
        out = xp.empty((steps, batch, h0.shape[1]), dtype=dtype)
        h_raw = out if w_hr is None else xp.empty((steps, batch, hidden), dtype=dtype)
        rec = xp.empty((batch, 4 * hidden), dtype=dtype)
        ig = xp.empty((batch, hidden), dtype=dtype)
        tanh_g = xp.empty((batch, hidden), dtype=dtype)
        c_n = xp.empty((batch, hidden), dtype=dtype)
        order = _steps(steps, self.reverse)
        c_prev[order[0]] = c0
        i_, f_, g_, o_ = (gates[:, :, k * hidden:(k + 1) * hidden] for k in range(4))
        h = h0
        for k, t in enumerate(order):
            g = gates[t]
            xp.matmul(h, whh_t, out=rec)
            g += rec
            xp.tanh(g, out=g)
            # NOTE: the affine map runs with scalars over all four gates (contiguous) and g's
            # tanh is set aside and put back around it: 2 + 2 small copies measured ~6 us a
            # step against ~12-14 us for one (B, 4, H) * (4, 1) broadcast multiply and add
            # (LSTM(64, 128), B 32); bit for bit the same values
            gg = g_[t]
            xp.copyto(tanh_g, gg)
            g *= 0.5
            g += 0.5
            xp.copyto(gg, tanh_g)
            c = c_n if k == steps - 1 else c_prev[order[k + 1]]
            xp.multiply(f_[t], c_prev[t], out=c)
            xp.multiply(i_[t], tanh_g, out=ig)
            c += ig
            tc = tanh_c[t]
            xp.tanh(c, out=tc)
            xp.multiply(o_[t], tc, out=h_raw[t])
            if whr_t is not None:
                xp.matmul(h_raw[t], whr_t, out=out[t])
            h = out[t]
        self.buffers = (gates, c_prev, tanh_c, None if w_hr is None else h_raw)
        return out, out[order[-1]].copy(), c_n

    def bptt(self, grads, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, out):
        d_out, d_hn, d_cn = grads
        if self.buffers is None:
            # a second backward (retain_graph=True): the first consumed the buffers in place,
            # so rebuild them from the saved inputs (the same arrays, bit for bit)
            self.forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
        gates, c_prev, tanh_c, h_raw = self.buffers
        # the buffers are overwritten below: this node's next run (if any) recomputes them
        self.buffers = None
        xp = xp_of(gates)
        steps, batch, hidden = c_prev.shape
        size = out.shape[2]
        dtype = gates.dtype
        gates4 = gates.reshape(steps, batch, 4, hidden)
        i, f, g, o = (gates4[:, :, k] for k in range(4))
        # Factors independent of the incoming gradient: with dh the gradient reaching h_t
        # (before the projection: W_hr^T applied) and dc reaching c_t,
        #   dz_o = dh * tanh(c) o (1 - o),  dc += dh * o (1 - tanh(c)^2),
        #   dz_{i,f,g} = dc * [g i (1 - i), c_{t-1} f (1 - f), i (1 - g^2)],  dc_{t-1} = dc * f
        # NOTE: computed in place over the forward's buffers (gates -> the four factors k_i,
        # k_f, k_g, k_o; tanh_c -> k_c; c_prev -> f), and dz then overwrites the factors step by
        # step: backward allocates one (T, B, H) temporary instead of ~3.3x the gates' size
        # (LSTM(64, 128), T 50, B 32: the training step's peak RSS growth 17.3 -> 7.7 MiB).
        u = 1 - o
        u *= o
        u *= tanh_c                              # k_o
        xp.multiply(tanh_c, tanh_c, out=tanh_c)
        xp.subtract(1, tanh_c, out=tanh_c)
        tanh_c *= o                              # k_c
        xp.copyto(o, u)
        xp.subtract(1, f, out=u)
        u *= f
        u *= c_prev                              # k_f
        xp.copyto(c_prev, f)
        xp.copyto(f, u)
        xp.multiply(g, g, out=u)
        xp.subtract(1, u, out=u)
        u *= i                                   # k_g
        g *= i
        xp.subtract(1, i, out=i)
        i *= g                                   # k_i = g i (1 - i)
        xp.copyto(g, u)
        del u
        k_c, f = tanh_c, c_prev
        dz = gates
        dh = _state_grad(xp, d_hn, (batch, size), dtype)
        dc = _state_grad(xp, d_cn, (batch, hidden), dtype)
        dh_t = xp.empty((batch, size), dtype=dtype)
        tmp = xp.empty((batch, hidden), dtype=dtype)
        dh_proj = None if w_hr is None else xp.empty((steps, batch, size), dtype=dtype)
        dh_raw = None if w_hr is None else xp.empty((batch, hidden), dtype=dtype)
        dc3 = dc[:, None, :]
        for t in reversed(_steps(steps, self.reverse)):
            if d_out is not None:
                cur = xp.add(d_out[t], dh, out=dh_t)
            else:
                cur = dh
            if w_hr is not None:
                dh_proj[t] = cur
                cur = xp.matmul(cur, w_hr, out=dh_raw)
            k4 = gates4[t]
            dz_o = k4[:, 3]
            dz_o *= cur
            xp.multiply(cur, k_c[t], out=tmp)
            dc += tmp
            dz_ifg = k4[:, :3]
            dz_ifg *= dc3
            dc *= f[t]
            xp.matmul(dz[t], w_hh, out=dh)
        gx, gw_ih, gw_hh, gb_ih, gb_hh = _weight_grads(self, xp, dz, dz, x, h0, out, w_ih,
                                                       b_ih is not None)
        gw_hr = None
        if w_hr is not None and self.needs_grad(7):
            gw_hr = xp.matmul(dh_proj.reshape(-1, size).T, h_raw.reshape(-1, hidden))
        return (gx, dh if self.needs_grad(1) else None, dc if self.needs_grad(2) else None,
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
