//! The module structure of the library (`src/`) and of the command line
//! (`cli/src/`): in neither do two modules import each other.
//!
//! Each file of a crate's source directory is a module
//! (`src/dataset/reader.rs` is `dataset::reader`; `lib.rs`, `main.rs` and
//! `mod.rs` are their directory's module). A module imports another when its code (test
//! modules excluded) names a path into it through `crate::`, `super::` or
//! `self::`, in a `use` or inline; a path through a re-export (`use` in a
//! parent module) counts as a path to where the name comes from. An
//! import between modules that are not ancestor and descendant is lifted
//! to the two children of their closest common ancestor: `dataset::reader`
//! naming `formats::sparse` is the edge `dataset -> formats`, and
//! `dataset::reader` naming `dataset::writer` the edge `reader -> writer`
//! inside `dataset`. Parents and their own submodules may name each other
//! freely (a parent declares and re-exports its children, children use
//! their parent's shared items). Two edges in opposite directions fail the
//! test, naming the files and paths of both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path, from the crate root (`[]` is `lib.rs`).
type Module = Vec<String>;

/// One module's source: its code (comments and test modules removed),
/// the names its `use` declarations bring into scope, and every path it
/// names into the crate.
struct Source {
    file: String,
    aliases: BTreeMap<String, Module>,
    paths: Vec<(Module, String)>,
}

/// The repository's root (this package's directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The library's source directory.
fn lib_src() -> PathBuf {
    root().join("src")
}

/// The command line's source directory.
fn cli_src() -> PathBuf {
    root().join("cli/src")
}

/// Every `.rs` file under `dir`, with its module path.
fn files(dir: &Path, module: &Module, out: &mut Vec<(PathBuf, Module)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut child = module.clone();
            child.push(stem);
            files(&path, &child, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut m = module.clone();
            let crate_root = module.is_empty() && (stem == "lib" || stem == "main");
            if stem != "mod" && !crate_root {
                m.push(stem);
            }
            out.push((path, m));
        }
    }
}

/// `text` without comments (line, block and doc comments); string
/// literals are kept as they are (none of the library's holds a path).
fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if c == b'\\' {
                out.push_str(&text[i..(i + 2).min(text.len())]);
                i += 2;
                continue;
            }
            in_string = c != b'"';
        } else if c == b'"' && (i == 0 || bytes[i - 1] != b'\'') {
            in_string = true;
        } else if text[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        } else if text[i..].starts_with("/*") {
            let mut depth = 0;
            while i < bytes.len() {
                if text[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            continue;
        }
        let ch = text[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// `code` without the `#[cfg(test)] mod NAME { ... }` blocks.
fn strip_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let rest = &out[at..];
        let Some(open) = rest.find('{') else { break };
        let is_mod = rest[..open].contains("mod ");
        let mut depth = 0;
        let mut end = rest.len();
        for (k, ch) in rest.char_indices().skip(open) {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        // Only whole test modules are removed; a `#[cfg(test)]` item is
        // blanked up to its opening brace so the search moves on.
        let cut = if is_mod { end } else { open };
        out.replace_range(at..at + cut, "");
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands a `use` tree (`a::{b, c::d as e}`) into (full path, local name)
/// pairs; globs (`*`) and `self` items keep the path of their group.
fn expand_use(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let mut path = prefix.to_vec();
        path.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let mut depth = 0;
        let mut start = 0;
        for (k, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..k], &path, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &path, out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p, Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    full.extend(path.split("::").map(|s| s.trim().to_string()));
    let last = full.last().cloned().unwrap_or_default();
    if last == "*" {
        full.pop();
        out.push((full, None));
        return;
    }
    if last == "self" {
        full.pop();
    }
    let name = alias.or_else(|| full.last().cloned());
    out.push((full, name));
}

/// Turns a path as written in `module` (starting with `crate`, `$crate`,
/// `super` or `self`) into segments from the crate root; `None` for a
/// path that does not start there (an external crate, a local name).
fn absolute(module: &Module, path: &[String]) -> Option<Vec<String>> {
    let mut base = module.clone();
    let mut rest = path;
    match rest.first()?.as_str() {
        "crate" | "$crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

fn read(path: &Path, module: &Module) -> Source {
    let text = std::fs::read_to_string(path).unwrap();
    let code = strip_test_modules(&strip_comments(&text));
    let mut aliases = BTreeMap::new();
    let mut paths = Vec::new();
    // `use` declarations, then inline paths in what remains.
    let mut rest = String::new();
    let mut i = 0;
    while let Some(k) = code[i..].find("use ") {
        let at = i + k;
        let before = code[..at].chars().next_back();
        if before.is_some_and(is_ident) {
            rest.push_str(&code[i..at + 4]);
            i = at + 4;
            continue;
        }
        let end = at + code[at..].find(';').unwrap();
        rest.push_str(&code[i..at]);
        let mut items = Vec::new();
        expand_use(&code[at + 4..end], &[], &mut items);
        for (full, name) in items {
            if let Some(abs) = absolute(module, &full) {
                if let Some(name) = name {
                    aliases.insert(name, abs.clone());
                }
                paths.push((abs, full.join("::")));
            }
        }
        i = end + 1;
    }
    rest.push_str(&code[i..]);
    let chars: Vec<char> = rest.chars().collect();
    let mut k = 0;
    while k < chars.len() {
        let starts = ["$crate::", "crate::", "super::", "self::"]
            .iter()
            .find(|p| chars[k..].starts_with(&p.chars().collect::<Vec<_>>()));
        let boundary = k == 0 || !(is_ident(chars[k - 1]) || chars[k - 1] == ':');
        match starts {
            Some(_) if boundary => {
                let mut end = k;
                while end < chars.len()
                    && (is_ident(chars[end]) || chars[end] == ':' || chars[end] == '$')
                {
                    end += 1;
                }
                let written: String = chars[k..end].iter().collect();
                let segments: Vec<String> = written
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                if let Some(abs) = absolute(module, &segments) {
                    paths.push((abs, written));
                }
                k = end;
            }
            _ => k += 1,
        }
    }
    Source {
        file: path.strip_prefix(root()).unwrap().display().to_string(),
        aliases,
        paths,
    }
}

/// The module a path leads into: its longest prefix that is a module,
/// followed through that module's `use` aliases (re-exports) to where the
/// name is defined.
fn target(path: &[String], sources: &BTreeMap<Module, Source>, depth: usize) -> Module {
    let mut len = path.len();
    while len > 0 && !sources.contains_key(&path[..len]) {
        len -= 1;
    }
    let module = path[..len].to_vec();
    if depth < 8 {
        if let Some(name) = path.get(len) {
            if let Some(alias) = sources[&module].aliases.get(name) {
                let mut next = alias.clone();
                next.extend(path[len + 1..].iter().cloned());
                if next != path {
                    return target(&next, sources, depth + 1);
                }
            }
        }
    }
    module
}

/// Every edge between sibling modules of the crate whose sources are in
/// `src`: (from, to) -> evidence.
fn edges(src: &Path) -> BTreeMap<(Module, Module), BTreeSet<String>> {
    let mut list = Vec::new();
    files(src, &Vec::new(), &mut list);
    let sources: BTreeMap<Module, Source> =
        list.iter().map(|(p, m)| (m.clone(), read(p, m))).collect();
    let mut edges: BTreeMap<(Module, Module), BTreeSet<String>> = BTreeMap::new();
    for (from, source) in &sources {
        for (path, written) in &source.paths {
            let to = target(path, &sources, 0);
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // the same module, or an ancestor and a descendant
            }
            let key = (from[..=common].to_vec(), to[..=common].to_vec());
            edges
                .entry(key)
                .or_default()
                .insert(format!("{} names {written}", source.file));
        }
    }
    edges
}

/// The pairs of modules of the crate in `src` that import each other,
/// with the evidence of both directions.
fn cycles(src: &Path) -> Vec<String> {
    let edges = edges(src);
    let mut cycles = Vec::new();
    for ((a, b), why) in &edges {
        if a < b {
            if let Some(back) = edges.get(&(b.clone(), a.clone())) {
                cycles.push(format!(
                    "{} <-> {}:\n  {}\n  {}",
                    a.join("::"),
                    b.join("::"),
                    why.iter().cloned().collect::<Vec<_>>().join("\n  "),
                    back.iter().cloned().collect::<Vec<_>>().join("\n  ")
                ));
            }
        }
    }
    cycles
}

#[test]
fn no_two_modules_import_each_other() {
    let cycles = cycles(&lib_src());
    assert!(
        cycles.is_empty(),
        "modules of src/ importing each other:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_two_modules_of_the_command_line_import_each_other() {
    let cycles = cycles(&cli_src());
    assert!(
        cycles.is_empty(),
        "modules of cli/src/ importing each other:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_checker_sees_imports() {
    // Known edges of the layering: if these vanish the parser is broken,
    // not the architecture fixed.
    let lib = edges(&lib_src());
    let edge = |a: &str, b: &str| {
        let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
        lib.contains_key(&(m(a), m(b)))
    };
    assert!(edge("loader", "dataset"));
    assert!(edge("dataset", "formats"));
    assert!(edge("model", "page"));
    assert!(edge("train", "loader"));
    assert!(!edge("dataset", "loader"));
    // Inside a module, and through a re-export (`crate::Page`).
    assert!(edge("dataset::reader", "dataset::footer"));
    assert!(edge("loader", "page"));

    // The command line's: commands use the shared input and output
    // modules, never the other way round; the distributed trainer is part
    // of `train` (it uses train's parts, train calls it).
    let cli = edges(&cli_src());
    let edge = |a: &str, b: &str| {
        let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
        cli.contains_key(&(m(a), m(b)))
    };
    assert!(edge("train", "output"));
    assert!(edge("demo", "train"));
    assert!(edge("train::distributed", "train::checks"));
    assert!(!edge("output", "train"));
}
