//! Simulated prompt caches, reported in the usage of answers whose usage is not scripted:
//! Anthropic's explicit breakpoints and OpenAI's automatic prefix caching, each per model.
//!
//! Tokens are the fake's usual 4 bytes each, counted over what
//! [`estimated_usage`](super::reply::estimated_usage) counts (system prompt, message text, tool
//! arguments and results), so cached tokens are parts of the reported input, as on the real APIs.
//! Entries never expire (the real caches keep a prefix 5 minutes after its last use).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;

use serde_json::{Value, json};

use super::reply::SeenRequest;
use crate::Wire;
use rlm_types::{Role, Usage};

/// Shortest prefix either API caches (Anthropic: Claude Sonnet and Opus; OpenAI: every model).
pub const MIN_CACHED_TOKENS: u64 = 1024;
/// OpenAI reports cached tokens in steps of this many beyond the first 1,024.
const OPENAI_CACHE_STEP: u64 = 128;
/// Anthropic looks for an earlier cached prefix this many blocks back from each breakpoint.
const LOOKBACK_BLOCKS: usize = 20;
/// Prompts remembered per model for OpenAI's prefix matching (bounds memory and time).
const REMEMBERED_PROMPTS: usize = 256;
/// The fake's tokenizer: bytes per token.
const BYTES_PER_TOKEN: usize = 4;

/// What one request read from and wrote to the cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheHit {
    pub read: u64,
    pub write: u64,
}

impl CacheHit {
    /// `usage` with these cache counts, as parts of its input tokens.
    pub(crate) fn apply(self, mut usage: Usage) -> Usage {
        usage.cache_read_tokens = self.read.min(usage.input_tokens);
        usage.cache_write_tokens = self.write.min(usage.input_tokens - usage.cache_read_tokens);
        usage
    }
}

/// The caches of one fake server.
#[derive(Debug, Default)]
pub(crate) struct PromptCaches {
    /// Hashes of the cached Anthropic prefixes (the model is part of each hash).
    anthropic: HashSet<u64>,
    /// Earlier OpenAI prompts by model.
    openai: HashMap<String, Remembered>,
}

/// The last [`REMEMBERED_PROMPTS`] prompts of one model, in arrival order and sorted: the
/// earlier prompt sharing the longest prefix with a new one is one of its two neighbours in
/// sorted order, so a lookup compares two prompts, not all of them.
#[derive(Debug, Default)]
struct Remembered {
    arrival: VecDeque<Arc<[u8]>>,
    /// Each prompt with how many times it is in `arrival`.
    sorted: BTreeMap<Arc<[u8]>, usize>,
}

impl Remembered {
    /// The longest prefix `bytes` shares with a remembered prompt.
    fn longest_shared(&self, bytes: &[u8]) -> usize {
        let before = self
            .sorted
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(bytes)))
            .next_back();
        let after = self
            .sorted
            .range::<[u8], _>((Bound::Excluded(bytes), Bound::Unbounded))
            .next();
        before
            .into_iter()
            .chain(after)
            .map(|(other, _)| common_prefix(other, bytes))
            .max()
            .unwrap_or(0)
    }

    fn remember(&mut self, bytes: Vec<u8>) {
        if self.arrival.len() == REMEMBERED_PROMPTS
            && let Some(oldest) = self.arrival.pop_front()
            && let Some(copies) = self.sorted.get_mut(&oldest)
        {
            *copies -= 1;
            if *copies == 0 {
                self.sorted.remove(&oldest);
            }
        }
        let bytes: Arc<[u8]> = bytes.into();
        *self.sorted.entry(Arc::clone(&bytes)).or_default() += 1;
        self.arrival.push_back(bytes);
    }
}

impl PromptCaches {
    /// Looks the request up and caches what the real API would cache from it.
    pub(crate) fn account(&mut self, seen: &SeenRequest) -> CacheHit {
        match seen.wire {
            Wire::Anthropic => self.anthropic(&seen.body),
            Wire::OpenAi => self.openai(seen),
        }
    }

    /// The longest cached prefix ending at a breakpoint, or up to [`LOOKBACK_BLOCKS`] before
    /// one, is read; every breakpoint after it whose prefix is long enough is written, and the
    /// write counts the tokens from the read prefix to the last of them.
    fn anthropic(&mut self, body: &Value) -> CacheHit {
        let blocks = anthropic_blocks(body);
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&index| blocks[index].breakpoint)
            .collect();
        let read_at = breakpoints
            .iter()
            .flat_map(|&at| at.saturating_sub(LOOKBACK_BLOCKS)..=at)
            .filter(|&index| self.anthropic.contains(&blocks[index].prefix))
            .max();
        let read = read_at.map_or(0, |index| blocks[index].tokens);
        let mut written_to = read;
        for &at in &breakpoints {
            let block = &blocks[at];
            if read_at.is_none_or(|read_at| at > read_at) && block.tokens >= MIN_CACHED_TOKENS {
                self.anthropic.insert(block.prefix);
                written_to = written_to.max(block.tokens);
            }
        }
        CacheHit {
            read,
            write: written_to - read,
        }
    }

    /// The longest prefix shared with an earlier prompt of the same model, from 1,024 tokens
    /// on, in 128-token steps; prompts of 1,024 tokens or more are remembered.
    fn openai(&mut self, seen: &SeenRequest) -> CacheHit {
        let prompt = Prompt::of(seen);
        let earlier = self.openai.entry(seen.model.clone()).or_default();
        let tokens = prompt.tokens(earlier.longest_shared(&prompt.bytes));
        let read = if tokens >= MIN_CACHED_TOKENS {
            MIN_CACHED_TOKENS + (tokens - MIN_CACHED_TOKENS) / OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
        } else {
            0
        };
        if prompt.tokens(prompt.bytes.len()) >= MIN_CACHED_TOKENS {
            earlier.remember(prompt.bytes);
        }
        CacheHit { read, write: 0 }
    }
}

/// One content block of an Anthropic request, in cache order (tools, system, messages).
struct Block {
    /// Hash of the model and every block up to and including this one, breakpoints left out.
    prefix: u64,
    /// Tokens up to and including this block.
    tokens: u64,
    breakpoint: bool,
}

/// The blocks of an Anthropic body with their prefix hashes and running token counts.
fn anthropic_blocks(body: &Value) -> Vec<Block> {
    let mut hasher = DefaultHasher::new();
    body.get("model").and_then(Value::as_str).hash(&mut hasher);
    let mut bytes = 0;
    let mut blocks = Vec::new();
    let mut add = |role: &str, block: &Value, counted: usize| {
        let mut content = block.clone();
        let breakpoint = content
            .as_object_mut()
            .is_some_and(|map| map.remove("cache_control").is_some());
        role.hash(&mut hasher);
        content.to_string().hash(&mut hasher);
        bytes += counted;
        blocks.push(Block {
            prefix: hasher.finish(),
            tokens: bytes.div_ceil(BYTES_PER_TOKEN) as u64,
            breakpoint,
        });
    };
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add("tool", tool, 0);
    }
    let sections = std::iter::once(("system", body.get("system"))).chain(
        body.get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|message| {
                let role = message.get("role").and_then(Value::as_str).unwrap_or("");
                (role, message.get("content"))
            }),
    );
    for (role, content) in sections {
        match content {
            Some(Value::String(text)) => {
                add(role, &json!({"type": "text", "text": text}), text.len())
            }
            Some(Value::Array(items)) => {
                for item in items {
                    add(role, item, block_bytes(item));
                }
            }
            _ => {}
        }
    }
    blocks
}

/// The bytes of a block the fake counts as prompt tokens.
fn block_bytes(block: &Value) -> usize {
    let text = |value: Option<&Value>| match value {
        Some(Value::String(text)) => text.len(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .map(str::len)
            .sum(),
        _ => 0,
    };
    match block.get("type").and_then(Value::as_str) {
        Some("tool_use") => block
            .get("input")
            .map_or(0, |input| input.to_string().len()),
        Some("tool_result") => text(block.get("content")),
        _ => text(block.get("text")),
    }
}

/// An OpenAI prompt as the bytes the fake counts, with markers that are not counted: a hash of
/// the tools (other tools, another prefix) and a byte for each message's role (a changed role
/// breaks the prefix, as on the real API).
#[derive(Debug)]
struct Prompt {
    bytes: Vec<u8>,
    /// Positions of the marker bytes, ascending.
    markers: Vec<usize>,
}

impl Prompt {
    fn of(seen: &SeenRequest) -> Self {
        let mut prompt = Self {
            bytes: Vec::new(),
            markers: Vec::new(),
        };
        if let Some(tools) = seen.body.get("tools") {
            let mut hasher = DefaultHasher::new();
            tools.to_string().hash(&mut hasher);
            prompt.mark(&hasher.finish().to_le_bytes());
        }
        prompt.extend(seen.system.as_deref().unwrap_or_default());
        for message in &seen.messages {
            prompt.mark(match message.role {
                Role::System => b"s",
                Role::User => b"u",
                Role::Assistant => b"a",
                Role::Tool => b"t",
            });
            prompt.extend(&message.content);
            for call in &message.tool_calls {
                prompt.extend(&call.arguments);
            }
        }
        prompt
    }

    fn mark(&mut self, marker: &[u8]) {
        self.markers
            .extend(self.bytes.len()..self.bytes.len() + marker.len());
        self.bytes.extend_from_slice(marker);
    }

    fn extend(&mut self, text: &str) {
        self.bytes.extend_from_slice(text.as_bytes());
    }

    /// Tokens in the first `length` bytes, markers left out.
    fn tokens(&self, length: usize) -> u64 {
        let markers = self.markers.partition_point(|&at| at < length);
        ((length - markers) / BYTES_PER_TOKEN) as u64
    }
}

/// Bytes `a` and `b` share at their start; equal blocks are skipped a block at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let mut shared = 0;
    for (x, y) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
        if x != y {
            return shared + x.iter().zip(y).take_while(|(x, y)| x == y).count();
        }
        shared += x.len();
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_shared_prefix_is_found_among_many_and_forgotten_in_arrival_order() {
        let prompt = |text: &str| text.as_bytes().to_vec();
        let mut remembered = Remembered::default();
        let long = "x".repeat(200);
        for text in [
            "apple pie",
            "apricot",
            &format!("{long}a"),
            "banana",
            "apricot",
        ] {
            remembered.remember(prompt(text));
        }
        assert_eq!(remembered.longest_shared(b"apricots"), 7);
        assert_eq!(remembered.longest_shared(b"apple tart"), 6);
        assert_eq!(
            remembered.longest_shared(format!("{long}b").as_bytes()),
            200
        );
        assert_eq!(remembered.longest_shared(b"cherry"), 0);
        assert_eq!(remembered.longest_shared(b""), 0);
        for filler in 0..REMEMBERED_PROMPTS - 2 {
            remembered.remember(prompt(&format!("z{filler}")));
        }
        // "apple pie", the first "apricot" and the long one are gone; the second "apricot"
        // is still there.
        assert_eq!(remembered.longest_shared(b"apple tart"), 2);
        assert_eq!(remembered.longest_shared(b"apricots"), 7);
        assert_eq!(remembered.longest_shared(format!("{long}b").as_bytes()), 0);
        assert_eq!(remembered.arrival.len(), REMEMBERED_PROMPTS);
        assert_eq!(
            remembered.sorted.values().sum::<usize>(),
            REMEMBERED_PROMPTS
        );
    }

    #[test]
    fn common_prefix_across_block_boundaries() {
        let a: Vec<u8> = (0..200u8).collect();
        for cut in [0, 1, 63, 64, 65, 128, 199] {
            let mut b = a.clone();
            b[cut] ^= 0xff;
            assert_eq!(common_prefix(&a, &b), cut);
        }
        assert_eq!(common_prefix(&a, &a[..100]), 100);
        assert_eq!(common_prefix(&a, &a), 200);
    }
}
