"""What the scripts beside this one share, run by tests/test_mpi.py as `X.py OUT MODE`: the
start (mode `mpi`: under `mpiexec -n 2`, MPI initialised, two devices a process; else one
process of four devices; twice as many for a script that asks), the results saved as arrays (gathered whole where they span the
processes) to OUT.<rank>.npz, and the bytes a call receives through MPI. It works with the
`jax` its script imports: tracejit itself, tracejit under `python -m tracejit`, or real JAX
(mode `jax`)."""
import collections
import importlib
import sys

import numpy as np


class Run:
    """One run of a script: its `mode` ('mpi', 'single' or 'jax'; from the command line unless
    the script has one only) and the `results` it saves; `devices` a process under MPI (one
    process has both's)."""

    def __init__(self, jax, mode: str | None = None, devices: int = 2):
        self.jax, self.out_path = jax, sys.argv[1]
        self.mode = mode or sys.argv[2]
        self.results = {}
        if self.mode == "mpi":
            jax.distributed.initialize()
            assert jax.process_count() == 2 and jax.local_device_count() == devices
        else:
            jax.config.update("jax_num_cpu_devices", 2 * devices)

    def whole(self, x) -> np.ndarray:
        """The global value of a result (gathered from the processes when it spans them)."""
        if getattr(x, "is_fully_addressable", True) is False:
            # (of the script's jax, which need not be the one `import jax` gives here)
            utils = importlib.import_module(f"{self.jax.__name__}.experimental.multihost_utils")
            return np.asarray(utils.process_allgather(x, tiled=True))
        return np.asarray(x)

    def save(self, name: str, tree) -> None:
        """Each leaf of `tree` whole, as NAME/0, NAME/1, ..."""
        for i, leaf in enumerate(self.jax.tree_util.tree_leaves(tree)):
            self.results[f"{name}/{i}"] = self.whole(leaf)

    def save_position_grads(self, per_position, mesh, a, w, staged=None) -> None:
        """The gradients of the sum of every position's per_position(block of a, block of w)
        (a scalar each) over a mesh of one axis 'data' splitting both, with check_vma and
        without (`grad`, `grad_unchecked`): the losses leaving shard_map split and summed
        outside, differentiated there under jit (`_outer`) and eagerly (`_outer_eager`), and
        each position's own differentiated inside (`_inner`); with `staged` (a function calling
        its argument while jit traces an unrelated one), the eager grad so called too
        (`_outer_staged`: staged into that program, as JAX stages it)."""
        jax, P = self.jax, self.jax.sharding.PartitionSpec
        for name, check_vma in (("grad", True), ("grad_unchecked", False)):
            losses = jax.shard_map(lambda a, w: per_position(a, w)[None], mesh=mesh,
                                   in_specs=(P("data"), P("data")), out_specs=P("data"),
                                   check_vma=check_vma)

            def total_loss(a, w, losses=losses):
                return jax.numpy.sum(losses(a, w))

            self.save(f"{name}_outer", jax.jit(jax.grad(total_loss))(a, w))
            self.save(f"{name}_outer_eager", jax.grad(total_loss)(a, w))
            if staged is not None:
                self.save(f"{name}_outer_staged",
                          staged(lambda total_loss=total_loss: jax.grad(total_loss)(a, w)))
            self.save(f"{name}_inner", jax.jit(jax.shard_map(
                lambda a, w: jax.grad(per_position)(a, w), mesh=mesh,
                in_specs=(P("data"), P("data")), out_specs=P("data"), check_vma=check_vma))(a, w))

    def finish(self) -> None:
        """The results to OUT.<rank>.npz (rank 0 outside MPI); under MPI, MPI shut down."""
        rank = self.jax.process_index() if self.mode == "mpi" else 0
        np.savez(f"{self.out_path}.{rank}.npz", **self.results)
        if self.mode == "mpi":
            self.jax.distributed.shutdown()
            assert not self.jax.distributed.is_initialized()


def received(f, *args):
    """f(*args) called twice, the first call compiling it: the second call's result, and the
    bytes that call received through MPI by operation ('allgather', 'sendrecv', ...: a Counter
    of tracejit's core/mpi.py's, 0 for the others)."""
    from tracejit.core import mpi
    f(*args)
    before = collections.Counter(mpi.received)
    out = f(*args)
    return out, collections.Counter(mpi.received) - before
