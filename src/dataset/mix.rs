//! How mixed the labels of a file's pages are: the statistic the loader's
//! [`Mode::Auto`](crate::loader::Mode::Auto) reads to decide whether
//! shuffling whole pages is as good as shuffling rows.
//!
//! CorgiPile shuffles tuples inside its buffer (paper Algorithm 1);
//! shuffling whole pages instead (the paper's block-only variant at page
//! granularity, section 7.4.4) keeps each page's rows together, so a
//! mini-batch of five pages of label-sorted data holds at most five
//! labels' worth of rows. That is harmless exactly when a page's rows are
//! already as mixed as random rows would be. The writer measures it as
//! the ratio of the between-page variance of the label to what random
//! pages would show:
//!
//! ```text
//! ratio = [ sum_p n_p (mean_p - mean)^2 / (P - 1) ] / variance
//! ```
//!
//! For classification labels (at most [`MAX_CLASSES`] distinct values)
//! the label is taken as one indicator per class and the numerator and
//! denominator summed over the classes (a chi-square statistic of page
//! against class, over its degrees of freedom); otherwise the label's
//! value is used. Rows in random order give a ratio near 1 (its standard
//! deviation is about `sqrt(2 / (P - 1))`); pages of one label each give
//! about the page size. Measured on the shared datasets with 50-row
//! pages: flights3m in its time order 4.8, census 2.0, mushrooms 27,
//! nycflights13 12, coil2000 0.93, flights3m shuffled 1.00.
//!
//! ```text
//! section = "LMIX" version(1) pages:varint ratio:f64le
//! ```

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::wire::{write_varint, Reader};

/// Label values beyond this many distinct ones are treated as numbers,
/// not classes.
pub const MAX_CLASSES: usize = 256;

/// What the footer says about the mixing of labels across pages.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LabelMix {
    /// Pages the statistic was measured on.
    pub pages: u64,
    /// Between-page variance of the label over what random pages would
    /// show (see the module docs): about 1 when pages are as mixed as
    /// random rows, up to the page size when each page holds one label.
    pub ratio: f64,
}

impl LabelMix {
    /// The footer section's first bytes.
    pub(crate) const SECTION_MAGIC: &'static [u8] = b"LMIX";
    const VERSION: u8 = 1;

    /// Whether pages are as mixed as random rows: the ratio within
    /// `slack` of 1 plus three standard deviations of a random file's.
    pub fn pages_mixed(&self, slack: f64) -> bool {
        let spread = (2.0 / (self.pages.max(2) - 1) as f64).sqrt();
        self.ratio <= 1.0 + slack + 3.0 * spread
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(Self::SECTION_MAGIC);
        out.push(Self::VERSION);
        write_varint(out, self.pages);
        out.extend_from_slice(&self.ratio.to_le_bytes());
    }

    /// Reads the section (its magic already seen) of a file of `n_pages`
    /// pages and `n_rows` rows (the footer's): at least 2 and at most
    /// `n_pages` pages, and a ratio from 0 to `(n_rows - 1) / (pages -
    /// 1)`, the most it can be (the between-page sum of squares is at
    /// most the total's).
    pub(crate) fn read(r: &mut Reader<'_>, n_pages: u64, n_rows: u64) -> Result<LabelMix> {
        r.magic(b"LMIX")?;
        let at = r.offset();
        let version = r.u8("label mix version")?;
        if version != Self::VERSION {
            return Err(Error::FieldOutOfRange {
                what: "label mix version",
                offset: at,
                value: version.into(),
                max: Self::VERSION.into(),
            });
        }
        let pages_at = r.offset();
        let pages = r.varint_max("label mix pages (at most the file's pages)", n_pages)?;
        if pages < 2 {
            return Err(Error::FieldBelowMinimum {
                what: "label mix pages",
                offset: pages_at,
                value: pages,
                min: 2,
            });
        }
        let ratio_at = r.offset();
        let ratio = f64::from_le_bytes(r.bytes(8, "label mix ratio")?.try_into().expect("8 bytes"));
        // With a little slack for rounding in the writer's sums.
        let most = n_rows.saturating_sub(1) as f64 / (pages - 1) as f64 * (1.0 + 1e-9);
        if !(ratio.is_finite() && (0.0..=most).contains(&ratio)) {
            return Err(Error::InvalidNumber {
                what: format!("the label mix ratio at byte {ratio_at}"),
                value: ratio,
                expected: "a finite number from 0 to (rows - 1) / (pages - 1)",
            });
        }
        Ok(LabelMix { pages, ratio })
    }
}

/// Accumulates the statistic page by page, in one pass.
#[derive(Debug, Default)]
pub(crate) struct MixStats {
    rows: u64,
    pages: u64,
    /// Sums over rows of the label and its square, and over pages of
    /// (page sum)^2 / page rows.
    sum: f64,
    sum_sq: f64,
    between: f64,
    /// Per class (label bits): rows, and over pages (page count)^2 /
    /// page rows. `None` once there are more than `MAX_CLASSES`.
    classes: Option<HashMap<u64, (u64, f64)>>,
    page_counts: HashMap<u64, u64>,
}

impl MixStats {
    pub(crate) fn new() -> MixStats {
        MixStats {
            classes: Some(HashMap::new()),
            ..MixStats::default()
        }
    }

    /// Adds one page's labels.
    pub(crate) fn add_page(&mut self, labels: &[f64]) {
        if labels.is_empty() {
            return;
        }
        let n = labels.len() as f64;
        let page_sum: f64 = labels.iter().sum();
        self.rows += labels.len() as u64;
        self.pages += 1;
        self.sum += page_sum;
        self.sum_sq += labels.iter().map(|y| y * y).sum::<f64>();
        self.between += page_sum * page_sum / n;
        if let Some(classes) = &mut self.classes {
            self.page_counts.clear();
            for y in labels {
                *self.page_counts.entry(y.to_bits()).or_default() += 1;
            }
            for (&bits, &count) in &self.page_counts {
                let entry = classes.entry(bits).or_default();
                entry.0 += count;
                entry.1 += (count * count) as f64 / n;
            }
            if classes.len() > MAX_CLASSES {
                self.classes = None;
            }
        }
    }

    /// The statistic, or `None` when it says nothing: fewer than two
    /// pages, labels that do not vary, or labels that are not finite.
    pub(crate) fn finish(&self) -> Option<LabelMix> {
        if self.pages < 2 || self.rows < 3 {
            return None;
        }
        let (rows, pages) = (self.rows as f64, self.pages as f64);
        let (between, total) = match &self.classes {
            Some(classes) => {
                // Summed in the order of the labels' bits, not the map's
                // (which changes from run to run): the same rows give the
                // same footer, bit for bit.
                let mut sums: Vec<(u64, (u64, f64))> =
                    classes.iter().map(|(&k, &v)| (k, v)).collect();
                sums.sort_unstable_by_key(|&(k, _)| k);
                sums.iter().fold((0.0, 0.0), |(b, t), &(_, (c, sq))| {
                    let c = c as f64;
                    (b + sq - c * c / rows, t + c - c * c / rows)
                })
            }
            None => {
                let mean_sq = self.sum * self.sum / rows;
                (self.between - mean_sq, self.sum_sq - mean_sq)
            }
        };
        let ratio = (between / (pages - 1.0)) / (total / (rows - 1.0));
        (ratio.is_finite() && total > 0.0).then_some(LabelMix {
            pages: self.pages,
            ratio: ratio.max(0.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn ratio(labels: &[f64], page: usize) -> f64 {
        let mut stats = MixStats::new();
        for chunk in labels.chunks(page) {
            stats.add_page(chunk);
        }
        stats.finish().unwrap().ratio
    }

    /// The classes' sums are added in one fixed order: the same labels
    /// give the same bits whatever order the map (seeded afresh for each
    /// writer) keeps them in. The footer, and so the whole file, is then
    /// the same every run (the version-8 golden test compares bytes).
    #[test]
    fn writers_output_is_the_same_every_run() {
        let mut rng = Rng::new(5);
        let labels: Vec<f64> = (0..3000).map(|_| (rng.below(60) as f64) * 0.37).collect();
        let first = ratio(&labels, 7).to_bits();
        for _ in 0..30 {
            assert_eq!(ratio(&labels, 7).to_bits(), first);
        }
    }

    #[test]
    fn random_pages_give_about_one_and_sorted_pages_about_the_page_size() {
        let mut rng = Rng::new(3);
        let mut labels: Vec<f64> = (0..50_000).map(|_| rng.below(3) as f64).collect();
        let random = ratio(&labels, 50);
        assert!((random - 1.0).abs() < 0.1, "{random}");
        labels.sort_by(f64::total_cmp);
        let sorted = ratio(&labels, 50);
        assert!(sorted > 45.0, "{sorted}");
        // Numbers, not classes: the same on values with many levels.
        let mut values: Vec<f64> = (0..50_000).map(|_| rng.unit() * 100.0).collect();
        let random = ratio(&values, 50);
        assert!((random - 1.0).abs() < 0.1, "{random}");
        values.sort_by(f64::total_cmp);
        assert!(ratio(&values, 50) > 45.0);
    }

    #[test]
    fn constant_labels_and_one_page_say_nothing() {
        let mut stats = MixStats::new();
        stats.add_page(&[1.0; 50]);
        stats.add_page(&[1.0; 50]);
        assert_eq!(stats.finish(), None);
        let mut one = MixStats::new();
        one.add_page(&[0.0, 1.0, 0.0]);
        assert_eq!(one.finish(), None);
    }

    #[test]
    fn the_section_round_trips_and_rejects_a_bad_ratio() {
        let mix = LabelMix {
            pages: 1234,
            ratio: 4.5,
        };
        let mut out = Vec::new();
        mix.write(&mut out);
        let read = |out: &[u8], pages, rows| LabelMix::read(&mut Reader::new(out), pages, rows);
        assert_eq!(read(&out, 1234, 1 << 20).unwrap(), mix);
        // More pages than the file, or a ratio above (rows - 1) / (pages - 1).
        assert!(read(&out, 1233, 1 << 20).is_err());
        assert!(read(&out, 1234, 4000).is_err());
        let last = out.len() - 1;
        out[last] = 0xff; // a NaN
        assert!(read(&out, 1234, 1 << 20).is_err());
    }

    /// The bound readers check is the most the writer can measure: one
    /// label a page, every page full, is (rows - 1) / (pages - 1).
    #[test]
    fn one_label_a_page_reaches_the_bound_the_readers_check() {
        for (rows, page) in [(100usize, 50usize), (1000, 10), (12, 3), (5000, 1)] {
            let labels: Vec<f64> = (0..rows).map(|i| (i / page % 2) as f64).collect();
            let mix = {
                let mut stats = MixStats::new();
                labels.chunks(page).for_each(|c| stats.add_page(c));
                stats.finish().unwrap()
            };
            let most = (rows - 1) as f64 / (mix.pages - 1) as f64;
            assert!(mix.ratio <= most * (1.0 + 1e-9), "{rows} {page}: {mix:?}");
            assert!(mix.ratio > 0.99 * most, "{rows} {page}: {mix:?}");
            let mut out = Vec::new();
            mix.write(&mut out);
            let pages = rows.div_ceil(page) as u64;
            LabelMix::read(&mut Reader::new(&out), pages, rows as u64).unwrap();
        }
    }
}
