//! `ratio --plot FILE.svg`: per input, the ratio of every format against
//! the batch size (Figures 5 and 6) and against the share of the rows in
//! one batch (Figure 7), ratios on a log scale, with a legend beside each
//! chart.

use std::error::Error;
use std::path::Path;

use crate::measure::ratios::RatioRow;
use plotters::coord::Shift;
use plotters::prelude::*;
use tocpile::formats::FormatKind;

use super::DatasetRatios;

/// One chart with its legend, and the legend's width.
const SIZE: (u32, u32) = (720, 420);
const LEGEND: u32 = 130;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A line colour per format: the TOC levels in greens, TOC_FULL darkest.
fn color(format: FormatKind) -> RGBColor {
    match format {
        FormatKind::Den => RGBColor(0, 0, 0),
        FormatKind::Csr => RGBColor(31, 119, 180),
        FormatKind::Cvi => RGBColor(23, 190, 207),
        FormatKind::Dvi => RGBColor(148, 103, 189),
        FormatKind::Snappy => RGBColor(255, 127, 14),
        FormatKind::Gzip => RGBColor(214, 39, 40),
        FormatKind::Lz4 => RGBColor(188, 189, 34),
        FormatKind::TocSparse => RGBColor(152, 223, 138),
        FormatKind::TocLogical => RGBColor(44, 160, 44),
        FormatKind::TocFull => RGBColor(0, 90, 0),
    }
}

pub fn draw(path: &Path, results: &[DatasetRatios]) -> Result<(), Box<dyn Error>> {
    let n = results.len() as u32;
    // Drawn in memory, then written atomically (through a link, to a
    // FIFO or a device as well): a failed plot never leaves half a file.
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (2 * SIZE.0, n * SIZE.1)).into_drawing_area();
        root.fill(&WHITE)?;
        let areas = root.split_evenly((results.len(), 2));
        for (r, pair) in results.iter().zip(areas.chunks(2)) {
            let name = Path::new(&r.path)
                .file_name()
                .map_or(r.path.clone(), |n| n.to_string_lossy().into_owned());
            let fixed: Vec<(String, &RatioRow)> = r
                .batches
                .iter()
                .map(|b| (b.batch_rows.to_string(), b))
                .collect();
            chart(
                &pair[0],
                &format!("{name}: ratio vs DEN by batch size"),
                "rows per batch",
                &fixed,
            )?;
            let large: Vec<(String, &RatioRow)> =
                r.large.iter().map(|(s, b)| (format!("{s}%"), b)).collect();
            chart(
                &pair[1],
                &format!("{name}: large batches"),
                "batch size, % of the rows",
                &large,
            )?;
        }
        root.present()?;
    }
    crate::output::write_file(path, svg.as_bytes())?;
    Ok(())
}

/// One chart: a line per format through the ratios of `points`, placed
/// evenly on the x axis under their labels; the legend to the right.
fn chart(
    area: &Area<'_>,
    caption: &str,
    x_desc: &str,
    points: &[(String, &RatioRow)],
) -> Result<(), Box<dyn Error>> {
    let (lo, hi) = points
        .iter()
        .flat_map(|(_, row)| row.cells.iter().filter_map(|c| c.ratio_vs_den))
        .fold((f64::INFINITY, 0f64), |(lo, hi), r| (lo.min(r), hi.max(r)));
    if !lo.is_finite() || hi <= 0.0 {
        area.titled(&format!("{caption}: nothing measured"), ("sans-serif", 16))?;
        return Ok(());
    }
    let (plot_area, legend_area) = area.split_horizontally(SIZE.0 - LEGEND);
    let n = points.len();
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(
            -0.5..n as f64 - 0.5,
            ((lo / 1.5).max(1e-3)..hi * 1.5).log_scale(),
        )?;
    let label_of = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < n {
            points[i as usize].0.clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels(n + 1)
        .x_label_formatter(&label_of)
        .disable_x_mesh()
        .y_label_formatter(&|y| format!("{y}"))
        .x_desc(x_desc)
        .y_desc("ratio vs DEN (log scale)")
        .draw()?;
    let mut shown = Vec::new();
    for format in FormatKind::ALL {
        let series: Vec<(f64, f64)> = points
            .iter()
            .enumerate()
            .filter_map(|(i, (_, row))| row.get(format)?.ratio_vs_den.map(|r| (i as f64, r)))
            .collect();
        if series.is_empty() {
            continue;
        }
        let width = if format == FormatKind::TocFull { 3 } else { 2 };
        let style = ShapeStyle::from(color(format)).stroke_width(width);
        chart.draw_series(LineSeries::new(series.iter().copied(), style))?;
        chart.draw_series(series.iter().map(|&p| Circle::new(p, 3, style.filled())))?;
        shown.push((format, style));
    }
    for (i, (format, style)) in shown.iter().enumerate() {
        let y = 50 + 22 * i as i32;
        legend_area.draw(&PathElement::new(vec![(4, y), (28, y)], *style))?;
        legend_area.draw(&Text::new(
            format.name(),
            (34, y - 7),
            ("sans-serif", 14).into_font(),
        ))?;
    }
    Ok(())
}
