"""core/config.py across threads: `config.update` sets the process-wide value (what every thread,
and a new one, sees) and the context managers set the calling thread's alone, as JAX's do; jit's
caches key on the calling thread's values. Each case runs beside real JAX on the same program."""
import gc
import logging
import threading

import jax
import jax.numpy as jnp_jax
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp_tj

API = [(tracejit, jnp_tj), (jax, jnp_jax)]


def in_two_threads(first, second):
    """Run first(barrier) and second(barrier) on two threads that meet at the barrier's waits
    (no sleeps); their results, an exception in either re-raised here."""
    barrier = threading.Barrier(2, timeout=120)
    results, errors = [None, None], []

    def run(i, fn):
        try:
            results[i] = fn(barrier)
        except BaseException as e:  # noqa: BLE001  (re-raised in the test's thread)
            errors.append(e)
            barrier.abort()
    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


# option -> (the context manager's name, the value a with-block sets): JAX's options whose
# context managers are thread-local (JAX's State with a thread-local value)
_OPTIONS = {
    "jax_enable_x64": ("enable_x64", True),
    "jax_debug_nans": ("debug_nans", True),
    "jax_debug_infs": ("debug_infs", True),
    "jax_disable_jit": ("disable_jit", True),
    "jax_log_compiles": ("log_compiles", True),
    "jax_explain_cache_misses": ("explain_cache_misses", True),
    "jax_numpy_rank_promotion": ("numpy_rank_promotion", "raise"),
    "jax_numpy_dtype_promotion": ("numpy_dtype_promotion", "strict"),
    "jax_default_matmul_precision": ("default_matmul_precision", "highest"),
    "jax_default_prng_impl": ("default_prng_impl", "rbg"),
    "jax_threefry_partitionable": ("threefry_partitionable", False),
    "jax_check_tracer_leaks": ("check_tracer_leaks", True),
    "jax_enable_checks": ("enable_checks", "flip"),  # (the tests turn it on process-wide)
    "jax_debug_key_reuse": ("debug_key_reuse", True),
    "jax_enable_custom_prng": ("enable_custom_prng", True),
    "jax_legacy_prng_key": ("legacy_prng_key", "error"),
    "jax_allow_f16_reductions": ("allow_f16_reductions", False),
    "jax_softmax_custom_jvp": ("softmax_custom_jvp", True),
    "jax_transfer_guard_host_to_device": ("transfer_guard", "disallow"),
    "jax_transfer_guard_device_to_host": ("transfer_guard_device_to_host", "log"),
    "jax_default_device": ("default_device", "device"),
    "jax_array_garbage_collection_guard": ("array_garbage_collection_guard", "log"),
}


def _value_for(api, name, value):
    if value == "flip":
        return not getattr(api.config, name)
    if value == "device":
        return api.devices()[0]
    return value


@pytest.mark.parametrize("name", sorted(_OPTIONS))
def test_with_block_sets_the_calling_thread_only(name):
    """Inside a with-block in one thread, another thread reads the process-wide value; the block
    ends (by an exception) with the thread's value back: JAX's answers, option by option."""
    def run(api):
        cm_name, value = _OPTIONS[name]
        cm, value = getattr(api, cm_name), _value_for(api, name, _OPTIONS[name][1])
        before = getattr(api.config, name)

        def inside(barrier):
            try:
                with cm(value):
                    barrier.wait()  # (the other thread reads now)
                    seen = getattr(api.config, name)
                    barrier.wait()
                    raise KeyError("leaves the block")
            except KeyError:
                pass
            return seen == value, getattr(api.config, name) == before

        def outside(barrier):
            barrier.wait()
            seen = getattr(api.config, name)
            barrier.wait()
            return seen == before

        return in_two_threads(inside, outside), getattr(api.config, name) == before
    assert run(tracejit) == run(jax) == ([(True, True), True], True)


@pytest.mark.parametrize("api,jnp", API, ids=["tracejit", "jax"])
def test_update_is_process_wide_and_with_blocks_keep_their_value(api, jnp):
    """`config.update` is what a new thread sees (not the starting thread's with-block value);
    inside a with-block an update of the same option changes the process-wide value only."""
    seen = []

    def look():
        t = threading.Thread(target=lambda: seen.append(api.config.jax_enable_x64))
        t.start()
        t.join()
    try:
        api.config.update("jax_enable_x64", True)
        look()
        with api.enable_x64(False):
            look()
            api.config.update("jax_enable_x64", False)
            seen.append(api.config.jax_enable_x64)
            api.config.update("jax_enable_x64", True)
            with api.enable_x64(True), api.enable_x64(False):
                seen.append(api.config.jax_enable_x64)
            seen.append(api.config.jax_enable_x64)
        seen.append(api.config.jax_enable_x64)
    finally:
        api.config.update("jax_enable_x64", False)
    assert seen == [True, True, False, False, False, True]


@pytest.mark.parametrize("api,jnp", API, ids=["tracejit", "jax"])
def test_context_manager_as_decorator(api, jnp):
    @api.debug_nans(True)
    def inside():
        return api.config.jax_debug_nans
    assert (inside(), api.config.jax_debug_nans, inside()) == (True, False, True)


def test_x64_in_one_thread_dtypes_and_jit_cache():
    """One jitted function called in two threads at once, one of them under enable_x64: each gets
    its own thread's dtypes (from eager ops, from jit, through the dispatch fast path on repeated
    calls); one trace per configuration, as in JAX."""
    def run(api, jnp):
        traces = []

        @api.jit
        def f(x):
            traces.append(x.dtype)
            return x * 2 + jnp.arange(3.0)

        def calls(barrier):
            out = []
            for _ in range(3):  # (the second and third calls of a signature: fast path)
                barrier.wait()
                out.append((str(f(np.ones(3)).dtype), str(f(jnp.ones(3)).dtype),
                            str(jnp.zeros(2, np.float64).dtype)))
            return out

        def with_x64(barrier):
            with api.enable_x64():
                return calls(barrier)
        got = in_two_threads(with_x64, calls)
        return got, sorted(map(str, traces))
    want = ([[("float64", "float64", "float64")] * 3, [("float32", "float32", "float32")] * 3],
            ["float32", "float64"])
    assert run(tracejit, jnp_tj) == run(jax, jnp_jax) == want


@pytest.mark.parametrize("api,jnp", API, ids=["tracejit", "jax"])
def test_jit_keys_on_the_calling_threads_options(api, jnp):
    """A function jitted and called (fast path) before: a thread inside disable_jit runs it in
    Python while the other thread's calls run the compiled program; after the block, compiled."""
    traces = []

    @api.jit
    def f(x):
        traces.append(type(x).__name__)
        return x + 1
    x = jnp.ones(2)
    f(x)
    f(x)

    def disabled(barrier):
        with api.disable_jit():
            barrier.wait()
            f(x)
            barrier.wait()
        f(x)

    def compiled(barrier):
        barrier.wait()
        f(x)
        barrier.wait()
        f(x)
    in_two_threads(disabled, compiled)
    assert len(traces) == 2 and traces[0] != traces[1]  # (one trace; one run on the Array)


@pytest.mark.parametrize("api,jnp", API, ids=["tracejit", "jax"])
def test_transfer_guard_guards_its_thread_only(api, jnp):
    """A jitted call on a NumPy argument (a host-to-device transfer), compiled and on the fast
    path before: refused inside `transfer_guard("disallow")` in one thread, allowed meanwhile in
    the other thread, allowed after the block."""
    f = api.jit(lambda x: x * 2)
    host = np.ones(3, np.float32)
    f(host)
    f(host)

    def guarded(barrier):
        with api.transfer_guard("disallow"):
            barrier.wait()
            with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
                f(host)
            with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
                jnp.asarray(host) + 1
            barrier.wait()
        return float(f(host)[0])

    def free(barrier):
        barrier.wait()
        out = float(f(host)[0]) + float((jnp.asarray(host) + 1)[0])
        barrier.wait()
        return out
    assert in_two_threads(guarded, free) == [2.0, 4.0]


@pytest.mark.parametrize("api,jnp", API, ids=["tracejit", "jax"])
def test_user_context_is_thread_local(api, jnp):
    """jax.make_user_context: its with-block holds in its thread (and keys jit there); set_global
    is what the other threads see."""
    ctx = api.make_user_context(0)
    f = api.jit(lambda x: x + ctx.value)

    def inside(barrier):
        with ctx(10):
            barrier.wait()
            out = (ctx.value, ctx.get_global(), float(f(jnp.zeros(()))))
            barrier.wait()
        return out

    def outside(barrier):
        barrier.wait()
        out = (ctx.value, float(f(jnp.zeros(()))))
        barrier.wait()
        return out
    assert in_two_threads(inside, outside) == [(10, 0, 10.0), (0, 0.0)]
    ctx.set_global(5)
    seen = []
    t = threading.Thread(target=lambda: seen.append((ctx.value, float(f(jnp.zeros(()))))))
    t.start()
    t.join()
    assert seen == [(5, 5.0)]


def test_gc_guard_reads_the_collecting_threads_level(caplog):
    """jax_array_garbage_collection_guard set in one thread's with-block: an Array freed by the
    collector in that thread is reported, one freed in another thread (level "allow") is not.
    (JAX reports from C++, past Python's logging: tracejit alone, by JAX's documented rule.)"""
    message = "`jax.Array` was deleted by the Python garbage collector"

    class Cycle:
        pass

    def drop_in_a_cycle():
        node = Cycle()
        node.me, node.x = node, jnp_tj.ones(2)
        del node
        gc.collect()
        return message in caplog.text

    def guarded(barrier):
        with tracejit.array_garbage_collection_guard("log"):
            barrier.wait()
            barrier.wait()  # (the other thread collected)
            return drop_in_a_cycle()

    def free(barrier):
        barrier.wait()
        reported = drop_in_a_cycle()
        barrier.wait()
        return reported
    with caplog.at_level(logging.ERROR, "tracejit"):
        assert in_two_threads(guarded, free) == [True, False]
        caplog.clear()
        assert not drop_in_a_cycle()  # (no block open: the plain finalizer again)
    from tracejit.core.array import Array, _plain_del
    assert Array.__del__ is _plain_del


def test_rejected_with_block_leaves_nothing_behind():
    """A value a with-block refuses (as JAX's ValueError) sets nothing in any thread."""
    for api in (tracejit, jax):
        with pytest.raises(ValueError), api.numpy_rank_promotion("sometimes"):
            pass
        assert api.config.jax_numpy_rank_promotion == "allow"
    elsewhere = type(tracejit.devices()[0])(1 << 20, 7)  # (a device of no process here)
    with pytest.raises(ValueError, match="not a device of tracejit"), \
            tracejit.default_device(elsewhere):
        pass
    assert tracejit.config.jax_default_device is None
    assert not tracejit.config.overridden("jax_default_device")


def test_many_threads_entering_and_leaving_blocks():
    """Four threads each entering and leaving enable_x64 / transfer_guard blocks at random while
    calling one jitted function (fast path and trace key per thread): every call gets its own
    thread's dtype (JAX's rule, as the two-thread cases above check against JAX), and when all
    have left no block is counted open and the transfer guard's hot-path flag is off again."""
    from tracejit.core import transfer_guard
    f = tracejit.jit(lambda x: x * 2)
    wrong = []

    def run(seed):
        rng = np.random.default_rng(seed)
        for _ in range(500):
            on = bool(rng.integers(2))
            with tracejit.enable_x64(on), tracejit.transfer_guard("allow"):
                got = f(np.ones(2)).dtype
            if got != (np.float64 if on else np.float32) or f(np.ones(2)).dtype != np.float32:
                wrong.append((on, got))
    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
    assert tracejit.config._open == 0 and not any(tracejit.config._open_by_name.values())
    assert not transfer_guard.guarding


# --- JAX's option handles: jax.<option> is a State (jax._src.config.State) ---------------------
def _jax_states():
    from jax._src.config import State
    return sorted(n for n in dir(jax) if isinstance(getattr(jax, n), State))


def _state_outcome(api, name, *args):
    """What `api.<name>(*args)` makes of it: the value inside its block, or the error."""
    state = getattr(api, name)
    try:
        cm = state(*args)
    except (TypeError, ValueError) as e:
        return "made", type(e).__name__, str(e)
    with cm:
        inside = state.value
    return "inside", str(inside), state.value == getattr(api.config, state.name)


def test_the_same_names_are_states():
    from tracejit.core.config import State
    names = _jax_states()
    assert len(names) >= 28 and "debug_nans" in names and "enable_x64" in names
    assert [n for n in names if not isinstance(getattr(tracejit, n, None), State)] == []
    ours = sorted(n for n in dir(tracejit) if isinstance(getattr(tracejit, n), State))
    assert ours == names
    for n in ("disable_jit", "transfer_guard", "checking_leaks"):  # (functions in JAX, too)
        assert callable(getattr(tracejit, n)) and not isinstance(getattr(tracejit, n), State)


@pytest.mark.parametrize("name", _jax_states())
def test_state_attributes_and_blocks_as_jax(name):
    """name, __name__, value (as JAX's str), bool() refused, the with-block with no argument
    (True for bool options, else JAX's TypeError) and get_local outside a block."""
    def facts(api):
        state = getattr(api, name)
        try:
            bool(state)
            refused = None
        except TypeError as e:
            refused = str(e)
        value = "(the tests')" if name == "enable_checks" else str(state.value)
        return (state.name, state.__name__, value, state.get_global() == state.value,
                state.__doc__.startswith(f"Context manager for `{state.name}` config option"),
                refused, _state_outcome(api, name))
    assert facts(tracejit) == facts(jax)
    from jax._src.config import config_ext

    from tracejit.core.config import unset
    assert getattr(jax, name).get_local() is config_ext.unset
    assert getattr(tracejit, name).get_local() is unset


# value a block may not take -> JAX's error (checked when the context manager is made)
_BAD_VALUES = [("numpy_rank_promotion", "bogus"), ("numpy_dtype_promotion", "loose"),
               ("default_prng_impl", "nope"), ("transfer_guard_host_to_device", "nah"),
               ("default_device", 3), ("default_matmul_precision", "zzz"),
               ("legacy_prng_key", "q"), ("debug_nans", "yes"), ("enable_x64", 0),
               ("default_matmul_precision", "highest"), ("numpy_dtype_promotion", "strict")]


@pytest.mark.parametrize("name,value", _BAD_VALUES, ids=str)
def test_state_values_parsed_as_jax(name, value):
    assert _state_outcome(tracejit, name, value) == _state_outcome(jax, name, value)


@pytest.mark.parametrize("api,jnp", API, ids=["tracejit", "jax"])
def test_state_value_is_the_calling_threads_and_a_decorator(api, jnp):
    state = api.debug_nans

    @api.debug_nans(True)
    def decorated():
        return state.value, state.get_local()

    def inside(barrier):
        with api.numpy_rank_promotion("raise"):
            barrier.wait()
            barrier.wait()
            return api.numpy_rank_promotion.value, decorated()

    def outside(barrier):
        barrier.wait()
        seen = api.numpy_rank_promotion.value
        barrier.wait()
        return seen, state.value
    assert in_two_threads(inside, outside) == [("raise", (True, True)), ("allow", False)]
    assert state.value is False and api.numpy_rank_promotion.value == "allow"


def test_one_state_block_object_entered_twice_and_by_two_threads():
    """The same `state(v)` object entered inside its own block, and by two threads at once,
    puts back what each entry found (JAX 0.10/0.12 keep one slot for it, so the nested case
    leaves True set after both blocks there: not followed)."""
    cm = tracejit.debug_nans(True)
    with cm:
        with cm:
            assert tracejit.debug_nans.value is True
        assert tracejit.debug_nans.value is True
    assert tracejit.debug_nans.value is False

    def use(barrier):
        with cm:
            barrier.wait()
            seen = tracejit.debug_nans.value
            barrier.wait()
        return seen, tracejit.debug_nans.value
    assert in_two_threads(use, use) == [(True, False), (True, False)]
    assert not tracejit.config._open


def test_config_attributes_as_jax():
    """config.values (the calling thread's), x64_enabled, dir, and JAX's errors for an unknown
    option and for assigning one."""
    def facts(api):
        out = []
        with api.enable_x64(True):
            values = api.config.values
            out.append((values["jax_enable_x64"], api.config.x64_enabled))
        values = api.config.values
        out.append((values["jax_enable_x64"], str(values["jax_numpy_dtype_promotion"]),
                    "jax_debug_nans" in dir(api.config)))
        for action in (lambda: api.config.jax_no_such_option,
                       lambda: setattr(api.config, "jax_enable_x64", True),
                       lambda: api.config.update("jax_no_such_option", 1)):
            with pytest.raises(AttributeError) as e:
                action()
            out.append(str(e.value))
        out.append(api.config.jax_enable_x64)
        return out
    assert facts(tracejit) == facts(jax)
    ours, theirs = set(tracejit.config.values), set(jax.config.values)
    assert {"jax_enable_x64", "jax_debug_nans", "jax_explicit_x64_dtypes"} <= ours & theirs


@pytest.mark.parametrize("api,jnp", API, ids=["tracejit", "jax"])
def test_state_blocks_ended_out_of_order_by_generators(api, jnp):
    """A block opened in a generator that yields inside it, while the caller opens and closes
    another block of the same option: each block puts back what it found, as JAX's do."""
    def gen():
        with api.numpy_rank_promotion("raise"):
            yield api.numpy_rank_promotion.value
            yield api.numpy_rank_promotion.value
        yield api.numpy_rank_promotion.value
    g = gen()
    seen = [next(g)]
    with api.numpy_rank_promotion("warn"):
        seen += [api.numpy_rank_promotion.value, next(g)]
        seen.append(next(g))  # (the generator's block ends inside this one: puts back unset)
        seen.append(api.numpy_rank_promotion.value)
    seen.append(api.numpy_rank_promotion.value)
    # JAX's last block puts back "raise", the value of the generator's block that had ended,
    # for good; here no block of the option is open in the thread: the process-wide value
    assert seen == ["raise", "warn", "warn", "allow", "allow",
                    "raise" if api is jax else "allow"]
    with api.debug_nans(True):  # (and it does not come back while another option's is open)
        assert api.numpy_rank_promotion.value == ("raise" if api is jax else "allow")
    if api is jax:
        jax.numpy_rank_promotion.set_local(jax._src.config.config_ext.unset)
