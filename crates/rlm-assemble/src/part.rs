//! Part file names: `<rank>_<kind>.<slot>.md`, `….md.skip` (inactive) and `….link` (a symlink
//! that is always current and always active).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::{Error, Result};

/// A part's position class: three digits, 000–499. Lower ranks come first and are kept first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "String")]
pub struct Rank(u16);

impl Rank {
    /// The highest rank.
    pub const MAX: u16 = 499;
    /// Parts below this rank (system, critical evidence) must fit the budget.
    pub const REQUIRED_BELOW: u16 = 200;

    /// The rank as a number.
    pub fn get(self) -> u16 {
        self.0
    }

    /// Builds a rank from a number in 0–499.
    pub fn new(value: u16) -> Result<Self> {
        if value > Self::MAX {
            return Err(Error::Rank(value.to_string()));
        }
        Ok(Self(value))
    }

    /// What the rank band means.
    pub fn band(self) -> &'static str {
        match self.0 {
            0..=99 => "system",
            100..=199 => "critical",
            200..=299 => "supporting",
            300..=399 => "peripheral",
            _ => "optional",
        }
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:03}", self.0)
    }
}

impl From<Rank> for String {
    fn from(rank: Rank) -> Self {
        rank.to_string()
    }
}

impl FromStr for Rank {
    type Err = Error;

    /// Exactly three ASCII digits, 000–499.
    fn from_str(text: &str) -> Result<Self> {
        if text.len() != 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::Rank(text.to_owned()));
        }
        let value: u16 = text.parse().map_err(|_| Error::Rank(text.to_owned()))?;
        Self::new(value).map_err(|_| Error::Rank(text.to_owned()))
    }
}

/// Which group of the prompt a part goes in: the `.system` / `.user` / `.evidence` suffix of
/// its file name. (Not a chat role: the whole prompt is one text. The command line and JSON
/// call it the part's `role`, as in `rlm ctx add --role`.)
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Slot {
    /// Instructions (`# System`).
    System,
    /// The request (`# User Request`).
    User,
    /// Material to reason over (`## Evidence: <path>`).
    Evidence,
}

impl Slot {
    /// The slot's name as written in file names.
    pub fn name(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Evidence => "evidence",
        }
    }
}

impl FromStr for Slot {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "system" => Ok(Self::System),
            "user" => Ok(Self::User),
            "evidence" => Ok(Self::Evidence),
            _ => Err(Error::Invalid(format!(
                "unknown role `{text}` (expected system, user or evidence)"
            ))),
        }
    }
}

/// Whether a part goes into the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// `.md`: included.
    Active,
    /// `.md.skip`: kept but left out.
    Skipped,
    /// `.link`: a symlink read at build time; always included.
    Linked,
}

/// A parsed part file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartName {
    /// Position class.
    pub rank: Rank,
    /// Free-form short name (`flow_sh`).
    pub kind: String,
    /// Prompt slot.
    pub slot: Slot,
    /// Active, skipped or linked.
    pub state: State,
}

impl PartName {
    /// Parses a file name. `Ok(None)` means the file is not meant to be a part (no `.md`,
    /// `.md.skip` or `.link` ending); `Err` means it looks like one but is malformed.
    pub fn parse(file_name: &str) -> Result<Option<Self>> {
        let (stem, state) = if let Some(stem) = file_name.strip_suffix(".md.skip") {
            (stem, State::Skipped)
        } else if let Some(stem) = file_name.strip_suffix(".md") {
            (stem, State::Active)
        } else if let Some(stem) = file_name.strip_suffix(".link") {
            (stem, State::Linked)
        } else {
            return Ok(None);
        };
        let bad = |why: &str| Error::Invalid(format!("`{file_name}` is not a part name: {why}"));
        let (head, slot) = stem
            .rsplit_once('.')
            .ok_or_else(|| bad("expected <rank>_<kind>.<slot>"))?;
        let slot: Slot = slot.parse()?;
        let (rank, kind) = head
            .split_once('_')
            .ok_or_else(|| bad("expected <rank>_<kind>"))?;
        let rank: Rank = rank.parse()?;
        if !is_kind(kind) {
            return Err(bad("the kind is letters, digits, `_` and `-`"));
        }
        Ok(Some(Self {
            rank,
            kind: kind.to_owned(),
            slot,
            state,
        }))
    }

    /// `100_flow_sh.evidence`: the name without the state ending, stable across toggles.
    pub fn id(&self) -> String {
        format!("{}_{}.{}", self.rank, self.kind, self.slot.name())
    }

    /// The file name for this part in its current state.
    pub fn file_name(&self) -> String {
        let ending = match self.state {
            State::Active => ".md",
            State::Skipped => ".md.skip",
            State::Linked => ".link",
        };
        format!("{}{ending}", self.id())
    }
}

/// Whether `kind` is usable in a part name.
pub fn is_kind(kind: &str) -> bool {
    !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A part kind derived from a path (`src/Flow.sh` → `src_flow_sh`), at most 64 characters,
/// keeping the end of long paths because the file name says most.
pub fn kind_from_path(path: &str) -> String {
    let mut kind = String::with_capacity(path.len());
    for character in path.trim_start_matches("./").chars() {
        if character.is_ascii_alphanumeric() {
            kind.push(character.to_ascii_lowercase());
        } else if !kind.ends_with('_') && !kind.is_empty() {
            kind.push('_');
        }
    }
    let kind = kind.trim_end_matches('_');
    let start = kind.len().saturating_sub(64);
    let kind = kind[start..].trim_start_matches('_');
    if kind.is_empty() {
        "part".to_owned()
    } else {
        kind.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_part_names() {
        let name = PartName::parse("100_flow_sh.evidence.md").unwrap().unwrap();
        assert_eq!(name.rank.get(), 100);
        assert_eq!(name.kind, "flow_sh");
        assert_eq!(name.slot, Slot::Evidence);
        assert_eq!(name.state, State::Active);
        assert_eq!(name.file_name(), "100_flow_sh.evidence.md");
        let skipped = PartName::parse("200_t.evidence.md.skip").unwrap().unwrap();
        assert_eq!(skipped.state, State::Skipped);
        assert_eq!(skipped.id(), "200_t.evidence");
        let link = PartName::parse("300_example.evidence.link")
            .unwrap()
            .unwrap();
        assert_eq!(link.state, State::Linked);
        assert_eq!(PartName::parse("notes.txt").unwrap(), None);
    }

    #[test]
    fn rejects_bad_names_and_ranks() {
        for bad in [
            "1000_x.evidence.md",
            "10_x.evidence.md",
            "500_x.evidence.md",
            "abc_x.evidence.md",
            "100_x.helper.md",
            "100_.evidence.md",
            "100_a b.evidence.md",
            "README.md",
        ] {
            assert!(PartName::parse(bad).is_err(), "{bad}");
        }
        assert!("099".parse::<Rank>().is_ok());
        assert!("499".parse::<Rank>().is_ok());
        for bad in ["500", "99", "0999", "1e2", "-10"] {
            assert!(bad.parse::<Rank>().is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds_come_from_paths() {
        assert_eq!(kind_from_path("./src/Flow.sh"), "src_flow_sh");
        assert_eq!(kind_from_path("__init__.py"), "init_py");
        assert_eq!(kind_from_path("///"), "part");
        let long = format!("{}/main.rs", "deep/".repeat(30));
        assert!(kind_from_path(&long).ends_with("main_rs"));
        assert!(kind_from_path(&long).len() <= 64);
    }
}
