"""Row shapes: each SELECT's columns are named by the fields of a frozen dataclass.

A read defines its column list with :func:`select_list` from the dataclass it decodes into, so
every column is aliased by its field name (D1 returns rows as objects keyed by those names, and
the SQLite driver sees the same names) and the list cannot drift from the fields; :func:`decode`
turns a row into the dataclass, column by field in that same order, with the conversions a
column needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    Shape = TypeVar("Shape", bound=DataclassInstance)
else:
    Shape = TypeVar("Shape")


_NAMES: dict[type[Any], tuple[str, ...]] = {}


def names(shape: type[Any]) -> tuple[str, ...]:
    """The column names of a row shape: its field names, in order (found once per shape:
    every decoded row asks). A shape must take every field positionally, in that order, as
    :func:`decode` builds it."""
    found = _NAMES.get(shape)
    if found is None:
        found = tuple(f.name for f in fields(shape))
        if any(not f.init or f.kw_only for f in fields(shape)):
            raise TypeError(f"{shape.__name__}: a row shape takes every field by position")
        _NAMES[shape] = found
    return found


def select_list(shape: type[Any], prefix: str = "", **expressions: str) -> str:
    """``expression AS field`` for every field of ``shape``, in field order; a field without an
    expression reads the column of its own name (after ``prefix``, e.g. ``"u."``)."""
    columns = names(shape)
    unknown = sorted(set(expressions) - set(columns))
    if unknown:
        raise ValueError(f"{shape.__name__} has no fields {unknown}")
    return ",\n    ".join(f"{expressions.get(name, prefix + name)} AS {name}" for name in columns)


def decode(shape: type[Shape], row: Sequence[Any], **convert: Callable[[Any], Any]) -> Shape:
    """``row`` as ``shape``, the columns in its fields' order (:func:`select_list`'s);
    ``convert`` maps a field to the function applied to its value when not NULL (e.g.
    ``sequence=int`` for decimal text)."""
    columns = names(shape)
    if len(row) != len(columns):
        raise ValueError(f"{shape.__name__} has {len(columns)} fields, the row {len(row)} columns")
    if not convert:
        return shape(*row)
    values = list(row)
    for name, function in convert.items():
        if name not in columns:
            raise ValueError(f"{shape.__name__} has no field {name}")
        at = columns.index(name)
        if values[at] is not None:
            values[at] = function(values[at])
    return shape(*values)


def only(rows: Sequence[Sequence[Any]]) -> Sequence[Any]:
    """The one row a read must return (a plan's outcome, a single-row look-up)."""
    (row,) = rows
    return row


def texts(rows: Sequence[Sequence[Any]]) -> list[str]:
    """The one text column of every row, e.g. the ``actor_id`` of each member."""
    return [str(value) for value, in rows]
