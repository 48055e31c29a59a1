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


def test_docs_name_every_field_of_the_published_schema():
    import json
    import re

    with open(os.path.join(ROOT, "docs", "policy-protocol-v1.schema.json")) as f:
        defs = json.load(f)["$defs"]
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        section = f.read().split("## The offer and the reply", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z_]+)(?:\[\])?`", section))
    fields = {k for d in defs.values() for k in d.get("properties", {})}
    assert fields <= named, f"docs/python.md's field table leaves out {sorted(fields - named)}"
    rules = set(defs["Rule"]["enum"])
    assert rules <= set(re.findall(r"`([a-z-]+)`", section)), sorted(rules)
