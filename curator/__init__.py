"""curator: build, review and keep retrieval-evaluation question sets."""

__version__ = "0.1.0"
