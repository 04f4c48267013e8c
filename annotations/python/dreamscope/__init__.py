"""dreamscope annotations for Python (standard library only).

    import dreamscope

    for batch in dreamscope.data_loader(loader):      # marks the wait for each batch
        with dreamscope.step(i):
            with dreamscope.operation("forward"):
                ...

    @dreamscope.operation("optimizer")
    def update(): ...

    # in loader code
    with dreamscope.fetch(batch_id): read()
    with dreamscope.prep(batch_id): decode()

    # around a collective across the ranks of a distributed job
    with dreamscope.collective("all_reduce", grad.nbytes):
        dist.all_reduce(grad)

Every call becomes an NVTX range in the "dreamscope" domain through
libdreamscope-annotate.so, which `dreamscope trace` makes available. When the process is
not traced (no NVTX tool attached) the library is never loaded and every call is a
Python-level no-op.
"""

import ctypes
import functools
import os

__all__ = ["operation", "step", "fetch", "prep", "wait", "collective", "data_loader", "mark", "is_traced"]

STEP, OPERATION, FETCH, PREP, WAIT, COLLECTIVE = 1, 2, 3, 4, 5, 7
_NO_PAYLOAD = -(2 ** 63)


def _candidate_paths():
    explicit = os.environ.get("DREAMSCOPE_ANNOTATE_LIB")
    if explicit:
        yield explicit
    here = os.path.dirname(os.path.abspath(__file__))
    # Build tree and install layout: lib/python/dreamscope/ next to lib/libdreamscope-annotate.so.
    yield os.path.join(here, "..", "..", "libdreamscope-annotate.so")
    yield "libdreamscope-annotate.so"


def _load():
    if not os.environ.get("NVTX_INJECTION64_PATH"):
        return None
    for path in _candidate_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        lib.ds_range_push.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int64]
        lib.ds_range_push.restype = None
        lib.ds_range_pop.argtypes = []
        lib.ds_range_pop.restype = None
        lib.ds_mark.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int64]
        lib.ds_mark.restype = None
        for fn in (lib.ds_tracing_pause, lib.ds_tracing_resume):
            fn.argtypes = []
            fn.restype = None
        for fn in (lib.ds_step_push, lib.ds_fetch_push, lib.ds_prep_push, lib.ds_wait_push):
            fn.argtypes = [ctypes.c_int64]
            fn.restype = None
        for fn in (lib.ds_auto_range_push, lib.ds_auto_mark):
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int64]
            fn.restype = None
        lib.ds_auto_range_pop.argtypes = []
        lib.ds_auto_range_pop.restype = None
        return lib
    return None


_lib = _load()


def is_traced():
    """True when the annotations reach a tracer."""
    return _lib is not None


class _Noop:
    """What every annotation is when not traced: enter, exit and decorate do nothing."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


_NOOP = _Noop()


class _Range:
    __slots__ = ("_category", "_name", "_payload")

    def __init__(self, category, name, payload):
        self._category = category
        self._name = name.encode() if isinstance(name, str) else name
        self._payload = _NO_PAYLOAD if payload is None else int(payload)

    def __enter__(self):
        _lib.ds_range_push(self._category, self._name, self._payload)
        return self

    def __exit__(self, *exc):
        _lib.ds_range_pop()
        return False

    def __call__(self, fn):
        category, name, payload = self._category, self._name, self._payload

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            _lib.ds_range_push(category, name, payload)
            try:
                return fn(*args, **kwargs)
            finally:
                _lib.ds_range_pop()

        return wrapped


class _Shorthand:
    """A data-pipeline or step range whose name is registered once in the C library."""

    __slots__ = ("_push", "_id")

    def __init__(self, push, ident):
        self._push = push
        self._id = int(ident)

    def __enter__(self):
        self._push(self._id)
        return self

    def __exit__(self, *exc):
        _lib.ds_range_pop()
        return False


def operation(name):
    """A named operation, as a context manager or a decorator."""
    return _Range(OPERATION, name, None) if _lib else _NOOP


def step(i):
    """Training step number i."""
    return _Shorthand(_lib.ds_step_push, i) if _lib else _NOOP


def fetch(batch_id):
    """Reading batch `batch_id` from storage."""
    return _Shorthand(_lib.ds_fetch_push, batch_id) if _lib else _NOOP


def prep(batch_id):
    """Preprocessing batch `batch_id` on the CPU."""
    return _Shorthand(_lib.ds_prep_push, batch_id) if _lib else _NOOP


def wait(batch_id):
    """The consumer waiting for batch `batch_id`."""
    return _Shorthand(_lib.ds_wait_push, batch_id) if _lib else _NOOP


def collective(name, nbytes=None):
    """A collective across the job's ranks ("all_reduce", "broadcast", ...), from entry to
    return, with the bytes this rank contributes; a context manager or a decorator."""
    return _Range(COLLECTIVE, name, nbytes) if _lib else _NOOP


def mark(name, payload=None):
    """An instant event."""
    if _lib:
        _lib.ds_mark(OPERATION, name.encode(), _NO_PAYLOAD if payload is None else int(payload))


def pause():
    """Stops recording annotations until resume(), as torch.cuda.profiler.stop() does under
    Nsight Systems: a range open now ends here, and annotations made while paused cost what
    they cost untraced. CUDA activity is recorded throughout."""
    if _lib:
        _lib.ds_tracing_pause()


def resume():
    """Records annotations again after pause()."""
    if _lib:
        _lib.ds_tracing_resume()


def data_loader(iterable, first_batch_id=0):
    """Yields the items of `iterable`, marking the wait for each one as a `wait` range
    whose payload is the batch id (first_batch_id, first_batch_id + 1, ...)."""
    if not _lib:
        yield from iterable
        return
    it = iter(iterable)
    batch_id = first_batch_id
    while True:
        _lib.ds_wait_push(batch_id)
        try:
            item = next(it)
        except StopIteration:
            _lib.ds_range_pop()
            return
        _lib.ds_range_pop()
        yield item
        batch_id += 1


# Traces as DataFrames, HTA's analyses, replay and what-ifs (docs/python.md) live in
# dreamscope.traces and dreamscope.hta, on the compiled module dreamscope._core. They are
# imported on first use, so that the annotations above need neither the module nor pandas.
_ANALYSIS_NAMES = ("load", "Trace", "JobSummaries", "scenarios")


def __getattr__(name):
    if name in _ANALYSIS_NAMES:
        from . import traces

        return getattr(traces, name)
    raise AttributeError(f"module 'dreamscope' has no attribute {name!r}")
