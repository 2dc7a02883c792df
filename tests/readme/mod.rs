//! The README tells the truth:
//!
//! - its library quickstart is `examples/quickstart.rs` (which CI runs),
//!   and it compiles in a fresh crate that depends on tocpile alone, as a
//!   library user's would (the doc-tests of the README run the same block,
//!   but inside this package, whose dependencies are not a user's);
//! - of its two commands, the test command is what `.ci/run` runs, and
//!   the main command's subcommand is a `tocpile` command (docs/CLI.md,
//!   generated from the command line's `--help` and checked against it by
//!   `cli/tests/docs.rs`, which also runs the README's CLI quickstart).
//!
//! The crate is written under the target directory and checked with
//! `cargo check --offline`: the registry cache the outer `cargo test`
//! filled has every crate it needs, and the workspace's lock file pins
//! the same versions.

mod links;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The README's ```rust blocks, rustdoc's hidden-line marks (`# `)
/// removed.
fn rust_blocks(readme: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), line) => {
                let line = line.strip_prefix("# ").unwrap_or(line);
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// `Cargo.toml` and `src/main.rs` of a crate whose only dependency is
/// tocpile, by path; each README block becomes a function.
fn write_crate(dir: &Path, root: &Path, blocks: &[String]) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\n\
         name = \"tocpile-readme-example\"\n\
         version = \"0.0.0\"\n\
         edition = \"2021\"\n\
         publish = false\n\n\
         [dependencies]\n\
         tocpile = {{ path = {:?} }}\n\n\
         # Its own workspace, not the tocpile workspace it sits inside.\n\
         [workspace]\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    let mut main = String::from("//! Generated from tocpile's README by tests/readme.\n\n");
    for (i, block) in blocks.iter().enumerate() {
        main.push_str(&format!(
            "fn example_{i}() -> Result<(), tocpile::Error> {{\n{block}}}\n\n"
        ));
    }
    main.push_str("fn main() {\n");
    for i in 0..blocks.len() {
        main.push_str(&format!("    example_{i}().unwrap();\n"));
    }
    main.push_str("}\n");
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

#[test]
fn readme_examples_compile_in_a_fresh_crate() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = rust_blocks(&readme);
    assert!(!blocks.is_empty(), "the README has a library quickstart");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme-example");
    write_crate(&dir, &root, &blocks);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["check", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "the README's examples do not compile in a crate depending on tocpile alone \
         ({}):\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn blocks_are_extracted_without_hidden_marks() {
    let readme = "text\n```rust\nlet x = 1;\n# Ok::<(), tocpile::Error>(())\n```\n```sh\nls\n```\n";
    assert_eq!(
        rust_blocks(readme),
        ["let x = 1;\nOk::<(), tocpile::Error>(())\n"]
    );
}

/// The body of `examples/quickstart.rs`'s `main` between its markers,
/// unindented by one level.
fn quickstart_example(root: &Path) -> String {
    let text = std::fs::read_to_string(root.join("examples/quickstart.rs")).unwrap();
    let begin = "// quickstart: begin\n";
    let start = text.find(begin).expect("the begin marker") + begin.len();
    let end = text.find("    // quickstart: end").expect("the end marker");
    text[start..end]
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .fold(String::new(), |mut out, l| {
            out.push_str(l);
            out.push('\n');
            out
        })
}

#[test]
fn the_library_quickstart_is_the_quickstart_example() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = rust_blocks(&readme);
    let want = format!(
        "{}Ok::<(), tocpile::Error>(())\n",
        quickstart_example(&root)
    );
    assert_eq!(
        blocks.first(),
        Some(&want),
        "the README's first Rust block must be examples/quickstart.rs's main, \
         between its markers (copy one into the other)"
    );
}

/// The lines of the first ```sh block after `heading`.
fn sh_block_after(readme: &str, heading: &str) -> Vec<String> {
    let section = readme
        .split_once(heading)
        .unwrap_or_else(|| panic!("README: no {heading:?}"))
        .1;
    let block = section
        .split_once("```sh\n")
        .expect("a sh block")
        .1
        .split_once("```")
        .expect("its end")
        .0;
    block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_two_commands_are_what_ci_runs_and_a_real_command() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands = sh_block_after(&readme, "## The two commands\n");
    assert_eq!(commands.len(), 2, "two commands: {commands:?}");
    let (main, test) = (&commands[0], &commands[1]);
    assert_eq!(test, "cargo test --release", "the test command");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == test),
        ".ci/run does not run the README's test command {test:?}"
    );
    let sub = main
        .strip_prefix("cargo run --release -- ")
        .unwrap_or_else(|| panic!("the main command runs the command line: {main:?}"));
    let cli_doc = std::fs::read_to_string(root.join("docs/CLI.md")).unwrap();
    assert!(
        cli_doc.contains(&format!("\n## tocpile {sub}\n")),
        "the main command's `{sub}` is not a command of docs/CLI.md"
    );
    // Its default needs no data: the built-in set is embedded in the binary.
    let demo = std::fs::read_to_string(root.join("cli/src/demo.rs")).unwrap();
    assert!(
        demo.contains("include_bytes!"),
        "the demo's data is built in"
    );
}
