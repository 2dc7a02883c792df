//! Every relative link of the project's Markdown (README, docs/ and its
//! archive, the READMEs of experiments/, python/, pg/, fuzz/, data/) names
//! a file that exists, and a `#fragment` into a Markdown file names one of
//! its headings (GitHub's anchors: lower case, punctuation dropped, spaces
//! as hyphens, `-1`, `-2` ... on repeats). Moving a file or renaming a
//! heading breaks a reader's link; this test says which.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The Markdown files whose links are checked, relative to the root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "experiments/README.md",
        "python/README.md",
        "pg/README.md",
        "fuzz/README.md",
        "data/README.md",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    for dir in ["docs", "docs/archive"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        docs.extend(found);
    }
    docs.retain(|p| p.exists());
    docs
}

/// Every line, those of fenced code blocks blank and inline code spans
/// removed (so that the index is the line number less one).
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            lines.push(String::new());
            continue;
        }
        if fenced {
            lines.push(String::new());
            continue;
        }
        let mut kept = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                kept.push_str(part);
            }
        }
        lines.push(kept);
    }
    lines
}

/// GitHub's anchor of a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor of a Markdown file's headings.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        if fenced {
            continue;
        }
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let base = slug(title);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of the `[text](target)` and `![alt](target)` links of a line.
fn targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        out.push(target.to_string());
        rest = &rest[end..];
    }
    out
}

#[test]
fn every_relative_link_names_a_file_and_a_heading_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents(root) {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root).unwrap().display().to_string();
        for (i, line) in prose(&text).iter().enumerate() {
            for target in targets(line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, fragment) = match target.split_once('#') {
                    Some((p, f)) => (p, Some(f)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    doc.clone()
                } else {
                    doc.parent().unwrap().join(path)
                };
                checked += 1;
                let place = format!("{name}:{}: ({target})", i + 1);
                if !file.exists() {
                    broken.push(format!("{place}: no file {}", file.display()));
                    continue;
                }
                let Some(fragment) = fragment else { continue };
                if file.extension().is_some_and(|e| e == "md") {
                    let headings = anchors(&std::fs::read_to_string(&file).unwrap());
                    if !headings.contains(fragment) {
                        broken.push(format!("{place}: no heading #{fragment}"));
                    }
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the parser right?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_follow_githubs_rules() {
    assert_eq!(
        slug(" 10. Encode memory on wide rows"),
        "10-encode-memory-on-wide-rows"
    );
    assert_eq!(
        slug(" 22. CorgiPile and TOC at once: rows shuffled (issue 22)"),
        "22-corgipile-and-toc-at-once-rows-shuffled-issue-22"
    );
    let text = "# Results\n## Targets\n```sh\n# not a heading\n```\n### Targets\n";
    let found = anchors(text);
    assert!(found.contains("results") && found.contains("targets"));
    assert!(found.contains("targets-1") && !found.contains("not-a-heading"));
    assert_eq!(
        targets("see [a](a.md#x) and ![b](img/b.svg \"title\")"),
        ["a.md#x", "img/b.svg"]
    );
}
