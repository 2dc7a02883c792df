//! Misuse found after argument parsing: reported as usage errors (exit
//! code 2) before anything is written.

use std::path::Path;

use crate::Failure;

/// Whether `a` and `b` name the same existing file, however spelled
/// (`x`, `./x`, `dir/../x`, a hard or symbolic link): same device and
/// inode on Unix, same canonical path elsewhere.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
    }
}

/// Refuses to write `output` over `input` (the input would be replaced by
/// the file made from it).
pub fn output_is_not_input(input: &Path, output: &Path) -> Result<(), Failure> {
    if same_file(input, output) {
        return Err(Failure::usage(format!(
            "the output {} is the input {}: writing it would replace the input; \
             choose another -o",
            output.display(),
            input.display()
        )));
    }
    Ok(())
}
