//! Sandboxed Python REPL (Monty, CPython opt-in) with a host-function bridge for rlm.
