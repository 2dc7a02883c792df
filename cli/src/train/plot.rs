//! `train --plot FILE.svg`: loss and accuracy (R^2 for linreg) per epoch,
//! one line per strategy, side by side, with a legend beside each chart;
//! with --eval or --holdout a second row draws the held-out figures, the
//! ones that compare strategies on label-sorted data (there a strategy
//! that does not shuffle meets one label at a time, so its running
//! training figures look better than any other's while its model is
//! worse).

use std::error::Error;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use tocpile::train::EpochReport;

use super::Run;

const SIZE: (u32, u32) = (720, 420);
const LEGEND: u32 = 110;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

const COLORS: [RGBColor; 7] = [
    RGBColor(0, 90, 0),
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
];

pub fn draw(path: &Path, runs: &[Run], metric: &str) -> Result<(), Box<dyn Error>> {
    // Drawn in memory, then written atomically (through a link, to a
    // FIFO or a device as well): a failed plot never leaves half a file.
    let mut svg = String::new();
    let held_out = runs
        .iter()
        .flat_map(|r| &r.reports)
        .any(|r| r.eval.is_some());
    let rows = if held_out { 2 } else { 1 };
    {
        let root =
            SVGBackend::with_string(&mut svg, (2 * SIZE.0, rows * SIZE.1)).into_drawing_area();
        root.fill(&WHITE)?;
        let areas = root.split_evenly((rows as usize, 2));
        chart(&areas[0], "training loss per epoch", "loss", runs, |r| {
            r.train.loss
        })?;
        chart(
            &areas[1],
            &format!("training {metric} per epoch"),
            metric,
            runs,
            |r| r.train.accuracy,
        )?;
        if held_out {
            let eval = |r: &EpochReport, pick: fn(&tocpile::train::Score) -> f64| {
                r.eval.as_ref().map_or(f64::NAN, pick)
            };
            chart(&areas[2], "held-out loss per epoch", "loss", runs, |r| {
                eval(r, |s| s.loss)
            })?;
            chart(
                &areas[3],
                &format!("held-out {metric} per epoch"),
                metric,
                runs,
                |r| eval(r, |s| s.accuracy),
            )?;
        }
        root.present()?;
    }
    crate::output::write_file(path, svg.as_bytes())?;
    Ok(())
}

fn chart(
    area: &Area<'_>,
    caption: &str,
    y_desc: &str,
    runs: &[Run],
    value: impl Fn(&EpochReport) -> f64,
) -> Result<(), Box<dyn Error>> {
    let points = |run: &Run| -> Vec<(f64, f64)> {
        run.reports
            .iter()
            .map(|r| (r.epoch as f64, value(r)))
            .filter(|(_, y)| y.is_finite())
            .collect()
    };
    let (lo, hi) = runs
        .iter()
        .flat_map(points)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, y)| {
            (lo.min(y), hi.max(y))
        });
    if !lo.is_finite() {
        area.titled(&format!("{caption}: nothing measured"), ("sans-serif", 16))?;
        return Ok(());
    }
    let pad = ((hi - lo) * 0.08).max(1e-6);
    let epochs = runs.iter().map(|r| r.reports.len()).max().unwrap_or(1);
    let (plot_area, legend_area) = area.split_horizontally(SIZE.0 - LEGEND);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.3..(epochs as f64 - 0.7).max(0.3), (lo - pad)..(hi + pad))?;
    chart
        .configure_mesh()
        .x_labels(epochs.min(20) + 1)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-9 && *x >= 0.0 {
                format!("{}", x.round())
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.3}"))
        .x_desc("epoch")
        .y_desc(y_desc)
        .draw()?;
    for (i, run) in runs.iter().enumerate() {
        let style = ShapeStyle::from(COLORS[i % COLORS.len()]).stroke_width(2);
        let series = points(run);
        chart.draw_series(LineSeries::new(series.iter().copied(), style))?;
        chart.draw_series(series.iter().map(|&p| Circle::new(p, 3, style.filled())))?;
        let y = 50 + 22 * i as i32;
        legend_area.draw(&PathElement::new(vec![(4, y), (28, y)], style))?;
        legend_area.draw(&Text::new(
            run.strategy.name(),
            (34, y - 7),
            ("sans-serif", 14).into_font(),
        ))?;
    }
    Ok(())
}
