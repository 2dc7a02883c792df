//! The atomic writer given what may be at a path (issue 23, 3): a
//! symbolic link is written through (the link stays a link), a dangling
//! one creates the file it names, a FIFO and a character device are
//! streamed to and never replaced, a directory is refused.
#![cfg(unix)]

use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use tocpile::model::{Model, ModelKind};

fn dir(name: &str) -> PathBuf {
    let dir = crate::support::temp_path(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted (temporaries included).
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn sh(script: &str) -> bool {
    Command::new("sh")
        .args(["-c", script])
        .status()
        .unwrap()
        .success()
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let dir = dir("symlink");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::fs::write(dir.join("real/model.bin"), b"old").unwrap();
    symlink("real/model.bin", dir.join("link.bin")).unwrap();
    let model = Model::new(ModelKind::Logistic, 3, 0).unwrap();
    model.save(dir.join("link.bin")).unwrap();
    assert!(std::fs::symlink_metadata(dir.join("link.bin"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read(dir.join("real/model.bin")).unwrap(),
        model.to_bytes()
    );
    // The temporary went to the target's directory, and is gone.
    assert_eq!(names(&dir.join("real")), ["model.bin"]);
    assert_eq!(names(&dir), ["link.bin", "real"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_dangling_symlink_creates_the_file_it_names() {
    let dir = dir("dangling");
    std::fs::create_dir(dir.join("sub")).unwrap();
    symlink("sub/new.bin", dir.join("link.bin")).unwrap();
    // A chain: a link to the dangling link.
    symlink("link.bin", dir.join("chain.bin")).unwrap();
    tocpile::atomic::write(dir.join("chain.bin"), b"through two links").unwrap();
    assert_eq!(
        std::fs::read(dir.join("sub/new.bin")).unwrap(),
        b"through two links"
    );
    for link in ["link.bin", "chain.bin"] {
        let meta = std::fs::symlink_metadata(dir.join(link)).unwrap();
        assert!(meta.file_type().is_symlink(), "{link}");
    }
    assert_eq!(names(&dir.join("sub")), ["new.bin"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fifo_is_streamed_to_never_replaced() {
    let dir = dir("fifo");
    let fifo = dir.join("pipe");
    assert!(sh(&format!("mkfifo '{}'", fifo.display())));
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    tocpile::atomic::write(&fifo, &bytes).unwrap();
    assert!(reader.join().unwrap() == bytes);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(names(&dir), ["pipe"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `/dev/null` as root would be replaced by a regular file if the writer
/// regressed: as root (who may create device nodes) the test writes to a
/// node of its own with /dev/null's numbers; otherwise to /dev/null,
/// whose directory such a user cannot write.
#[test]
fn dev_null_is_streamed_to_never_replaced() {
    let dir = dir("devnull");
    let own = dir.join("null");
    let null = if sh(&format!("mknod '{}' c 1 3 2>/dev/null", own.display())) {
        own
    } else {
        PathBuf::from("/dev/null")
    };
    let model = Model::new(ModelKind::Logistic, 3, 0).unwrap();
    model.save(&null).unwrap();
    tocpile::atomic::write(&null, b"nothing").unwrap();
    tocpile::atomic::check_writable(&null).unwrap();
    let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(kind.is_char_device(), "{}", null.display());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_is_refused_naming_it() {
    let dir = dir("a-directory");
    let e = tocpile::atomic::write(&dir, b"x").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: cannot write here: it is a directory", dir.display())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
