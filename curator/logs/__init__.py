"""Mining search logs into review candidates: readers (one module per format),
normalise, redact, cluster, sample, and the `import_logs` pipeline."""

from curator.logs.pipeline import FileSummary, ImportOptions, ImportSummary, import_logs
from curator.logs.redact import Redactor, detect, redact

__all__ = ["FileSummary", "ImportOptions", "ImportSummary", "Redactor", "detect", "import_logs", "redact"]
