//! Large files read through a memory map that a shrinking file cannot crash.
//!
//! `read()` copies every byte out of the page cache, and that copy alone takes about as long as
//! all of `wc -l`; a memory map reads the cached pages where they are. The price of a map is
//! what happens when the file is cut short while it is mapped: the next read of a page past its
//! new end raises `SIGBUS`, which ends the process. [`GuardedMap`] removes that price. Each map
//! is listed in a fixed table, and a `SIGBUS` handler (installed once, the handler it replaces
//! kept and called for every fault that is not at one of the listed maps) maps zero pages over
//! the rest of a listed map when a read faults in it and marks the map as cut. The scan then
//! runs on to the end over zeros, and its caller, seeing [`GuardedMap::was_cut`] (or the file's
//! size now smaller than it was), reports the file as changed instead of its figures.
//!
//! A map is only made while the handler in place is still this module's: a program (Python's
//! `faulthandler`, say) that installed its own `SIGBUS` handler later has the file read with
//! `read()` instead. Pages behind the scan are given back as it goes, so the memory a map holds
//! stays a few blocks whatever the file's size.
//!
//! Bytes of a map are only read, never trusted to stay put: a file rewritten in place while it is
//! mapped shows the new bytes, so code that turns them into `&str` works on a copy (the first
//! block, sampled records).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};

use crate::scan::{BLOCK_SIZE, Block, Blocks, LATER_BLOCK_SIZE, char_boundary_before};

/// Maps that can be listed at once; a further one is not made (the file is read instead).
const SLOTS: usize = 32;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const ACTIVE: u8 = 2;

/// One listed map: where it lies, and whether a fault cut it short.
struct Slot {
    state: AtomicU8,
    /// The thread that made the map (its `gettid`). Only that thread reads the map, so only a
    /// fault on it can be in it; and while that thread is in the handler it cannot be freeing
    /// or reusing its slot, so `start` and `end` are read whole.
    owner: AtomicI32,
    start: AtomicUsize,
    /// The end of its last page.
    end: AtomicUsize,
    cut: AtomicBool,
}

impl Slot {
    const fn new() -> Self {
        Self {
            state: AtomicU8::new(FREE),
            owner: AtomicI32::new(0),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            cut: AtomicBool::new(false),
        }
    }
}

static SLOTS_TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// The `SIGBUS` action in place before this module's, once it is installed (read by the
/// handler, so set before the handler is).
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Whether this module's handler was installed.
static INSTALLED: OnceLock<bool> = OnceLock::new();

/// The page size, read once outside the handler.
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// A read-only map of a file's first `len` bytes, listed for the `SIGBUS` handler while it lives.
pub(crate) struct GuardedMap {
    start: *mut libc::c_void,
    len: usize,
    /// Its length rounded up to whole pages (what `munmap` takes).
    mapped: usize,
    slot: &'static Slot,
    /// Bytes before this offset were given back to the kernel.
    released: usize,
}

impl GuardedMap {
    /// A map of the first `len` bytes of `file`, or `None` when one cannot be made safely: not
    /// a 64-bit target, another `SIGBUS` handler in place, every slot in use, or `mmap` refused.
    pub(crate) fn new(file: &File, len: u64) -> Option<Self> {
        if usize::BITS < 64 || len == 0 || !handler_is_ours() {
            return None;
        }
        let len = usize::try_from(len).ok()?;
        let page = PAGE.load(Ordering::Relaxed);
        let mapped = len.checked_add(page - 1)? & !(page - 1);
        let slot = SLOTS_TABLE.iter().find(|slot| {
            slot.state
                .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })?;
        // SAFETY: a new read-only shared map of an open file; the kernel picks the address. The
        // bytes may change under it (another process writing the file): callers only read them
        // and copy what they turn into text.
        #[expect(
            unsafe_code,
            reason = "mmap has no safe interface in the standard library"
        )]
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if start == libc::MAP_FAILED {
            slot.state.store(FREE, Ordering::Release);
            return None;
        }
        // SAFETY: `gettid` takes nothing and cannot fail.
        #[expect(
            unsafe_code,
            reason = "gettid has no safe interface in the standard library"
        )]
        let thread = unsafe { libc::gettid() };
        slot.owner.store(thread, Ordering::Relaxed);
        slot.start.store(start as usize, Ordering::Relaxed);
        slot.end.store(start as usize + mapped, Ordering::Relaxed);
        slot.cut.store(false, Ordering::Relaxed);
        slot.state.store(ACTIVE, Ordering::Release);
        Some(Self {
            start,
            len,
            mapped,
            slot,
            released: 0,
        })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `start` is a live read-only map of `len` bytes until `drop`; a fault in it is
        // turned into zero pages by the handler, so every byte stays readable.
        #[expect(unsafe_code, reason = "a slice over the live map")]
        unsafe {
            std::slice::from_raw_parts(self.start.cast::<u8>(), self.len)
        }
    }

    /// Whether a read faulted past the file's end (it shrank) and read zeros from there.
    pub(crate) fn was_cut(&self) -> bool {
        self.slot.cut.load(Ordering::Acquire)
    }

    /// Gives back the pages wholly before `offset` (the scan is past them), so that the memory
    /// the map holds does not grow with the file.
    pub(crate) fn release_before(&mut self, offset: usize) {
        let page = PAGE.load(Ordering::Relaxed);
        let end = offset.min(self.len) & !(page - 1);
        if end <= self.released {
            return;
        }
        // SAFETY: the range lies within the map and no slice of it is used again (the scan is
        // past it); `MADV_DONTNEED` only drops this process's page tables for it.
        #[expect(unsafe_code, reason = "madvise has no safe interface")]
        unsafe {
            libc::madvise(
                self.start.cast::<u8>().add(self.released).cast(),
                end - self.released,
                libc::MADV_DONTNEED,
            );
        }
        self.released = end;
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        // Unlisted before it is unmapped: once unmapped, its addresses may be handed to another
        // map that the handler must not treat as this one.
        self.slot.state.store(FREE, Ordering::Release);
        // SAFETY: the map made in `new`, unmapped once; no slice of it outlives `self`.
        #[expect(unsafe_code, reason = "munmap has no safe interface")]
        unsafe {
            libc::munmap(self.start, self.mapped);
        }
    }
}

/// Installs the handler the first time, and says whether the `SIGBUS` handler in place now is
/// still this module's.
fn handler_is_ours() -> bool {
    if !*INSTALLED.get_or_init(install) {
        return false;
    }
    // SAFETY: reads the current action into a zeroed struct; changes nothing.
    #[expect(unsafe_code, reason = "sigaction has no safe interface")]
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGBUS, std::ptr::null(), &raw mut current) == 0
            && current.sa_sigaction == on_sigbus as *const () as usize
    }
}

fn install() -> bool {
    // SAFETY: `sysconf` and `sigaction` with valid, zero-initialised structs. The previous
    // action is stored before ours is installed, so the handler always finds it.
    #[expect(unsafe_code, reason = "sigaction has no safe interface")]
    unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE);
        if let Ok(page) = usize::try_from(page)
            && page.is_power_of_two()
        {
            PAGE.store(page, Ordering::Relaxed);
        }
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGBUS, std::ptr::null(), &raw mut previous) != 0 {
            return false;
        }
        let _ = PREVIOUS.set(previous);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&raw mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &raw const action, std::ptr::null_mut()) == 0
    }
}

/// The `SIGBUS` handler: a fault inside a listed map gets zero pages over the rest of the map
/// and the map is marked cut; anything else goes to the handler that was there before. Only
/// atomics and async-signal-safe system calls here, nothing that allocates or locks; `errno` is
/// kept as the interrupted code left it.
extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: `__errno_location` gives this thread's `errno`, valid for the thread's life.
    #[expect(unsafe_code, reason = "saves errno around the handler")]
    let errno = unsafe { *libc::__errno_location() };
    if !zero_the_rest(info) {
        pass_on(signal, info, context);
    }
    // SAFETY: as above.
    #[expect(unsafe_code, reason = "restores errno after the handler")]
    unsafe {
        *libc::__errno_location() = errno;
    }
}

/// Whether the signal is a read past the end of a listed map of this thread's (the file
/// shrank: `BUS_ADRERR`), now read as zero pages.
fn zero_the_rest(info: *mut libc::siginfo_t) -> bool {
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler; `si_addr` is
    // meaningful for a fault the kernel raised, which `BUS_ADRERR` is (it is positive: no
    // other process can send it).
    #[expect(unsafe_code, reason = "reads the signal's information")]
    let Some(address) =
        (unsafe { ((*info).si_code == libc::BUS_ADRERR).then(|| (*info).si_addr() as usize) })
    else {
        return false;
    };
    // SAFETY: `gettid` takes nothing, cannot fail, and is async-signal-safe.
    #[expect(
        unsafe_code,
        reason = "gettid has no safe interface in the standard library"
    )]
    let thread = unsafe { libc::gettid() };
    let page = PAGE.load(Ordering::Relaxed);
    for slot in &SLOTS_TABLE {
        if slot.state.load(Ordering::Acquire) != ACTIVE
            || slot.owner.load(Ordering::Relaxed) != thread
        {
            continue;
        }
        let (start, end) = (
            slot.start.load(Ordering::Relaxed),
            slot.end.load(Ordering::Relaxed),
        );
        if !(start..end).contains(&address) {
            continue;
        }
        let from = address & !(page - 1);
        // SAFETY: replaces this thread's own map from the faulting page to its end with
        // anonymous zero pages of the same protection; nothing else lives there.
        #[expect(unsafe_code, reason = "mmap over the faulting part of our own map")]
        let zeros = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros == libc::MAP_FAILED {
            return false;
        }
        slot.cut.store(true, Ordering::Release);
        return true;
    }
    false
}

/// Hands a signal that is not ours to the action that was in place before, or does what the
/// default (or ignoring) would have done.
fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = PREVIOUS.get().copied();
    let handler = previous.map_or(libc::SIG_DFL, |action| action.sa_sigaction);
    // SAFETY: calls the previous handler as it was registered (with three arguments when it
    // asked for `SA_SIGINFO`), or restores the default action, what would have run without
    // this module.
    #[expect(unsafe_code, reason = "calls or restores the previous signal handler")]
    unsafe {
        let sent = (*info).si_code <= 0;
        if handler == libc::SIG_IGN && sent {
            // Ignored when sent by `kill`, as before; a fault cannot be ignored (below).
            return;
        }
        if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
            if previous.is_some_and(|action| action.sa_flags & libc::SA_SIGINFO != 0) {
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(handler);
                handler(signal, info, context);
            } else {
                let handler: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
                handler(signal);
            }
            return;
        }
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &raw const default, std::ptr::null_mut());
        // Raised again, held until this handler returns, then the default action ends the
        // process: a fault would repeat anyway, but a signal sent by `kill` or a memory error
        // reported for later (`BUS_MCEERR_AO`) would not.
        libc::raise(signal);
    }
}

/// The blocks of a [`GuardedMap`], cut where [`crate::scan::BlockReader`] cuts them: a first
/// block of [`BLOCK_SIZE`] (copied: format, sample and structure are read from it as text) and
/// later ones of [`LATER_BLOCK_SIZE`], each ending on a character boundary unless it is the last.
/// They carry no [`crate::scan::BlockFacts`]: the scan counts each block itself.
pub(crate) struct MappedBlocks {
    map: GuardedMap,
    first: Vec<u8>,
    /// Where the next block starts.
    at: usize,
}

/// What a read of a map that was cut short fails with; [`crate::metadata`] words it for the
/// user with the file's sizes.
pub(crate) const CUT: &str = "the file was cut short while it was read";

/// The scan gives pages back every this many bytes.
const RELEASE_EVERY: usize = 4 << 20;

impl MappedBlocks {
    pub(crate) fn new(map: GuardedMap) -> Self {
        Self {
            map,
            first: Vec::new(),
            at: 0,
        }
    }

    /// Whether the file was cut short while it was read (see [`GuardedMap::was_cut`]).
    pub(crate) fn was_cut(&self) -> bool {
        self.map.was_cut()
    }

    /// The end of the block of at most `size` bytes starting at `at`.
    fn block_end(&self, size: usize) -> usize {
        let bytes = self.map.bytes();
        let end = self.at.saturating_add(size);
        if end >= bytes.len() {
            return bytes.len();
        }
        self.at + char_boundary_before(&bytes[self.at..end])
    }
}

impl Blocks for MappedBlocks {
    fn next_block(&mut self) -> io::Result<Option<Block<'_>>> {
        if self.map.was_cut() {
            // The rest is zeros: no point reading on to the end of a large file.
            return Err(io::Error::other(CUT));
        }
        let len = self.map.bytes().len();
        if self.at >= len {
            return Ok(None);
        }
        if self.at == 0 {
            let end = self.block_end(BLOCK_SIZE);
            self.first = self.map.bytes()[..end].to_vec();
            self.at = end;
            return Ok(Some(Block {
                bytes: &self.first,
                last: end == len,
                facts: None,
            }));
        }
        if self.at - self.map.released >= RELEASE_EVERY {
            self.map.release_before(self.at);
        }
        let start = self.at;
        self.at = self.block_end(LATER_BLOCK_SIZE);
        Ok(Some(Block {
            bytes: &self.map.bytes()[start..self.at],
            last: self.at == len,
            facts: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn file_of(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        (dir, path)
    }

    #[test]
    fn a_map_reads_the_file_and_gives_its_slot_back() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (_dir, path) = file_of(&bytes);
        let file = File::open(&path).unwrap();
        let mut map = GuardedMap::new(&file, bytes.len() as u64).unwrap();
        let slot = map.slot;
        let start = map.start as usize;
        assert_eq!(slot.state.load(Ordering::Acquire), ACTIVE);
        assert_eq!(slot.start.load(Ordering::Relaxed), start);
        assert_eq!(map.bytes(), &bytes[..]);
        map.release_before(50_000);
        // Released pages read again from the page cache, unchanged.
        assert_eq!(map.bytes(), &bytes[..]);
        assert!(!map.was_cut());
        drop(map);
        // Free, or taken since by another test's map (at another address).
        assert!(
            slot.state.load(Ordering::Acquire) != ACTIVE
                || slot.start.load(Ordering::Relaxed) != start
        );
    }

    #[test]
    fn a_map_is_cut_into_the_blocks_a_reader_gives() {
        use crate::scan::BlockReader;
        // Characters of two to four bytes, and invalid bytes, across every block edge.
        let pieces: [&[u8]; 5] = [
            b"ab\r\n",
            "é".as_bytes(),
            "日本".as_bytes(),
            "🎉".as_bytes(),
            b"\xff\xe2\x82",
        ];
        let mut bytes = Vec::new();
        let mut index = 0;
        while bytes.len() < 3 * BLOCK_SIZE + 12_345 {
            bytes.extend_from_slice(pieces[index % pieces.len()]);
            index += 1;
        }
        let (_dir, path) = file_of(&bytes);
        let file = File::open(&path).unwrap();
        let mut mapped = MappedBlocks::new(GuardedMap::new(&file, bytes.len() as u64).unwrap());
        let mut read = BlockReader::with_later_blocks(&bytes[..], BLOCK_SIZE, LATER_BLOCK_SIZE);
        let mut blocks = 0;
        loop {
            let (from_map, from_reader) =
                (mapped.next_block().unwrap(), read.next_block().unwrap());
            let expected = from_reader.map(|block| (block.bytes.to_vec(), block.last));
            assert_eq!(
                from_map.map(|block| (block.bytes.to_vec(), block.last)),
                expected,
                "block {blocks}"
            );
            if expected.is_none() {
                break;
            }
            blocks += 1;
        }
        assert!(blocks > 16, "{blocks} blocks");
        assert!(!mapped.was_cut());
    }

    #[test]
    fn a_file_cut_short_while_mapped_reads_zeros_and_is_marked_cut() {
        // SAFETY: `sysconf` with a valid name.
        #[expect(unsafe_code, reason = "sysconf has no safe interface")]
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
        let bytes = vec![b'x'; page * 8];
        let (_dir, path) = file_of(&bytes);
        let file = File::open(&path).unwrap();
        let map = GuardedMap::new(&file, bytes.len() as u64).unwrap();
        assert_eq!(map.bytes()[page * 6], b'x');
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len((page * 2) as u64)
            .unwrap();
        // Without the handler this read ends the test process with SIGBUS.
        let tail = map.bytes()[page * 3..].to_vec();
        assert!(tail.iter().all(|&byte| byte == 0));
        assert_eq!(map.bytes()[10], b'x');
        assert!(map.was_cut());
    }
}
