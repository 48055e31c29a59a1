//! Plots of an experiment, as SVG and PNG (plotters): grouped bars, one group
//! per parameter point and one bar per scheduler, for mean JCT, slowdown
//! against the first scheduler, data-remote tasks and makespan, the way the
//! papers plot them (DynDL Fig 10-11: JCT and remote tasks per block size;
//! Guo Fig 8: slowdown per randomness).
//!
//! Text needs a TrueType font; DejaVu Sans is looked up in the usual places
//! (Debian: fonts-dejavu-core, which `.ci/run` installs). Without one, plots
//! are skipped with a message and the tables stay complete.

use super::output::{cells, Cell, RunRecord};
use super::spec::{NamedScheduler, Point};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers a system font as plotters' "sans-serif" once; Err names what was tried.
fn font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(());
                }
            }
        }
        Err(format!(
            "no TrueType font found (tried {}); install fonts-dejavu-core",
            FONT_PATHS.join(", ")
        ))
    })
    .clone()
}

struct Metric {
    file: &'static str,
    title: &'static str,
    y: &'static str,
    value: fn(&Cell, f64) -> f64,
}

const METRICS: &[Metric] = &[
    Metric {
        file: "mean_jct",
        title: "Mean job completion time",
        y: "mean JCT (s)",
        value: |c, _| c.mean_jct_s,
    },
    Metric {
        file: "slowdown",
        title: "Slowdown against the first scheduler",
        y: "mean JCT / baseline",
        value: |c, base| c.mean_jct_s / base,
    },
    Metric {
        file: "remote_tasks",
        title: "Data-remote tasks",
        y: "data-remote tasks",
        value: |c, _| c.data_remote,
    },
    Metric {
        file: "makespan",
        title: "Makespan",
        y: "makespan (s)",
        value: |c, _| c.makespan_s,
    },
    Metric {
        file: "flowtime",
        title: "Total flowtime (sum of job completion times)",
        y: "flowtime (s)",
        value: |c, _| c.total_jct_s,
    },
    Metric {
        file: "locality",
        title: "Map locality",
        y: "data-local maps (%)",
        value: |c, _| c.locality_pct,
    },
    Metric {
        file: "map_throughput",
        title: "Map machines' throughput",
        y: "MB/s",
        value: |c, _| c.map_tp,
    },
    Metric {
        file: "reduce_throughput",
        title: "Reduce machines' throughput",
        y: "MB/s",
        value: |c, _| c.reduce_tp,
    },
    Metric {
        file: "load_balance",
        title: "Load balance of the map machines (time sum of std dev, lower is better)",
        y: "MB x s",
        value: |c, _| c.load_balance,
    },
];

/// Writes `plots/<metric>.svg` and `.png`; a missing font only prints a note.
pub fn plot_all(
    out: &Path,
    schedulers: &[NamedScheduler],
    points: &[Point],
    runs: &[RunRecord],
) -> anyhow::Result<()> {
    if let Err(e) = font() {
        println!("plots skipped: {e}");
        return Ok(());
    }
    let dir = out.join("plots");
    std::fs::create_dir_all(&dir)?;
    let cells = cells(runs);
    for m in METRICS {
        let mut values: BTreeMap<(usize, usize), f64> = BTreeMap::new();
        for (i, p) in points.iter().enumerate() {
            let base = cells
                .get(&(p.label.clone(), schedulers[0].label.clone()))
                .map_or(f64::NAN, |c| c.mean_jct_s);
            for (j, s) in schedulers.iter().enumerate() {
                if let Some(c) = cells.get(&(p.label.clone(), s.label.clone())) {
                    let v = (m.value)(c, base);
                    if v.is_finite() {
                        values.insert((i, j), v);
                    }
                }
            }
        }
        if values.is_empty() {
            continue; // e.g. no reduces in an input-sink experiment
        }
        let groups: Vec<String> = points.iter().map(|p| p.label.clone()).collect();
        let series: Vec<String> = schedulers.iter().map(|s| s.label.clone()).collect();
        grouped_bars(&dir, m.file, m.title, m.y, &groups, &series, &values)?;
    }
    Ok(())
}

/// Writes `<dir>/<file>.svg` and `.png`: one group of bars per entry of
/// `groups`, one bar per entry of `series`; `values[(group, series)]`.
/// Needs the font ([`ensure_font`]).
pub fn grouped_bars(
    dir: &Path,
    file: &str,
    title: &str,
    y: &str,
    groups: &[String],
    series: &[String],
    values: &BTreeMap<(usize, usize), f64>,
) -> anyhow::Result<()> {
    let svg = dir.join(format!("{file}.svg"));
    draw(
        SVGBackend::new(&svg, (900, 520)).into_drawing_area(),
        (title, y),
        series,
        groups,
        values,
    )
    .map_err(|e| anyhow::anyhow!("plotting {}: {e}", svg.display()))?;
    let png = dir.join(format!("{file}.png"));
    draw(
        BitMapBackend::new(&png, (900, 520)).into_drawing_area(),
        (title, y),
        series,
        groups,
        values,
    )
    .map_err(|e| anyhow::anyhow!("plotting {}: {e}", png.display()))?;
    Ok(())
}

/// Registers the plot font; Err says what to install.
pub fn ensure_font() -> Result<(), String> {
    font()
}

fn draw<DB: DrawingBackend>(
    area: DrawingArea<DB, plotters::coord::Shift>,
    (title, y): (&str, &str),
    schedulers: &[String],
    points: &[String],
    values: &BTreeMap<(usize, usize), f64>,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let n = points.len().max(1) as f64;
    let ymax = values.values().cloned().fold(0.0, f64::max).max(1e-9) * 1.15;
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n, 0.0..ymax)?;
    let labels: Vec<String> = points.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * points.len() + 1)
        .x_label_formatter(&|x: &f64| {
            let i = x.floor();
            if (x - i - 0.5).abs() < 1e-6 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y)
        .label_style(("sans-serif", 14))
        .draw()?;
    let k = schedulers.len().max(1) as f64;
    let width = 0.8 / k;
    for (j, s) in schedulers.iter().enumerate() {
        let color = Palette99::pick(j).to_rgba();
        let bars: Vec<Rectangle<(f64, f64)>> = (0..points.len())
            .filter_map(|i| {
                let v = *values.get(&(i, j))?;
                let x0 = i as f64 + 0.1 + j as f64 * width;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + width * 0.9, v)],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(bars)?
            .label(s.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    area.present()?;
    Ok(())
}
