"""The fast launch of gelu_numba.gpu
(``gelu_numba.targets.cuda.fast_launch.FastLaunch``).

Without a GPU the launch itself cannot run (the simulator has no driver and
no fast path), so what is checked here is what it rests on:

* which calls may take it (:func:`fast_operands`): contiguous device arrays
  of one float dtype and one shape, on a stream they need no
  synchronisation with; everything else goes the general way;
* the kernel-argument ABI that :func:`pack_arguments` writes, read from
  numba-cuda itself: the CUDA target's data model of a 1-D C-contiguous
  array, and the PTX of the very kernels the fast path launches (how many
  8-byte parameters, which of them the kernel reads).

On a GPU, every contiguous call of ``tests/test_gpu.py`` takes the fast
path, and each launcher compares its bits with the general path's on a
probe before its first use.
"""

import ctypes
import threading
import weakref

import numpy as np
import pytest
from compiled import json_of
from numba import cuda

from gelu_numba.targets import cuda as target
# (where the values the fast path reads are set)
from gelu_numba.targets.cuda import fast_launch, launch, output_pool, variants

pytestmark = pytest.mark.gpu


class Cai:
    """An object exposing only ``__cuda_array_interface__``."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=0x7000, readonly=False,
                 **extra):
        self.__cuda_array_interface__ = dict(
            shape=shape, typestr=typestr, strides=strides, data=(ptr, readonly),
            version=3, **extra)


def test_contiguous_arrays_of_one_dtype_take_it():
    x, out = Cai((4, 5), ptr=0x1000), Cai((4, 5), ptr=0x2000)
    assert target.fast_operands((x, out), 0) == ("f", (4, 5), 20, (0x1000, 0x2000))
    x64 = Cai((3,), "<f8", strides=(8,), ptr=0x10)
    assert target.fast_operands((x64, x64), 0) == ("d", (3,), 3, (0x10, 0x10))
    # C strides spelled out are the same layout as None
    assert target.fast_operands((Cai((2, 3), strides=(12, 4)),), 0)[0] == "f"
    # a 0-d array is one element
    assert target.fast_operands((Cai(()), Cai(())), 0)[1:3] == ((), 1)


@pytest.mark.parametrize("arrays", [
    (Cai((4, 5)), Cai((4, 5), strides=(4, 16))),        # F order
    (Cai((8,), strides=(8,)), Cai((8,))),                # every other element
    (Cai((4,)), Cai((4,), "<f8")),                       # mixed dtypes
    (Cai((4,), "<i4"), Cai((4,), "<i4")),                # not a float loop
    (Cai((4,), ">f4"), Cai((4,), ">f4")),                # big-endian
    (Cai((4,), "<f2"), Cai((4,), "<f2")),                # float16 casts
    (Cai((1, 4)), Cai((4, 4))),                          # broadcasting
    (Cai((4,)), Cai((4,), mask=Cai((4,), "|b1"))),       # masked
    (np.zeros(4, np.float32), Cai((4,))),                # a host array
    (1.0, Cai((4,))),                                    # a scalar
    (Cai((0,)), Cai((0,))),                              # empty
], ids=["F-order", "strided", "mixed", "int", "big-endian", "float16",
        "broadcast", "mask", "host", "scalar", "empty"])
def test_anything_else_takes_the_general_path(arrays):
    assert target.fast_operands(arrays, 0) is None


def test_streams():
    # an array that names a stream other than the launch's needs the general
    # path's synchronisation; the default streams order themselves
    on = lambda s: Cai((4,), stream=s)  # noqa: E731
    assert target.fast_operands((on(0x55), Cai((4,))), 0) is None
    assert target.fast_operands((on(0x55), Cai((4,))), 0x55) is not None
    for default in (1, 2):
        assert target.fast_operands((on(default), Cai((4,))), 0) is not None
        assert target.fast_operands((on(default), Cai((4,))), 0x55) is None
    # launch streams: 0, or a stream object with a handle
    assert target.stream_handle(0) == 0
    assert target.stream_handle(3) is None
    assert target.stream_handle(False) is None

    class Stream:
        handle = 0x55

        def __cuda_stream__(self):
            return (0, self.handle)

    assert target.stream_handle(Stream()) == 0x55
    assert target.stream_handle(object()) is None
    assert target.fast_operands((Cai((4,)),), None) is None


def test_out_must_be_writable():
    x, out = Cai((4,)), Cai((4,), readonly=True)
    assert target.fast_operands((x, out), 0, writable_last=True) is None
    assert target.fast_operands((out, x), 0, writable_last=True) is not None


def test_packing_follows_numba_array_fields():
    packed = target.pack_arguments((0xA0, 0xB0), 1000, 4)
    fields = dict(zip(ABI_FIELDS, packed[:7])), dict(zip(ABI_FIELDS, packed[7:]))
    for f, ptr in zip(fields, (0xA0, 0xB0)):
        assert f == {"meminfo": 0, "parent": 0, "nitems": 1000, "itemsize": 4,
                     "data": ptr, "shape": 1000, "strides": 4}
    assert len(packed) == 14


#: numba's array data model, in the order of its kernel parameters (checked
#: against numba-cuda below)
ABI_FIELDS = ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides")

_CODE = r"""
import json, sys
from numba import cuda
from numba.core import types
from analysis.gpu.sass import without_a_driver
without_a_driver()
from numba.cuda.descriptor import cuda_target
from gelu_numba import gpu
from gelu_numba.targets import cuda as target
from gelu_numba.targets.cuda import half_kernels as cuda_half
from compiled import ptx_abi

model = cuda_target.target_context.data_model_manager.lookup(
    types.Array(types.float32, 1, "C"))
out = {"fields": list(model._fields)}


def abi(kernel, *signature):
    return ptx_abi(cuda.compile_ptx(kernel, target.launch_signature(*signature), cc=(9, 0))[0])


for name in sys.argv[1:]:
    f = getattr(gpu, name)
    for loop, ty in (("f", "float32"), ("d", "float64")):
        # (fp64=False, lean32=False: the kernel without a table, on any device)
        kernel = f.kernel(loop, target.flat_layout(f.nin), fp64=False, lean32=False)
        out[f"{name} {loop}"] = abi(kernel.py_func, ty, f.nin)
for name in ("gelu", "gelu_backward"):   # the float64-arithmetic kernel, tables an argument
    f = getattr(gpu, name)
    layout = target.flat_layout(f.nin)
    assert f.tables_argument("f", layout, fp64=True)
    out[f"{name} tables"] = abi(f.kernel("f", layout, fp64=True).py_func, "float32", f.nin,
                                {f.nin: "float64"})
    # the lean kernel (devices without full-rate FP64), its table float32
    # (fixed_arguments' dtype: tests/test_gpu.py, where there is a device)
    assert f.variant("f", fp64=False) == "lean32"
    out[f"{name} lean32"] = abi(f.kernel("f", layout, fp64=False).py_func, "float32", f.nin,
                              {f.nin: "float32"})
out["half gelu"] = abi(cuda_half.lookup_kernel.py_func, "uint16", 1, {1: "uint16"})
out["half gelu_backward"] = abi(cuda_half.backward_kernel("bfloat16").py_func, "uint16", 2,
                                {2: "float64"})
out["half gelu wide"] = abi(cuda_half.wide_kernel("gelu", "bfloat16", cuda_half.WORDS).py_func,
                           "uint16", 1, {1: "uint16"}, cuda_half.LANES)
out["half gelu_backward wide"] = abi(
    cuda_half.wide_kernel("gelu_backward", "bfloat16", cuda_half.WORDS).py_func,
    "uint16", 2, {2: "float64"}, cuda_half.LANES)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def abi():
    return json_of(_CODE, "gelu", "gelu_backward", "gelu_general")


def test_numba_array_model_is_what_the_packing_writes(abi):
    assert tuple(abi["fields"]) == ABI_FIELDS


@pytest.mark.parametrize("name, nin", [("gelu", 1), ("gelu_backward", 2), ("gelu_general", 3)])
@pytest.mark.parametrize("loop", ["f", "d"])
def test_fast_kernels_take_seven_words_per_array(abi, name, nin, loop):
    entry = abi[f"{name} {loop}"]
    arrays = nin + 1
    # one 8-byte parameter per field (shape and strides have one entry in 1-D)
    assert entry["params"] == ["u64"] * (7 * arrays)
    read = entry["read"]
    # every array's data pointer is read, and nothing but what the packing
    # fills with the array's own values (never meminfo or parent)
    assert all(7 * k + ABI_FIELDS.index("data") in read for k in range(arrays))
    used = {ABI_FIELDS[p % 7] for p in read}
    assert used <= {"nitems", "data", "shape", "strides"}
    assert "nitems" in used or "shape" in used  # the loop's length


@pytest.mark.parametrize("kind", ["tables", "lean32", "half"])
@pytest.mark.parametrize("name, nin", [("gelu", 1), ("gelu_backward", 2)])
def test_kernels_with_a_table_take_it_after_the_inputs(abi, kind, name, nin):
    # a table beside the operands: the float64-arithmetic float32 kernel's
    # coefficients (devices with full-rate FP64), the lean kernel's rows
    # (the others), the 2-byte kernels' values; the inputs, the table, out,
    # seven words each; each array's data read, and of the rest only what
    # the packing fills with the array's own values
    entry = abi[f"half {name}" if kind == "half" else f"{name} {kind}"]
    arrays = nin + 2
    assert entry["params"] == ["u64"] * (7 * arrays)
    read = entry["read"]
    assert all(7 * k + ABI_FIELDS.index("data") in read for k in range(arrays))
    assert {ABI_FIELDS[p % 7] for p in read} <= {"nitems", "data", "shape", "strides"}


@pytest.mark.parametrize("name, nin", [("gelu", 1), ("gelu_backward", 2)])
def test_wide_half_kernels_take_each_operand_as_words_then_elements(abi, name, nin):
    # the 2-byte kernels that move 8-byte words: each operand twice (its
    # words, then its elements), the table after the inputs; the packing
    # writes exactly that layout
    entry = abi[f"half {name} wide"]
    arrays = 2 * (nin + 1) + 1
    assert entry["params"] == ["u64"] * (7 * arrays)
    read = entry["read"]
    assert all(7 * k + ABI_FIELDS.index("data") in read for k in range(arrays))
    assert {ABI_FIELDS[p % 7] for p in read} <= {"nitems", "data", "shape", "strides"}
    pointers = tuple(0x1000 * (k + 1) for k in range(nin + 1))
    table = fast_launch.pack_array(0xF000, 2**16, 2)
    words = fast_launch.pack_arguments(pointers, 10, 2, {nin: table}, lanes=4)
    expect = []
    for k, p in enumerate(pointers):
        if k == nin:
            expect += table
        expect += fast_launch.pack_array(p, 2, 8) + fast_launch.pack_array(p, 10, 2)
    assert words == expect


def test_simulator_has_no_fast_path():
    assert target.FAST_LAUNCH == (not target.SIMULATOR)


class Recorder:
    """Stands in for FastLaunch (no driver here): records each launch."""

    launches = []
    built = []
    agree = True

    def __init__(self, dispatcher, nin, loop, fixed=None):
        self.nin, self.loop, self.dispatcher = nin, loop, dispatcher
        assert not fixed        # (these functions' kernels take no tables)
        Recorder.built.append((loop, dispatcher))

    def __call__(self, pointers, n, stream):
        Recorder.launches.append((self.loop, pointers, n, stream))
        Recorder.launched_by.append(self)

    def on_handle(self, pointers, n, handle):
        Recorder.launches.append((self.loop, pointers, n, ("handle", handle)))
        Recorder.launched_by.append(self)

    def agrees(self, inputs, general):
        return Recorder.agree


@pytest.fixture
def fake_driver(monkeypatch):
    """The fast path's glue with the driver calls replaced."""
    from gelu_numba import gpu

    monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
    monkeypatch.setattr(fast_launch, "FastLaunch", Recorder)
    monkeypatch.setattr(fast_launch, "current_device_id", lambda: 0)
    # (new numba outputs from numba's allocation, replaced below; the pool
    # has tests of its own: tests/test_output_pool.py)
    monkeypatch.setattr(output_pool, "POOL", False)
    allocated = []

    def device_array(shape, dtype, stream=0):
        array = Cai(shape, np.dtype(dtype).str, ptr=0x9000)
        array.device_ctypes_pointer = ctypes.c_void_p(0x9000)  # (numba's)
        allocated.append(array)
        return array

    monkeypatch.setattr(cuda, "device_array", device_array)
    Recorder.launches, Recorder.built, Recorder.launched_by, Recorder.agree = [], [], [], True
    fresh = {name: target.GpuFunction(name, getattr(gpu, name).device, getattr(gpu, name).nin, "")
             for name in ("gelu", "gelu_backward")}
    return fresh, allocated


def test_fast_call_launches_inputs_then_out(fake_driver):
    f, allocated = fake_driver
    x, dy, out = Cai((2, 3), ptr=0x100), Cai((2, 3), ptr=0x200), Cai((2, 3), ptr=0x300)
    assert f["gelu_backward"](dy, x, out=out) is out
    assert Recorder.launches == [("f", (0x200, 0x100, 0x300), 6, 0)]
    result = f["gelu"](Cai((5,), "<f8", ptr=0x400))
    assert result is allocated[-1]
    assert result.__cuda_array_interface__["typestr"] == "<f8"
    assert Recorder.launches[-1] == ("d", (0x400, 0x9000), 5, 0)


class Tensor(Cai):
    """What a PyTorch CUDA tensor is to :mod:`gelu_numba.targets.cuda.caller`:
    a ``Tensor`` of module ``torch``, on a CUDA device."""

    __module__ = "torch"
    is_cuda = True

    def __init__(self, shape, *args, device_index=0, **kwargs):
        super().__init__(shape, *args, **kwargs)
        self.device_index = device_index

    def get_device(self):
        return self.device_index


def test_the_callers_library_allocates_the_output_and_gives_the_stream(fake_driver,
                                                                       monkeypatch):
    # a call on a library's array: its current stream is the launch's, a new
    # output comes from its allocator (the library's own calls are replaced
    # here); an explicit stream is the launch's, the output still the
    # library's; numba's arrays and other interface objects: as before
    from gelu_numba.targets.cuda import caller
    f, allocated = fake_driver
    made, asked = [], []

    def empty(lib, owner, shape, dtype):
        out = Cai(shape, dtype.str, ptr=0x5000)
        made.append((lib, owner, shape, dtype.str, out))
        return out, 0x5000

    monkeypatch.setattr(caller, "empty", empty)
    monkeypatch.setattr(caller, "current_stream",
                        lambda lib, owner: asked.append((lib, owner)) or 0x77)
    t, dy = Tensor((2, 3), ptr=0x100), Cai((2, 3), ptr=0x200)
    assert caller.library((1.0, t)) == "torch" and caller.library((dy, t)) is None
    y = f["gelu"](t)
    assert made == [("torch", t, (2, 3), "<f4", y)] and asked == [("torch", t)]
    assert Recorder.launches[-1] == ("f", (0x100, 0x5000), 6, ("handle", 0x77))
    assert f["gelu_backward"](t, t, stream=0) is made[-1][-1]
    assert Recorder.launches[-1] == ("f", (0x100, 0x100, 0x5000), 6, 0)
    assert len(asked) == 1                       # (an explicit stream asks nothing)
    # the first device operand decides: an interface object first, numba's kind
    assert f["gelu_backward"](dy, t) is allocated[-1]
    assert Recorder.launches[-1] == ("f", (0x200, 0x100, 0x9000), 6, 0)
    # the library's stream orders the operands: one bound to another stream
    # takes the general path (which imports and waits for it)
    bound = Tensor((2, 3), ptr=0x300, stream=0x99)
    assert target.fast_operands((bound,), 0x77) is None
    assert target.fast_operands((Tensor((2, 3), ptr=0x300, stream=0x77),), 0x77)[0] == "f"


def test_a_library_array_on_another_device_runs_on_its_device(fake_driver, monkeypatch):
    # numba-cuda launches on its current device, which PyTorch's does not
    # move: the operand's device is made current for the call, then left
    from gelu_numba.targets.cuda import caller
    f, _ = fake_driver
    current, entered = [0], []

    class Device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            entered.append(self.index)
            self.saved, current[0] = current[0], self.index

        def __exit__(self, *exc):
            current[0] = self.saved

    monkeypatch.setattr(fast_launch, "current_device_id", lambda: current[0])
    monkeypatch.setattr(cuda, "gpus", {0: Device(0), 1: Device(1)})
    monkeypatch.setattr(caller, "current_stream", lambda lib, owner: 0x77)
    launched_on = []
    monkeypatch.setattr(Recorder, "on_handle", lambda self, pointers, n, handle:
                        launched_on.append((current[0], pointers)))
    x, out = Tensor((4,), ptr=0x100, device_index=1), Tensor((4,), ptr=0x200, device_index=1)
    assert f["gelu"](x, out=out) is out
    assert entered == [1] and launched_on == [(1, (0x100, 0x200))] and current == [0]
    f["gelu"](Tensor((4,), ptr=0x300), out=Tensor((4,), ptr=0x400))
    assert entered == [1] and launched_on[-1] == (0, (0x300, 0x400))


def test_a_launcher_that_disagrees_is_dropped(fake_driver):
    f, _ = fake_driver
    Recorder.agree = False
    with pytest.warns(RuntimeWarning, match="fast launch disagrees"):
        assert f["gelu"]._fast_launcher("f") is None
    assert f["gelu"]._fast_launcher("f") is None   # decided once per device
    assert Recorder.launches == []


def test_a_launcher_that_cannot_be_built_is_dropped(fake_driver, monkeypatch):
    f, _ = fake_driver

    def moved(*args, **kwargs):
        raise AttributeError("'_Kernel' object has no attribute '_codelibrary'")

    monkeypatch.setattr(fast_launch, "FastLaunch", moved)
    with pytest.warns(RuntimeWarning, match="cannot be built.*_codelibrary"):
        assert f["gelu"]._fast_launcher("d") is None


def _bare_launcher(monkeypatch, binds):
    """A FastLaunch of no kernel whose context binding is recorded."""
    launcher = object.__new__(target.FastLaunch)
    launcher._device_id, launcher._bound, launcher._fixed = 3, threading.local(), {}
    launcher._lanes = None
    monkeypatch.setattr(cuda, "current_context",
                        lambda dev: binds.append((dev, threading.get_ident())))
    return launcher


def test_fast_launch_binds_a_context_once_per_thread(monkeypatch):
    # the driver launches on the calling thread's current context, and
    # PyTorch's autograd workers run with none bound: each thread binds the
    # launcher's device once, before its first launch
    binds, calls = [], []
    launcher = _bare_launcher(monkeypatch, binds)
    launcher._handles = {}
    launcher._from_handle = lambda h: f"core {h}"
    launcher._grid = lambda n: "config"
    launcher._itemsize = 4
    launcher._kernel = "kernel"
    launcher._launch = lambda *a: calls.append(a)
    launcher.on_handle((0x10, 0x20), 64, 5)
    launcher.on_handle((0x10, 0x20), 64, 5)
    assert binds == [(3, threading.get_ident())] and len(calls) == 2
    worker = threading.Thread(target=launcher.on_handle, args=((0x10, 0x20), 64, 5))
    worker.start()
    worker.join()
    assert len(binds) == 2 and binds[1][0] == 3 and binds[1][1] != binds[0][1]
    assert [c[0] for c in calls] == ["core 5"] * 3


def test_fast_launch_call_packs_and_caches(monkeypatch):
    """FastLaunch.__call__ with cuda.core's launch and stream conversion
    replaced: the grid, the stream and the packed words it hands over."""
    calls, converted, binds = [], [], []
    launcher = _bare_launcher(monkeypatch, binds)
    launcher._kernel, launcher._itemsize, launcher._max_blocks = "kernel", 8, 100
    launcher._threads = 128
    launcher._launch = lambda *a: calls.append(a)
    launcher._config = lambda grid, block: ("config", grid, block)
    launcher._configs = {}
    launcher._default_stream = "default"
    launcher._to_core_stream = lambda s: converted.append(s) or f"core {s.handle}"
    launcher._streams = weakref.WeakKeyDictionary()

    class Stream:
        handle = 7

    launcher((0x10, 0x20), 1000, 0)
    blocks = -(-1000 // 128)
    assert calls[-1] == ("default", ("config", blocks, 128), "kernel",
                         *target.pack_arguments((0x10, 0x20), 1000, 8))
    launcher((0x10, 0x20), 10**9, 0)                 # the grid is capped
    assert calls[-1][1] == ("config", 100, 128)
    stream = Stream()
    launcher((0x10, 0x20), 1000, stream)
    launcher((0x10, 0x20), 1000, stream)
    assert [c[0] for c in calls[-2:]] == ["core 7", "core 7"]
    assert converted == [stream]                     # converted once, then cached
    assert set(launcher._configs) == {blocks, 100}

    class Slotted:  # takes no weak reference (like cuda.core's Stream)
        __slots__ = ("handle",)

    slotted = Slotted()
    slotted.handle = 9
    launcher((0x10, 0x20), 1000, slotted)
    launcher((0x10, 0x20), 1000, slotted)
    assert [c[0] for c in calls[-2:]] == ["core 9", "core 9"]
    assert converted == [stream, slotted, slotted]
    assert binds == [(3, threading.get_ident())]


def test_the_driver_launch_hands_cuLaunchKernel_the_packed_words(monkeypatch):
    # FastLaunch.via_driver (a timed alternative to cuda.core.launch):
    # kernelParams is an array of pointers, one per 8-byte parameter, each
    # at the value pack_arguments gives; read back here as the driver would
    binds, calls = [], []
    launcher = _bare_launcher(monkeypatch, binds)
    launcher._itemsize, launcher._max_blocks, launcher._threads = 4, 100, 128

    class Kernel:
        handle = "cukernel"

    launcher._kernel = Kernel()

    def cu_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        pointers = (ctypes.c_void_p * 14).from_address(params)
        words = [ctypes.c_uint64.from_address(p).value for p in pointers]
        calls.append((f, (gx, gy, gz), (bx, by, bz), shared, stream, words, extra))
        return (0,)

    launcher._cu_launch, launcher._cu_success = cu_launch, 0
    launcher.via_driver((0x10, 0x20), 1000, 7)
    launcher.via_driver((0x30, 0x40), 10**9, 0)
    want = target.pack_arguments((0x10, 0x20), 1000, 4)
    assert calls[0] == ("cukernel", (-(-1000 // 128), 1, 1), (128, 1, 1), 0, 7, want, 0)
    assert calls[1][1] == (100, 1, 1)                    # the grid is capped
    assert calls[1][5] == target.pack_arguments((0x30, 0x40), 10**9, 4)
    assert binds == [(3, threading.get_ident())]
    launcher._cu_launch = lambda *a: (1,)
    with pytest.raises(RuntimeError, match="cuLaunchKernel"):
        launcher.via_driver((0x10, 0x20), 1000, 0)


def test_a_device_that_chose_culaunchkernel_launches_through_it(monkeypatch):
    # (FastLaunch._driver: set from the measured choice when it is built)
    binds, calls = [], []
    launcher = _bare_launcher(monkeypatch, binds)
    launcher._driver = True
    launcher.via_driver = lambda pointers, n, handle=0: calls.append((pointers, n, handle))
    launcher._launch = lambda *a: pytest.fail("cuda.core.launch called")

    class Stream:
        handle = 7

    launcher((0x10, 0x20), 100, 0)
    launcher((0x10, 0x20), 100, Stream())
    launcher.on_handle((0x10, 0x20), 100, 9)
    assert calls == [((0x10, 0x20), 100, 0), ((0x10, 0x20), 100, 7), ((0x10, 0x20), 100, 9)]


def test_a_launcher_with_shared_memory_asks_for_it_in_each_launch(monkeypatch):
    # (the 2-byte forward with its table in shared memory): cuda.core's
    # LaunchConfig and cuLaunchKernel both get the bytes
    binds, calls = [], []
    launcher = _bare_launcher(monkeypatch, binds)
    launcher._itemsize, launcher._max_blocks, launcher._threads = 2, 132, 1024
    launcher._configs, launcher._default_stream = {}, "default"
    launcher._config = lambda **kw: kw
    launcher._launch = lambda *a: calls.append(a)
    launcher._kernel = type("Kernel", (), {"handle": "k"})()
    launcher._shared_bytes, launcher._shmem = 131072, {"shmem_size": 131072}
    launcher((0x10, 0x20), 10**6, 0)
    assert calls[-1][1] == {"grid": 132, "block": 1024, "shmem_size": 131072}
    launcher._cu_launch, launcher._cu_success = lambda *a: calls.append(a) or (0,), 0
    launcher.via_driver((0x10, 0x20), 10**6)
    assert calls[-1][7] == 131072


def test_new_launch_constants_build_a_new_launcher(fake_driver, monkeypatch):
    # (analysis.gpu.throughput --tune changes them between measurements)
    f, _ = fake_driver
    x = Cai((8,))
    f["gelu"](x)
    f["gelu"](x)
    monkeypatch.setattr(launch, "UNROLL", 2)
    f["gelu"](x)
    monkeypatch.setattr(launch, "THREADS_PER_BLOCK", 512)
    f["gelu"](x)
    # three float32 launchers, each a 16-byte-load launch and a flat one
    assert len(Recorder.built) == 6
    flat = [dispatcher for _, dispatcher in Recorder.built[1::2]]
    # each with the kernel of the unroll factor of its time
    assert flat[0] is not flat[1]
    assert flat[1] is flat[2]


def test_float32_takes_16_byte_loads_where_every_operand_is_16_byte_aligned(fake_driver):
    f, _ = fake_driver
    layout = target.flat_layout(2)
    launcher = f["gelu_backward"].fast_launcher("f")
    assert isinstance(launcher, fast_launch.AlignedLaunch) and launcher.alignment == 16
    assert launcher.wide.dispatcher is f["gelu_backward"].kernel("f", layout, vec4=True)
    assert launcher.narrow.dispatcher is f["gelu_backward"].kernel("f", layout)
    # a view one element in (4 bytes) is not aligned, nor 8 bytes in
    for pointers, kernel in [((0x100, 0x200, 0x300), launcher.wide),
                             ((0x104, 0x200, 0x300), launcher.narrow),
                             ((0x100, 0x200, 0x308), launcher.narrow)]:
        f["gelu_backward"](Cai((6,), ptr=pointers[0]), Cai((6,), ptr=pointers[1]),
                           out=Cai((6,), ptr=pointers[2]))
        assert Recorder.launched_by[-1] is kernel
        assert Recorder.launches[-1] == ("f", pointers, 6, 0)
    # float64 keeps the one launch (16 bytes are two elements)
    assert isinstance(f["gelu"].fast_launcher("d"), Recorder)


@pytest.mark.parametrize("name, nin", [("gelu", 1), ("gelu_backward", 2)])
def test_half_launchers_take_the_table_in_its_place(monkeypatch, name, nin):
    # gelu_numba.torch's CUDA halves: the 2-byte kernels of cuda.half_kernels with
    # their table fixed after the inputs, checked on every bit pattern
    # against the general path before first use, built once per device
    from gelu_numba.targets.cpu import half_loops as half
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    from gelu_numba.targets.cpu.half_loops import bfloat16_ufunc
    built = []

    class Fake:
        def __init__(self, kernel, n_in, loop, dtype, fixed, lanes=None):
            built.append((n_in, np.dtype(dtype), {k: v.copy_to_host() for k, v in fixed.items()},
                          lanes))

        def agrees(self, inputs, general):
            assert len(inputs) == nin and all(a.dtype == np.uint16 for a in inputs)
            assert all(np.array_equal(np.sort(a.view(np.uint16)), np.arange(2**16)) for a in inputs)
            # the general callable runs the general kernel (here on the simulator)
            xs = [cuda.to_device(a[:64].copy()) for a in inputs]
            out = cuda.device_array(64, np.uint16)
            general(xs, out)
            if nin == 1:
                want = half.table("gelu", "bfloat16")[inputs[0][:64]]
            else:
                want = bfloat16_ufunc("gelu_backward_bfloat16")(inputs[0][:64], inputs[1][:64])
            assert np.array_equal(out.copy_to_host(), want)
            return True

    monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
    monkeypatch.setattr(fast_launch, "FastLaunch", Fake)
    monkeypatch.setattr(fast_launch, "current_device_id", lambda: 0)
    monkeypatch.setattr(cuda_half, "_FAST", {})
    launcher = cuda_half.fast_launcher(name, "bfloat16")
    assert isinstance(launcher, cuda_half.AlignedLaunch)
    assert cuda_half.fast_launcher(name, "bfloat16") is launcher
    # the wide kernel (8-byte words of 4 elements) and the one-element loop
    assert [lanes for *_, lanes in built] == [cuda_half.LANES, None]
    for n_in, dtype, fixed, _ in built:
        assert n_in == nin and dtype == np.uint16 and list(fixed) == [nin]
        assert fixed[nin].tobytes() == half.table(name, "bfloat16").tobytes()   # (NaNs in it)
    # each call takes the wide kernel exactly where every pointer is on an
    # 8-byte boundary
    calls = []
    launcher.wide = lambda *a: calls.append(("wide", a))
    launcher.narrow = lambda *a: calls.append(("narrow", a))
    launcher((0x1000,) * (nin + 1), 9, 0)
    launcher((0x1000,) * nin + (0x1002,), 9, 0)
    assert [c for c, _ in calls] == ["wide", "narrow"]


def test_a_measured_shared_choice_launches_the_shared_table_forward(monkeypatch):
    # where the device's measurements chose the table in shared memory for
    # the 2-byte gelu, the aligned launch is shared_kernel's: one block of
    # SHARED_THREADS per SM, the table as 8-byte words, TABLE_BYTES of
    # dynamic shared memory; the unaligned one stays the one-element loop
    from gelu_numba.targets.cpu import half_loops as half
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    built = []

    class Fake:
        def __init__(self, kernel, n_in, loop, dtype, fixed, lanes=None, **shape):
            built.append((kernel, {k: v.copy_to_host() for k, v in fixed.items()}, lanes,
                          shape))

        def agrees(self, inputs, general):
            return True

    monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
    monkeypatch.setattr(fast_launch, "FastLaunch", Fake)
    monkeypatch.setattr(fast_launch, "current_device_id", lambda: 0)
    monkeypatch.setattr(cuda_half, "_FAST", {})
    monkeypatch.setattr(variants, "measured_choice",
                        lambda key: {"gelu float16": "shared"}.get(key))
    cuda_half.fast_launcher("gelu", "float16")
    (kernel, fixed, lanes, shape), narrow = built
    assert kernel is cuda_half.shared_kernel("gelu", "float16") and lanes == cuda_half.LANES
    assert fixed[1].dtype == np.uint64
    assert fixed[1].tobytes() == half.table("gelu", "float16").tobytes()
    assert shape == {"threads": cuda_half.SHARED_THREADS, "blocks_per_sm": 1,
                     "shared_bytes": cuda_half.TABLE_BYTES}
    assert narrow[0] is cuda_half.lookup_kernel and narrow[3] == {}
    # bfloat16, not chosen: the wide kernel through L1
    built.clear()
    cuda_half.fast_launcher("gelu", "bfloat16")
    assert built[0][0] is cuda_half.wide_kernel("gelu", "bfloat16", cuda_half.WORDS)
    assert built[0][3] == {}


def test_half_launchers_exactly_where_there_is_a_driver():
    # none on the simulator; on a device one is built, checked on every bit
    # pattern, and kept (a launcher that cannot be built only warns)
    from gelu_numba.targets.cuda import half_kernels as cuda_half
    assert target.FAST_LAUNCH == (not target.SIMULATOR)
    assert (cuda_half.fast_launcher("gelu", "float16") is None) == target.SIMULATOR


@pytest.mark.parametrize("dtype, nin, fixed", [
    ("float32", 1, {}), ("float64", 2, {}), ("float32", 1, {1: "float64"}),
    ("float32", 2, {2: "float64"}), ("uint16", 1, {1: "uint16"})])
def test_launch_signature(dtype, nin, fixed):
    # what FastLaunch compiles: the operands' arrays, the tables at their
    # positions (on a GPU the dispatcher then checks it against the kernel)
    from numba.core import types
    sig = target.launch_signature(dtype, nin, fixed)
    want = [np.dtype(dtype)] * (nin + 1)
    for at, d in fixed.items():
        want.insert(at, np.dtype(d))
    assert [(a.dtype.name, a.ndim, a.layout) for a in sig] == [(d.name, 1, "C") for d in want]
    assert all(isinstance(a, types.Array) for a in sig)


def test_full_rate_fp64_launchers_fix_the_coefficient_tables(fake_driver, monkeypatch):
    # on a device with full-rate FP64 the float32 loop runs the float64-
    # arithmetic kernel, whose tables are one float64 array after the inputs
    from gelu_numba.kernels import normal32_cpu_f64
    seen = {}

    class WithTables(Recorder):
        def __init__(self, dispatcher, nin, loop, fixed=None):
            Recorder.built.append((loop, dispatcher))
            seen.update(fixed or {})

    monkeypatch.setattr(fast_launch, "FastLaunch", WithTables)
    monkeypatch.setattr(variants, "full_rate_fp64", lambda: True)
    f = target.gpu_function.__wrapped__("gelu_backward")   # (a fresh one)
    assert f._fast_launcher("f") is not None
    assert list(seen) == [2]
    want = np.array([c for part in normal32_cpu_f64.TABLES for c in part])
    assert np.array_equal(seen[2].copy_to_host(), want)
    seen.clear()
    assert f._fast_launcher("d") is not None and seen == {}   # float64: no tables
