//! Plots of a results directory, as SVG and PNG (plotters): grouped bars,
//! one group per parameter point and one bar per scheduler or algorithm,
//! the way the papers plot them (DynDL Fig 10-11: JCT and remote tasks per
//! block size; Guo Fig 8: slowdown per randomness). The experiment runner
//! and the sweeps say which charts and what values.
//!
//! Text needs a TrueType font; DejaVu Sans is looked up in the usual places
//! (Debian: fonts-dejavu-core, which `.ci/run` installs). Without one, plots
//! are skipped with a message and the tables stay complete.

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
pub(crate) fn font() -> Result<(), String> {
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

/// One bar's height and, if several runs made it, their spread (min, max),
/// drawn as a whisker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub spread: Option<(f64, f64)>,
}

impl From<f64> for Bar {
    fn from(value: f64) -> Bar {
        Bar {
            value,
            spread: None,
        }
    }
}

/// One bar chart: `plots/<file>.svg` and `.png`.
#[derive(Clone, Copy, Debug)]
pub struct Chart {
    pub file: &'static str,
    pub title: &'static str,
    pub y: &'static str,
}

/// Writes one grouped bar chart per entry of `charts` into `<out>/plots/`:
/// one group per entry of `groups` (parameter points), one bar per entry of
/// `series` (schedulers or algorithms), heights `value(chart, group,
/// series)` (None or not finite: no bar; a chart without any bar is not
/// written), with a min-max whisker where the bar has a spread. Without a
/// font only a note is printed; the tables stay whole.
pub fn charts(
    out: &Path,
    groups: &[String],
    series: &[String],
    charts: &[Chart],
    value: impl Fn(usize, usize, usize) -> Option<Bar>,
) -> anyhow::Result<()> {
    if let Err(e) = font() {
        println!("plots skipped: {e}");
        return Ok(());
    }
    let dir = out.join("plots");
    std::fs::create_dir_all(&dir)?;
    for (c, chart) in charts.iter().enumerate() {
        let mut values: BTreeMap<(usize, usize), Bar> = BTreeMap::new();
        for g in 0..groups.len() {
            for s in 0..series.len() {
                if let Some(v) = value(c, g, s).filter(|v| v.value.is_finite()) {
                    values.insert((g, s), v);
                }
            }
        }
        if values.is_empty() {
            continue; // e.g. no reduces in an input-sink experiment
        }
        grouped_bars(
            &dir,
            chart.file,
            chart.title,
            chart.y,
            groups,
            series,
            &values,
        )?;
    }
    Ok(())
}

/// Writes `<dir>/<file>.svg` and `.png`: one group of bars per entry of
/// `groups`, one bar per entry of `series`; `values[(group, series)]`.
/// Needs the font.
fn grouped_bars(
    dir: &Path,
    file: &str,
    title: &str,
    y: &str,
    groups: &[String],
    series: &[String],
    values: &BTreeMap<(usize, usize), Bar>,
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

fn draw<DB: DrawingBackend>(
    area: DrawingArea<DB, plotters::coord::Shift>,
    (title, y): (&str, &str),
    schedulers: &[String],
    points: &[String],
    values: &BTreeMap<(usize, usize), Bar>,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let n = points.len().max(1) as f64;
    let ymax = values
        .values()
        .map(|b| b.spread.map_or(b.value, |(_, hi)| hi.max(b.value)))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
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
                let v = values.get(&(i, j))?.value;
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
        // Min-max whiskers over the repetitions.
        for (i, _) in points.iter().enumerate() {
            let Some((lo, hi)) = values.get(&(i, j)).and_then(|b| b.spread) else {
                continue;
            };
            if !(lo.is_finite() && hi.is_finite()) {
                continue;
            }
            let xc = i as f64 + 0.1 + j as f64 * width + width * 0.45;
            let cap = width * 0.2;
            chart.draw_series([
                PathElement::new(vec![(xc, lo), (xc, hi)], BLACK.stroke_width(1)),
                PathElement::new(vec![(xc - cap, lo), (xc + cap, lo)], BLACK.stroke_width(1)),
                PathElement::new(vec![(xc - cap, hi), (xc + cap, hi)], BLACK.stroke_width(1)),
            ])?;
        }
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
