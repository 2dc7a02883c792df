//! The command line's documentation is current and its quickstart runs:
//!
//! - `docs/CLI.md`, below its hand-written guide, is the `--help` of
//!   every command and subcommand, as the built binary prints it
//!   (regenerate it after changing a flag:
//!   `TOCPILE_BLESS=1 cargo test --release -p tocpile-cli --test docs`);
//! - the README's command-line quickstart runs as written, in a
//!   temporary directory, on the datasets shipped in `data/`.

mod common;

use std::path::{Path, PathBuf};

use common::{ok, tocpile};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The subcommands listed under "Commands:" in a `--help` text (`help`
/// excluded).
fn subcommands(help: &str) -> Vec<String> {
    let Some((_, rest)) = help.split_once("\nCommands:\n") else {
        return Vec::new();
    };
    rest.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect()
}

/// `## tocpile ...` sections with each command's `--help`, depth first.
fn render(path: &[String], dir: &Path, out: &mut String) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = ok(&args, dir);
    let name = std::iter::once("tocpile")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    out.push_str(&format!(
        "\n## {name}\n\n```text\n{}\n```\n",
        help.trim_end()
    ));
    for sub in subcommands(&help) {
        let mut next = path.to_vec();
        next.push(sub);
        render(&next, dir, out);
    }
}

/// The line of docs/CLI.md after which it is generated.
const MARKER: &str = "<!-- Generated from each command's --help by cli/tests/docs.rs: edit above this line only. -->\n";

#[test]
fn cli_md_is_every_commands_help() {
    let dir = tempfile::tempdir().unwrap();
    let path = root().join("docs/CLI.md");
    let current = std::fs::read_to_string(&path).unwrap();
    // The guide above the marker is written by hand; the reference below
    // it is generated.
    let (guide, _) = current
        .split_once(MARKER)
        .expect("docs/CLI.md: the marker line of the generated reference");
    let mut doc = format!(
        "{guide}{MARKER}\n\
         # Reference: every command's `--help`\n\n\
         Generated from the command line (`cli/tests/docs.rs` fails when this\n\
         differs from the binary's help; regenerate it with\n\
         `TOCPILE_BLESS=1 cargo test --release -p tocpile-cli --test docs`).\n"
    );
    render(&[], dir.path(), &mut doc);
    if std::env::var_os("TOCPILE_BLESS").is_some() {
        std::fs::write(&path, &doc).unwrap();
        return;
    }
    assert!(
        current == doc,
        "docs/CLI.md is not the command line's --help: regenerate it with \
         TOCPILE_BLESS=1 cargo test --release -p tocpile-cli --test docs"
    );
}

#[test]
fn the_readme_cli_quickstart_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split_once("\n## Command line\n")
        .expect("README: a command-line section")
        .1;
    let block = section
        .split_once("```sh\n")
        .expect("a sh block")
        .1
        .split_once("```")
        .unwrap()
        .0;
    let data = root().join("data");
    let dir = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for line in block.lines() {
        let command = line.split('#').next().unwrap().trim();
        let Some(args) = command.strip_prefix("tocpile ") else {
            assert!(
                command.is_empty() || command.starts_with("cargo install"),
                "README: an unexpected line {command:?}"
            );
            continue;
        };
        let args: Vec<String> = args
            .split_whitespace()
            .map(|a| match a.strip_prefix("data/") {
                Some(file) => data.join(file).display().to_string(),
                None => a.to_string(),
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = tocpile(&args, dir.path());
        assert!(
            output.status.success(),
            "README: `{command}` failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 5, "README: {ran} commands");
    for file in ["mushrooms.toc", "mushrooms.model", "predictions.txt"] {
        assert!(dir.path().join(file).exists(), "README: no {file} written");
    }
}
