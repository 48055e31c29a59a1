"""The package's type hints hold: ``mypy --strict`` accepts every module
(the native module through its stub, ``mrtb/_native.pyi``)."""

import importlib.util
import os
import subprocess
import sys

import pytest

PYTHON = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ROOT = os.path.dirname(PYTHON)


def test_mypy_strict_accepts_the_package():
    if importlib.util.find_spec("mypy") is None:
        if os.environ.get("CI"):
            pytest.fail("mypy is missing: scripts/test-deps installs it")
        pytest.skip("mypy is missing (scripts/test-deps setup installs it)")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", os.path.join(ROOT, "target", "tmp", "mypy"), "mrtb"],
        cwd=PYTHON,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
