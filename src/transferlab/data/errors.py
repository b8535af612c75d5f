"""Errors raised by the data stage: one message shape that names the file, line and field.

A user who feeds a 200,000-line TSV into ``transferlab finetune`` needs to be told *where* the
file is wrong, not that ``int()`` failed somewhere. Every reader in ``transferlab.data`` raises
:class:`DataError` with as much of the location as it knows::

    data/train.tsv, line 17, field 'label': missing value

:class:`CatalogError` is the same error for a catalog name that resolves nowhere; its message
lists every place that was tried and how to provide the data.
"""

from __future__ import annotations

from os import PathLike


class DataError(ValueError):
    """A problem in input data, located by file, 1-based line number and field when known.

    ``DataError(path, line, field, problem)``; any of the first three may be ``None``. The parts
    stay available as attributes so a caller (the CLI, a test) can inspect them.
    """

    def __init__(
        self,
        path: str | PathLike[str] | None,
        line: int | None = None,
        field: str | int | None = None,
        problem: str = "invalid data",
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.problem = problem
        super().__init__(self._message())

    def _message(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            # An int field is a 0-based column index; say so, so it is not read as a name.
            where.append(f"field {self.field!r}" if isinstance(self.field, str) else f"column {self.field}")
        return f"{', '.join(where)}: {self.problem}" if where else self.problem

    def __reduce__(self):  # keep the error picklable across DataLoader worker processes
        return (type(self), (self.path, self.line, self.field, self.problem))


class CatalogError(DataError):
    """A catalog name that is unknown, or known but available in none of the places tried."""

    def __init__(self, problem: str) -> None:
        super().__init__(None, None, None, problem)

    def __reduce__(self):
        return (type(self), (self.problem,))
