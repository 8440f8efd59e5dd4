"""Other libraries' private API is confined to gelu_numba.internals, one
module per library, and each module's probe passes with the installed
versions (a library that moved its internals fails here, by name)."""

import importlib
import re
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "gelu_numba"
#: private names of NumPy, Numba, numba-cuda, PyTorch and JAX (the extension
#: API Numba documents, numba.core.types/cgutils/errors/config, is public)
PRIVATE = re.compile(r"numpy\._core|numpy\.core\b|_multiarray_umath|numba\.core\.registry|"
                     r"numba\.core\.dispatcher|numba\.np\b|_codelibrary|cudadrv|"
                     r"torch\._C|torch\._functorch|torch\.library\._|jax\._src|_library\b")


@pytest.mark.parametrize("name, needs", [("numpy_ufunc", None), ("numba_core", None),
                                         ("torch_dispatch", "torch"), ("xla_ffi", "jax"),
                                         ("jax_sharding", "jax"), ("jax_dtypes", "jax"),
                                         ("jax_tracing", "jax")])
def test_probe_passes(name, needs):
    if needs:
        pytest.importorskip(needs)
    importlib.import_module(f"gelu_numba.internals.{name}").probe()


def test_numba_cuda_probe_passes_on_the_real_driver_module():
    # the suite may run under numba-cuda's simulator, where the probe has
    # nothing to check: run it where numba imports the real driver module
    # (no GPU is needed for its names)
    import os
    import subprocess
    import sys
    pytest.importorskip("numba_cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run([sys.executable, "-c", "from gelu_numba.internals import numba_cuda;"
                          "from numba.core import config; assert not config.ENABLE_CUDASIM;"
                          "numba_cuda.probe(); print('ok')"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "ok", run.stderr[-2000:]


def test_private_names_only_in_internals():
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "internals":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if "``" in code or code.strip().startswith(('"', "'")):
                continue     # (prose: docstrings that name them)
            if PRIVATE.search(code):
                found.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_replace_kernel_where_impl_refuses_overrides():
    # PyTorch 2.11's Library.impl has no allow_override and refuses a second
    # Python kernel for a key (custom_op's Autograd kernel is the first):
    # replace_kernel must still install ours there, and through 2.13's
    # allow_override where it exists
    torch = pytest.importorskip("torch")
    from gelu_numba.internals import torch_dispatch

    class OldLibrary(torch.library.Library):
        def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
            key = f"{self.ns}/{op_name}/{dispatch_key}"
            if key in torch.library._impls:
                raise RuntimeError("already a kernel registered from python")
            return super().impl(op_name, fn, dispatch_key, with_keyset=with_keyset)

    for i, cls in enumerate((OldLibrary, torch.library.Library)):
        ns = f"gelu_numba_test_replace{i}"

        @torch.library.custom_op(f"{ns}::twice", mutates_args=())
        def twice(x: torch.Tensor) -> torch.Tensor:
            return 2 * x

        twice.register_autograd(lambda ctx, g: 2 * g)

        def autograd(keyset, x):
            return torch.full_like(x, 7.0)

        lib = cls(ns, "IMPL")
        if cls is OldLibrary:   # the refusal that replace_kernel avoids
            with pytest.raises(RuntimeError, match="already a kernel"):
                lib.impl("twice", autograd, "Autograd", with_keyset=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "(?s).*Overriding a previously registered kernel")
            torch_dispatch.replace_kernel(lib, "twice", autograd, "Autograd")
        x = torch.ones(3, requires_grad=True)
        assert torch.equal(getattr(getattr(torch.ops, ns), "twice")(x), torch.full((3,), 7.0))


_LOWERED_IN_PLACE = r"""
import json
from numba import njit
from numba.core import event
from gelu_numba.kernels.primitives import bits32 as b, intrinsics as i, polynomials as p

def caller(x, y, k):
    m, e = i.split_exponent(x)
    return (i.nan_to_zero(x), i.scale_shifted(x, i.SHIFTER + 3.0),
            i.shifted_int(i.SHIFTER - 5.0), i.step_bits(x, 1), m, e,
            b.float32_from_bits(b.float32_bits(x)), b.float64_bits(y),
            p.choose(x > 0.0, x, y), p.choose(x < 0.0, x, y))

compiled = []

class Listener(event.Listener):
    def on_start(self, e):
        compiled.append(e.data["dispatcher"].py_func.__qualname__)

    def on_end(self, e):
        pass

with event.install_listener("numba:compile", Listener()):
    got = njit(caller)(1.5, -2.25, 3)
expected = caller(1.5, -2.25, 3)
print(json.dumps({"compiled": compiled, "got": [float(v) for v in got],
                  "expected": [float(v) for v in expected]}))
"""


def test_exponent_and_bit_operations_are_lowered_in_their_caller_on_the_cpu():
    """A CPU caller of the exponent and bit operations and of the literal
    polynomials' choice of coefficient compiles nothing but itself
    (lowered_on_cpu: each operation was an @overload whose implementation
    a first call compiled as a function of its own), and computes what
    their exact Python references compute (run in a fresh process: a
    function compiled earlier in this one would not compile again)."""
    from compiled import json_of

    r = json_of(_LOWERED_IN_PLACE)
    assert r["compiled"] == ["caller"]
    assert r["got"] == r["expected"]
