//! [`Dataset::verify`]: a full read of a dataset file that also checks the
//! footer's totals against the pages. The footer is checksummed, but a
//! checksum only proves that the footer is the one written, not that its
//! writer told the truth: the totals size buffers (a shuffle's buckets,
//! progress bars), so a checked file is one whose totals are the pages'.

use super::block::Block;
use super::source::Source;
use super::Dataset;
use crate::error::{Error, Result};

impl<S: Source> Dataset<S> {
    /// Reads every block (checksum), checks every page (all the validity
    /// rules and the resource limits, a block's pages together within
    /// [`Limits::max_decode_nnz`](crate::limits::Limits::max_decode_nnz)
    /// as every reader of a block needs them), and checks that the rows, pages,
    /// non-zeros and payload bytes of the pages are the footer's totals.
    /// `progress` sees each block once it is checked.
    ///
    /// # Errors
    /// The first block or page error; [`Error::InFile`] naming the footer
    /// with an [`Error::LengthMismatch`] for a total the pages disagree
    /// with.
    pub fn verify(&self, mut progress: impl FnMut(&Block)) -> Result<()> {
        let (mut rows, mut pages, mut nnz, mut payload) = (0u64, 0u64, 0u64, 0u64);
        for b in 0..self.n_blocks() {
            let block = self.read_block(b)?;
            // The loader's check (every rule, without building the trees
            // nothing here uses), with its bound on what a block's pages
            // decode to: a file verified is one the loader reads.
            nnz += block.validated_nnz()?;
            rows += block.n_rows() as u64;
            pages += block.n_pages() as u64;
            payload += block.payload_bytes();
            progress(&block);
        }
        self.check_totals(rows, nnz)?;
        let info = self.info();
        self.check_footer(&[
            ("footer pages (the blocks hold)", info.n_pages, pages),
            (
                "footer payload bytes (the pages hold)",
                info.payload_bytes,
                payload,
            ),
        ])
    }

    /// Checks the footer's row and non-zero totals against `rows` and
    /// `nnz` counted by a reader of every page.
    ///
    /// # Errors
    /// [`Error::InFile`] naming the footer, with an
    /// [`Error::LengthMismatch`].
    pub fn check_totals(&self, rows: u64, nnz: u64) -> Result<()> {
        let info = self.info();
        self.check_footer(&[
            ("footer rows (the pages hold)", info.n_rows, rows),
            ("footer non-zeros (the pages decode to)", info.nnz, nnz),
        ])
    }

    fn check_footer(&self, totals: &[(&'static str, u64, u64)]) -> Result<()> {
        let footer_at = 8
            + (0..self.n_blocks())
                .map(|b| self.block_bytes(b))
                .sum::<u64>();
        for &(what, expected, found) in totals {
            if expected != found {
                return Err(Error::InFile {
                    path: self.path().display().to_string(),
                    section: "footer".into(),
                    offset: footer_at,
                    error: Box::new(Error::LengthMismatch {
                        what,
                        expected,
                        found,
                    }),
                });
            }
        }
        Ok(())
    }
}
