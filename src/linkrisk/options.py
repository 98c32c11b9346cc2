"""Parsing of the option values the CLI and the API share: memory sizes, percentages,
``name=value`` parameters, seeds. Every bad value raises a one-line :class:`LinkriskError`."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from .errors import LinkriskError

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kKmMgGtT]?)(i?[bB]?)\s*")


def parse_size(text: str | int | float) -> int:
    """Bytes from ``'512MiB'``, ``'1.5GB'``, ``'2G'`` (binary unless the unit is ``kB``,
    ``MB`` …), or a number of bytes. Refuses anything else with one line."""
    if isinstance(text, bool):
        raise LinkriskError(f"cannot read memory size {text!r}; write e.g. 512MiB or 2GiB")
    if isinstance(text, (int, float)):
        if not math.isfinite(text) or text < 0:
            raise LinkriskError(f"memory size must be a positive number of bytes, got {text!r}")
        return int(text)
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise LinkriskError(f"cannot read memory size {text!r}; write e.g. 512MiB or 2GiB")
    num = float(m.group(1))
    unit = m.group(2).upper()
    suffix = m.group(3)
    base = 1000 if suffix in ("B", "b") and unit else 1024
    return int(num * base ** " KMGT".index(unit or " "))


def parse_percent(text: str | float) -> float:
    """A share in percent from ``'5%'``, ``'5'`` or ``'0.5 %'``.

    Parameters
    ----------
    text : str or float
        The percentage; it must lie in (0, 100].

    Returns
    -------
    float
        The value in %.
    """
    s = str(text).strip().rstrip("%").strip()
    try:
        v = float(s)
    except ValueError:
        raise LinkriskError(f"cannot read the percentage {text!r}; write e.g. 5% or 0.5%") from None
    if not (math.isfinite(v) and 0 < v <= 100):
        raise LinkriskError(f"the percentage must be in (0, 100], got {text!r}")
    return v


def parse_value(v: str) -> Any:
    """CLI parameter value: int, float, bool, None, comma list of those, else the string."""
    if "," in v:
        return [parse_value(x) for x in v.split(",") if x != ""]
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    """Parse ``--param`` items: ``["d=3", "metric=l1"]`` → ``{"d": 3, "metric": "l1"}``.

    Parameters
    ----------
    items : sequence of str, optional
        ``name=value`` items; values that read as int or float become numbers.

    Returns
    -------
    dict of str to object
        The parameters, in the order given.
    """
    params: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise LinkriskError(f"--param expects name=value, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = parse_value(v.strip())
    return params


def check_seed(seed: Any) -> int:
    """Check a seed: a non-negative integer (numpy's generators refuse negative ones).

    Parameters
    ----------
    seed : object
        The seed given.

    Returns
    -------
    int
        The seed as an int; anything else raises :class:`~linkrisk.errors.LinkriskError`.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int,)) and not (
            hasattr(seed, "__index__")):
        raise LinkriskError(f"the seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    if seed < 0:
        raise LinkriskError(f"the seed must be a non-negative integer, got {seed}")
    return seed
