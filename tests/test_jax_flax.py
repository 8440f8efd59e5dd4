"""gelu_numba.jax.GELU as a Flax activation: the example trains, to the
losses of jax.nn.gelu(approximate=False); linen takes it too."""

import numpy as np
import pytest

pytest.importorskip("flax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from flax import linen  # noqa: E402

import gelu_numba as g  # noqa: E402
import gelu_numba.jax as gj  # noqa: E402
from examples import flax_mlp  # noqa: E402

pytestmark = pytest.mark.tools


def test_the_flax_example_trains_to_jax_nn_gelus_losses():
    ours = flax_mlp.train(gj.GELU())
    peer = flax_mlp.train(lambda v: jax.nn.gelu(v, approximate=False))
    assert ours[-1] < 0.8 * ours[0]                       # it learns
    assert np.max(np.abs(np.subtract(ours, peer))) <= 1e-6


def test_linen_takes_it_as_an_activation():
    model = linen.Sequential([linen.Dense(8), gj.GELU(), linen.Dense(1)])
    x = jnp.linspace(-2, 2, 12, dtype=jnp.float32).reshape(3, 4)
    params = model.init(jax.random.key(0), x)
    hidden = linen.Dense(8).apply({"params": params["params"]["layers_0"]}, x)
    out = model.apply(params, x)
    ref = linen.Dense(1).apply({"params": params["params"]["layers_2"]},
                               jnp.asarray(g.gelu(np.asarray(hidden))))
    assert np.array_equal(np.asarray(out), np.asarray(ref))
    assert gj.GELU() == gj.GELU(False) and hash(gj.GELU("tanh")) == hash(gj.GELU("tanh"))
