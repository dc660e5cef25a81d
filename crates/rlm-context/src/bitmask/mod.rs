//! The first stage of the JSON and CSV structure scans: 64-byte chunks as bitmasks (bit `i`
//! stands for byte `i` of the chunk) of the bytes a scan looks at, and for JSON the strings and
//! nesting they make, so the scans work on whole chunks with integer arithmetic instead of
//! visiting bytes one by one (as simdjson's first stage does).
//!
//! Three kernels give the same masks, and the tests hold the SIMD ones to the plain loop:
//!
//! - AVX-512 (BW, on CPUs with VBMI too; checked at run time): one compare into a mask register
//!   per byte class, and the depth as a prefix sum of the brackets over the chunk's 64 bytes;
//! - AVX2 (checked at run time): two compares and two mask moves per class, and the depth from
//!   the brackets one by one;
//! - elsewhere a plain loop.
//!
//! Both SIMD kernels take the running XOR that marks the strings as one carry-less
//! multiplication (PCLMULQDQ).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod portable;
mod structure;
#[cfg(test)]
mod tests;

/// Bytes per chunk: one bit of a `u64` each.
pub(crate) const CHUNK: usize = 64;

/// The bytes a JSON structure scan looks at, the strings they make and the bytes at depth 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JsonMasks {
    /// Quotes that no backslash escapes: each opens or closes a string.
    pub quote: u64,
    pub backslash: u64,
    /// From each opening quote up to (not including) its closing quote, given the
    /// [`JsonState`] the chunk starts in.
    pub in_string: u64,
    /// `{` and `[`, in strings too.
    pub open: u64,
    /// `}` and `]`, in strings too.
    pub close: u64,
    pub comma: u64,
    pub colon: u64,
    /// What `u8::is_ascii_whitespace` accepts: space, tab, line feed, form feed, carriage return.
    pub whitespace: u64,
    /// The bytes read at depth 1 (the depth before the byte itself), counting the brackets
    /// outside strings from the depth the chunk starts at.
    pub depth_one: u64,
}

/// Where a JSON structure scan stands at a chunk boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JsonState {
    pub in_string: bool,
    /// The previous chunk ended with a backslash that escapes the next byte.
    pub escape: bool,
    /// Nesting depth, at least 1: folding stops before a chunk where it would fall to 0.
    pub depth: usize,
}

/// The bytes a CSV row scan looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CsvMasks {
    pub quote: u64,
    pub newline: u64,
    /// As in [`JsonMasks::whitespace`].
    pub whitespace: u64,
    /// The field delimiter the fold was given.
    pub delimiter: u64,
    /// Running XOR of `quote`: bit `i` is set when an odd number of the chunk's bytes `0..=i`
    /// are quotes (inside a quoted field, if every quote opens or closes one and the chunk
    /// starts outside).
    pub quote_parity: u64,
}

/// Whether the CPU runs the AVX-512 kernel (BW with VBMI, see `avx512.rs`); the byte counts
/// use AVX-512 on the same CPUs.
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512_supported() -> bool {
    avx512::supported()
}

/// Which code computes the masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Kernel {
    /// The fastest kernel the CPU runs.
    pub(crate) fn best() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if avx512::supported() {
                return Self::Avx512;
            }
            if avx2::supported() {
                return Self::Avx2;
            }
        }
        Self::Portable
    }

    /// Every kernel the CPU runs, the plain loop first.
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Self> {
        let mut kernels = vec![Self::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if avx2::supported() {
                kernels.push(Self::Avx2);
            }
            if avx512::supported() {
                kernels.push(Self::Avx512);
            } else {
                eprintln!("note: this CPU lacks AVX-512 BW or VBMI; that kernel is not tested");
            }
        }
        kernels
    }
}

/// Folds `step` over the masks of each whole chunk of `bytes`, in order, from `start` (the
/// structure state and the caller's own) until `step` declines a chunk (returns `None`) or the
/// depth would fall to 0 in one. Returns the number of chunks accepted and the states after the
/// last of them.
///
/// `kernel` computes the masks (the plain loop if the CPU lacks what it needs). `step` is inlined
/// into the SIMD loop, so its arithmetic is compiled for the same CPU features (`popcnt`, `bmi1`,
/// `bmi2`), and its state stays in registers.
#[inline]
pub(crate) fn fold_json_chunks<S: Copy>(
    kernel: Kernel,
    bytes: &[u8],
    start: (JsonState, S),
    step: impl FnMut(S, &JsonMasks) -> Option<S>,
) -> (usize, JsonState, S) {
    debug_assert!(start.0.depth >= 1, "folding starts inside a container");
    let (chunks, _) = bytes.as_chunks::<CHUNK>();
    #[cfg(target_arch = "x86_64")]
    let step = match kernel {
        Kernel::Avx512 => match avx512::fold_json_chunks(chunks, start, step) {
            Ok(folded) => return folded,
            Err(step) => step,
        },
        Kernel::Avx2 => match avx2::fold_json_chunks(chunks, start, step) {
            Ok(folded) => return folded,
            Err(step) => step,
        },
        Kernel::Portable => step,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel;
    fold_all(chunks, start, portable::json_chunk, step)
}

/// The loop every kernel runs, with its own `structure` of a chunk (`None` where the depth
/// would fall to 0).
#[inline(always)]
fn fold_all<S: Copy>(
    chunks: &[[u8; CHUNK]],
    (mut json, mut state): (JsonState, S),
    structure: impl Fn(&[u8; CHUNK], JsonState) -> Option<(JsonMasks, JsonState)>,
    mut step: impl FnMut(S, &JsonMasks) -> Option<S>,
) -> (usize, JsonState, S) {
    for (index, chunk) in chunks.iter().enumerate() {
        let Some((masks, after)) = structure(chunk, json) else {
            return (index, json, state);
        };
        match step(state, &masks) {
            Some(next) => {
                state = next;
                json = after;
            }
            None => return (index, json, state),
        }
    }
    (chunks.len(), json, state)
}

/// Folds `step` over the masks of each whole chunk of `bytes`, in order, from `start`; returns
/// the number of chunks and the state after the last.
///
/// `kernel` computes the masks (the plain loop if the CPU lacks what it needs). `step` is inlined
/// into the SIMD loop, so its arithmetic is compiled for the same CPU features, and its state
/// stays in registers.
#[inline]
pub(crate) fn fold_csv_chunks<S: Copy>(
    kernel: Kernel,
    bytes: &[u8],
    delimiter: u8,
    start: S,
    step: impl FnMut(S, &CsvMasks) -> S,
) -> (usize, S) {
    let (chunks, _) = bytes.as_chunks::<CHUNK>();
    #[cfg(target_arch = "x86_64")]
    let step = match kernel {
        Kernel::Avx512 => match avx512::fold_csv_chunks(chunks, delimiter, start, step) {
            Ok(state) => return (chunks.len(), state),
            Err(step) => step,
        },
        Kernel::Avx2 => match avx2::fold_csv_chunks(chunks, delimiter, start, step) {
            Ok(state) => return (chunks.len(), state),
            Err(step) => step,
        },
        Kernel::Portable => step,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel;
    (
        chunks.len(),
        fold_classified(
            chunks,
            start,
            |chunk| portable::csv_chunk(chunk, delimiter),
            step,
        ),
    )
}

#[inline(always)]
fn fold_classified<S: Copy, M>(
    chunks: &[[u8; CHUNK]],
    start: S,
    classify: impl Fn(&[u8; CHUNK]) -> M,
    mut step: impl FnMut(S, &M) -> S,
) -> S {
    chunks
        .iter()
        .fold(start, |state, chunk| step(state, &classify(chunk)))
}
