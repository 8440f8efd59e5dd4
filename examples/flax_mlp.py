"""A tiny Flax MLP trained with gelu_numba.jax's exact GELU, and the same
model with ``jax.nn.gelu(approximate=False)``: the two losses agree step by
step (the GELUs differ by JAX's erf error only).

    python examples/flax_mlp.py
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import gelu_numba.jax as gj


def train(activation, steps=20, seed=0):
    """The loss after each of ``steps`` SGD steps of a 16-32-1 MLP fitting
    sin(sum x) on 256 points; the same data and initial weights for every
    ``activation``."""
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.standard_normal((256, 16)), jnp.float32)
    y = jnp.sin(x.sum(axis=1, keepdims=True))
    model = nnx.Sequential(nnx.Linear(16, 32, rngs=nnx.Rngs(seed)), activation,
                           nnx.Linear(32, 1, rngs=nnx.Rngs(seed + 1)))
    optimizer = nnx.Optimizer(model, optax.sgd(0.05), wrt=nnx.Param)

    @nnx.jit
    def step(model, optimizer):
        def loss(model):
            return jnp.mean((model(x) - y) ** 2)
        value, grads = nnx.value_and_grad(loss)(model)
        optimizer.update(model, grads)
        return value

    return [float(step(model, optimizer)) for _ in range(steps)]


def main():
    ours = train(gj.GELU())
    peer = train(lambda v: jax.nn.gelu(v, approximate=False))
    for k, (a, b) in enumerate(zip(ours, peer)):
        print(f"step {k:2d}  gelu_numba {a:.7f}  jax.nn.gelu {b:.7f}")


if __name__ == "__main__":
    main()
