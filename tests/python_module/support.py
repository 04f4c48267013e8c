"""What the Python tests of `import dreamscope` share: where the data is, and the rule for
what is missing. Without the compiled module, numpy or pandas a test is skipped (exit 77,
CTest's SKIP_RETURN_CODE) and says why; under CI (CI=true) that is a failure, as the C++
tests' DREAMSCOPE_REQUIRE_DATA does (tests/common/required_data.h)."""

import os
import sys
import unittest

TEST_DATA = os.environ.get("DREAMSCOPE_TEST_DATA_DIR", "")
SHARED_DATA = os.environ.get("DREAMSCOPE_SHARED_DATA_DIR", "")
BIN_DIR = os.environ.get("DREAMSCOPE_BIN_DIR", "")
IN_CI = os.environ.get("CI") == "true"
SKIP = 77


def require_module():
    """Exits the test program when `dreamscope._core`, numpy or pandas cannot be imported."""
    try:
        import numpy  # noqa: F401
        import pandas  # noqa: F401
        from dreamscope import _core  # noqa: F401
    except ImportError as e:
        message = f"dreamscope Python module tests: {e} (install pybind11-dev python3-dev python3-numpy " \
                  f"python3-pandas: scripts/install-deps.sh, and rebuild)"
        if IN_CI:
            print("FAILED (CI=true, so a missing dependency fails): " + message, file=sys.stderr)
            sys.exit(1)
        print("SKIPPED: " + message)
        sys.exit(SKIP)


def data(*parts, shared=False):
    """A test input's path; a test whose input is missing is skipped (under CI it fails)."""
    path = os.path.join(SHARED_DATA if shared else TEST_DATA, *parts)
    if not os.path.exists(path):
        if IN_CI:
            raise AssertionError(f"required test data missing: {path}")
        raise unittest.SkipTest(f"test data not here: {path}")
    return path


def main():
    require_module()
    unittest.main(verbosity=2)
