"""User-facing errors.

Every problem caused by the caller's input raises :class:`LinkriskError` (a ``ValueError``)
with a one-line message that says what was wrong and how to fix it. The CLI prints that
line and exits non-zero instead of showing a traceback.
"""

from __future__ import annotations


class LinkriskError(ValueError):
    """A problem with the caller's input or parameters (message is one actionable line)."""


class SingularCovarianceError(LinkriskError):
    """A covariance matrix needed by an attack or masking method is singular."""


class LinkriskWarning(UserWarning):
    """A caveat about the inputs that changes what is measured (columns left out of the
    default QIs, integer codes read as categories, a release equal to its input); the CLI
    prints each as one ``warning:`` line and the report lists them."""
