"""numba-cuda's compiled-kernel handle, current context and stream
conversion: the fast launch of :mod:`gelu_numba.targets.cuda.fast_launch`.

* ``compiled._codelibrary.get_cufunc().kernel``: the ``cuda.core`` kernel of
  a compiled dispatcher overload, launched with ``cuda.core.launch`` and
  arguments packed as numba-cuda packs them.
* ``numba.cuda.cudadrv.devices.get_context()``: the current device, part of
  the launcher's cache key.
* ``numba.cuda.cudadrv.driver._to_core_stream``: a numba stream as a
  ``cuda.core`` stream.
* ``compiled._codelibrary.get_cufunc()`` with numba-cuda's ``driver`` and
  ``binding``: raising a kernel's dynamic shared memory limit (the 2-byte
  forward's table in shared memory).

Why: numba-cuda's dispatcher costs ~140 µs of host time per call for a
PyTorch tensor; this path costs a few.  If it changes: the fast launcher's
build fails or its first-use probe (bit equality with numba-cuda's own
launch) disagrees, and every call takes numba-cuda's dispatcher, with a
``RuntimeWarning`` (``GpuFunction._fast_launcher``).  Imported only where a
driver exists (never under the simulator).
"""


def kernel_handle(compiled):
    """The ``cuda.core`` kernel of a compiled dispatcher overload."""
    return compiled._codelibrary.get_cufunc().kernel


_ALLOWED = set()


def allow_dynamic_shared(compiled, nbytes):
    """Let the compiled dispatcher overload ``compiled`` take ``nbytes`` of
    dynamic shared memory on the current device (a kernel takes at most
    48 KB unless its ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` is
    raised; numba-cuda sets the carveout attribute the same way, and none
    of this one)."""
    from numba.cuda.cudadrv.driver import binding, driver

    cufunc = compiled._codelibrary.get_cufunc()
    key = (id(cufunc), cufunc.device.id, nbytes)
    if key not in _ALLOWED:
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)
        _ALLOWED.add(key)


def current_device_id():
    from numba.cuda.cudadrv import devices
    return devices.get_context().device.id


def core_stream(stream):
    """A numba stream (or 0) as a ``cuda.core`` stream."""
    from numba.cuda.cudadrv import driver
    return driver._to_core_stream(stream)


def probe():
    """Raise ``ImportError`` naming what moved (needs numba-cuda; under the
    simulator, which has no driver and takes no fast launch, nothing to
    check)."""
    from numba.core import config
    if config.ENABLE_CUDASIM:
        return
    from numba.cuda.cudadrv import devices, driver
    missing = [n for n, ok in (("driver._to_core_stream", hasattr(driver, "_to_core_stream")),
                               ("devices.get_context", hasattr(devices, "get_context")),
                               ("driver.driver", hasattr(driver, "driver")),
                               ("driver.binding", hasattr(driver, "binding")))
               if not ok]
    if missing:
        raise ImportError(f"gelu_numba: numba-cuda has no {', '.join(missing)}; the fast "
                          "launch is unavailable")
