//! Converts between Python arguments and the native helpers in [`crate::helpers`].

use std::borrow::Cow;
use std::cell::Cell;
use std::ops::Deref;

use monty_types::{ExcType, MontyException, MontyObject};
use regex::bytes::Regex;

use super::arguments::{Arguments, type_error, type_name, value_error};
use crate::helpers::IndexedText;

/// Default bound on `find_all` results, so one call cannot return millions of tuples by accident.
const DEFAULT_MAX_MATCHES: i64 = 10_000;
/// Default bound on `grep` matching lines.
const DEFAULT_MAX_GREP_LINES: i64 = 500;

/// The text a helper works on: a context (shared, indexed once) or a string passed as `text=`.
enum TextArgument<'a> {
    Context(&'a IndexedText),
    Given(IndexedText),
}

impl Deref for TextArgument<'_> {
    type Target = IndexedText;

    fn deref(&self) -> &IndexedText {
        match self {
            Self::Context(text) => text,
            Self::Given(text) => text,
        }
    }
}

/// Runs helper `name`. Argument positions follow the Python signatures in [`crate::HELPERS`], whose
/// parameter lists the caller has already checked the call against. A context's file is checked
/// before the helper reads it and again after: an answer read while the file changed under the
/// map is not given (`OSError`).
pub(super) fn call(
    name: &str,
    call: &Arguments<'_>,
    texts: &[Option<IndexedText>],
) -> Result<MontyObject, MontyException> {
    let used = Cell::new(None);
    let answer = answer(name, call, texts, &used)?;
    if let Some(text) = used.get().and_then(|number| texts.get(number)?.as_ref()) {
        text.check_readable()
            .map_err(|message| os_error(call, &message))?;
    }
    Ok(answer)
}

fn os_error(call: &Arguments<'_>, message: &str) -> MontyException {
    MontyException::new(
        ExcType::OSError,
        Some(format!("{}(): {message}", call.function)),
    )
}

/// The helper's answer; `used` is set to the number of the context it read, if any.
fn answer(
    name: &str,
    call: &Arguments<'_>,
    texts: &[Option<IndexedText>],
    used: &Cell<Option<usize>>,
) -> Result<MontyObject, MontyException> {
    let text = |index: usize| text(call, index, texts, used);
    match name {
        "find_all" => {
            let pattern = regex(call)?;
            let text = text(1)?;
            let limit = non_negative(call, 2, "max_matches", Some(DEFAULT_MAX_MATCHES))?;
            let found = text.find_all(&pattern, limit);
            Ok(MontyObject::List(
                found
                    .into_iter()
                    .map(|found| {
                        MontyObject::Tuple(vec![
                            int(found.start),
                            int(found.end),
                            MontyObject::String(found.text),
                        ])
                    })
                    .collect(),
            ))
        }
        "grep" => {
            let pattern = regex(call)?;
            let context_lines = non_negative(call, 1, "context_lines", Some(0))?;
            let text = text(2)?;
            let limit = non_negative(call, 3, "max_matches", Some(DEFAULT_MAX_GREP_LINES))?;
            Ok(MontyObject::String(text.grep(
                &pattern,
                context_lines,
                limit,
            )))
        }
        "line_range" => {
            let start = non_negative(call, 0, "start", None)?;
            let end = match call.get(1, "end") {
                None => usize::MAX,
                Some(_) => non_negative(call, 1, "end", None)?,
            };
            let text = text(2)?;
            Ok(string_list(text.lines(start, end)))
        }
        "line_count" => Ok(int(text(0)?.line_count())),
        "chunk_text" => {
            let size = non_negative(call, 0, "size", None)?;
            let overlap = non_negative(call, 1, "overlap", Some(0))?;
            if size == 0 || overlap >= size {
                return Err(value_error(
                    "chunk_text(): need size > 0 and 0 <= overlap < size".to_owned(),
                ));
            }
            let text = text(2)?;
            Ok(string_list(text.chunks(size, overlap)))
        }
        "slice_text" => {
            let start = non_negative(call, 0, "start", None)?;
            let end = non_negative(call, 1, "end", None)?;
            let text = text(2)?;
            Ok(MontyObject::String(text.slice(start, end).into_owned()))
        }
        other => Err(type_error(format!("{other} is not a helper"))),
    }
}

fn regex(call: &Arguments<'_>) -> Result<Regex, MontyException> {
    let pattern = call.string(0, "pattern")?;
    Regex::new(&pattern)
        .map_err(|error| value_error(format!("{}(): bad pattern: {error}", call.function)))
}

/// `text=` may be omitted (the first context), an int (context number) or a string; the number
/// of a context read is put in `used`.
fn text<'a>(
    call: &Arguments<'_>,
    index: usize,
    texts: &'a [Option<IndexedText>],
    used: &Cell<Option<usize>>,
) -> Result<TextArgument<'a>, MontyException> {
    let number = match call.get(index, "text") {
        None => 0,
        Some(MontyObject::String(given)) => {
            return Ok(TextArgument::Given(IndexedText::new(given.clone())));
        }
        Some(MontyObject::Int(number)) => usize::try_from(*number).unwrap_or(usize::MAX),
        Some(other) => {
            return Err(type_error(format!(
                "{}(): 'text' must be str or a context number, not {}",
                call.function,
                type_name(other)
            )));
        }
    };
    match texts.get(number) {
        Some(Some(text)) => match text.check_readable() {
            Ok(()) => {
                used.set(Some(number));
                Ok(TextArgument::Context(text))
            }
            Err(message) => Err(os_error(call, &message)),
        },
        Some(None) => Err(type_error(format!(
            "{}(): context {number} is not a string; pass text=... explicitly",
            call.function
        ))),
        None => Err(value_error(format!(
            "{}(): there is no context {number}",
            call.function
        ))),
    }
}

fn non_negative(
    call: &Arguments<'_>,
    index: usize,
    name: &str,
    default: Option<i64>,
) -> Result<usize, MontyException> {
    let value = call.integer(index, name, default)?;
    usize::try_from(value)
        .map_err(|_| value_error(format!("{}(): '{name}' must be >= 0", call.function)))
}

fn int(value: usize) -> MontyObject {
    MontyObject::Int(i64::try_from(value).unwrap_or(i64::MAX))
}

fn string_list(items: Vec<Cow<'_, str>>) -> MontyObject {
    MontyObject::List(
        items
            .into_iter()
            .map(|item| MontyObject::String(item.into_owned()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helpers::helper;

    #[test]
    fn the_documented_defaults_are_the_ones_applied() {
        let find_all = helper("find_all").map(|helper| helper.signature);
        let grep = helper("grep").map(|helper| helper.signature);
        assert!(
            find_all.is_some_and(
                |signature| signature.contains(&format!("max_matches={DEFAULT_MAX_MATCHES})"))
            ),
            "{find_all:?}"
        );
        assert!(
            grep.is_some_and(
                |signature| signature.contains(&format!("max_matches={DEFAULT_MAX_GREP_LINES})"))
            ),
            "{grep:?}"
        );
    }
}
