"""``LBFGS``: limited-memory BFGS, a faithful port of ``torch.optim.LBFGS`` (after minFunc).

The flat vectors are arrays of the parameters' dtype and device (made with their array module,
``xp_of``), and the dot products are scalars of that dtype, which round as torch's 0-d tensors
do, so the iterates follow torch's.
"""

from __future__ import annotations

from .._backend import generic, host, is_array, xp_of
from .._tensor import Tensor, _make
from ..autograd import enable_grad
from .optimizer import Optimizer, _bump, _check_lr, _to_scalar

__all__ = ["LBFGS"]


def _is_scalar_or_array(x) -> bool:
    """Whether ``x`` is an array or an array scalar (as a dot product returns), not a number."""
    return isinstance(x, generic) or is_array(x)


def _sqrt(x):
    return xp_of(x).sqrt(x) if _is_scalar_or_array(x) else x ** 0.5


def _add_(a, b, alpha) -> None:
    """``a.add_(b, alpha=alpha)`` in place. NOTE: torch's vectorized CPU add is a fused
    multiply-add (one rounding); float32 emulates it exactly through float64. LBFGS on an
    ill-conditioned problem amplifies that last bit, so it is matched here."""
    if is_array(alpha):  # a 0-d device array (a step size from a dot product): copy it out
        alpha = alpha.item()
    alpha = a.dtype.type(alpha)
    if a.dtype == host.float32:
        a[...] = a.astype(host.float64) + b.astype(host.float64) * host.float64(alpha)
    else:
        a += b * alpha


def _div(a, b):
    """``a / b`` as torch computes it: a Python number over a 0-d tensor is
    ``b.reciprocal() * a`` (``Tensor.__rtruediv__``), which rounds differently."""
    if _is_scalar_or_array(b) and not _is_scalar_or_array(a):
        return xp_of(b).reciprocal(b) * a
    return a / b


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through two points with their derivatives, clamped."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - _div(3 * (f1 - f2), x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = _sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A line search satisfying the strong Wolfe conditions (torch's ``_strong_wolfe``)."""
    d_norm = abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = [t]
            bracket_f = [f_new]
            bracket_g = [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        # interpolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev = tmp
        f_prev = f_new
        g_prev = g_new.copy()
        gtd_prev = gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

    if ls_iter == max_ls:
        bracket = [0, t]
        bracket_f = [f, f_new]
        bracket_g = [g, g_new]

    # zoom: until a point satisfies the conditions or the bracket is too small
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # no progress near the bracket's ends: move t away from the boundary
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos] = t
            bracket_f[high_pos] = f_new
            bracket_g[high_pos] = g_new.copy()
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos] = t
            bracket_f[low_pos] = f_new
            bracket_g[low_pos] = g_new.copy()
            bracket_gtd[low_pos] = gtd_new

    t = bracket[low_pos]
    f_new = bracket_f[low_pos]
    g_new = bracket_g[low_pos]
    return f_new, g_new, t, ls_func_evals


# state entries kept as tensors in ``state`` (raw arrays inside ``step``), as torch keeps them
_ARRAY_KEYS = ("d", "prev_flat_grad")
_SCALAR_KEYS = ("t", "H_diag")
_LIST_KEYS = ("old_dirs", "old_stps", "ro", "al")


def _wrap(x):
    if is_array(x):
        return _make(x)
    if isinstance(x, generic):  # a scalar from a NumPy dot product: a 0-d host tensor
        return _make(host.asarray(x))
    return x


def _unwrap(x):
    if isinstance(x, Tensor):
        return x._data[()] if x._data.ndim == 0 else x._data
    return x


class LBFGS(Optimizer):
    """``torch.optim.LBFGS``: one param group; ``step(closure)`` runs up to ``max_iter``
    iterations, with ``line_search_fn=None`` (fixed step ``lr``) or ``'strong_wolfe'``."""

    def __init__(self, params, lr=1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None) -> None:
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        xp = xp_of(self._params[0]._data)
        views = []
        for p in self._params:
            if p._grad is None:
                views.append(xp.zeros(p._data.size, dtype=p._data.dtype))
            else:
                views.append(p._grad._data.reshape(-1))
        return xp.concatenate(views, 0)

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self._params:
            numel = p._data.size
            _add_(p._data, update[offset:offset + numel].reshape(p._data.shape), step_size)
            _bump(p)
            offset += numel
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _clone_param(self) -> list:
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data) -> None:
        for p, pdata in zip(self._params, params_data):
            p._data[...] = pdata
            _bump(p)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure):
        """Perform a single optimization step.

        Args:
            closure (Callable): A closure that reevaluates the model and returns the loss.
        """
        if len(self.param_groups) != 1:
            raise AssertionError(
                f"Expected exactly one param_group, but got {len(self.param_groups)}")

        def closure_with_grad():
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr = _to_scalar(group["lr"])
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]

        # NOTE: LBFGS has only global state, kept in the first param's entry
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure_with_grad()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        if not flat_grad.size:  # torch's error from max() of the empty flat gradient
            raise RuntimeError("max(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        opt_cond = abs(flat_grad).max() <= tolerance_grad
        if opt_cond:  # optimal condition
            return orig_loss

        d = _unwrap(state.get("d"))
        t = _unwrap(state.get("t"))
        old_dirs = [_unwrap(v) for v in state["old_dirs"]] if "old_dirs" in state else None
        old_stps = [_unwrap(v) for v in state["old_stps"]] if "old_stps" in state else None
        ro = [_unwrap(v) for v in state["ro"]] if "ro" in state else None
        H_diag = _unwrap(state.get("H_diag"))
        prev_flat_grad = _unwrap(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        al = [_unwrap(v) for v in state["al"]] if "al" in state else None

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # compute the descent direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    # update the memory
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)

                # the two-loop recursion of L-BFGS
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                    state["al"] = al  # (wrapped at the end) keeps torch's key order
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    _add_(q, old_dirs[i], -al[i])
                d = r = q * H_diag
                if not is_array(d) or d.dtype != flat_grad.dtype:
                    d = r = xp_of(flat_grad).asarray(d, dtype=flat_grad.dtype)
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    _add_(r, old_stps[i], al[i] - be_i)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            # the step size
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / abs(flat_grad).sum()) * lr
            else:
                t = lr

            gtd = flat_grad.dot(d)  # directional derivative
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure_with_grad, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = abs(flat_grad).max() <= tolerance_grad
            else:
                # a fixed step, then re-evaluate unless this is the last iteration
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(closure_with_grad())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # check conditions
            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            if abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = _wrap(d)
        state["t"] = _wrap(t)
        state["old_dirs"] = [_wrap(v) for v in old_dirs]
        state["old_stps"] = [_wrap(v) for v in old_stps]
        state["ro"] = [_wrap(v) for v in ro]
        state["H_diag"] = _wrap(H_diag)
        state["prev_flat_grad"] = _wrap(prev_flat_grad)
        state["prev_loss"] = prev_loss
        if al is not None:
            state["al"] = [_wrap(v) for v in al]
        return orig_loss
