//! The operations, one module each.
