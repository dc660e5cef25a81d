//! The `rlm` binary: everything is in the library (`lib.rs`), which other front ends share.

fn main() -> std::process::ExitCode {
    rlm::main()
}
