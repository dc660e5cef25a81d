//! The PostgreSQL backend.
