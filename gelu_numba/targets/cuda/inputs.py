"""Input preparation: the operands of a call as device views, the loop
that runs them, the output and the layout a kernel is generated for.

Inputs are device arrays (numba's, or anything with
``__cuda_array_interface__``), host NumPy arrays or scalars (copied to the
device), float32 or float64 (other real dtypes follow NumPy's safe
casting, :mod:`gelu_numba.targets.dtypes`), any shape and strides,
broadcast together.
"""

import math

import numpy as np
from numba import cuda

from gelu_numba.targets import dtypes
from gelu_numba.targets.cuda import output_pool

_FLOAT = dtypes.LOOP_DTYPES
_DEVICE_TEXT = ("a numba device array or an object with "
                "__cuda_array_interface__ (CuPy, PyTorch CUDA tensors, ...)")


def _is_device(value):
    # (the simulator's arrays have no __cuda_array_interface__)
    return (getattr(value, "__cuda_ndarray__", False)
            or hasattr(value, "__cuda_array_interface__"))


def _as_device_view(value):
    # a numba device array is used as is: re-importing it through the
    # interface would synchronise on its stream
    if getattr(value, "__cuda_ndarray__", False):
        return value
    return cuda.as_cuda_array(value)


def _check_dtype(fname, dtype):
    dtypes.loop_for(fname, dtype)


def prepare_inputs(fname, args, stream):
    """Device views of the inputs (host arrays and scalars are copied to the
    device) and the loop character ``"f"`` or ``"d"``.

    Python scalars are weak in the loop choice, as in NumPy: ``f(x32, 2.0)``
    runs in float32.
    """
    views, found = [], []
    for a in args:
        if _is_device(a):
            view = _as_device_view(a)
            _check_dtype(fname, view.dtype)
            views.append(view)
            found.append(np.dtype(view.dtype))
            continue
        if type(a) in (float, int, bool):
            found.append(a)
            host = np.asarray(a, dtype=np.float64)
        else:
            if isinstance(a, (list, tuple)) or hasattr(a, "__array__") or np.isscalar(a):
                host = np.asarray(a)
            else:
                raise TypeError(
                    f"{fname}() takes {_DEVICE_TEXT}, a NumPy array or a "
                    f"real scalar; got {type(a).__name__}")
            _check_dtype(fname, host.dtype)
            found.append(host.dtype)
        views.append(cuda.to_device(np.asarray(host, order="C"), stream=stream))
    return views, dtypes.loop_for(fname, *found)


def broadcast_shape(fname, views):
    try:
        return np.broadcast_shapes(*(v.shape for v in views))
    except ValueError:
        shapes = ", ".join(str(v.shape) for v in views)
        raise ValueError(f"{fname}(): input shapes {shapes} do not broadcast "
                         "together") from None


def prepare_out(fname, out, shape, loop, stream):
    """The output as a device view (allocated when ``out`` is None: from
    :mod:`~gelu_numba.targets.cuda.output_pool`)."""
    if out is None:
        return output_pool.empty(shape, np.dtype(_FLOAT[loop]), stream)[0]
    if not _is_device(out):
        raise TypeError(f"{fname}() out= must be {_DEVICE_TEXT}, got "
                        f"{type(out).__name__} (results stay on the device; "
                        "copy them with .copy_to_host())")
    view = _as_device_view(out)
    if np.dtype(view.dtype).char not in "fd" or not np.can_cast(
            _FLOAT[loop], view.dtype, "same_kind"):
        raise TypeError(f"{fname}() out= must have dtype float32 or float64 "
                        f"that the {_FLOAT[loop]} result casts to, got "
                        f"{view.dtype}")
    if tuple(view.shape) != tuple(shape):
        raise ValueError(f"{fname}() out= has shape {tuple(view.shape)}, "
                         f"the inputs broadcast to {tuple(shape)}")
    return view


def operands(views, dst, shape):
    """The views a kernel runs on, and their layout (part of the kernel's
    cache key): ``(flat, out_ndim, input ndims, input has out's shape)``.

    Operands of one shape, all C- or all F-contiguous, become 1-D views in
    memory order (``flat``); otherwise rank-0 operands become 1-element
    vectors, which the N-D loop broadcasts by clamping.
    """
    n = math.prod(shape)
    order = None
    if all(tuple(v.shape) == tuple(shape) for v in views):
        order = _contiguous_order(views + [dst])
    if order is not None:
        # (1-D operands are used as they are: a reshape costs microseconds)
        views = [v if v.ndim == 1 else v.reshape(n, order=order) for v in views]
        target = dst if dst.ndim == 1 else dst.reshape(n, order=order)
    else:
        views = [v.reshape(1) if v.ndim == 0 else v for v in views]
        target = dst.reshape(1) if dst.ndim == 0 else dst
    layout = (order is not None, target.ndim, tuple(v.ndim for v in views),
              tuple(tuple(v.shape) == tuple(target.shape) for v in views))
    return views, target, layout


def _contiguous_order(views):
    """``"C"`` or ``"F"`` if every view is contiguous in that order."""
    for order, test in (("C", "is_c_contiguous"), ("F", "is_f_contiguous")):
        if all(getattr(v, test)() for v in views):
            return order
    return None
