//! `rlm man`: the manual pages, rendered by clap_mangen from the definitions `--help` shows,
//! with the Examples of every command ([`crate::cli::examples`]) as an EXAMPLES section.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::ManArgs;
use crate::cli::examples;

pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    // The definitions without the examples in their long help: the pages give them their
    // own section instead of clap_mangen's untitled EXTRA.
    let mut command =
        <crate::cli::Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    command.build();
    match args.dir {
        None => {
            let mut page = Vec::new();
            render(&command, &[], &mut page)?;
            let mut out = crate::output::raw_stdout();
            out.write_all(&page)?;
            out.flush()?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let written = write_pages(&command, &[], &dir)?;
            eprintln!(
                "wrote {written} manual pages to {} (read one with `man rlm-load` once the \
                 directory is on MANPATH, e.g. ~/.local/share/man/man1)",
                dir.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `command` (at `path` below `rlm`) and of every subcommand into `dir`;
/// returns how many.
fn write_pages(command: &clap::Command, path: &[&str], dir: &Path) -> anyhow::Result<usize> {
    let man = clap_mangen::Man::new(command.clone());
    let file = dir.join(man.get_filename());
    let mut page = Vec::new();
    render(command, path, &mut page)?;
    std::fs::write(&file, page).with_context(|| format!("cannot write {}", file.display()))?;
    let mut written = 1;
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let mut below = path.to_vec();
        below.push(sub.get_name());
        written += write_pages(sub, &below, dir)?;
    }
    Ok(written)
}

/// One page: clap_mangen's sections with EXAMPLES before VERSION.
fn render(command: &clap::Command, path: &[&str], out: &mut Vec<u8>) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(command.clone())
        .source(format!("rlm {}", env!("CARGO_PKG_VERSION")))
        .manual("rlm manual");
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if command.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    if let Some(lines) = examples::for_command(path) {
        out.extend_from_slice(b".SH EXAMPLES\n.nf\n");
        for line in lines.lines() {
            out.extend_from_slice(roff_line(line).as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(b".fi\n");
    }
    man.render_version_section(out)
}

/// A line of text as roff reads it literally: backslashes escaped, hyphens as minus signs (so
/// flags copy and paste), and a line starting with a control character guarded.
fn roff_line(line: &str) -> String {
    let escaped = line.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
