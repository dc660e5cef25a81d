//! `rlm load / list / show / peek / grep / chunk / search / delete / status` end to end: a
//! module per command, the fixture and helpers they share here.

mod delete;
mod embed;
mod grep;
mod load;
mod read;
mod search;

use std::path::Path;

use assert_cmd::Command;

use crate::support::{json_lines, outcome as run, rlm_with_store, static_model_wheel};

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("project");
        std::fs::create_dir_all(files.join("src")).unwrap();
        std::fs::create_dir_all(files.join("docs")).unwrap();
        std::fs::write(
            files.join("src/app.py"),
            "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef parse_args(argv):\n    return argv[1:]\n",
        )
        .unwrap();
        std::fs::write(
            files.join("docs/guide.md"),
            "# Guide\n\nThe logger writes to stderr.\n\n## Usage\n\nRun the tool with arguments.\n",
        )
        .unwrap();
        std::fs::write(
            files.join("docs/data.csv"),
            "id,name\n1,alpha\n2,\"beta\ngamma\"\n",
        )
        .unwrap();
        std::fs::write(files.join("image.bin"), b"\x00\x01binary").unwrap();
        Self { dir }
    }

    fn rlm(&self) -> Command {
        rlm_with_store(self.dir.path())
    }

    fn load(&self) {
        self.rlm().args(["load", "project"]).assert().success();
    }

    fn path(&self, relative: &str) -> std::path::PathBuf {
        self.dir.path().join(relative)
    }
}

fn stdout(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\(\d+\.\ds\)", "(TIME)");
    settings.add_filter(r"score \d+\.\d+", "score S");
    settings.add_filter(r"chunk\s+\d+", "chunk N");
    settings.add_filter(r"/tmp/[^\s/]+", "[TMP]");
    settings
}
