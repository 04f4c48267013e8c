"""PyTorch's framework layer, recorded with no change to the program.

`dreamscope trace -- python train.py` runs `install()` in every Python process of the job
once `torch` has been imported (lib/python-boot/sitecustomize.py). It records, in the
"dreamscope.auto" NVTX domain (docs/tracing.md, "Python and PyTorch"):

- steps: marks that the merge turns into step ranges, bounded by `torch.profiler`'s
  `profile.step()`, else by `Optimizer.step`, else by the DataLoader's batches, whichever
  the program has (the first of these it meets decides, a better one takes over);
- the wait for each batch (`wait`, payload the batch id) around `DataLoader`'s `__next__`;
- each batch's `fetch` (the dataset reads, `Dataset.__getitem__`) and `prep` (the
  collate) in the process that made it, a DataLoader worker or the main process, with the
  same batch id, so that a batch links across processes;
- forward per module down to a call depth (DREAMSCOPE_PYTHON_MODULES, default 1: the
  model and its direct children), backward per module (the same modules but the model,
  whose backward is the pass), `backward` (torch.autograd.backward), `optimizer.step`,
  `zero_grad`;
- `torch.distributed` collectives (category `collective`, payload the bytes of the
  tensors this rank passes);
- with DREAMSCOPE_PYTHON_OPS=1 where CUDA is present, PyTorch's own per-operator NVTX
  ranges (`torch.autograd.profiler.emit_nvtx`).

Everything is found by what the installed torch has (attributes, signatures), never by its
version: the same code runs on PyTorch 1.13 and 2.x. A hook that cannot be installed is
left out and said once on stderr; the program runs on as it would untraced.
"""

import functools
import inspect
import itertools
import os
import statistics
import sys
import threading
import time
import weakref

STEP, OPERATION, FETCH, PREP, WAIT, COLLECTIVE = 1, 2, 3, 4, 5, 7
_NO_PAYLOAD = -(2 ** 63)

# A batch id: the DataLoader iterator (its serial number in the process that made it), the
# epoch of that iterator (persistent workers keep one iterator across epochs) and the
# batch's index in the epoch, so that ids never repeat within a process's loaders.
_EPOCH_SHIFT, _SERIAL_SHIFT = 24, 40
_LOADER_VARIABLE = "DREAMSCOPE_PYTHON_LOADER"

_lib = None
_torch = None
_module_depth = 1
_installed = False
_tls = threading.local()
_serials = itertools.count()


def _say(message):
    sys.stderr.write("dreamscope: %s\n" % message)


def _batch_id(serial, epoch, index):
    return (serial << _SERIAL_SHIFT) | (epoch << _EPOCH_SHIFT) | index


class _Steps:
    """Where the training loop's steps begin and end, as marks on the loop's thread.

    A step begins at the first activity (a batch requested, a root module's forward with
    gradients on, a backward, zero_grad) when none is open, and ends at a boundary of the
    best source the program has shown: the profiler's step() over Optimizer.step over the
    DataLoader's batches. A boundary ends the open step and begins the next. A step that
    saw no training work (no forward with gradients, backward or zero_grad) when the loader
    runs out, or when a better source first shows, is cancelled: it held only the last
    request that found nothing, or the tail between two sources' boundaries. A step still
    open at exit is no step (the merge drops it).

    Where the loop iterates a DataLoader, a step holds at least one batch: an optimizer step
    after the first since the last batch request (a GAN's generator after its
    discriminator, an actor-critic's two networks) moves the step's end there instead of
    ending another step, so that a step stays one pass of the loop. Without a DataLoader
    nothing tells one pass from the next, and each optimizer step ends a step.

    When Optimizer.step first takes over from the batches, the batches since the gradients
    were last zeroed were that optimizer step's micro-batches (gradient accumulation): the
    steps they bounded become one ("step boundaries merged", payload how many)."""

    PROFILER, OPTIMIZER, LOADER = 3, 2, 1

    def __init__(self):
        self.source = 0
        self.open = False
        self.worked = False
        self.loader_seen = False
        self.requested = False  # a batch was requested since the last optimizer boundary
        self.batch_steps = 0  # steps the batches ended since the gradients were last zeroed

    def _mark(self, name):
        _lib.ds_auto_mark(STEP, name, _NO_PAYLOAD)

    def activity(self, work):
        if not self.open:
            self.open = True
            self.worked = False
            self._mark(b"step begin")
        if work:
            self.worked = True

    def boundary(self, source):
        if source == self.LOADER:
            self.loader_seen = self.requested = True
        if source < self.source:
            if source == self.LOADER:
                self.activity(False)
            return
        if source == self.OPTIMIZER:
            if source == self.source and self.loader_seen and not self.requested and self.open:
                self.worked = False
                self._mark(b"step boundary moved")
                return
            self.requested = False
        if source > self.source and self.source and self.open and not self.worked:
            self._mark(b"step cancel")
        elif source > self.source == self.LOADER and self.open and self.batch_steps:
            _lib.ds_auto_mark(STEP, b"step boundaries merged", self.batch_steps)
        if source == self.LOADER and self.open:
            self.batch_steps += 1
        self.source = source
        self.open = True
        self.worked = False
        self._mark(b"step boundary")

    def gradients_zeroed(self):
        self.batch_steps = 0

    def loader_ended(self):
        if self.open and not self.worked:
            self.open = False
            self._mark(b"step cancel")


_steps = _Steps()


def _work():
    _steps.activity(True)


def _zero_grad():
    _steps.gradients_zeroed()
    _steps.activity(True)


def _grad_enabled():
    return _torch is None or _torch.is_grad_enabled()


def _current_batch():
    return getattr(_tls, "batch", None)


def _set_current_batch(batch):
    _tls.batch = batch


# ---------------------------------------------------------------------------------------
# DataLoader: the main process's wait, and fetch + collate wherever the batch is made.


def _patch_fetchers(fetch_module):
    def wrap(cls):
        original = cls.__dict__.get("fetch")
        if original is None or getattr(original, "_dreamscope", False):
            return

        @functools.wraps(original)
        def fetch(self, possibly_batched_index):
            batch = _current_batch()
            collate = getattr(self, "collate_fn", None)
            if batch is None or collate is None:
                return original(self, possibly_batched_index)
            fetching = [True]

            def collate_timed(data):
                # The reads are done: what is left is the collate, the batch's last CPU work.
                fetching[0] = False
                _lib.ds_auto_range_pop()
                _lib.ds_auto_range_push(PREP, b"prep", batch)
                try:
                    return collate(data)
                finally:
                    _lib.ds_auto_range_pop()

            self.collate_fn = collate_timed
            _lib.ds_auto_range_push(FETCH, b"fetch", batch)
            outer = getattr(_tls, "fetching", False)
            _tls.fetching = True
            try:
                return original(self, possibly_batched_index)
            except StopIteration:
                if fetching[0]:
                    # An iterable dataset ran out: this attempt made no batch, and the merge
                    # leaves its fetch out.
                    _lib.ds_auto_mark(FETCH, b"fetch found no data", batch)
                raise
            finally:
                _tls.fetching = outer
                self.collate_fn = collate
                if fetching[0]:
                    _lib.ds_auto_range_pop()

        fetch._dreamscope = True
        cls.fetch = fetch

    # The fetchers that read a dataset and collate: every subclass of the base fetcher
    # (map-style and iterable) that defines its own fetch.
    base = getattr(fetch_module, "_BaseDatasetFetcher", None)
    if base is None:
        return False
    for cls in base.__subclasses__():
        wrap(cls)
    return True


class _IndexQueue:
    """A worker's index queue that notes the batch each request is for: the (index, indices)
    pairs the main process sends, and the epochs a persistent worker is told to begin."""

    def __init__(self, queue, serial, resume_type):
        self._queue = queue
        self._serial = serial
        self._epoch = 0
        self._resume_type = resume_type

    def get(self, *args, **kwargs):
        r = self._queue.get(*args, **kwargs)
        if self._resume_type is not None and isinstance(r, self._resume_type):
            self._epoch += 1
        elif isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], int):
            _set_current_batch(_batch_id(self._serial, self._epoch, r[0]))
        return r

    def __getattr__(self, name):
        return getattr(self._queue, name)


def _patch_worker_loop(worker_module):
    original = getattr(worker_module, "_worker_loop", None)
    if original is None or getattr(original, "_dreamscope", False):
        return False
    signature = inspect.signature(original)
    if "index_queue" not in signature.parameters:
        return False
    resume_type = getattr(worker_module, "_ResumeIteration", None)

    @functools.wraps(original)
    def _worker_loop(*args, **kwargs):
        serial = os.environ.get(_LOADER_VARIABLE)
        if serial is not None and serial.isdigit():
            bound = signature.bind(*args, **kwargs)
            bound.arguments["index_queue"] = _IndexQueue(bound.arguments["index_queue"], int(serial), resume_type)
            args, kwargs = bound.args, bound.kwargs
        _set_current_batch(None)
        return original(*args, **kwargs)

    _worker_loop._dreamscope = True
    worker_module._worker_loop = _worker_loop
    return True


def _patch_loader_iterator(dataloader_module):
    base = getattr(dataloader_module, "_BaseDataLoaderIter", None)
    if base is None or "__next__" not in base.__dict__:
        return False
    original_next = base.__next__

    def _init_for(cls_init):
        @functools.wraps(cls_init)
        def __init__(self, *args, **kwargs):
            if hasattr(self, "_dreamscope_serial"):  # a subclass's __init__ calling its base's
                return cls_init(self, *args, **kwargs)
            self._dreamscope_serial = next(_serials)
            self._dreamscope_epoch = 0
            # The workers this iterator starts (fork or spawn alike) read which iterator
            # they serve from the environment they inherit.
            previous = os.environ.get(_LOADER_VARIABLE)
            os.environ[_LOADER_VARIABLE] = str(self._dreamscope_serial)
            try:
                return cls_init(self, *args, **kwargs)
            finally:
                if previous is None:
                    os.environ.pop(_LOADER_VARIABLE, None)
                else:
                    os.environ[_LOADER_VARIABLE] = previous

        return __init__

    def _reset_for(cls_reset):
        @functools.wraps(cls_reset)
        def _reset(self, loader, first_iter=False, *args, **kwargs):
            # A persistent iterator begins another epoch; its workers count the same
            # _ResumeIteration requests. A subclass's _reset calls its base's: count once.
            if not first_iter and not getattr(self, "_dreamscope_in_reset", False):
                self._dreamscope_epoch = getattr(self, "_dreamscope_epoch", 0) + 1
            outer = not getattr(self, "_dreamscope_in_reset", False)
            self._dreamscope_in_reset = True
            try:
                return cls_reset(self, loader, first_iter, *args, **kwargs)
            finally:
                if outer:
                    self._dreamscope_in_reset = False

        return _reset

    for cls in [base] + list(base.__subclasses__()):
        if "__init__" in cls.__dict__:
            cls.__init__ = _init_for(cls.__dict__["__init__"])
        cls_reset = cls.__dict__.get("_reset")
        if cls_reset is not None and "first_iter" in inspect.signature(cls_reset).parameters:
            cls._reset = _reset_for(cls_reset)

    @functools.wraps(original_next)
    def __next__(self):
        serial = getattr(self, "_dreamscope_serial", None)
        if serial is None:
            return original_next(self)
        # The batch this call returns: in order, the next one to be received from the
        # workers, or the next one made here.
        multiprocess = hasattr(self, "_index_queues")
        index = getattr(self, "_rcvd_idx" if multiprocess else "_num_yielded", None)
        if not isinstance(index, int):
            return original_next(self)
        batch = _batch_id(serial, getattr(self, "_dreamscope_epoch", 0), index)
        _steps.boundary(_Steps.LOADER)
        previous = _current_batch()
        _set_current_batch(batch)
        _lib.ds_auto_range_push(WAIT, b"wait", batch)
        try:
            return original_next(self)
        except StopIteration:
            _steps.loader_ended()
            raise
        finally:
            _lib.ds_auto_range_pop()
            _set_current_batch(previous)

    base.__next__ = __next__
    return True


# ---------------------------------------------------------------------------------------
# The model, backward and the optimizer.


# Per root module (weakly: a model's labels go with it), the label of each module under it,
# by id: computed at the root's first call, so that a recorded call costs a dict lookup.
_root_labels = weakref.WeakKeyDictionary()


def _labels_under(root):
    try:
        return _root_labels[root]
    except (KeyError, TypeError):
        pass
    labels = {}
    try:
        for name, module in root.named_modules():
            if name:
                labels.setdefault(id(module), ("forward: %s" % name).encode())
        _root_labels[root] = labels
    except Exception:
        pass
    return labels


def _module_call(original, push, pop, depth_limit):
    """Module.__call__ recording a range around each call down to `depth_limit` calls deep."""

    @functools.wraps(original)
    def __call__(self, *args, **kwargs):
        try:
            stack = _tls.modules
        except AttributeError:
            stack = _tls.modules = []
        # Modules called while a batch is being made are the dataset's transforms (torchvision's
        # are modules), part of the fetch, not the model.
        if len(stack) > depth_limit or getattr(_tls, "fetching", False):
            stack.append(None)
            try:
                return original(self, *args, **kwargs)
            finally:
                stack.pop()
        if stack:
            labels = stack[0]
            label = labels.get(id(self))
            if label is None:
                label = labels[id(self)] = ("forward: %s" % type(self).__name__).encode()
        else:
            _steps.activity(_grad_enabled())
            labels = _labels_under(self)
            label = b"forward"
        stack.append(labels)
        push(OPERATION, label, _NO_PAYLOAD)
        try:
            result = original(self, *args, **kwargs)
        finally:
            pop()
            stack.pop()
        if len(stack) > 0 and _grad_enabled():
            _mark_module_backward(b"backward" + label[len(b"forward"):], args, kwargs, result)
        return result

    __call__._dreamscope = True
    return __call__


# A module's backward, from the first gradient that reaches one of its outputs to the last
# of its inputs' gradients, on the thread that runs the pass. Each is a hook on the tensor
# (Tensor.register_hook: the same on PyTorch 1.13 and 2.x, and it changes no tensor), one per
# tensor, that takes the modules marked on it latest first: the tensor between two modules is
# the later one's input and the earlier one's output, and the later module's backward ends
# where the earlier one's begins. The ranges nest by construction (a module whose backward never ends,
# one with no input that needs a gradient, is ended by its enclosing module's end or the end
# of the pass), and are recorded only within a pass that `backward` records.
# The marks by tensor id, each entry dropped when its tensor dies (so that an id is never
# met again while its entry lives): not an attribute of the tensor, which a torch.save of it
# would carry along.
_marks_by_tensor = {}


class _ModuleBackward:
    __slots__ = ("label", "inputs_left", "state")

    def __init__(self, label, inputs):
        self.label, self.inputs_left, self.state = label, inputs, 0  # 0 waiting, 1 open, 2 ended


def _pass_stack():
    """The module backwards open on this thread's recorded pass; None outside one."""
    return getattr(_tls, "backward_modules", None)


def _end_module_backwards(stack, until=None):
    """Ends the open module backwards above `until` (all with None), innermost first."""
    while stack:
        call = stack.pop()
        call.state = 2
        _lib.ds_auto_range_pop()
        if call is until:
            return


def _on_marked_gradient(marks):
    def hook(grad):
        try:
            stack = _pass_stack()
            if stack is None:
                return None
            # Latest first: the consumer's input before the producer's output, and a module
            # that returned its input modified in place (an inplace ReLU) before the module
            # that made it.
            for is_input, call in reversed(marks):
                if not is_input:
                    if call.state == 0:
                        call.state = 1
                        _lib.ds_auto_range_push(OPERATION, call.label, _NO_PAYLOAD)
                        stack.append(call)
                elif call.state == 1:
                    call.inputs_left -= 1
                    if call.inputs_left <= 0 and call in stack:
                        _end_module_backwards(stack, call)
        except Exception:
            pass
        return None

    return hook


def _mark(tensor, is_input, call):
    if not (isinstance(tensor, _torch.Tensor) and tensor.requires_grad):
        return False
    try:
        key = id(tensor)
        entry = _marks_by_tensor.get(key)
        if entry is None:
            marks = []
            tensor.register_hook(_on_marked_gradient(marks))
            entry = _marks_by_tensor[key] = (weakref.ref(tensor, lambda _, key=key: _marks_by_tensor.pop(key, None)), marks)
        entry[1].append((is_input, call))
        return True
    except Exception:
        return False


def _tensors_in(value):
    if isinstance(value, (list, tuple)):
        return value
    if isinstance(value, dict):
        return list(value.values())
    return (value,)


def _mark_module_backward(label, args, kwargs, result):
    try:
        outputs = [t for t in _tensors_in(result) if isinstance(t, _torch.Tensor) and t.requires_grad]
        if not outputs:
            return
        inputs = []
        for t in itertools.chain(args, kwargs.values()):
            if isinstance(t, _torch.Tensor) and t.requires_grad and t.grad_fn is not None and \
                    not any(t is i for i in inputs):
                inputs.append(t)
        call = _ModuleBackward(label, len(inputs))
        for t in inputs:
            if not _mark(t, True, call):
                call.inputs_left -= 1
        for t in outputs:
            _mark(t, False, call)
    except Exception:
        pass


def _patch_module_call(module_class):
    original = module_class.__call__
    if getattr(original, "_dreamscope", False):
        return False
    module_class.__call__ = _module_call(original, _lib.ds_auto_range_push, _lib.ds_auto_range_pop, _module_depth)
    return True


def _timed(original, label, before=None, after=None):
    name = label.encode()

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        if before:
            before()
        _lib.ds_auto_range_push(OPERATION, name, _NO_PAYLOAD)
        try:
            result = original(*args, **kwargs)
        finally:
            _lib.ds_auto_range_pop()
        if after:
            after()
        return result

    wrapped._dreamscope = True
    return wrapped


def _patch_optimizer(optim_module):
    optimizer = getattr(optim_module, "Optimizer", None)
    if optimizer is None:
        return False
    if "zero_grad" in optimizer.__dict__ and not getattr(optimizer.zero_grad, "_dreamscope", False):
        optimizer.zero_grad = _timed(optimizer.zero_grad, "zero_grad", before=_zero_grad)

    # Each optimizer class has its own step; wrap the class of each optimizer made, once.
    def wrap_step(cls):
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_dreamscope", False):
            return
        cls.step = _timed(step, "optimizer.step", after=lambda: _steps.boundary(_Steps.OPTIMIZER))

    original_init = optimizer.__init__

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        for cls in type(self).__mro__:
            if "step" in cls.__dict__ and cls is not optimizer:
                wrap_step(cls)
                break

    optimizer.__init__ = __init__
    return True


def _first_tensor(tensors):
    if isinstance(tensors, (list, tuple)):
        return tensors[0] if tensors else None
    return tensors


def _pass_ended():
    """The engine's callback at the end of a pass it ran on a thread of its own."""
    try:
        _end_module_backwards(_pass_stack() or [])
        _tls.backward_modules = None
        _lib.ds_auto_range_pop()
    except Exception:
        pass


def _patch_backward(autograd_module):
    original = getattr(autograd_module, "backward", None)
    if original is None or getattr(original, "_dreamscope", False):
        return False
    # Where the autograd engine runs the pass on a thread of its own (a CUDA device's), the
    # backward kernels are launched there, outside the caller's range: the pass is recorded
    # on that thread too, from a hook on the root tensor (the first thing the pass runs there)
    # to a callback the engine runs when the pass ends, on the same thread.
    engine = getattr(getattr(_torch.autograd, "Variable", None), "_execution_engine", None)
    queue_callback = getattr(engine, "queue_callback", None)
    push, pop = _lib.ds_auto_range_push, _lib.ds_auto_range_pop

    @functools.wraps(original)
    def backward(*args, **kwargs):
        _work()
        handle = None
        root = _first_tensor(args[0] if args else kwargs.get("tensors"))
        if queue_callback is not None and isinstance(root, _torch.Tensor) and root.grad_fn is not None:
            caller = threading.get_ident()

            def on_engine_thread(grad):
                try:
                    if threading.get_ident() != caller:
                        push(OPERATION, b"backward", _NO_PAYLOAD)
                        _tls.backward_modules = []
                        queue_callback(_pass_ended)
                except Exception:
                    pass
                return None

            try:
                handle = root.register_hook(on_engine_thread)
            except Exception:
                handle = None
        push(OPERATION, b"backward", _NO_PAYLOAD)
        enclosing = _pass_stack()
        _tls.backward_modules = []
        try:
            return original(*args, **kwargs)
        finally:
            _end_module_backwards(_tls.backward_modules)
            _tls.backward_modules = enclosing
            pop()
            if handle is not None:
                handle.remove()

    backward._dreamscope = True
    autograd_module.backward = backward
    return True


def _patch_profiler_step(profiler_module):
    profile = getattr(profiler_module, "profile", None)
    if profile is None or "step" not in profile.__dict__ or getattr(profile.step, "_dreamscope", False):
        return False
    original = profile.step

    @functools.wraps(original)
    def step(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        _steps.boundary(_Steps.PROFILER)
        return result

    step._dreamscope = True
    profile.step = step
    return True


# ---------------------------------------------------------------------------------------
# torch.distributed


_COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter",
    "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "reduce", "all_to_all",
    "all_to_all_single", "gather", "scatter", "barrier", "send", "recv", "isend", "irecv",
    "all_gather_object", "broadcast_object_list",
)


def _tensor_bytes(value, torch):
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(v, torch) for v in value)
    return 0


def _patch_distributed(torch):
    distributed = getattr(torch, "distributed", None)
    if distributed is None or not getattr(distributed, "is_available", lambda: False)():
        return False
    c10d = getattr(distributed, "distributed_c10d", None)
    for name in _COLLECTIVES:
        original = getattr(distributed, name, None)
        if original is None or getattr(original, "_dreamscope", False):
            continue
        label = name.lstrip("_").encode()

        def make(original, label):
            @functools.wraps(original)
            def collective(*args, **kwargs):
                # What this rank puts in: the tensor (or tensors) it passes first.
                first = args[0] if args else next(iter(kwargs.values()), None)
                nbytes = _tensor_bytes(first, torch)
                _lib.ds_auto_range_push(COLLECTIVE, label, nbytes)
                try:
                    return original(*args, **kwargs)
                finally:
                    _lib.ds_auto_range_pop()

            collective._dreamscope = True
            return collective

        wrapped = make(original, label)
        setattr(distributed, name, wrapped)
        if c10d is not None and getattr(c10d, name, None) is original:
            setattr(c10d, name, wrapped)
    return True


def _start_operator_ranges(torch):
    """PyTorch's own per-operator NVTX ranges, as emit_nvtx gives them, for the whole run."""
    try:
        if not torch.cuda.is_available():
            _say("DREAMSCOPE_PYTHON_OPS: no CUDA device, PyTorch's operator ranges are not recorded")
            return
        context = torch.autograd.profiler.emit_nvtx()
        context.__enter__()
        _tls.operator_ranges = context  # kept alive for the run
    except Exception as e:  # a build without NVTX support
        _say("DREAMSCOPE_PYTHON_OPS: PyTorch's operator ranges are not available here (%s)" % e)


_CALIBRATION_RANGE = b"dreamscope calibration"


def _calibrate(torch, lib):
    """What one range recorded from Python costs the program, all of it: a module call through
    the recording Module.__call__ (the Python wrapper, its two calls through ctypes and the
    tracer's recording) against the same call through PyTorch's own; 5 rounds of 1000 calls
    each way, alternating, the median of the rounds' differences. Said to the merge as a mark,
    which also leaves the calibration's ranges out of the trace; never negative."""
    push, pop = lib.ds_auto_range_push, lib.ds_auto_range_pop
    plain = torch.nn.Module.__call__
    if getattr(plain, "_dreamscope", False):
        plain = plain.__wrapped__
    recording = _module_call(plain, push, pop, 1 << 30)
    module, x = torch.nn.Identity(), torch.zeros(1)
    saved = getattr(_tls, "modules", None)
    # As a child of a model (the call a model makes most), with a name the merge drops.
    _tls.modules = [{id(module): _CALIBRATION_RANGE}]
    try:
        differences = []
        for _ in range(5):
            timed = []
            for call in (plain, recording):
                start = time.perf_counter_ns()
                for _ in range(1000):
                    call(module, x)
                timed.append((time.perf_counter_ns() - start) / 1000)
            differences.append(timed[1] - timed[0])
    finally:
        _tls.modules = saved if saved is not None else []
    lib.ds_auto_mark(OPERATION, b"python range cost", max(0, int(round(statistics.median(differences)))))


def install(torch, lib, module_depth=1, operator_ranges=False):
    """Installs the hooks into the imported `torch` module; `lib` is the annotation library."""
    global _lib, _torch, _module_depth, _installed
    if _installed or lib is None:
        return
    _lib, _torch, _module_depth, _installed = lib, torch, module_depth, True
    try:
        _calibrate(torch, lib)
    except Exception as e:
        _say("the cost of a Python range could not be measured (%s); it is not charged" % e)
    import importlib

    def module(name):
        try:
            return importlib.import_module(name)
        except Exception:
            return None

    missing = []
    data = module("torch.utils.data.dataloader")
    worker = module("torch.utils.data._utils.worker")
    fetch = module("torch.utils.data._utils.fetch")
    if not (data and _patch_loader_iterator(data)):
        missing.append("DataLoader waits")
    if not (worker and _patch_worker_loop(worker)):
        missing.append("DataLoader workers' batch ids")
    if not (fetch and _patch_fetchers(fetch)):
        missing.append("fetch and collate")
    if module_depth >= 0 and not _patch_module_call(torch.nn.Module):
        missing.append("module forwards")
    if not _patch_backward(torch.autograd):
        missing.append("backward")
    if not _patch_optimizer(torch.optim):
        missing.append("optimizer steps")
    profiler = module("torch.profiler")
    if profiler:
        _patch_profiler_step(profiler)
    _patch_distributed(torch)
    if operator_ranges:
        _start_operator_ranges(torch)
    if missing:
        _say("this PyTorch has no hook for: %s; those are not recorded" % ", ".join(missing))
