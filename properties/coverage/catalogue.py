"""P01–P18 as data: the properties of docs/properties.md, by their headings (carried in the
kit's package data, ``properties/verdicts/requirements.json``, made by
``tools/requirements_data.py``). Which checks of the kit exercise a property is computed from
the checks themselves (``properties/coverage/check_sites.py``). The runner prints this table."""

from __future__ import annotations

from dataclasses import dataclass

from waypost.properties.coverage import check_sites
from waypost.properties.verdicts.owners import property_names


@dataclass(frozen=True)
class Property:
    """One property of docs/properties.md."""

    pid: str
    name: str

    @property
    def checked_by(self) -> tuple[str, ...]:
        """The named checks of the kit whose requirement ids include one of this property's."""
        return check_sites.checked_by(self.pid)


CATALOGUE: tuple[Property, ...] = tuple(Property(pid, name)
                                        for pid, name in property_names().items())

BY_ID: dict[str, Property] = {prop.pid: prop for prop in CATALOGUE}


def select(only: str | None) -> list[Property]:
    """The properties named by ``--only P03,P06`` (all when None); unknown ids raise ValueError."""
    if not only:
        return list(CATALOGUE)
    wanted = [part.strip().upper() for part in only.split(",") if part.strip()]
    unknown = [pid for pid in wanted if pid not in BY_ID]
    if unknown:
        raise ValueError(f"unknown properties: {', '.join(unknown)} (known: P01–P18)")
    return [BY_ID[pid] for pid in wanted]
