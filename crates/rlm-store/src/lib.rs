//! Embedded store for rlm: SQLite buffers and chunks, tantivy BM25, vector search, hybrid fusion.
