"""`jax.example_libraries`: JAX's two teaching libraries, stax (layers as (init, apply) pairs)
and optimizers (optimizers as (init, update, get_params) triples), written for tracejit on top
of its numpy, nn and random modules (user-facing layer)."""
