"""Make the checkout importable as ``ansible_collections.aiops.triton``.

Modules import shared code by its collection path, so tests need the same name. A
symlink under .collection/ (git-ignored) points back at the checkout; nothing is copied.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".collection")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "aiops", "triton")

if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    try:
        os.symlink(ROOT, LINK)
    except FileExistsError:  # another xdist worker won the race
        pass
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def pytest_collection_modifyitems(config, items):
    """Everything under tests/integration/ starts real services: mark it so stages can select it."""
    import pytest

    for item in items:
        if "%stests%sintegration%s" % (os.sep, os.sep, os.sep) in str(item.fspath):
            item.add_marker(pytest.mark.integration)
