//! What the store's benches share: a deterministic generator and the process's peak RSS.
// Each bench binary uses part of this module.
#![allow(dead_code, reason = "each bench binary uses part of this module")]

/// Deterministic xorshift so generated corpora are the same on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// This process's peak resident set (`VmHWM`) in MB, NaN where /proc does not say.
pub fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status_mb(&status, "VmHWM:").unwrap_or(f64::NAN)
}

/// This process's resident set now (`VmRSS`) in MB, NaN where /proc does not say.
pub fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status_mb(&status, "VmRSS:").unwrap_or(f64::NAN)
}

/// User + system CPU seconds of this process so far (all threads), from /proc/self/stat
/// (clock ticks, 100 per second on Linux).
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    // Fields after the name start at "state" (field 3); utime is field 14, stime 15.
    (ticks(11) + ticks(12)) / 100.0
}

/// Starts [`peak_rss_mb`] again from the current RSS.
pub fn reset_peak_rss() {
    // Writing 5 to clear_refs resets VmHWM (Linux 4.0+); ignore failure elsewhere.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peaks of this process's anonymous (heap) and file-backed resident memory, sampled every
/// 10 ms by a thread while it lives. `VmHWM` adds the two; they differ in kind: the file-backed
/// part is pages of memory-mapped index files, which the kernel drops under pressure.
#[allow(dead_code, reason = "not every bench splits its peak")]
pub struct ResidentSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<(f64, f64)>,
}

#[allow(dead_code, reason = "not every bench splits its peak")]
impl ResidentSampler {
    pub fn start() -> Self {
        Self::every(std::time::Duration::from_millis(10))
    }

    /// A sampler reading /proc every `interval` (a short process needs a short one).
    pub fn every(interval: std::time::Duration) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut anonymous, mut file) = (0.0_f64, 0.0_f64);
            loop {
                let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
                anonymous = anonymous.max(status_mb(&status, "RssAnon:").unwrap_or(0.0));
                file = file.max(status_mb(&status, "RssFile:").unwrap_or(0.0));
                if flag.load(std::sync::atomic::Ordering::Relaxed) {
                    return (anonymous, file);
                }
                std::thread::sleep(interval);
            }
        });
        Self { stop, thread }
    }

    /// The peaks in MB: (anonymous, file-backed); 0 where /proc does not say.
    pub fn finish(self) -> (f64, f64) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or((0.0, 0.0))
    }
}

/// The value of `key` (a line of /proc's `status`, in kB) in MB.
fn status_mb(status: &str, key: &str) -> Option<f64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map(|kb| kb / 1024.0)
}
