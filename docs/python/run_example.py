"""Runs the example of docs/python.md as the script it is: the ```python blocks between
<!-- example:begin --> and <!-- example:end -->, in order, in one namespace, from the
repository's root (the example's paths are relative to it). Its pictures go to the folder
given as the first argument (DREAMSCOPE_DOCS_OUT; docs/images when run by hand to refresh
the docs' pictures). Without dreamscope._core, numpy, pandas or matplotlib it is skipped
(exit 77), under CI=true it fails (tests/python_module/support.py)."""

import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "tests", "python_module"))
from support import require_module  # noqa: E402

require_module()
try:
    import matplotlib  # noqa: F401
except ImportError as e:
    print(f"SKIPPED: docs/python.md's example needs matplotlib ({e})")
    sys.exit(77)

with open(os.path.join(root, "docs", "python.md"), encoding="utf-8") as f:
    text = f.read()
example = text[text.index("<!-- example:begin -->"):text.index("<!-- example:end -->")]
code = "\n".join(re.findall(r"```python\n(.*?)```", example, flags=re.S))
out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "docs", "images"))
os.makedirs(out, exist_ok=True)
os.environ["DREAMSCOPE_DOCS_OUT"] = out
os.chdir(root)
exec(compile(code, "docs/python.md (example)", "exec"), {"__name__": "__main__"})
print(f"docs/python.md's example ran; pictures in {out}")
