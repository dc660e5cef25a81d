//! Operating-system limits the worker process applies to itself before running model code.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Caps the address space at what is mapped now plus `extra_bytes`, and forbids core dumps and
/// file writes. Past the cap an allocation fails and the worker aborts; the session notices and
/// starts a fresh worker.
pub(crate) fn apply(extra_bytes: u64) -> Result<(), String> {
    let mapped = current_address_space().unwrap_or(256 << 20);
    let cap = mapped.saturating_add(extra_bytes);
    set(Resource::As, cap)?;
    set(Resource::Core, 0)?;
    set(Resource::Fsize, 0)?;
    Ok(())
}

fn set(resource: Resource, value: u64) -> Result<(), String> {
    let hard = getrlimit(resource).maximum;
    // An unprivileged process cannot raise its hard limit; stay under it.
    let value = hard.map_or(value, |hard| value.min(hard));
    setrlimit(
        resource,
        Rlimit {
            current: Some(value),
            maximum: Some(value),
        },
    )
    .map_err(|error| format!("cannot set {resource:?} limit: {error}"))
}

/// Virtual size of this process from `/proc/self/statm` (first field, in pages).
fn current_address_space() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}
