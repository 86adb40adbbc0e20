"""Value rules of protocol.md §3: every constructor accepts the valid and names the bad field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from waypost.reference.domain import values
from waypost.reference.domain.errors import InvalidRequest, ResourceLimit


@pytest.mark.parametrize("good", ["a", "A-z_0", "x" * 96])
def test_object_ids_accept_the_id_alphabet(good: str) -> None:
    assert values.object_id(good, "f") == good


@pytest.mark.parametrize("bad", ["", "x" * 97, "a.b", "a/b", "é", 7, None, "a b"])
def test_object_ids_reject_everything_else(bad: Any) -> None:
    with pytest.raises(InvalidRequest) as caught:
        values.object_id(bad, "thread.thread_id")
    assert caught.value.details == {"field": "thread.thread_id"}


@pytest.mark.parametrize("good", ["r", "a.b:c-d_e", "x" * 128])
def test_request_ids_allow_dots_and_colons(good: str) -> None:
    assert values.request_id(good) == good


@pytest.mark.parametrize("bad", ["", "x" * 129, "a/b", "a b", 1])
def test_request_ids_reject_paths_and_lengths(bad: Any) -> None:
    with pytest.raises(InvalidRequest):
        values.request_id(bad)


@pytest.mark.parametrize("good", ["a", "a/b/c.txt", "é/ü", "x" * 1024])
def test_relative_paths(good: str) -> None:
    assert values.relative_path(good, "path") == good


@pytest.mark.parametrize("bad", ["", "/a", "a//b", "a/../b", "..", "a\\b", "a\x00b", "a/",
                                 "x" * 1025, "é" * 513])
def test_relative_paths_reject_escapes(bad: str) -> None:
    with pytest.raises(InvalidRequest):
        values.relative_path(bad, "path")


def test_subject_is_counted_in_utf8_bytes() -> None:
    assert values.subject("é" * 128) == "é" * 128
    with pytest.raises(ResourceLimit):
        values.subject("é" * 129)
    with pytest.raises(InvalidRequest):
        values.subject("")


def test_metadata_is_an_object_of_at_most_4096_canonical_bytes() -> None:
    assert values.metadata({"k": "v" * 4000}) == {"k": "v" * 4000}
    for bad in ([], "x", {"n": 2**60}, {"f": float("nan")}):
        with pytest.raises(InvalidRequest):
            values.metadata(bad)
    with pytest.raises(ResourceLimit):
        values.metadata({"k": "v" * 4096})


def test_revisions_stop_at_two_to_the_53_minus_one() -> None:
    assert values.revision(2**53 - 1) == 2**53 - 1
    for bad in (2**53, -1, True, 1.0, "1"):
        with pytest.raises(InvalidRequest):
            values.revision(bad)


def test_sequences_are_decimal_strings_up_to_two_to_the_63_minus_one() -> None:
    assert values.sequence("9223372036854775807", "s") == 2**63 - 1
    for bad in ("9223372036854775808", "01", "-1", "1e3", 5, ""):
        with pytest.raises(InvalidRequest):
            values.sequence(bad, "s")


def test_timestamps_round_trip_with_milliseconds() -> None:
    ms = values.timestamp("2026-11-30T02:29:59.123Z", "t")
    assert values.format_timestamp(ms) == "2026-11-30T02:29:59.123Z"
    assert values.timestamp("2026-11-30T03:29:59.123+01:00", "t") == ms
    assert values.format_timestamp(values.timestamp("0099-01-01T00:00:00Z", "t")) == (
        "0099-01-01T00:00:00.000Z")
    late = "2262-04-11T23:47:16.855Z"
    assert values.format_timestamp(values.timestamp(late, "t")) == late
    for bad in ("2026-11-30", "yesterday", "2026-13-01T00:00:00Z",
                "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"):
        with pytest.raises(InvalidRequest):
            values.timestamp(bad, "t")


def test_server_ids_carry_their_prefix_and_are_valid_object_ids() -> None:
    ids = {values.new_id("msg") for _ in range(100)}
    assert len(ids) == 100
    for made in ids:
        assert made.startswith("msg_")
        assert values.object_id(made, "id") == made


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12)


@example({"a\x7fb": "c\x7f", "\x00": "\x1f\n"})
@example([2**53 - 1, -(2**53 - 1)])
@example([2**53])
@example({"n": -(2**53)})
@example(["é", {"\U0001f600": 1, "\ue000": 2}])
@example([1.5, -0.0, 1e21, 5e-324])
@given(_json)
def test_canonical_json_is_rfc8785_byte_for_byte(value: Any) -> None:
    """The fast path for plain values gives exactly the bytes of the RFC 8785 library."""
    import rfc8785

    from waypost.reference.domain.canonical import canonical_json

    try:
        expected = bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError):
        with pytest.raises(ValueError, match=r"\S"):  # the library's reason, passed on
            canonical_json(value)
        return
    assert canonical_json(value) == expected



def test_each_purpose_has_a_key_of_its_own_derived_with_hkdf() -> None:
    """RFC 5869 HKDF-SHA256 of the secret, info "waypost/1 <purpose>", no salt: a port that
    derives the same way shares cursors and sessions with this server's data directory."""
    import hashlib
    import hmac

    from waypost.reference.domain.keys import Keys, derive

    secret = bytes(range(32))
    keys = derive(secret)
    assert len(set(keys)) == 3
    for purpose, key in zip(Keys._fields, keys, strict=True):
        prk = hmac.new(b"\0" * 32, secret, hashlib.sha256).digest()  # extract, salt = zeros
        expected = hmac.new(prk, f"waypost/1 {purpose}".encode() + b"\1", hashlib.sha256)
        assert key == expected.digest()  # expand: one block of 32 bytes
    assert derive(secret) == keys
