"""PyTorch's functorch, tracing and dispatch-key state: the paths of
:mod:`gelu_numba.targets.torch` (PyTorch 2.13).

* ``torch._C._are_functorch_transforms_active()`` and
  ``torch._C._get_tracing_state()``: the eager path (kernels called without
  the dispatcher, ~20 µs cheaper a call) only where no transform or trace
  is under way.  If they change: always the dispatcher path (slower, same
  results).
* ``torch._C._len_torch_dispatch_stack()``: the number of active
  ``TorchDispatchMode`` objects, user modes and the infrastructure's alike
  (``make_fx``'s proxy mode, ``FakeTensorMode``, the functionalization of
  ``torch.export``).  A mode sees only the operators a call dispatches:
  under one, the eager kernels (which write NumPy results into an
  ``empty_like`` tensor) would show it ``empty_like`` and ``detach``, and
  a recorded graph would replay uninitialised memory.  If it changes: every
  eager call raises ``AttributeError`` naming it, and the probe fails (no
  fallback is safe: the eager path under a mode is the silent wrong
  result).
* ``torch._C._functorch.is_legacy_batchedtensor``: autograd's own vmap
  (``is_grads_batched``) hands batched tensors that the eager kernels
  cannot read.  If it changes: the same fallback.
* ``torch._functorch.pyfunctorch.retrieve_all_functorch_interpreters`` and
  ``torch._C._functorch.TransformType``: how many forward-mode levels are
  active (forward over forward gives zeros silently in PyTorch 2.13, so it
  is refused), and whether a differentiating ``torch.func`` transform
  (grad, vjp, jvp and the ones built on them) reaches the bare operator,
  whose autograd kernel PyTorch 2.13 cannot run there (refused, naming
  the public functions).
* ``torch._C._AutoDispatchBelowAutograd`` and ``torch._C._after_autograd_keyset``:
  the operators' own Autograd kernels redispatch below Autograd, as
  ``torch.library.custom_op``'s generated kernel does (which has no jvp).
  If they change: ``register_autograd`` (backward only) and forward mode
  through the public functions alone.
* ``torch.autograd.forward_ad._current_level``: whether a forward-mode
  level (``dual_level``) is open, where a call that records no autograd
  graph still needs the Function for its tangent.  If it changes: eager
  calls raise ``AttributeError`` naming it (never a silently dropped
  tangent), and the probe fails.
* ``torch._C._cuda_getCurrentRawStream``: PyTorch's current CUDA stream of
  a device as its driver handle, without the ``torch.cuda.Stream`` object
  that ``torch.cuda.current_stream`` builds (the call ``torch.compile``'s
  generated code makes).  If it
  changes: ``torch.cuda.current_stream(index).cuda_stream`` (slower, same
  stream).
* ``torch.library._impls``: PyTorch before ``Library.impl`` took
  ``allow_override`` (2.11 has not, 2.13 has and allows by default) refuses
  a second Python kernel for a key where ``custom_op`` put its Autograd
  kernel; replacing that kernel is the point, so its entry is dropped
  first.  If it changes: the import fails naming the key.
"""

import inspect

import torch


def functorch_active():
    return torch._C._are_functorch_transforms_active()


def tracing():
    return bool(torch._C._get_tracing_state())


is_legacy_batched = torch._C._functorch.is_legacy_batchedtensor


def dispatch_mode_active():
    """Whether any ``TorchDispatchMode`` is on the stack (user or infra)."""
    return torch._C._len_torch_dispatch_stack() > 0


def current_stream_handle(index):
    """PyTorch's current stream of CUDA device ``index``: its driver handle."""
    return _raw_stream(index)


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)


def _levels(*kinds):
    from torch._C._functorch import TransformType
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    wanted = {getattr(TransformType, k) for k in kinds}
    return sum(i.key() in wanted for i in retrieve_all_functorch_interpreters())


def jvp_levels():
    """The number of active ``torch.func`` forward-mode (jvp) levels."""
    return _levels("Jvp")


def autograd_transform_levels():
    """The number of active ``torch.func`` levels that differentiate (grad
    and vjp, jvp), as opposed to vmap and functionalize."""
    return _levels("Grad", "Jvp")


def redispatch_below_autograd(opoverload, keyset, *args):
    """``opoverload(*args)`` with the Autograd keys of ``keyset`` removed."""
    with torch._C._AutoDispatchBelowAutograd():
        return opoverload.redispatch(keyset & torch._C._after_autograd_keyset, *args)


def dual_level_active():
    """Whether a ``torch.autograd.forward_ad.dual_level`` is open."""
    return torch.autograd.forward_ad._current_level >= 0


def replace_kernel(lib, name, fn, dispatch_key):
    """``lib.impl(name, fn, dispatch_key, with_keyset=True)``, replacing the
    Python kernel already registered there (``custom_op``'s own)."""
    if "allow_override" in inspect.signature(lib.impl).parameters:
        lib.impl(name, fn, dispatch_key, with_keyset=True, allow_override=True)
        return
    torch.library._impls.discard(f"{lib.ns}/{name}/{dispatch_key}")
    lib.impl(name, fn, dispatch_key, with_keyset=True)


def probe():
    """Raise ``ImportError`` naming what moved, if anything did."""
    names = ["_are_functorch_transforms_active", "_get_tracing_state", "_len_torch_dispatch_stack",
             "_AutoDispatchBelowAutograd", "_after_autograd_keyset"]
    missing = [n for n in names if not hasattr(torch._C, n)]
    if missing:
        raise ImportError(f"gelu_numba.torch: torch {torch.__version__} has no "
                          f"torch._C.{', torch._C.'.join(missing)}")
    jvp_levels()
    import torch.autograd.forward_ad as forward_ad
    if not isinstance(getattr(forward_ad, "_current_level", None), int):
        raise ImportError(f"gelu_numba.torch: torch {torch.__version__} has no "
                          "torch.autograd.forward_ad._current_level")
