//! The generated tasks of `rlm bench-quality` and how an answer is scored.
//!
//! Every task is a function of the seed and its own coordinates (kind, size, depth,
//! repetition), never of the other tasks on the command line: `--tasks count` alone gives the
//! same counting tasks as `--tasks needle,count`.

use crate::cli::TaskKind;

/// Words that name a needle's project.
const PROJECT_NAMES: &[&str] = &[
    "aurora",
    "basilisk",
    "cobalt",
    "driftwood",
    "ember",
    "foxglove",
    "granite",
    "heron",
    "indigo",
    "juniper",
    "kestrel",
    "lantern",
    "marigold",
    "nightjar",
    "obsidian",
    "pelican",
    "quartz",
    "rosewood",
    "saffron",
    "thistle",
    "umber",
    "vermilion",
    "wildfire",
    "yarrow",
];

/// The labels of counting tasks' lines.
const LABELS: &[&str] = &[
    "billing", "shipping", "returns", "account", "security", "feedback",
];

/// A counting line's text is a piece of the haystack this long, in characters.
const LINE_TEXT_CHARS: (u64, u64) = (40, 110);

/// Where a counting line's label is, between its number and its text.
const LABEL_FIELD: &str = " | label=";

/// A small deterministic generator (SplitMix64): the same seed gives the same tasks on every
/// platform and in every version that keeps this file's constants.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator for one of several independent streams, mixed from `parts`.
    fn derived(seed: u64, parts: &[u64]) -> Self {
        let mut rng = Self::new(seed);
        for &part in parts {
            rng = Self::new(rng.next_u64() ^ part);
        }
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0; the bias of a 64-bit modulo is far below notice).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }

    /// One of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        // `below` is less than the length, which the callers' constant lists make non-zero.
        &items[self.below(items.len() as u64) as usize]
    }
}

/// What a task's answer is scored against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Truth {
    /// The needle's six-digit code.
    Code(String),
    /// How many lines have the label.
    Count(u64),
}

impl Truth {
    /// The score of `answer`: a needle scores 1 when its code appears in it as a whole number,
    /// else 0; a count scores 0.75^|answer − truth| for the first integer in it, 0 without one.
    pub fn score(&self, answer: &str) -> f64 {
        match self {
            Self::Code(code) => {
                if contains_number(answer, code) {
                    1.0
                } else {
                    0.0
                }
            }
            Self::Count(truth) => match first_integer(answer) {
                Some(given) => count_score(given, *truth),
                None => 0.0,
            },
        }
    }

    /// As JSON: the code as a string (leading digits matter), the count as a number.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Code(code) => code.as_str().into(),
            Self::Count(count) => (*count).into(),
        }
    }
}

impl std::fmt::Display for Truth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(code) => f.write_str(code),
            Self::Count(count) => write!(f, "{count}"),
        }
    }
}

/// OOLONG's score of a count: 0.75 to the power of the absolute error.
pub fn count_score(given: i128, truth: u64) -> f64 {
    let error = given.abs_diff(i128::from(truth));
    // Past a few thousand the score is 0 in f64 anyway; the cap keeps the exponent an i32.
    0.75f64.powi(error.min(100_000) as i32)
}

/// Whether `number` appears in `text` with no digit right before or after it.
pub fn contains_number(text: &str, number: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(number).any(|(start, _)| {
        let end = start + number.len();
        let before = start.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(end).copied();
        !before.is_some_and(|b| b.is_ascii_digit()) && !after.is_some_and(|b| b.is_ascii_digit())
    })
}

/// The first integer in `text`: a run of digits, with a `-` right before it, and `,` or `_`
/// between groups of three digits (`1,234`). Digits inside a word (`context_0`, `v2`, `3rd`)
/// are not a number: an answer that only names a variable says no count. `None` when there
/// is no such number.
pub fn first_integer(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    let mut search = 0;
    loop {
        let start = search + bytes.get(search..)?.iter().position(u8::is_ascii_digit)?;
        let (digits, end) = digits_from(bytes, start);
        let glued_before =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let glued_after = bytes
            .get(end)
            .is_some_and(|byte| byte.is_ascii_alphabetic() || *byte == b'_');
        if glued_before || glued_after {
            search = end;
            continue;
        }
        let negative = start > 0 && bytes[start - 1] == b'-';
        // More digits than an i128 holds: far from any count, so as good as no number at all.
        let value: i128 = digits.parse().ok()?;
        return Some(if negative { -value } else { value });
    }
}

/// The digits of the number at `start` (group separators dropped) and where it ends.
fn digits_from(bytes: &[u8], start: usize) -> (String, usize) {
    let mut digits = String::new();
    let mut index = start;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte.is_ascii_digit() {
            digits.push(char::from(byte));
            index += 1;
        } else if (byte == b',' || byte == b'_')
            && bytes.get(index + 1..index + 4).is_some_and(|group| {
                group.iter().all(u8::is_ascii_digit)
                    && !bytes.get(index + 4).is_some_and(u8::is_ascii_digit)
            })
        {
            index += 1;
        } else {
            break;
        }
    }
    (digits, index)
}

/// Where a task is in the plan; with the seed it decides the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSpec {
    pub kind: TaskKind,
    /// The context's size in characters.
    pub size: usize,
    /// Needle tasks: where the needle goes, in percent.
    pub depth: Option<u8>,
    /// 0 for the first of `--repeat N`.
    pub repetition: u32,
}

/// Every task of the plan, in order: by kind, then size, then depth, then repetition.
pub fn plan(kinds: &[TaskKind], sizes: &[usize], depths: &[u8], repeat: u32) -> Vec<TaskSpec> {
    let mut specs = Vec::new();
    let mut seen_kinds = Vec::new();
    for &kind in kinds {
        // `--tasks needle,needle` asks for the needle tasks once.
        if seen_kinds.contains(&kind) {
            continue;
        }
        seen_kinds.push(kind);
        for &size in sizes {
            let depths: Vec<Option<u8>> = match kind {
                TaskKind::Needle => depths.iter().copied().map(Some).collect(),
                TaskKind::Count => vec![None],
            };
            for depth in depths {
                for repetition in 0..repeat {
                    specs.push(TaskSpec {
                        kind,
                        size,
                        depth,
                        repetition,
                    });
                }
            }
        }
    }
    specs
}

/// A generated task: the context, the question and what the answer is scored against.
#[derive(Debug, Clone)]
pub struct Task {
    pub spec: TaskSpec,
    /// Counting tasks: the label asked about.
    pub label: Option<&'static str>,
    pub question: String,
    pub truth: Truth,
    pub context: String,
}

impl TaskSpec {
    /// Generates the task over `haystack` (text that is repeated when the context is longer).
    pub fn generate(&self, seed: u64, haystack: &str) -> Task {
        let kind = match self.kind {
            TaskKind::Needle => 1,
            TaskKind::Count => 2,
        };
        let mut rng = Rng::derived(
            seed,
            &[
                kind,
                self.size as u64,
                self.depth.map_or(0, u64::from),
                u64::from(self.repetition),
            ],
        );
        match self.kind {
            TaskKind::Needle => self.needle(&mut rng, haystack),
            TaskKind::Count => self.count(&mut rng, haystack),
        }
    }

    fn needle(&self, rng: &mut Rng, haystack: &str) -> Task {
        let project = rng.pick(PROJECT_NAMES);
        let mut code = six_digits(rng);
        let needle_chars = format!("The secret launch code for project {project} is {code}.")
            .chars()
            .count();
        let filler_chars = self.size.saturating_sub(needle_chars + 2);
        let filler = excerpt(haystack, rng, filler_chars);
        // The code must be findable only where the needle is.
        while filler.contains(code.as_str()) {
            code = six_digits(rng);
        }
        let needle = format!("The secret launch code for project {project} is {code}.");
        let at = insertion_point(&filler, self.depth.unwrap_or(50));
        let mut context = String::with_capacity(filler.len() + needle.len() + 2);
        context.push_str(&filler[..at]);
        context.push(' ');
        context.push_str(&needle);
        context.push(' ');
        context.push_str(&filler[at..]);
        Task {
            spec: *self,
            label: None,
            question: format!(
                "What is the secret launch code for project {project}? Answer with the number."
            ),
            truth: Truth::Code(code),
            context,
        }
    }

    fn count(&self, rng: &mut Rng, haystack: &str) -> Task {
        // Uneven shares, so that a guess from the number of lines and labels is wrong.
        let weights: Vec<u64> = LABELS.iter().map(|_| 1 + rng.below(9)).collect();
        let total_weight: u64 = weights.iter().sum();
        let label = *rng.pick(LABELS);
        let mut context = String::with_capacity(self.size);
        let mut chars = 0;
        let mut truth = 0;
        for number in 1.. {
            let mut roll = rng.below(total_weight);
            let mut line_label = LABELS[0];
            for (candidate, weight) in LABELS.iter().zip(&weights) {
                if roll < *weight {
                    line_label = candidate;
                    break;
                }
                roll -= weight;
            }
            let text_chars = LINE_TEXT_CHARS.0 + rng.below(LINE_TEXT_CHARS.1 - LINE_TEXT_CHARS.0);
            let text = line_text(&excerpt(haystack, rng, text_chars as usize));
            let line = format!("{number:06}{LABEL_FIELD}{line_label} | {text}\n");
            let line_chars = line.chars().count();
            if chars + line_chars > self.size {
                break;
            }
            chars += line_chars;
            context.push_str(&line);
            if line_label == label {
                truth += 1;
            }
        }
        Task {
            spec: *self,
            label: Some(label),
            question: format!(
                "How many lines of the context have the label \"{label}\"? Answer with one \
                 integer."
            ),
            truth: Truth::Count(truth),
            context,
        }
    }
}

fn six_digits(rng: &mut Rng) -> String {
    (100_000 + rng.below(900_000)).to_string()
}

/// `chars` characters of `haystack` from a random place, wrapping around at its end.
pub fn excerpt(haystack: &str, rng: &mut Rng, chars: usize) -> String {
    if haystack.is_empty() {
        return String::new();
    }
    // A byte offset moved back to a char boundary: no pass over the text to pick it.
    let mut start = rng.below(haystack.len() as u64) as usize;
    while !haystack.is_char_boundary(start) {
        start -= 1;
    }
    haystack[start..]
        .chars()
        .chain(haystack.chars().cycle())
        .take(chars)
        .collect()
}

/// A byte offset near `depth` percent of `text` where a sentence or line begins (searched
/// back over a short stretch, so the needle does not split a word), on a char boundary.
fn insertion_point(text: &str, depth: u8) -> usize {
    let target = text.len() * usize::from(depth) / 100;
    let mut at = target;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let reach = (text.len() / 100).min(200);
    let mut from = at.saturating_sub(reach);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let window = &text[from..at];
    match window.rfind(['.', '\n']) {
        Some(offset) => at - window.len() + offset + 1,
        None => at,
    }
}

/// A counting line's text: the excerpt on one line, without the field separator.
fn line_text(excerpt: &str) -> String {
    let flat: String = excerpt
        .chars()
        .map(|c| {
            if c.is_whitespace() || c == '|' {
                ' '
            } else {
                c
            }
        })
        .collect();
    flat.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
