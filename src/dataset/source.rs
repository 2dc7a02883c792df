//! Where a dataset's bytes come from: a file, read with positional reads
//! (so threads can share it without seeking), or bytes in memory.

use std::fs::File;
use std::path::Path;

use crate::error::{Error, Result};

/// Where a dataset's bytes live: a file (positional reads) or memory.
pub trait Source: Send + Sync {
    /// Total bytes.
    fn size(&self) -> std::io::Result<u64>;
    /// Fills `buf` from byte `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
}

impl Source for File {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        read_exact_at(self, buf, offset)
    }
}

impl Source for Vec<u8> {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len() as u64);
        match end {
            Some(end) => {
                buf.copy_from_slice(&self[offset as usize..end as usize]);
                Ok(())
            }
            None => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

pub(super) fn read_at<S: Source>(
    source: &S,
    path: &Path,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    source
        .read_exact_at(&mut buf, offset)
        .map_err(|e| Error::io(path, e))?;
    Ok(buf)
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(mut file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}
