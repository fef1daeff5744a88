"""Mining search logs into review candidates: sources, readers (one module per format,
and the DuckDB engine), counting, grouping and redaction, clustering, de-duplication,
sampling, and the `import_logs` pipeline that runs them in that order."""

from curator.logs.pipeline import FileSummary, ImportOptions, ImportSummary, import_logs

__all__ = ["FileSummary", "ImportOptions", "ImportSummary", "import_logs"]
