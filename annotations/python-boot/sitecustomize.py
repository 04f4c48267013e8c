"""Run by Python at start-up in every Python process of a job that `dreamscope trace` runs
with its Python instrumentation on (the default; `--python off` leaves this folder off
PYTHONPATH). It records PyTorch's framework layer once the program imports torch
(dreamscope/pytorch.py; docs/tracing.md, "Python and PyTorch"), and first runs the
sitecustomize it shadows (Debian's, a virtual environment's), so that the program starts
as it would untraced. Nothing here may stop the program: a failure is said on stderr once.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys


def _run_shadowed_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _say(message):
    sys.stderr.write("dreamscope: %s\n" % message)


def _instrument(torch):
    try:
        import dreamscope
        from dreamscope import pytorch

        if not dreamscope.is_traced():
            return
        depth = os.environ.get("DREAMSCOPE_PYTHON_MODULES", "1")
        ops = os.environ.get("DREAMSCOPE_PYTHON_OPS", "0") not in ("", "0", "off")
        pytorch.install(torch, dreamscope._lib, int(depth) if depth.lstrip("-").isdigit() else 1, ops)
    except Exception as e:  # the program runs on, unrecorded
        _say("PyTorch's layer is not recorded: %s: %s" % (type(e).__name__, e))


class _AfterImport(importlib.abc.Loader):
    """The loader of `torch`, which then instruments the module it has executed."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _instrument(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds `torch` as the other finders would and hands it to _AfterImport."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _AfterImport(spec.loader)
        return spec


try:
    _run_shadowed_sitecustomize()
except Exception as e:
    _say("the sitecustomize this one shadows failed: %s: %s" % (type(e).__name__, e))

if "torch" in sys.modules:
    _instrument(sys.modules["torch"])
else:
    sys.meta_path.insert(0, _TorchFinder())
