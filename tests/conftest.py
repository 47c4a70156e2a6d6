"""Test configuration: GPU tests run only where a CUDA device is found."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))


def _gpu_available() -> bool:
    try:
        from tile.runtime.cuda_driver import cuda_available
    except ImportError:
        return False
    return cuda_available()


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device found")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
