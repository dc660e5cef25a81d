//! printf-style formatting (`'%d items' % n`), which Monty 0.0.23 lacks: there `str % x` is a
//! `TypeError`. Model code uses it often, so before a cell runs every `%` whose left operand is a
//! string literal is rewritten into a call of [`PRELUDE`]'s `_rlm_percent`, with the literal
//! already translated to a `str.format` template:
//!
//! `'%5.2f: %s' % (x, y)` → `_rlm_percent('{:5.2f}: {}', 'fs', None, (x, y))`
//!
//! The rewrite keeps every line where it was (tracebacks keep their line numbers). A format
//! string held in a variable, or a conversion with no `str.format` equivalent (`*` widths,
//! `%.3d`), is left alone: Monty's `TypeError` then gets a hint towards f-strings
//! ([`hint_for`]).

use monty_types::{MontyException, StackFrame};
use ruff_python_ast::visitor::{Visitor, walk_expr};
use ruff_python_ast::{Expr, ExprBinOp, Operator};
use ruff_text_size::Ranged;

/// The Python function [`PRELUDE`] defines and rewritten code calls.
const HELPER: &str = "_rlm_percent";

/// Python run once per session: the runtime half of the rewrite. It picks the arguments (a
/// tuple, a single value, or a mapping for `%(name)s`), converts each as `%` would, and lets
/// `str.format` lay them out.
pub(super) const PRELUDE: &str = r#"
def _rlm_percent(template, kinds, keys, values):
    if keys is None:
        if type(values) is not tuple:
            values = (values,)
        if len(values) < len(kinds):
            raise TypeError('not enough arguments for format string')
        if len(values) > len(kinds):
            raise TypeError('not all arguments converted during string formatting')
    else:
        values = [values[key] for key in keys]
    converted = []
    for kind, value in zip(kinds, values):
        if kind == 's':
            value = str(value)
        elif kind == 'r':
            value = repr(value)
        elif kind == 'c':
            if type(value) is int:
                value = chr(value)
            elif type(value) is not str or len(value) != 1:
                raise TypeError('%c requires an int or a single character')
        elif type(value) is str or not isinstance(value, (int, float)):
            raise TypeError('%' + kind + ' format: a real number is required, not ' + type(value).__name__)
        elif kind in 'di':
            value = int(value)
        elif kind in 'xXo':
            if type(value) is float:
                raise TypeError('%' + kind + ' format: an integer is required, not float')
            value = int(value)
        else:
            value = float(value)
        converted.append(value)
    return template.format(*converted)
"#;

/// The message Monty gives for `str % value`, which the rewrite could not cover.
const UNSUPPORTED_PERCENT: &str = "unsupported operand type(s) for %: 'str'";

/// A hint for a `TypeError` message that comes from a `%` the rewrite could not cover.
pub(super) fn hint_for(message: &str) -> Option<&'static str> {
    message.starts_with(UNSUPPORTED_PERCENT).then_some(
        "printf-style '%' formatting works here only with a string literal on the left and \
         simple conversions (%s %r %d %i %f %e %g %x %o %c); use an f-string, e.g. \
         f'{name}: {count:5d}', or str.format()",
    )
}

/// An error from rewritten code, shown as if the code had run as written: without the frames of
/// `_rlm_percent` (so a wrong argument points at the model's line, as CPython's `%` would) and
/// with the model's own source lines (carets hidden: their columns were the rewritten line's).
pub(super) fn as_written(error: MontyException, original: &str) -> MontyException {
    let is_helper = |frame: &StackFrame| frame.frame_name.as_deref() == Some(HELPER);
    // The outermost frame is the cell's own code; other files are earlier cells.
    let cell = error
        .traceback()
        .first()
        .map(|frame| frame.filename.clone());
    let frames = error
        .traceback()
        .iter()
        .filter(|frame| !is_helper(frame))
        .map(|frame| {
            let mut frame = frame.clone();
            let first = usize::try_from(frame.start.line).unwrap_or(1).max(1);
            let last = usize::try_from(frame.end.line).unwrap_or(first).max(first);
            if Some(&frame.filename) == cell.as_ref() && frame.preview_line.is_some() {
                let lines: Vec<&str> = original
                    .lines()
                    .skip(first - 1)
                    .take(last - first + 1)
                    .collect();
                if !lines.is_empty() {
                    frame.preview_line = Some(lines.join("\n").into());
                    frame.hide_caret = true;
                }
            }
            frame
        })
        .collect();
    MontyException::with_traceback(error.exc_type(), error.message().map(str::to_owned), frames)
}

/// `code` with each `'literal' % values` replaced by a `_rlm_percent(...)` call; `None` when
/// there is nothing to rewrite (or the code does not parse: Monty reports that itself).
pub(super) fn rewrite(code: &str) -> Option<String> {
    if !code.contains('%') {
        return None;
    }
    let parsed = ruff_python_parser::parse_module(code).ok()?;
    let mut finder = Finder {
        source: code,
        edits: Vec::new(),
    };
    for statement in &parsed.syntax().body {
        finder.visit_stmt(statement);
    }
    if finder.edits.is_empty() {
        return None;
    }
    let mut edits = finder.edits;
    edits.sort_by_key(|edit| (edit.start, edit.end));
    let mut rewritten = String::with_capacity(code.len() + edits.len() * 40);
    let mut copied = 0;
    for edit in edits {
        rewritten.push_str(&code[copied..edit.start]);
        rewritten.push_str(&edit.text);
        copied = edit.end;
    }
    rewritten.push_str(&code[copied..]);
    Some(rewritten)
}

/// Replace `start..end` of the source by `text` (an insertion when they are equal).
#[derive(Debug)]
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

struct Finder<'a> {
    source: &'a str,
    edits: Vec<Edit>,
}

impl<'a> Visitor<'a> for Finder<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::BinOp(binary) = expr
            && binary.op == Operator::Mod
        {
            self.rewrite(binary);
        }
        walk_expr(self, expr);
    }
}

impl Finder<'_> {
    /// `L % R` → `_rlm_percent(template, kinds, keys, R)`: the text from the start of the
    /// expression to the `%` is replaced, `R` is kept as written, and `)` closes the call.
    fn rewrite(&mut self, binary: &ExprBinOp) {
        let Expr::StringLiteral(literal) = binary.left.as_ref() else {
            return;
        };
        let Some(format) = translate(literal.value.to_str()) else {
            return;
        };
        let start = binary.start().to_usize();
        let left_end = literal.end().to_usize();
        let right_start = binary.right.start().to_usize();
        let Some(operator) = operator_position(&self.source[left_end..right_start]) else {
            return;
        };
        let operator_end = left_end + operator + 1;
        // Parentheses around the literal are replaced with it, so they must balance.
        let opened = self.source[start..literal.start().to_usize()]
            .matches('(')
            .count();
        let closed = self.source[left_end..operator_end].matches(')').count();
        if opened != closed {
            return;
        }
        let replaced = &self.source[start..operator_end];
        let keys = match &format.keys {
            None => "None".to_owned(),
            Some(keys) => format!(
                "[{}]",
                keys.iter()
                    .map(|key| python_string(key))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        // Newlines that were inside the replaced text stay, inside the call's parentheses.
        let newlines = "\n".repeat(replaced.matches('\n').count());
        self.edits.push(Edit {
            start,
            end: operator_end,
            text: format!(
                "_rlm_percent({}, {}, {keys},{newlines}",
                python_string(&format.template),
                python_string(&format.kinds)
            ),
        });
        let end = binary.end().to_usize();
        self.edits.push(Edit {
            start: end,
            end,
            text: ")".to_owned(),
        });
    }
}

/// Where the `%` operator is in the text between the operands (spaces, parentheses, comments).
fn operator_position(gap: &str) -> Option<usize> {
    let mut in_comment = false;
    for (index, character) in gap.char_indices() {
        match character {
            '\n' => in_comment = false,
            '#' => in_comment = true,
            '%' if !in_comment => return Some(index),
            _ => {}
        }
    }
    None
}

/// A printf-style format string in `str.format` form.
#[derive(Debug, PartialEq, Eq)]
struct Translated {
    template: String,
    /// One conversion letter per field: `s r c d i x X o e E f F g G`.
    kinds: String,
    /// Mapping keys, when the fields are `%(name)s`.
    keys: Option<Vec<String>>,
}

/// Translates `%[(key)][flags][width][.precision][length]type`; `None` for what `str.format`
/// cannot express (`*`, precision on integers) or `%` itself rejects (unknown types, mixed
/// mapping and positional fields, a trailing `%`).
fn translate(format: &str) -> Option<Translated> {
    let mut template = String::with_capacity(format.len() + 8);
    let mut kinds = String::new();
    let mut keys: Vec<String> = Vec::new();
    let mut positional = false;
    let mut chars = format.chars().peekable();
    while let Some(character) = chars.next() {
        match character {
            '%' => {}
            '{' => {
                template.push_str("{{");
                continue;
            }
            '}' => {
                template.push_str("}}");
                continue;
            }
            other => {
                template.push(other);
                continue;
            }
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            template.push('%');
            continue;
        }
        if chars.peek() == Some(&'(') {
            chars.next();
            // `%(key)s`: the key runs to the matching parenthesis.
            let mut key = String::new();
            let mut depth = 1;
            loop {
                let next = chars.next()?;
                match next {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                key.push(next);
            }
            keys.push(key);
        } else {
            positional = true;
        }
        let mut flags = String::new();
        while let Some(&flag) = chars.peek().filter(|flag| "-+ #0".contains(**flag)) {
            flags.push(flag);
            chars.next();
        }
        let mut width = String::new();
        while let Some(&digit) = chars.peek().filter(|digit| digit.is_ascii_digit()) {
            width.push(digit);
            chars.next();
        }
        let mut precision = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut digits = String::new();
            while let Some(&digit) = chars.peek().filter(|digit| digit.is_ascii_digit()) {
                digits.push(digit);
                chars.next();
            }
            precision = Some(if digits.is_empty() {
                "0".to_owned()
            } else {
                digits
            });
        }
        while chars.peek().is_some_and(|length| "hlL".contains(*length)) {
            chars.next();
        }
        let kind = match chars.next()? {
            'u' => 'd',
            'a' => 'r',
            kind @ ('s' | 'r' | 'c' | 'd' | 'i' | 'x' | 'X' | 'o' | 'e' | 'E' | 'f' | 'F' | 'g'
            | 'G') => kind,
            _ => return None,
        };
        template.push_str(&field(kind, &flags, &width, precision.as_deref())?);
        kinds.push(kind);
    }
    if positional && !keys.is_empty() {
        return None;
    }
    Some(Translated {
        template,
        kinds,
        keys: (!keys.is_empty()).then_some(keys),
    })
}

/// The `str.format` field for one conversion. Strings are right-aligned by `%` (`%5s`) but
/// left-aligned by `format`, so the alignment is always spelled out.
fn field(kind: char, flags: &str, width: &str, precision: Option<&str>) -> Option<String> {
    let left = flags.contains('-');
    let mut spec = String::new();
    match kind {
        's' | 'r' | 'c' => {
            if !width.is_empty() {
                spec.push(if left { '<' } else { '>' });
                spec.push_str(width);
            }
            if let Some(precision) = precision {
                spec.push('.');
                spec.push_str(precision);
            }
        }
        _ => {
            if left {
                spec.push('<');
            }
            if flags.contains('+') {
                spec.push('+');
            } else if flags.contains(' ') {
                spec.push(' ');
            }
            if flags.contains('#') && kind != 'd' && kind != 'i' {
                spec.push('#');
            }
            if flags.contains('0') && !left && !width.is_empty() {
                spec.push('0');
            }
            spec.push_str(width);
            if let Some(precision) = precision {
                if matches!(kind, 'd' | 'i' | 'x' | 'X' | 'o') {
                    return None;
                }
                spec.push('.');
                spec.push_str(precision);
            }
            spec.push(if kind == 'i' { 'd' } else { kind });
        }
    }
    Some(if spec.is_empty() {
        "{}".to_owned()
    } else {
        format!("{{:{spec}}}")
    })
}

/// A single-quoted Python string literal for `text`.
fn python_string(text: &str) -> String {
    let mut literal = String::with_capacity(text.len() + 2);
    literal.push('\'');
    for character in text.chars() {
        match character {
            '\\' => literal.push_str("\\\\"),
            '\'' => literal.push_str("\\'"),
            '\n' => literal.push_str("\\n"),
            '\r' => literal.push_str("\\r"),
            '\t' => literal.push_str("\\t"),
            control if control.is_control() => {
                literal.push_str(&format!("\\u{:04x}", u32::from(control)));
            }
            other => literal.push(other),
        }
    }
    literal.push('\'');
    literal
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn translated(format: &str) -> (String, String) {
        let translated = translate(format).unwrap();
        (translated.template, translated.kinds)
    }

    #[test]
    fn conversions_become_format_fields() {
        assert_eq!(translated("%d items"), ("{:d} items".into(), "d".into()));
        assert_eq!(
            translated("%s=%r %5.2f|%-6s|%05d|%+i|%x|%#o|%e|%G|%c|%%|{x}"),
            (
                "{}={} {:5.2f}|{:<6}|{:05d}|{:+d}|{:x}|{:#o}|{:e}|{:G}|{}|%|{{x}}".into(),
                "srfsdixoeGc".into()
            )
        );
        assert_eq!(
            translated("%10s|%.3s|%ld"),
            ("{:>10}|{:.3}|{:d}".into(), "ssd".into())
        );
        let mapping = translate("%(name)s is %(age)d").unwrap();
        assert_eq!(mapping.template, "{} is {:d}");
        assert_eq!(
            mapping.keys,
            Some(vec!["name".to_owned(), "age".to_owned()])
        );
        for unsupported in ["%*d", "%.3d", "%q", "100%", "%(a)s %s"] {
            assert_eq!(translate(unsupported), None, "{unsupported}");
        }
    }

    #[test]
    fn only_string_literals_on_the_left_are_rewritten_and_lines_stay() {
        assert_eq!(rewrite("x = 10 % 3"), None);
        assert_eq!(rewrite("fmt % x"), None);
        assert_eq!(
            rewrite("print('%d: %s' % (n, name))").unwrap(),
            "print(_rlm_percent('{:d}: {}', 'ds', None, (n, name)))"
        );
        assert_eq!(
            rewrite("a = ('%s') % x\nb = '%s' % ('%d' % n)").unwrap(),
            "a = _rlm_percent('{}', 's', None, x)\n\
             b = _rlm_percent('{}', 's', None, (_rlm_percent('{:d}', 'd', None, n)))"
        );
        let multi_line = "y = ('''%s\n%s''' %\n     (a, b))\nz = 1";
        let rewritten = rewrite(multi_line).unwrap();
        assert_eq!(
            rewritten.lines().count(),
            multi_line.lines().count(),
            "{rewritten}"
        );
        assert!(rewritten.ends_with("\nz = 1"), "{rewritten}");
        assert_eq!(
            rewrite("print('%d' % )"),
            None,
            "syntax errors are left to Monty"
        );
    }
}
