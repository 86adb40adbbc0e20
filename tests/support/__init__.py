"""The tests' shared harnesses: plain helpers and servers that test modules import (the pytest
fixtures stay in ``tests/conftest.py``)."""

import pytest

# The API helpers check answers with assert (must_fail, sealed_blob…): pytest explains their
# failures as it explains a test's, as it did when they lived in conftest.py.
pytest.register_assert_rewrite("tests.support.api")
