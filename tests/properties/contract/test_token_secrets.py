"""WP-CTRL-16: no control-plane read shows a token's secret. The kit knows no token format
(protocol.md fixes none): a token whose last part is its id, listed in a read, is no leak."""

from __future__ import annotations

import httpx
import pytest

from waypost.properties.contract.common import Finding
from waypost.properties.contract.routes import _no_secret

SECRET = "s3cr3t-s3cr3t-s3cr3t-s3cr3t"
TOKEN_ID = "tok_0123456789abcdef"


def _read(text: str) -> dict[str, httpx.Response]:
    return {"GET /admin/v1/spaces/s1": httpx.Response(200, text=text)}


def test_a_token_whose_last_part_is_its_id_may_be_listed_by_its_id() -> None:
    _no_secret(f"{SECRET}.{TOKEN_ID}", _read(f'{{"token_id": "{TOKEN_ID}"}}'), TOKEN_ID)


def test_a_read_that_shows_the_secret_fails() -> None:
    """The whole token, or (in the reference's ``<token_id>.<secret>`` form) its tail."""
    for token in (f"{SECRET}.{TOKEN_ID}", f"{TOKEN_ID}.{SECRET}"):
        with pytest.raises(Finding, match="WP-CTRL-16"):
            _no_secret(token, _read(f'{{"token": "{token}"}}'), TOKEN_ID)
    with pytest.raises(Finding, match="WP-CTRL-16"):
        _no_secret(f"{TOKEN_ID}.{SECRET}", _read(f'{{"x": "{SECRET}"}}'), TOKEN_ID)
