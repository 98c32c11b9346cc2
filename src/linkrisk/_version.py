"""The installed version of linkrisk (a leaf module, so that any module may import it)."""

__version__ = "0.1.0"
