//! Builder-style setters for the option structs. The structs are
//! `#[non_exhaustive]` so that a field can be added in a minor release;
//! outside the crate they are made from `default()` and these setters:
//!
//! ```
//! use tocpile::loader::{LoaderOptions, Strategy};
//!
//! let options = LoaderOptions::default()
//!     .with_strategy(Strategy::CorgiPile)
//!     .with_batch_rows(100)
//!     .with_seed(7);
//! assert_eq!(options.batch_rows, 100);
//! ```

/// `impl $ty { pub fn $with(self, value: $t) -> Self }` for each field.
macro_rules! with_setters {
    ($ty:path { $($with:ident => $field:ident : $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!(
                    "Sets [`", stringify!($field), "`](Self::", stringify!($field),
                    ") and returns the options (builder style)."
                )]
                #[must_use]
                pub fn $with(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

// `TrainOptions::with_optimizer` (src/train.rs) also sets the rule's
// default learning rate: set the rate after it.
with_setters!(crate::train::TrainOptions {
    with_epochs => epochs: usize,
    with_learning_rate => learning_rate: f64,
    with_decay => decay: f64,
    with_l2 => l2: f64,
    with_split_gradient => split_gradient: bool,
    with_average => average: crate::train::Average,
    with_scale => scale: crate::train::Scale,
});

with_setters!(crate::loader::LoaderOptions {
    with_strategy => strategy: crate::loader::Strategy,
    with_mode => mode: crate::loader::Mode,
    with_batch_rows => batch_rows: usize,
    with_buffer => buffer: crate::loader::Buffer,
    with_seed => seed: u64,
    with_worker => worker: usize,
    with_workers => workers: usize,
    with_double_buffer => double_buffer: bool,
    with_read_ahead => read_ahead: usize,
    with_trace => trace: bool,
    with_format => format: Option<crate::formats::FormatKind>,
    with_scratch_dir => scratch_dir: Option<std::path::PathBuf>,
    with_rows => rows: crate::loader::RowForm,
});

impl crate::loader::LoaderOptions {
    /// Sets [`memory`](Self::memory) to `bytes` (instead of the automatic
    /// budget) and returns the options (builder style).
    #[must_use]
    pub fn with_memory(mut self, bytes: usize) -> Self {
        self.memory = Some(bytes);
        self
    }
}

with_setters!(crate::codec::EncodeOptions {
    with_level => level: crate::codec::Level,
    with_packing => packing: crate::codec::Packing,
    with_int_dictionary => int_dictionary: bool,
    with_adaptive => adaptive: crate::codec::Adaptive,
});

with_setters!(crate::dataset::WriterOptions {
    with_page_rows => page_rows: usize,
    with_block_bytes => block_bytes: usize,
    with_format => format: crate::formats::FormatKind,
    with_schema => schema: String,
    with_segment_rows => segment_rows: usize,
});

with_setters!(crate::ingest::libsvm::LibsvmOptions {
    with_n_cols => n_cols: Option<usize>,
    with_zero_based => zero_based: bool,
});

with_setters!(crate::ingest::csv::CsvOptions {
    with_label => label: String,
    with_delimiter => delimiter: u8,
    with_schema => schema: Option<crate::ingest::csv::Schema>,
    with_missing_markers => missing_markers: Vec<String>,
    with_missing_indicators => missing_indicators: bool,
});
