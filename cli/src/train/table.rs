//! The Markdown table `tocpile train` prints, a row per epoch as it
//! finishes (also used by `tocpile demo`).

use tocpile::loader::Strategy;
use tocpile::train::EpochReport;

/// What a training table shows besides the figures.
pub struct Table {
    /// "accuracy", or "R^2" for regression.
    pub metric: &'static str,
    /// Whether the eval columns are shown.
    pub eval: bool,
    /// Whether the strategy column is shown.
    pub strategy: bool,
}

impl Table {
    /// The header and separator lines.
    pub fn header(&self) -> String {
        let mut head = String::from("|");
        let mut rule = String::from("|");
        if self.strategy {
            head.push_str(" strategy |");
            rule.push_str("---|");
        }
        head.push_str(&format!(
            " epoch | loss | {} | seconds | wait share |",
            self.metric
        ));
        rule.push_str("---:|---:|---:|---:|---:|");
        if self.eval {
            head.push_str(&format!(" eval loss | eval {} |", self.metric));
            rule.push_str("---:|---:|");
        }
        format!("{head}\n{rule}\n")
    }

    /// One epoch's line.
    pub fn row(&self, strategy: Strategy, r: &EpochReport) -> String {
        let mut line = String::from("|");
        if self.strategy {
            line.push_str(&format!(" {strategy} |"));
        }
        let share = if r.seconds > 0.0 {
            r.wait_seconds / r.seconds
        } else {
            0.0
        };
        line.push_str(&format!(
            " {} | {:.4} | {:.4} | {:.3} | {:.0}% |",
            r.epoch,
            r.train.loss,
            r.train.accuracy,
            r.seconds,
            100.0 * share
        ));
        if let Some(e) = r.eval {
            line.push_str(&format!(" {:.4} | {:.4} |", e.loss, e.accuracy));
        } else if self.eval {
            line.push_str(" - | - |");
        }
        line.push('\n');
        line
    }
}
