//! Stand-alone worker for this crate's tests and benchmarks (the `rlm` binary serves the same
//! role through its hidden `__sandbox-worker` mode).

fn main() -> std::process::ExitCode {
    rlm_sandbox::worker_main()
}
