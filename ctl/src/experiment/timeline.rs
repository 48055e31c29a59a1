//! Per-run timelines: every real run of the experiment runner fetches each
//! worker's timeline (`GET /timeline`: NIC byte counters sampled every
//! 250 ms and the background processes it ran), appends it to `nic.csv`
//! and `background.csv`, and draws `timelines/<point>-<scheduler>-r<rep>`
//! (SVG and PNG): a Gantt chart per worker slot (each attempt a bar,
//! coloured local / remote / reduce / background; remote bars labelled with
//! the worker they read from) above each worker's NIC transmit and receive
//! rates against its cap. A reader sees remote reads queueing on a
//! source's uplink.

use super::output::TaskRow;
use crate::ops::client::MasterClient;
use crate::results::read_csv;
use anyhow::Context;
use common::wire::WorkerTimeline;
use plotters::prelude::*;
use serde::Serialize;
use std::path::Path;

/// Fetches every worker's timeline from `since_unix_ms` on.
pub async fn fetch(
    client: &MasterClient,
    workers: &[(String, String)],
    since_unix_ms: u64,
) -> anyhow::Result<Vec<WorkerTimeline>> {
    let mut out = Vec::new();
    for (name, url) in workers {
        let what = format!("timeline of worker {name} at {url}");
        let resp = client
            .http()
            .get(format!("{url}/timeline?since_ms={since_unix_ms}"))
            .header(
                reqwest::header::AUTHORIZATION,
                common::http::bearer(client.token()),
            )
            .send()
            .await
            .with_context(|| what.clone())?;
        let t: WorkerTimeline = crate::ops::client::check(resp, &what)
            .await?
            .json()
            .await
            .with_context(|| what.clone())?;
        out.push(t);
    }
    Ok(out)
}

/// One row of nic.csv: a worker's NIC rates over one sampling interval.
#[derive(Serialize, serde::Deserialize)]
pub struct NicRow {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub worker: String,
    /// Interval end, seconds from the run's start.
    pub t_s: f64,
    pub tx_mbps: f64,
    pub rx_mbps: f64,
    pub cap_mbps: Option<f64>,
    /// The emulated disk's rate over the interval, MB/s (0 when off).
    #[serde(default)]
    pub disk_mbs: f64,
    #[serde(default)]
    pub disk_cap_mbs: Option<f64>,
}

/// One row of background.csv.
#[derive(Serialize, serde::Deserialize)]
pub struct BackgroundRow {
    pub point: String,
    pub scheduler: String,
    pub rep: u32,
    pub worker: String,
    pub slot: u32,
    pub start_s: f64,
    /// Empty if it was still running when the run ended.
    pub end_s: Option<f64>,
}

/// Rates between two consecutive samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Interval end, seconds from the run's start.
    pub t: f64,
    /// NIC, Mbit/s.
    pub tx: f64,
    pub rx: f64,
    /// Disk, MB/s.
    pub disk: f64,
}

/// Rates between consecutive samples.
pub fn rates(t: &WorkerTimeline, t0_unix: u64) -> Vec<Rate> {
    t.samples
        .windows(2)
        .filter(|w| w[1].unix_ms > w[0].unix_ms)
        .map(|w| {
            let dt = (w[1].unix_ms - w[0].unix_ms) as f64 / 1000.0;
            let per_s = |a: u64, b: u64| b.saturating_sub(a) as f64 / dt;
            Rate {
                t: (w[1].unix_ms as f64 - t0_unix as f64) / 1000.0,
                tx: per_s(w[0].tx_bytes, w[1].tx_bytes) * 8.0 / 1e6,
                rx: per_s(w[0].rx_bytes, w[1].rx_bytes) * 8.0 / 1e6,
                disk: per_s(w[0].disk_bytes, w[1].disk_bytes) / 1e6,
            }
        })
        .collect()
}

/// Appends one run's timelines to nic.csv and background.csv.
pub struct TimelineWriter {
    nic: csv::Writer<std::fs::File>,
    background: csv::Writer<std::fs::File>,
}

impl TimelineWriter {
    pub fn create(dir: &Path) -> anyhow::Result<Self> {
        let open = |f: &str| {
            let p = dir.join(f);
            csv::Writer::from_path(&p).with_context(|| format!("creating {}", p.display()))
        };
        Ok(TimelineWriter {
            nic: open("nic.csv")?,
            background: open("background.csv")?,
        })
    }

    pub fn write(
        &mut self,
        (point, scheduler, rep): (&str, &str, u32),
        t0_unix: u64,
        timelines: &[WorkerTimeline],
    ) -> anyhow::Result<()> {
        let rel = |unix: u64| (unix as f64 - t0_unix as f64) / 1000.0;
        for t in timelines {
            let cap = t.nic_bytes_per_sec.map(|b| b * 8.0 / 1e6);
            for r in rates(t, t0_unix) {
                self.nic.serialize(NicRow {
                    point: point.into(),
                    scheduler: scheduler.into(),
                    rep,
                    worker: t.worker.clone(),
                    t_s: r.t,
                    tx_mbps: r.tx,
                    rx_mbps: r.rx,
                    cap_mbps: cap,
                    disk_mbs: r.disk,
                    disk_cap_mbs: t.disk_bytes_per_sec.map(|b| b / 1e6),
                })?;
            }
            for b in &t.background {
                self.background.serialize(BackgroundRow {
                    point: point.into(),
                    scheduler: scheduler.into(),
                    rep,
                    worker: t.worker.clone(),
                    slot: b.slot,
                    start_s: rel(b.start_unix_ms),
                    end_s: b.end_unix_ms.map(rel),
                })?;
            }
        }
        self.nic.flush()?;
        self.background.flush()?;
        Ok(())
    }
}

/// A file name part from a label: letters, digits, '-', '_' and '.'.
/// A run's file name stem, as its timeline, decision record and failed
/// logs are named: `<point>-<scheduler>-r<rep>`, each part slugged.
pub fn run_stem(point: &str, scheduler: &str, rep: u32) -> String {
    format!("{}-{}-r{rep}", slug(point), slug(scheduler))
}

pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

const LOCAL: RGBColor = RGBColor(46, 139, 87);
const REMOTE: RGBColor = RGBColor(214, 69, 65);
const REDUCE: RGBColor = RGBColor(52, 101, 164);
const BACKGROUND: RGBColor = RGBColor(170, 170, 170);
const FAILED: RGBColor = RGBColor(0, 0, 0);

/// One worker's part of a timeline chart, in seconds from the run's start.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerSeries {
    pub worker: String,
    pub slots: u32,
    /// NIC cap, Mbit/s per direction; disk cap, MB/s (None = off).
    pub nic_cap_mbps: Option<f64>,
    pub disk_cap_mbs: Option<f64>,
    pub rates: Vec<Rate>,
    /// Background processes: (slot, start, end; None = still running).
    pub background: Vec<(u32, f64, Option<f64>)>,
}

/// The chart series of the workers' timelines.
pub fn series(timelines: &[WorkerTimeline], t0_unix: u64) -> Vec<WorkerSeries> {
    let rel = |unix: u64| (unix as f64 - t0_unix as f64) / 1000.0;
    timelines
        .iter()
        .map(|t| WorkerSeries {
            worker: t.worker.clone(),
            slots: t.slots,
            nic_cap_mbps: t.nic_bytes_per_sec.map(|b| b * 8.0 / 1e6),
            disk_cap_mbs: t.disk_bytes_per_sec.map(|b| b / 1e6),
            rates: rates(t, t0_unix),
            background: t
                .background
                .iter()
                .map(|b| (b.slot, rel(b.start_unix_ms), b.end_unix_ms.map(rel)))
                .collect(),
        })
        .collect()
}

/// Every run's chart series from a results directory's `nic.csv` and
/// `background.csv`, keyed by (point, scheduler, repetition); workers are
/// `w1..=workers` with `slots` each.
pub type RunSeries = std::collections::BTreeMap<(String, String, u32), Vec<WorkerSeries>>;

pub fn read_series(dir: &Path, workers: u32, slots: u32) -> anyhow::Result<RunSeries> {
    let mut out = RunSeries::new();
    for r in read_csv::<NicRow>(&dir.join("nic.csv"))? {
        let key = (r.point, r.scheduler, r.rep);
        if let Some(w) = worker_series(&mut out, key, &r.worker, workers, slots) {
            w.nic_cap_mbps = r.cap_mbps;
            w.disk_cap_mbs = r.disk_cap_mbs;
            w.rates.push(Rate {
                t: r.t_s,
                tx: r.tx_mbps,
                rx: r.rx_mbps,
                disk: r.disk_mbs,
            });
        }
    }
    for r in read_csv::<BackgroundRow>(&dir.join("background.csv"))? {
        let key = (r.point, r.scheduler, r.rep);
        if let Some(w) = worker_series(&mut out, key, &r.worker, workers, slots) {
            w.background.push((r.slot, r.start_s, r.end_s));
        }
    }
    Ok(out)
}

/// The series of `worker` in run `key`, created (workers w1..=workers) on
/// first use; None for a worker name outside them.
fn worker_series<'a>(
    out: &'a mut RunSeries,
    key: (String, String, u32),
    worker: &str,
    workers: u32,
    slots: u32,
) -> Option<&'a mut WorkerSeries> {
    out.entry(key)
        .or_insert_with(|| {
            (1..=workers)
                .map(|w| WorkerSeries {
                    worker: format!("w{w}"),
                    slots,
                    nic_cap_mbps: None,
                    disk_cap_mbs: None,
                    rates: Vec::new(),
                    background: Vec::new(),
                })
                .collect()
        })
        .iter_mut()
        .find(|w| w.worker == worker)
}

/// Draws `<dir>/<file>.svg` and `.png` for one run. Without a font only a
/// note is printed (the CSVs stay whole).
pub fn plot(
    dir: &Path,
    file: &str,
    title: &str,
    tasks: &[TaskRow],
    workers: &[WorkerSeries],
) -> anyhow::Result<()> {
    if let Err(e) = crate::results::plot::font() {
        println!("timeline skipped: {e}");
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let size = (1400u32, 560 + 110 * workers.len() as u32);
    let data = Data::new(tasks, workers);
    let svg = dir.join(format!("{file}.svg"));
    draw(
        SVGBackend::new(&svg, size).into_drawing_area(),
        title,
        &data,
    )
    .map_err(|e| anyhow::anyhow!("plotting {}: {e}", svg.display()))?;
    let png = dir.join(format!("{file}.png"));
    draw(
        BitMapBackend::new(&png, size).into_drawing_area(),
        title,
        &data,
    )
    .map_err(|e| anyhow::anyhow!("plotting {}: {e}", png.display()))?;
    Ok(())
}

/// A worker's name, its rates, its NIC cap (Mbit/s) and its disk cap (MB/s).
type NicSeries = (String, Vec<Rate>, Option<f64>, Option<f64>);

/// What a timeline chart shows, in seconds from the run's start.
struct Data {
    /// Worker names in order, and each one's first row.
    workers: Vec<(String, u32, u32)>,
    rows: u32,
    /// (row, start, end, colour, label)
    bars: Vec<(u32, f64, f64, RGBColor, Option<String>)>,
    /// Per worker: (t, tx, rx) and the cap.
    nic: Vec<NicSeries>,
    t_max: f64,
}

impl Data {
    fn new(tasks: &[TaskRow], series: &[WorkerSeries]) -> Data {
        let mut workers = Vec::new();
        let mut next = 0;
        for t in series {
            workers.push((t.worker.clone(), next, t.slots));
            next += t.slots;
        }
        let row = |w: &str, slot: u32| {
            workers
                .iter()
                .find(|(n, _, _)| n == w)
                .map(|(_, first, slots)| first + slot.min(slots.saturating_sub(1)))
        };
        let mut bars = Vec::new();
        let mut t_max: f64 = 1.0;
        for t in tasks {
            let Some(r) = row(&t.worker, t.slot) else {
                continue;
            };
            let (colour, label) = if !t.ok {
                (FAILED, None)
            } else if t.kind == "reduce" {
                (REDUCE, None)
            } else if t.locality == "remote" {
                (REMOTE, Some(t.source.clone()))
            } else {
                (LOCAL, None)
            };
            bars.push((r, t.start_s, t.end_s, colour, label));
            t_max = t_max.max(t.end_s);
        }
        for t in series {
            for &(slot, start, end) in &t.background {
                // Still running at the end: drawn to the last task's end.
                let end = end.unwrap_or(t_max);
                if let Some(r) = row(&t.worker, slot) {
                    bars.push((r, start.max(0.0), end, BACKGROUND, None));
                }
            }
        }
        let nic = series
            .iter()
            .map(|t| {
                let r: Vec<_> = t
                    .rates
                    .iter()
                    .filter(|r| r.t >= 0.0 && r.t <= t_max + 1.0)
                    .copied()
                    .collect();
                (t.worker.clone(), r, t.nic_cap_mbps, t.disk_cap_mbs)
            })
            .collect();
        Data {
            workers,
            rows: next,
            bars,
            nic,
            t_max: t_max * 1.01,
        }
    }
}

fn draw<DB: DrawingBackend>(
    area: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    d: &Data,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let area = area.titled(title, ("sans-serif", 20))?;
    let (gantt, nics) = area.split_vertically(520);
    let mut chart = ChartBuilder::on(&gantt)
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..d.t_max, 0.0..d.rows.max(1) as f64)?;
    let workers = d.workers.clone();
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("seconds since the run started")
        // A label position per row; only each worker's middle row is named.
        .y_labels(d.rows as usize + 1)
        .y_label_formatter(&|y: &f64| {
            workers
                .iter()
                .find(|(_, first, slots)| (y - (first + slots / 2) as f64).abs() < 0.01)
                .map(|(n, _, _)| n.clone())
                .unwrap_or_default()
        })
        .label_style(("sans-serif", 12))
        .draw()?;
    // Worker separators.
    for (_, first, _) in d.workers.iter().skip(1) {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, *first as f64), (d.t_max, *first as f64)],
            BLACK.mix(0.3),
        )))?;
    }
    let px_per_s = 1300.0 / d.t_max.max(1e-9);
    for (row, s, e, colour, label) in &d.bars {
        let (y0, y1) = (*row as f64 + 0.1, *row as f64 + 0.9);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(*s, y0), (e.max(*s + 0.01), y1)],
            colour.filled(),
        )))?;
        if let Some(l) = label.as_ref().filter(|_| (e - s) * px_per_s > 18.0) {
            chart.draw_series(std::iter::once(Text::new(
                l.clone(),
                (*s + 0.05 * (e - s), y0),
                ("sans-serif", 9).into_font().color(&WHITE),
            )))?;
        }
    }
    // Legend.
    for (name, colour) in [
        ("local map", LOCAL),
        ("remote map (source)", REMOTE),
        ("reduce", REDUCE),
        ("background", BACKGROUND),
        ("failed", FAILED),
    ] {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, 0.0), (0.0, 0.0)],
                colour.filled(),
            )))?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    // One NIC panel per worker.
    let panels = nics.split_evenly((d.nic.len().max(1), 1));
    for ((name, rates, cap, disk_cap), panel) in d.nic.iter().zip(panels) {
        // The disk is drawn in Mbit/s too (x 8), on the NIC's axis.
        let disk_cap = disk_cap.map(|c| c * 8.0);
        // The disk is drawn only where it is emulated (its counter runs
        // unthrottled otherwise, at page-cache speed).
        let has_disk = disk_cap.is_some();
        let peak = rates
            .iter()
            .map(|r| {
                r.tx.max(r.rx)
                    .max(if has_disk { r.disk * 8.0 } else { 0.0 })
            })
            .fold(cap.unwrap_or(0.0).max(disk_cap.unwrap_or(0.0)), f64::max)
            .max(1e-6)
            * 1.1;
        let caption = if has_disk {
            format!("{name} Mbit/s: NIC transmit (orange), receive (blue), cap (dashed); disk (green), cap (dotted)")
        } else {
            format!("{name} NIC Mbit/s: transmit (orange), receive (blue), cap (dashed)")
        };
        let mut c = ChartBuilder::on(&panel)
            .margin_left(8)
            .margin_right(8)
            .x_label_area_size(0)
            .y_label_area_size(60)
            .caption(caption, ("sans-serif", 11))
            .build_cartesian_2d(0.0..d.t_max, 0.0..peak)?;
        c.configure_mesh()
            .disable_x_mesh()
            .y_labels(3)
            .label_style(("sans-serif", 10))
            .draw()?;
        c.draw_series(LineSeries::new(
            rates.iter().map(|r| (r.t, r.tx)),
            RGBColor(230, 120, 20).stroke_width(1),
        ))?;
        c.draw_series(LineSeries::new(
            rates.iter().map(|r| (r.t, r.rx)),
            RGBColor(40, 90, 200).stroke_width(1),
        ))?;
        if has_disk {
            c.draw_series(LineSeries::new(
                rates.iter().map(|r| (r.t, r.disk * 8.0)),
                RGBColor(40, 160, 60).stroke_width(1),
            ))?;
        }
        if let Some(cap) = cap {
            c.draw_series(DashedLineSeries::new(
                vec![(0.0, *cap), (d.t_max, *cap)],
                6,
                4,
                BLACK.stroke_width(1),
            ))?;
        }
        if let Some(cap) = disk_cap {
            c.draw_series(DashedLineSeries::new(
                vec![(0.0, cap), (d.t_max, cap)],
                2,
                4,
                RGBColor(40, 160, 60).stroke_width(1),
            ))?;
        }
    }
    area.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::wire::NicSample;

    #[test]
    fn rates_are_per_interval_in_megabits() {
        let t = WorkerTimeline {
            worker: "w1".into(),
            slots: 2,
            nic_bytes_per_sec: Some(1e6),
            disk_bytes_per_sec: None,
            samples: vec![
                NicSample {
                    unix_ms: 1_000,
                    tx_bytes: 0,
                    rx_bytes: 0,
                    disk_bytes: 0,
                },
                NicSample {
                    unix_ms: 1_250,
                    tx_bytes: 250_000,
                    rx_bytes: 0,
                    disk_bytes: 0,
                },
                // A repeated instant is skipped, not divided by zero.
                NicSample {
                    unix_ms: 1_250,
                    tx_bytes: 250_000,
                    rx_bytes: 0,
                    disk_bytes: 0,
                },
                NicSample {
                    unix_ms: 1_500,
                    tx_bytes: 250_000,
                    rx_bytes: 125_000,
                    disk_bytes: 500_000,
                },
            ],
            background: vec![],
        };
        let r = rates(&t, 1_000);
        assert_eq!(r.len(), 2);
        assert!((r[0].t - 0.25).abs() < 1e-9 && (r[0].tx - 8.0).abs() < 1e-9 && r[0].rx == 0.0);
        assert!(r[1].tx == 0.0 && (r[1].rx - 4.0).abs() < 1e-9 && (r[1].disk - 2.0).abs() < 1e-9);
        assert_eq!(slug("DynDLOn(per-core)"), "DynDLOn_per-core_");
    }

    #[test]
    fn series_read_back_from_the_csvs_equal_the_ones_drawn_at_run_time() {
        let t = WorkerTimeline {
            worker: "w1".into(),
            slots: 2,
            nic_bytes_per_sec: Some(1e6),
            disk_bytes_per_sec: Some(5e6),
            samples: (0..4)
                .map(|i| NicSample {
                    unix_ms: 1_000 + 250 * i,
                    tx_bytes: 100_000 * i,
                    rx_bytes: 50_000 * i,
                    disk_bytes: 200_000 * i,
                })
                .collect(),
            background: vec![
                common::wire::BackgroundRun {
                    slot: 1,
                    start_unix_ms: 500,
                    end_unix_ms: Some(2_500),
                },
                common::wire::BackgroundRun {
                    slot: 0,
                    start_unix_ms: 900,
                    end_unix_ms: None,
                },
            ],
        };
        let dir = tempfile::tempdir().unwrap();
        let mut w = TimelineWriter::create(dir.path()).unwrap();
        w.write(("p", "DELAY3", 2), 1_000, std::slice::from_ref(&t))
            .unwrap();
        drop(w);
        let read = read_series(dir.path(), 1, 2).unwrap();
        let key = ("p".to_string(), "DELAY3".to_string(), 2);
        assert_eq!(read.len(), 1);
        let (a, b) = (&read[&key][0], &series(&[t], 1_000)[0]);
        assert_eq!(
            (a.nic_cap_mbps, a.disk_cap_mbs),
            (b.nic_cap_mbps, b.disk_cap_mbs)
        );
        assert_eq!(a.background, b.background);
        assert_eq!(a.rates.len(), 3);
        for (x, y) in a.rates.iter().zip(&b.rates) {
            assert!((x.t - y.t).abs() < 1e-9 && (x.tx - y.tx).abs() < 1e-9);
            assert!((x.rx - y.rx).abs() < 1e-9 && (x.disk - y.disk).abs() < 1e-9);
        }
    }
}
