"""Importers: the seven built-in benchmarks, user CSV/JSONL files, and grouped splits.

Everything here turns files into the typed records of :mod:`judge_engine.records`
(:class:`Sample`, :class:`Aspect`, :class:`Dataset`, :class:`Split`). The work is split by job:

- :mod:`._common` -- :class:`DataImportError` (every problem with a file the user can fix; names
  the file, the row and the column: ``"my.csv, row 17, column 'score': 'abc' is not a number"``),
  :class:`SplitError` and the readers every importer shares;
- :mod:`.benchmarks` -- :data:`BENCHMARKS` (name -> :class:`BenchmarkSpec`), the format reader of
  each built-in data set, :func:`default_data_dir`, :func:`available_benchmarks`, :func:`load_benchmark`;
- :mod:`.dialects` -- :class:`CsvDialect` and :func:`detect_dialect` (separator, quote, decimal mark);
- :mod:`.tables` -- :func:`inspect_table`, :func:`preview_table`, :func:`load_table` for user CSV /
  TSV / JSONL / JSON-list files, :func:`find_duplicates`;
- :mod:`.splits` -- :func:`make_split`, a seeded train/test split that never cuts a group;
- :mod:`.sources` -- where each built-in benchmark is published (repository, pinned commit, license,
  size, sha256) and :mod:`.fetch` -- :func:`fetch_benchmark` downloads one into the data folder;
- :mod:`.importing` -- :func:`~.importing.import_table`, a user's table into the store (the Datasets
  page and ``judge-workbench datasets import``).

Every name is importable from here (``from judge_engine.data import load_table``), as before the split.
"""

from ._common import (  # noqa: F401  (the underscored names are read by items.py, as before the split)
    _COMMA_NUMBER,
    DataImportError,
    SplitError,
    _json_error,
    _short,
    _text,
    parse_number,
)
from .benchmarks import (  # noqa: F401
    BENCHMARKS,
    DATA_DIR_ENV,
    BenchmarkDamaged,
    BenchmarkNotDownloaded,
    BenchmarkSpec,
    available_benchmarks,
    benchmark_path,
    data_dir_origin,
    default_data_dir,
    load_benchmark,
)
from .dialects import (  # noqa: F401
    _SNIFF_CHARS,
    DECIMAL_MARKS,
    QUOTES,
    SEPARATORS,
    CsvDialect,
    _detect_dialect,
    _table_kind,
    detect_dialect,
)
from .fetch import DATA_URL_ENV, BenchmarkStatus, FetchError, benchmark_status, fetch_benchmark
from .sources import SOURCES, BenchmarkFile, BenchmarkSource
from .splits import make_split
from .tables import (  # noqa: F401
    _CONTROL,
    DUPLICATE_CHOICES,
    MAX_FIELD_CHARS,
    RowColumns,
    TablePreview,
    _read_table,
    clean_record,
    control_warning,
    csv_header,
    csv_reader,
    csv_records,
    duplicates_warning,
    find_duplicates,
    inspect_table,
    load_table,
    preview_table,
    row_sample,
)

__all__ = [
    "DataImportError",
    "SplitError",
    "BenchmarkSpec",
    "BENCHMARKS",
    "default_data_dir",
    "available_benchmarks",
    "benchmark_path",
    "load_benchmark",
    "BenchmarkDamaged",
    "BenchmarkNotDownloaded",
    "data_dir_origin",
    "BenchmarkSource",
    "BenchmarkFile",
    "SOURCES",
    "DATA_URL_ENV",
    "FetchError",
    "BenchmarkStatus",
    "benchmark_status",
    "fetch_benchmark",
    "CsvDialect",
    "SEPARATORS",
    "QUOTES",
    "DECIMAL_MARKS",
    "detect_dialect",
    "parse_number",
    "TablePreview",
    "preview_table",
    "inspect_table",
    "find_duplicates",
    "DUPLICATE_CHOICES",
    "duplicates_warning",
    "control_warning",
    "load_table",
    "make_split",
]
